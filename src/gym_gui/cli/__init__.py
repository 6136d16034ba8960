"""`gym-gui`: the command line of gym_gui — train, inspect, watch and manage runs through the daemon.

One module per command group; each registers its commands on :data:`gym_gui.cli.app.app` when it is
imported, so the order of the imports below is the order `gym-gui --help` lists them in (its
commands, then its groups: daemon, bundles, wandb, sweep).
"""

from __future__ import annotations

# isort: off
from gym_gui.cli import daemon, bundles
from gym_gui.cli import (
    runs,
    models,
    operators,
    algorithms,
    workers,
    views,
    compare,
    manage,
    first_steps,
    sweeps,
    datasets,
)

# isort: on
from gym_gui.cli.app import app, main
from gym_gui.cli.config import apply_overrides, build_config, executor_overrides

__all__ = [
    "algorithms",
    "app",
    "apply_overrides",
    "build_config",
    "bundles",
    "compare",
    "daemon",
    "datasets",
    "executor_overrides",
    "first_steps",
    "main",
    "manage",
    "models",
    "operators",
    "runs",
    "sweeps",
    "views",
    "workers",
]
