"""Reading Optuna studies made by plain Optuna: trials, best, ranking, history, importances, and no change to the file."""

from __future__ import annotations

import hashlib
import itertools
import sqlite3
from pathlib import Path

import optuna
import pytest

from gym_gui.core.config import redact_url
from gym_gui.sweeps.study import (
    TRIAL_RUNS_ATTR,
    StudyError,
    param_importances,
    params_as_flags,
    read_study,
    storage_url,
    study_names,
)


def _made_elsewhere(path: Path, name: str = "plain", directions: list[str] | None = None) -> str:
    url = f"sqlite:///{path}"
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(
        study_name=name,
        storage=url,
        directions=directions or ["maximize"],
        sampler=optuna.samplers.RandomSampler(seed=3),
    )

    def objective(trial: optuna.Trial) -> float | tuple[float, float]:
        lr = trial.suggest_float("learning-rate", 1e-4, 1e-1, log=True)
        envs = trial.suggest_categorical("num-envs", [1, 2, 4])
        trial.set_user_attr(TRIAL_RUNS_ATTR, [f"run-{trial.number}"])
        value = -abs(lr - 0.01) * 100 + envs * 0.01
        return (value, float(envs)) if directions and len(directions) == 2 else value

    study.optimize(objective, n_trials=8)
    return url


def test_a_plain_optuna_study_is_read_with_its_best_its_ranking_and_its_history(tmp_path: Path) -> None:
    url = _made_elsewhere(tmp_path / "s.db")
    view = read_study(url)  # the only study: no name needed
    study = optuna.load_study(study_name="plain", storage=url)
    assert view.name == "plain" and view.directions == ("maximize",)
    assert [trial.number for trial in view.best()] == [study.best_trial.number]
    ranked = [trial.value for trial in view.ranked()]
    assert ranked == sorted(ranked, reverse=True)
    history = view.history()
    assert [number for number, _, _ in history] == list(range(8))
    assert history[-1][2] == pytest.approx(study.best_value)
    assert all(later >= earlier for (_, _, earlier), (_, _, later) in itertools.pairwise(history))
    assert view.trials[3].run_ids == ("run-3",)
    assert view.sweep_id is None and view.base_config is None
    importances = param_importances(url, "plain")
    assert set(importances) == {"learning-rate", "num-envs"} and sum(importances.values()) == pytest.approx(
        1.0
    )
    assert params_as_flags(view.best()[0].params).keys() == {"learning_rate", "num_envs"}


def test_several_objectives_give_the_pareto_front(tmp_path: Path) -> None:
    url = _made_elsewhere(tmp_path / "m.db", directions=["maximize", "minimize"])
    view = read_study(url, "plain")
    study = optuna.load_study(study_name="plain", storage=url)
    assert sorted(trial.number for trial in view.best()) == sorted(
        trial.number for trial in study.best_trials
    )


def test_reading_changes_nothing_stored(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    _made_elsewhere(path)
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    read_study(storage_url(str(path)))
    param_importances(storage_url(str(path)), "plain")
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before


def test_what_cannot_be_read_is_named(tmp_path: Path) -> None:
    url = _made_elsewhere(tmp_path / "two.db", name="first")
    optuna.create_study(study_name="second", storage=url)
    with pytest.raises(StudyError, match=r"holds 2 studies \(first, second\): name one with --study"):
        read_study(url)
    with pytest.raises(StudyError, match=r"has no study 'third'; it holds: first, second"):
        read_study(url, "third")
    other = tmp_path / "other.db"
    sqlite3.connect(other).execute("CREATE TABLE t (x)").connection.commit()
    with pytest.raises(StudyError, match=r"other\.db: not an Optuna storage"):
        study_names(storage_url(str(other)))
    with pytest.raises(StudyError, match=r"missing\.db: no such database file"):
        storage_url(str(tmp_path / "missing.db"))


def test_a_password_in_a_storage_url_is_never_shown() -> None:
    shown = redact_url("postgresql://gym:s3cret@127.0.0.1:5432/optuna")
    assert "s3cret" not in shown and shown == "postgresql://gym:***@127.0.0.1:5432/optuna"
    assert redact_url("postgresql+psycopg://gym@h/db?password=s3cret&sslmode=require") == (
        "postgresql+psycopg://gym@h/db?password=***&sslmode=require"
    )
    for plain in (
        "sqlite:////abs/study.db",
        "sqlite:///file:/a.db?mode=ro&uri=true",
        "postgresql+psycopg://gym@h/db",
    ):
        assert redact_url(plain) == plain
