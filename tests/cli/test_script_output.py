"""What a script or a log file gets from the listings: every value whole when piped, and `--json` documents."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import optuna
import pytest

from tests.support import gym_gui


def piped(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    """``gym-gui ARGS`` with its output piped and no COLUMNS set, as `gym-gui … | grep` or `> file` runs it."""
    env = {key: value for key, value in os.environ.items() if key != "COLUMNS"}
    return subprocess.run(
        [sys.executable, "-m", "gym_gui", *args],
        capture_output=True,
        text=True,
        timeout=180,
        env={**env, "GYM_GUI_HOME": str(home), "NO_COLOR": "1"},
    )


def documented(*args: str, home: Path) -> Any:
    """The one JSON document ``gym-gui ARGS --json`` prints."""
    done = gym_gui(*args, "--json", home=home)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def study_with_long_parameters(path: Path) -> optuna.Study:
    """A study of CleanRL PPO's parameters, by their long names (a table row wider than 80 columns)."""
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(
        study_name="ppo", storage=f"sqlite:///{path}", sampler=optuna.samplers.RandomSampler(seed=1)
    )

    def objective(trial: optuna.Trial) -> float:
        return (
            trial.suggest_float("learning-rate", 1e-5, 1e-2, log=True)
            + trial.suggest_int("num-minibatches", 1, 64)
            + trial.suggest_float("clip-coef", 0.05, 0.4)
            + trial.suggest_float("ent-coef", 0.0, 0.05)
        )

    study.optimize(objective, 4)
    return study


def test_a_piped_study_table_cuts_no_value(tmp_path: Path) -> None:
    study = study_with_long_parameters(tmp_path / "tuner.db")
    shown = piped(
        "sweep", "show", "--storage", str(tmp_path / "tuner.db"), "--study", "ppo", home=tmp_path / "h"
    )
    assert shown.returncode == 0, shown.stderr
    assert "…" not in shown.stdout
    rows = [line for line in shown.stdout.splitlines() if "COMPLETE" in line]
    assert len(rows) == 4  # one line a trial: nothing folded onto the next
    for trial in study.trials:
        row = next(row for row in rows if f"│ {trial.number} " in row)
        for name, value in trial.params.items():
            shown_value = f"{value:.4g}" if isinstance(value, float) else str(value)
            assert f"{name}={shown_value}" in row, row


def test_a_study_as_json(tmp_path: Path) -> None:
    study = study_with_long_parameters(tmp_path / "tuner.db")
    document = documented(
        "sweep",
        "show",
        "--storage",
        str(tmp_path / "tuner.db"),
        "--study",
        "ppo",
        "--history",
        "--importances",
        home=tmp_path / "h",
    )
    assert document["study"]["name"] == "ppo" and document["study"]["directions"] == ["minimize"]
    by_number = {trial["number"]: trial for trial in document["study"]["trials"]}
    for trial in study.trials:  # every value exact, not as the table rounds it
        assert by_number[trial.number]["params"] == trial.params
        assert by_number[trial.number]["values"] == [trial.value]
    assert document["best"] == [study.best_trial.number]
    assert [point["trial"] for point in document["history"]] == [0, 1, 2, 3]
    assert document["history"][-1]["best"] == study.best_value
    assert set(document["importances"]) == set(study.best_params)


@pytest.fixture
def home(tmp_path: Path):  # type: ignore[no-untyped-def]
    home = tmp_path / "home"
    yield home
    gym_gui("daemon", "stop", home=home)


def test_the_listings_as_json_and_whole_when_piped(home: Path) -> None:
    trained = gym_gui("train", "--worker", "random", "--env", "FrozenLake-v1", "--episodes", "3", home=home)
    assert trained.returncode == 0, trained.stderr

    runs = documented("runs", home=home)
    assert len(runs) == 1 and runs[0]["state"] == "COMPLETED" and runs[0]["worker"] == "random"
    run_id = runs[0]["run_id"]
    assert {"env_id", "created_at", "ended_at", "reason", "run_dir", "sweep_id"} <= set(runs[0])

    shown = documented("show", run_id, home=home)
    assert shown["run"]["run_id"] == run_id
    assert [change["to_state"] for change in shown["history"]] == [
        "QUEUED",
        "STARTING",
        "RUNNING",
        "COMPLETED",
    ]
    telemetry = shown["telemetry"]
    assert telemetry["episodes"] == 3 and telemetry["episodes_differing"] == []
    assert telemetry["steps_stored"] == telemetry["episode_steps"] > 0

    assert documented("sweep", "show", home=home) == []
    kinds = {worker["kind"]: worker for worker in documented("workers", home=home)["workers"]}
    assert kinds["random"]["available"] is True and kinds["random"]["lane"] == "telemetry"
    bundles = {bundle["name"]: bundle for bundle in documented("bundles", "list", home=home)}
    assert "cleanrl" in bundles and {"installed", "path", "reason", "torch"} <= set(bundles["cleanrl"])

    # Piped, the table is as wide as its values: the run's row is one line holding its id whole.
    table = piped("runs", home=home)
    assert table.returncode == 0, table.stderr
    assert any(run_id in line and "COMPLETED" in line for line in table.stdout.splitlines()), table.stdout
    assert "…" not in table.stdout
