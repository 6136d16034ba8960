"""`gym-gui sweep show --history` and `--importances`: a real sweep of CleanRL trials through a real
daemon (the README's line as written), and studies made by plain Optuna (no daemon), read as the
window's Optuna tab reads them."""

from __future__ import annotations

import json
import math
import re
import shlex
from collections.abc import Iterator
from pathlib import Path

import optuna
import pytest

from gym_gui.core.states import SweepState
from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.home import Home
from gym_gui.sweeps.study import StudyView, param_importances
from tests.cli.test_readme import readme_commands
from tests.fixtures import SHARED_BUNDLES
from tests.support import assert_one_line_error, gym_gui, module_daemon
from tests.sweeps.test_sweeps import PPO, write_spec


def _cells(output: str) -> list[list[str]]:
    """The table rows of ``output``: their cells."""
    return [[cell.strip() for cell in line.split("│")[1:-1]] for line in output.splitlines() if "│" in line]


def _study(path: Path, trials: int, direction: str = "minimize") -> str:
    """A study made by plain Optuna (two parameters, one of them mattering most); its storage URL."""
    url = f"sqlite:///{path}"
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(
        study_name="tuned", storage=url, direction=direction, sampler=optuna.samplers.RandomSampler(seed=3)
    )
    study.optimize(lambda t: (t.suggest_float("x", -3, 3) - 1) ** 2 + 0.01 * t.suggest_int("n", 1, 5), trials)
    return url


def test_the_history_is_each_complete_trial_and_the_best_so_far(tmp_path: Path) -> None:
    db = tmp_path / "tuner.db"
    _study(db, 8)
    shown = gym_gui("sweep", "show", "--storage", str(db), "--history", home=tmp_path / "home")
    assert shown.returncode == 0, shown.stderr
    assert "value per trial (minimize)" in shown.stdout
    trials = optuna.load_study(study_name="tuned", storage=f"sqlite:///{db}").trials
    best = math.inf
    expected = []
    for trial in trials:
        assert trial.value is not None
        best = min(best, trial.value)
        expected.append([str(trial.number), f"{trial.value:.6g}", f"{best:.6g}"])
    assert _cells(shown.stdout) == expected
    assert "COMPLETE" not in shown.stdout  # the history instead of the trials table
    assert not (tmp_path / "home" / "daemon.json").exists()


def test_importances_are_the_optuna_tabs_largest_first(tmp_path: Path) -> None:
    db = tmp_path / "tuner.db"
    url = _study(db, 8)
    shown = gym_gui("sweep", "show", "--storage", str(db), "--importances", home=tmp_path / "home")
    assert shown.returncode == 0, shown.stderr
    importances = param_importances(url, "tuned")
    assert list(importances) == ["x", "n"]
    assert [cells[:2] for cells in _cells(shown.stdout)] == [
        [name, f"{value:.3f}"] for name, value in importances.items()
    ]
    both = gym_gui(
        "sweep", "show", "--storage", str(db), "--history", "--importances", home=tmp_path / "home"
    )
    assert "value per trial" in both.stdout and "parameter importances (value)" in both.stdout


def test_a_study_too_young_for_importances_says_why(tmp_path: Path) -> None:
    db = tmp_path / "young.db"
    _study(db, 1)
    shown = gym_gui("sweep", "show", "--storage", str(db), "--importances", home=tmp_path / "home")
    assert shown.returncode == 0, shown.stderr
    assert "No importances yet: they need at least 2 complete trials (1 so far)." in shown.stdout
    empty = tmp_path / "empty.db"
    optuna.create_study(study_name="empty", storage=f"sqlite:///{empty}")
    history = gym_gui("sweep", "show", "--storage", str(empty), "--history", home=tmp_path / "home")
    assert history.returncode == 0, history.stderr
    assert "study empty: no trial has completed yet" in history.stdout


@pytest.fixture(scope="module")
def swept(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Home, str, DaemonClient]]:
    """A finished sweep of two short CleanRL PPO trials whose learning rate and env count vary."""
    root = tmp_path_factory.mktemp("sweep_views_home")
    with module_daemon(root, SHARED_BUNDLES, ["--cancel-grace", "20", "--max-concurrent", "2"]) as (
        client,
        home,
    ):
        spec = write_spec(
            root / "sweep.yaml",
            config={**PPO, "budget": {"timesteps": 512}, "params": {"num-steps": 64}},
            objective={"metric": "charts/episodic_return", "aggregate": "last_mean", "window": 5},
            sampler={"name": "random", "seed": 0},
            trials=2,
        )
        started = gym_gui("sweep", "start", str(spec), "--wait", home=home.root, timeout=600)
        assert started.returncode == 0, started.stderr
        sweep_id = started.stdout.split()[1]
        assert client.get_sweep(sweep_id).record.state is SweepState.COMPLETED
        yield home, sweep_id, client


def test_a_sweeps_history_and_importances(swept: tuple[Home, str, DaemonClient]) -> None:
    home, sweep_id, client = swept
    detail = client.get_sweep(sweep_id)
    view = StudyView.from_data(detail.study)
    # The README's line, as written.
    (line,) = [command for command in readme_commands("Sweeps") if "--history" in command]
    args = [sweep_id if arg == "SWEEP" else arg for arg in shlex.split(line)[1:]]
    assert args == ["sweep", "show", sweep_id, "--history", "--importances"]
    shown = gym_gui(*args, home=home.root)
    assert shown.returncode == 0, shown.stderr
    assert re.search(rf"sweep\s+{sweep_id}", shown.stdout)  # the sweep's own lines first
    assert "value per trial (maximize)" in shown.stdout
    rows = _cells(shown.stdout)
    history = [[str(number), f"{value:.6g}", f"{best:.6g}"] for number, value, best in view.history()]
    assert len(history) == 2 and rows[:2] == history
    importances = param_importances(detail.record.storage, detail.record.study)
    assert set(importances) == {"learning-rate", "num-envs"}
    assert [cells[:2] for cells in rows[2:]] == [
        [name, f"{value:.3f}"] for name, value in importances.items()
    ]


def test_a_sweep_as_json(swept: tuple[Home, str, DaemonClient]) -> None:
    home, sweep_id, client = swept
    shown = gym_gui("sweep", "show", sweep_id, "--json", home=home.root)
    assert shown.returncode == 0, shown.stderr
    document = json.loads(shown.stdout)
    assert document["sweep"]["sweep_id"] == sweep_id and document["sweep"]["state"] == "COMPLETED"
    assert document["sweep"]["spec"]["trials"] == 2  # the spec as an object
    assert document["study"] == client.get_sweep(sweep_id).study
    assert len(document["best"]) == 1
    listed = gym_gui("sweep", "show", "--json", home=home.root)
    assert [sweep["sweep_id"] for sweep in json.loads(listed.stdout)] == [sweep_id]


def test_history_and_importances_need_one_study(swept: tuple[Home, str, DaemonClient]) -> None:
    home, _sweep_id, _client = swept
    assert_one_line_error(gym_gui("sweep", "show", "--history", home=home.root), "give a sweep id")
    assert_one_line_error(
        gym_gui("sweep", "show", "no-such-sweep", "--importances", home=home.root), "no sweep with id"
    )
