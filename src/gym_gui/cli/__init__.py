"""`gym-gui`: the command line of gym_gui — train, inspect, watch and manage runs through the daemon.

One module per command group; each registers its commands on :data:`gym_gui.cli.app.app` when it is
imported. A command imports only its own module (:data:`COMMANDS` says which): a listing answers
without paying for gymnasium, SciPy, Optuna or the worker plugins it does not use. `gym-gui --help`,
and a name not in the table, import every module, in the order `--help` lists them (its commands,
then its groups: daemon, bundles, wandb, sweep). A new command module goes in :data:`MODULES`, and
its commands in :data:`COMMANDS` (tests/cli/test_cli_imports.py checks both).
"""

from __future__ import annotations

import importlib
import sys

from gym_gui.cli.app import main as run_app

# Every command module, in the order `gym-gui --help` lists what they register.
MODULES = (
    "daemon",
    "bundles",
    "runs",
    "models",
    "hub",
    "operators",
    "algorithms",
    "workers",
    "views",
    "compare",
    "manage",
    "prune",
    "tensorboard_export",
    "first_steps",
    "sweeps",
    "datasets",
    "envs",
)

# Command or group name → the module that registers it.
COMMANDS = {
    "daemon": "daemon",
    "bundles": "bundles",
    "train": "runs",
    "eval": "runs",
    "rerun": "runs",
    "models": "models",
    "import-model": "models",
    "publish": "hub",
    "operators": "operators",
    "arena": "operators",
    "algorithms": "algorithms",
    "workers": "workers",
    "wandb": "workers",
    "runs": "views",
    "show": "views",
    "watch": "views",
    "compare": "compare",
    "cancel": "manage",
    "pause": "manage",
    "resume": "manage",
    "checkpoint": "manage",
    "render-rate": "manage",
    "archive": "manage",
    "delete": "manage",
    "export": "manage",
    "prune": "prune",
    "export-tensorboard": "tensorboard_export",
    "schema": "first_steps",
    "demo": "first_steps",
    "sweep": "sweeps",
    "dataset": "datasets",
    "envs": "envs",
}


def load_commands(name: str | None = None) -> None:
    """Register the command ``name`` (its module only), or every command when ``name`` is None or
    not a command's name (`--help`, a mistyped command: click then lists or suggests them all)."""
    modules = [COMMANDS[name]] if name in COMMANDS else MODULES
    for module in modules:
        importlib.import_module(f"{__name__}.{module}")


def main(argv: list[str] | None = None) -> None:
    """`gym-gui ARGS` (default: this process's arguments): one clear line and a non-zero exit for every error."""
    args = sys.argv[1:] if argv is None else argv
    load_commands(args[0] if args else None)
    run_app(args)


__all__ = ["COMMANDS", "MODULES", "load_commands", "main"]
