"""What `gym-gui` imports: a command loads its own module and what it uses, never every library gym_gui has."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import typer

from gym_gui.cli.app import app
from tests.support import gym_gui

# What none of the listing commands uses, and what made `import gym_gui.cli` take 1.5 s (SciPy through
# the arena's statistics, gymnasium through the env checks, Optuna through the sweeps).
NEVER_FOR_A_LISTING = (
    "numpy",
    "scipy",
    "gymnasium",
    "optuna",
    "sqlalchemy",
    "torch",
    "PySide6",
    "gym_gui.workers",
    "gym_gui.play",
    "gym_gui.sweeps",
    "gym_gui.envs",
    # Only `publish`, `import-model hf://…` and `dataset push` speak to the Hugging Face Hub.
    "huggingface_hub",
    "gym_gui.hub",
    # Only `export-tensorboard` writes event files.
    "tensorboardX",
)
# What only a command that calls the daemon needs.
WIRE = ("grpc", "google.protobuf", "gym_gui_sdk.trainer_pb2")


def modules_loaded(code: str, home: Path | None = None) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    """Run ``code`` in a fresh interpreter; what it printed and the modules loaded when it exited."""
    report = f"""
import atexit, json, sys
atexit.register(lambda: print("MODULES " + json.dumps(sorted(sys.modules)), file=sys.stderr))
{code}
"""
    env = {**os.environ, "COLUMNS": "200", "NO_COLOR": "1"}
    if home is not None:
        env["GYM_GUI_HOME"] = str(home)
    done = subprocess.run(
        [sys.executable, "-c", report], capture_output=True, text=True, env=env, timeout=120
    )
    line = next(line for line in done.stderr.splitlines() if line.startswith("MODULES "))
    return done, set(json.loads(line.removeprefix("MODULES ")))


def loaded(modules: set[str], names: tuple[str, ...]) -> list[str]:
    return [name for name in names if any(m == name or m.startswith(name + ".") for m in modules)]


def test_importing_the_command_line_loads_no_heavy_library() -> None:
    _, modules = modules_loaded("import gym_gui.cli")
    assert loaded(modules, NEVER_FOR_A_LISTING + WIRE) == []


@pytest.fixture
def home(tmp_path: Path):  # type: ignore[no-untyped-def]
    home = tmp_path / "home"
    yield home
    gym_gui("daemon", "stop", home=home)


def test_gym_gui_runs_loads_only_what_listing_runs_needs(home: Path) -> None:
    trained = gym_gui("train", "--worker", "random", "--env", "FrozenLake-v1", "--episodes", "3", home=home)
    assert trained.returncode == 0, trained.stderr
    done, modules = modules_loaded(
        "from gym_gui.main import main; sys.argv = ['gym-gui', 'runs']; main()", home=home
    )
    assert done.returncode == 0, done.stderr
    assert "FrozenLake-v1__random__" in done.stdout  # it listed the run
    assert loaded(modules, NEVER_FOR_A_LISTING) == []
    assert loaded(modules, WIRE) == list(WIRE)  # it did talk to the daemon


def test_help_lists_every_command_and_each_is_found_by_its_name() -> None:
    from gym_gui.cli import COMMANDS, MODULES, load_commands

    load_commands()  # every module, as `gym-gui --help` does
    group = typer.main.get_command(app)
    assert isinstance(group, typer.core.TyperGroup)
    assert set(group.commands) == set(COMMANDS), (
        "a command missing from gym_gui.cli.COMMANDS, or one too many"
    )
    for name, command in group.commands.items():
        # A group's module is its subcommands'.
        first = (
            next(iter(command.commands.values())) if isinstance(command, typer.core.TyperGroup) else command
        )
        assert first.callback is not None
        assert first.callback.__module__ == f"gym_gui.cli.{COMMANDS[name]}", name
    assert set(COMMANDS.values()) <= set(MODULES)

    listed = gym_gui("--help", home=Path("/nonexistent"))
    assert listed.returncode == 0, listed.stderr
    shown = {line.strip("│ ").split()[0] for line in listed.stdout.splitlines() if line.startswith("│ ")}
    assert set(COMMANDS) <= shown


def test_each_command_is_found_by_its_name_when_its_module_is_loaded_alone() -> None:
    from gym_gui.cli import COMMANDS

    # One command a module: the others of a module load the same way.
    first_of_module = {module: name for name, module in reversed(COMMANDS.items())}
    for name in first_of_module.values():
        shown = gym_gui(name, "--help", home=Path("/nonexistent"))
        assert shown.returncode == 0, f"{name}: {shown.stderr}"
        assert f"Usage: gym-gui {name} " in shown.stdout, shown.stdout
