"""What every bench shares: a throwaway GYM_GUI_HOME, stopping its daemon and removing it afterwards,
and the raw-insert reference the telemetry benches measure against."""

from __future__ import annotations

import contextlib
import shutil
import sys
import tempfile
import time
from pathlib import Path

from gym_gui.core.errors import GymGuiError
from gym_gui.core.processes import process_alive
from gym_gui.core.records import STEP_COLUMNS
from gym_gui.core.states import RunState
from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.telemetry import TelemetryReader
from gym_gui.storage.telemetry_schema import insert_sql, open_telemetry_db

INSERT_STEP = insert_sql("steps", STEP_COLUMNS, 1)  # a row a statement: the plain executemany


def stop_daemon(client: DaemonClient, timeout: float = 10.0) -> None:
    """Ask the daemon to shut down and wait until its process is gone, so its files can be removed."""
    pid = client.info.pid
    with contextlib.suppress(GymGuiError):  # a daemon already gone cannot be asked
        client.stop(timeout)
    client.close()
    if process_alive(pid):
        print(f"warning: daemon pid {pid} still running {timeout:.0f}s after shutdown", file=sys.stderr)


def fresh_home(prefix: str = "gym-gui-bench-") -> Path:
    """A new temporary GYM_GUI_HOME for one bench run."""
    return Path(tempfile.mkdtemp(prefix=prefix))


def release(client: DaemonClient, root: Path, keep: bool) -> None:
    """Stop the bench's daemon, then remove its home (or say where it is, with --keep)."""
    stop_daemon(client)
    if keep:
        print(f"kept {root}")
    else:
        shutil.rmtree(root, ignore_errors=True)


def running_seconds(client: DaemonClient, run_id: str) -> float | None:
    """An ended run's RUNNING span from its history: from the daemon reading the worker's STARTED (just
    before its first step) to the final transition (after the worker flushed, the stream drained
    into SQLite and the process exited). None when the run never ran."""
    history = client.get_run(run_id).history
    running_at = next((c.time for c in history if c.to_state == RunState.RUNNING.value), None)
    return None if running_at is None else history[-1].time - running_at


def stored_steps(path: Path) -> int:
    """The steps a run's telemetry database at ``path`` holds (what a lossless check counts)."""
    reader = TelemetryReader(path)
    try:
        return reader.step_count()
    finally:
        reader.close()


def database_bytes(path: Path) -> int:
    """Bytes a SQLite database takes on disk: its file, write-ahead log and shared-memory index."""
    return sum(
        Path(f"{path}{suffix}").stat().st_size
        for suffix in ("", "-wal", "-shm")
        if Path(f"{path}{suffix}").exists()
    )


def raw_inserts(
    rows: list[tuple[object, ...]], target: Path, batch: int, keep: bool = False
) -> tuple[float, int]:
    """Seconds to ``executemany`` ``rows`` into a fresh telemetry database at ``target`` (same schema and
    pragmas as a run's), ``batch`` rows a transaction, and the rows it then holds; the files are removed
    unless ``keep``.

    Only the inserts are timed: opening the database is not what the daemon's writer pays per step.
    """
    conn = open_telemetry_db(target)
    try:
        start = time.perf_counter()
        for offset in range(0, len(rows), batch):
            conn.execute("BEGIN IMMEDIATE")
            conn.executemany(INSERT_STEP, rows[offset : offset + batch])
            conn.execute("COMMIT")
        seconds = time.perf_counter() - start
        count = int(conn.execute("SELECT COUNT(*) FROM steps").fetchone()[0])
    finally:
        conn.close()
    if keep:
        return seconds, count
    for suffix in ("", "-wal", "-shm"):
        Path(f"{target}{suffix}").unlink(missing_ok=True)
    return seconds, count
