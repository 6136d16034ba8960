"""Storage: the home directory layout, the run registry and per-run telemetry databases (SQLite)."""
