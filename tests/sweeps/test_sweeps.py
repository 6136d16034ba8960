"""Sweeps driven by a real daemon: real CleanRL PPO trials, a real Optuna study, the CLI as a user types it."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import optuna
import pytest
import yaml

from gym_gui.core.records import SweepRecord
from gym_gui.core.states import RunState, SweepState
from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.home import Home
from gym_gui.storage.run_dir import RunDir
from gym_gui.storage.telemetry import TelemetryReader
from gym_gui.sweeps.study import TRIAL_RUNS_ATTR, StudyView
from tests.fixtures import SHARED_BUNDLES
from tests.support import (
    assert_one_line_error,
    gym_gui,
    kill_run_workers,
    module_daemon,
    stop_daemon,
    wait_until,
)
from tests.sweeps.test_spec import CONFIG

PPO = CONFIG  # PPO on CartPole, 2k steps, seed 1
DAEMON_ARGS = ["--cancel-grace", "20", "--max-concurrent", "2"]


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[DaemonClient, Home]]:
    root = tmp_path_factory.mktemp("sweeps_home")
    with module_daemon(root, SHARED_BUNDLES, DAEMON_ARGS) as running:
        yield running


def write_spec(path: Path, **fields: Any) -> Path:
    spec = {
        "config": PPO,
        "space": {
            "learning-rate": {"type": "float", "low": 1e-4, "high": 1e-2, "log": True},
            "num-envs": {"type": "categorical", "choices": [2, 4]},
        },
        "objective": {"metric": "charts/episodic_return", "aggregate": "last_mean", "window": 20},
        "sampler": {"name": "tpe", "seed": 0},
        "trials": 4,
        "parallel": 2,
        **fields,
    }
    path.write_text(yaml.safe_dump(spec))
    return path


def sweep_id_of(output: str) -> str:
    first = output.split()
    assert first[0] == "sweep", output
    return first[1]


def ended(client: DaemonClient, sweep_id: str) -> SweepRecord | None:
    record = client.get_sweep(sweep_id).record
    return record if record.state.ended else None


def test_a_small_study_ends_with_optunas_best_trial_shown_as_best(
    daemon: tuple[DaemonClient, Home], tmp_path: Path
) -> None:
    client, home = daemon
    spec = write_spec(tmp_path / "sweep.yaml")
    started = gym_gui("sweep", "start", str(spec), "--wait", home=home.root, timeout=900)
    assert started.returncode == 0, started.stderr
    sweep_id = sweep_id_of(started.stdout)
    record = client.get_sweep(sweep_id).record
    assert record.state is SweepState.COMPLETED

    # Optuna's own reading of the study it wrote (as optuna-dashboard would).
    study = optuna.load_study(study_name=record.study, storage=record.storage)
    assert len(study.trials) == 4
    assert all(t.state == optuna.trial.TrialState.COMPLETE for t in study.trials)
    best = study.best_trial
    best_runs = best.user_attrs[TRIAL_RUNS_ATTR]
    assert study.user_attrs["gym_gui.sweep"] == sweep_id
    assert study.user_attrs["gym_gui.config"]["algorithm"] == "ppo"

    shown = gym_gui("sweep", "best", sweep_id, home=home.root)
    assert shown.returncode == 0, shown.stderr
    assert f"best trial {best.number}:" in shown.stdout
    assert f"value {best.value:.6g}" in shown.stdout
    assert best_runs[0] in shown.stdout
    # --wait printed the best at the end too
    assert f"best trial {best.number}:" in started.stdout

    table = gym_gui("sweep", "show", sweep_id, home=home.root)
    assert table.returncode == 0, table.stderr
    rows = [line for line in table.stdout.splitlines() if "COMPLETE" in line and "│" in line]
    assert len(rows) == 4
    best_rows = [line for line in rows if "best" in line]
    assert len(best_rows) == 1 and best_runs[0] in best_rows[0]
    assert rows[0] == best_rows[0]  # sorted by objective, best first
    listed = gym_gui("sweep", "show", home=home.root)
    assert sweep_id in listed.stdout and "COMPLETED" in listed.stdout

    # Every trial is a run of its own, its directory's manifest naming the study and the trial.
    for trial in study.trials:
        (run_id,) = trial.user_attrs[TRIAL_RUNS_ATTR]
        run = client.get_run(run_id).record
        assert run.state is RunState.COMPLETED
        assert (run.sweep_id, run.trial) == (sweep_id, trial.number)
        manifest = RunDir(run.run_dir).read_manifest()
        assert (manifest.optuna_db, manifest.optuna_study, manifest.optuna_trial) == (
            record.storage,
            record.study,
            trial.number,
        )
        config = RunDir(run.run_dir).read_config()
        assert config.params == trial.params
    runs = gym_gui("runs", home=home.root)
    assert f"{sweep_id} #{best.number}" in runs.stdout


def test_a_trial_that_cannot_keep_up_is_pruned_and_its_run_recorded_pruned(
    daemon: tuple[DaemonClient, Home], tmp_path: Path
) -> None:
    # Deterministic by construction: the objective is the learning rate the script logs each update
    # (charts/learning_rate, at the same global steps in both trials), the grid's seed plays 0.01
    # first, the median pruner decides from one complete trial at the first report (step 512: one
    # update of 4 envs × 128 steps), where 1e-5 is below it whatever the timing.
    client, home = daemon
    spec = write_spec(
        tmp_path / "prune.yaml",
        config={**PPO, "budget": {"timesteps": 20480}, "params": {"num-envs": 4, "num-steps": 128}},
        space={"learning-rate": {"type": "categorical", "choices": [0.01, 1e-5]}},
        objective={"metric": "charts/learning_rate", "aggregate": "last"},
        sampler={"name": "grid", "seed": 1},
        pruner={"name": "median", "n_startup_trials": 1, "report_steps": 512},
        trials=2,
        parallel=1,
    )
    started = gym_gui("sweep", "start", str(spec), "--wait", home=home.root, timeout=900)
    assert started.returncode == 0, started.stderr
    sweep_id = sweep_id_of(started.stdout)
    detail = client.get_sweep(sweep_id)
    assert detail.record.state is SweepState.COMPLETED, detail.record.reason
    view = StudyView.from_data(detail.study)
    first, second = sorted(view.trials, key=lambda t: t.number)
    assert first.params == {"learning-rate": 0.01} and first.state == "COMPLETE"
    assert second.params == {"learning-rate": 1e-5} and second.state == "PRUNED"
    run = client.get_run(second.run_ids[0]).record
    assert run.state is RunState.PRUNED
    assert "pruned by the median pruner at step 512" in run.reason and "charts/learning_rate" in run.reason
    assert client.get_run(first.run_ids[0]).record.state is RunState.COMPLETED
    shown = gym_gui("sweep", "show", sweep_id, home=home.root)
    assert "PRUNED" in shown.stdout and "median pruner" in shown.stdout


def test_stopping_a_sweep_cancels_its_running_trial_and_asks_no_more(
    daemon: tuple[DaemonClient, Home], tmp_path: Path
) -> None:
    client, home = daemon
    spec = write_spec(
        tmp_path / "stop.yaml", config={**PPO, "budget": {"timesteps": 500_000}}, trials=5, parallel=1
    )
    started = gym_gui("sweep", "start", str(spec), home=home.root)
    assert started.returncode == 0, started.stderr
    sweep_id = sweep_id_of(started.stdout)

    def running_run() -> str | None:
        runs = [r for r in client.list_runs() if r.sweep_id == sweep_id]
        return runs[0].run_id if runs and runs[0].state is RunState.RUNNING else None

    run_id = wait_until(running_run, 180, "the first trial's run to run")
    stopped = gym_gui("sweep", "stop", sweep_id, home=home.root)
    assert stopped.returncode == 0, stopped.stderr
    assert "STOPPING" in stopped.stdout or "STOPPED" in stopped.stdout
    record = wait_until(lambda: ended(client, sweep_id), 120, "the sweep to stop")
    assert record.state is SweepState.STOPPED
    assert client.get_run(run_id).record.state is RunState.CANCELLED
    view = StudyView.from_data(client.get_sweep(sweep_id).study)
    assert [t.state for t in view.trials] == ["FAIL"]
    assert [r.run_id for r in client.list_runs() if r.sweep_id == sweep_id] == [run_id]
    again = gym_gui("sweep", "stop", sweep_id, home=home.root)
    assert_one_line_error(again, "already ended (STOPPED)")


def test_spec_errors_are_one_line_naming_the_field(daemon: tuple[DaemonClient, Home], tmp_path: Path) -> None:
    _client, home = daemon
    unknown = write_spec(
        tmp_path / "a.yaml", space={"learning-rat": {"type": "float", "low": 0.1, "high": 1}}
    )
    assert_one_line_error(
        gym_gui("sweep", "start", str(unknown), home=home.root), "space.learning-rat", "learning-rate"
    )
    ranged = write_spec(tmp_path / "b.yaml", space={"anneal-lr": {"type": "int", "low": 0, "high": 1}})
    assert_one_line_error(
        gym_gui("sweep", "start", str(ranged), home=home.root), "space.anneal-lr", "type bool"
    )
    bad = write_spec(tmp_path / "c.yaml", trials=0)
    assert_one_line_error(gym_gui("sweep", "start", str(bad), home=home.root), "field 'trials'")
    assert_one_line_error(gym_gui("sweep", "show", "no-such-sweep", home=home.root), "no sweep with id")
    assert_one_line_error(gym_gui("sweep", "best", "../etc", home=home.root), "invalid sweep id")


def test_a_study_in_the_homes_registry_is_refused_and_the_registry_left_as_it_was(
    daemon: tuple[DaemonClient, Home], tmp_path: Path
) -> None:
    _client, home = daemon
    sweeps_before = sorted(home.sweeps_dir.glob("*")) if home.sweeps_dir.exists() else []
    for database in (home.registry_path, home.root / "elsewhere.db"):
        spec = write_spec(tmp_path / "in-home.yaml", storage=f"sqlite:///{database}")
        assert_one_line_error(
            gym_gui("sweep", "start", str(spec), home=home.root), "field 'storage'", "inside the gym_gui home"
        )
    registry = sqlite3.connect(f"file:{home.registry_path}?mode=ro", uri=True)
    try:
        tables = {row[0] for row in registry.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    finally:
        registry.close()
    assert not tables & {"studies", "trials", "alembic_version"}, tables
    assert not (home.root / "elsewhere.db").exists()
    assert (sorted(home.sweeps_dir.glob("*")) if home.sweeps_dir.exists() else []) == sweeps_before


def test_a_trial_whose_run_fails_is_told_fail_with_the_runs_reason(
    daemon: tuple[DaemonClient, Home], tmp_path: Path
) -> None:
    # More minibatches than the batch has steps (4 envs x 128 steps): ppo.py's minibatches hold no
    # step and its first update fails (the spec's check previewed the first choice, which launches).
    client, home = daemon
    spec = write_spec(
        tmp_path / "fail.yaml",
        space={"num-minibatches": {"type": "categorical", "choices": [4, 1000]}},
        sampler={"name": "grid", "seed": 1},
        trials=2,
        parallel=1,
    )
    started = gym_gui("sweep", "start", str(spec), "--wait", home=home.root, timeout=900)
    assert started.returncode == 0, started.stderr
    view = StudyView.from_data(client.get_sweep(sweep_id_of(started.stdout)).study)
    by_choice = {t.params["num-minibatches"]: t for t in view.trials}
    assert by_choice[4].state == "COMPLETE"
    failed = by_choice[1000]
    assert failed.state == "FAIL"
    run = client.get_run(failed.run_ids[0]).record
    assert run.state is RunState.FAILED
    assert failed.user_attrs["gym_gui.reason"] == f"run {run.run_id} FAILED: {run.reason}"


def test_spade_bdi_is_swept_by_the_parameters_it_describes(
    daemon: tuple[DaemonClient, Home], tmp_path: Path
) -> None:
    _client, home = daemon
    bdi = {"worker": "spade_bdi", "env_id": "FrozenLake-v1", "seed": 0, "budget": {"episodes": 50}}
    unknown = write_spec(
        tmp_path / "bdi.yaml", config=bdi, space={"alpah": {"type": "float", "low": 0.1, "high": 0.9}}
    )
    assert_one_line_error(
        gym_gui("sweep", "start", str(unknown), home=home.root), "space.alpah", "gamma", "epsilon_end"
    )
    flag = write_spec(
        tmp_path / "bdi2.yaml", config=bdi, space={"slippery": {"type": "float", "low": 0, "high": 1}}
    )
    assert_one_line_error(gym_gui("sweep", "start", str(flag), home=home.root), "space.slippery", "type bool")


def test_k_seeds_play_a_trial_and_its_objective_is_their_mean(
    daemon: tuple[DaemonClient, Home], tmp_path: Path
) -> None:
    client, home = daemon
    spec = write_spec(tmp_path / "seeds.yaml", trials=1, parallel=2, seeds=2)
    started = gym_gui("sweep", "start", str(spec), "--wait", home=home.root, timeout=900)
    assert started.returncode == 0, started.stderr
    view = StudyView.from_data(client.get_sweep(sweep_id_of(started.stdout)).study)
    (trial,) = view.trials
    assert trial.state == "COMPLETE" and len(trial.run_ids) == 2
    returns = []
    for run_id, seed in zip(trial.run_ids, (1, 2), strict=True):
        run = client.get_run(run_id).record
        assert run.state is RunState.COMPLETED and run.trial == 0
        assert RunDir(run.run_dir).read_config().seed == seed
        reader = TelemetryReader(RunDir(run.run_dir).telemetry_path)
        points = reader.metrics("charts/episodic_return")
        reader.close()
        last = [p.value for p in sorted(points, key=lambda p: (p.step, p.wall_time))][-20:]
        returns.append(sum(last) / len(last))
    assert trial.value == pytest.approx(sum(returns) / 2)


def test_a_plain_optuna_study_is_shown_without_a_daemon(tmp_path: Path) -> None:
    db = tmp_path / "tuner.db"
    study = optuna.create_study(study_name="tuned", storage=f"sqlite:///{db}", direction="minimize")
    study.optimize(lambda t: (t.suggest_float("x", -3, 3) - 1) ** 2, n_trials=6)
    shown = gym_gui("sweep", "show", "--storage", str(db), "--study", "tuned", home=tmp_path / "home")
    assert shown.returncode == 0, shown.stderr
    rows = [line for line in shown.stdout.splitlines() if "COMPLETE" in line]
    assert len(rows) == 6
    assert "best" in rows[0] and f"{study.best_value:.6g}" in rows[0]
    assert not (tmp_path / "home" / "daemon.json").exists()
    missing = gym_gui("sweep", "show", "--storage", str(db), "--study", "nope", home=tmp_path / "home")
    assert_one_line_error(missing, "has no study 'nope'", "tuned")


def test_a_sweep_resumes_after_a_daemon_restart_and_plays_its_count(home: Home, tmp_path: Path) -> None:
    args = ["--heartbeat-timeout", "10", *DAEMON_ARGS]
    client = DaemonClient.connect(home.root, daemon_args=args)
    try:
        spec = write_spec(tmp_path / "restart.yaml", trials=3, parallel=1)
        record = client.start_sweep(json.dumps(yaml.safe_load(spec.read_text())))
        wait_until(
            lambda: any(
                r.state is RunState.RUNNING for r in client.list_runs() if r.sweep_id == record.sweep_id
            ),
            180,
            "the first trial's run to run",
        )
        os.kill(client.info.pid, signal.SIGKILL)
        client.close()
        client = DaemonClient.connect(home.root, daemon_args=args)
        final = wait_until(lambda: ended(client, record.sweep_id), 600, "the resumed sweep to end")
        assert final.state is SweepState.COMPLETED, final.reason
        view = StudyView.from_data(client.get_sweep(record.sweep_id).study)
        assert [t.number for t in view.trials] == [0, 1, 2]
        assert all(t.state == "COMPLETE" for t in view.trials), [(t.state, t.user_attrs) for t in view.trials]
        # the sampler taken up again does not draw the first trial's values again
        assert view.trials[1].params != view.trials[0].params
        first = client.get_run(view.trials[0].run_ids[0])
        # the trial's worker outlived the daemon and reconnected to the new one
        assert first.record.state is RunState.COMPLETED
        assert [c.to_state for c in first.history] == ["QUEUED", "STARTING", "RUNNING", "COMPLETED"]
    finally:
        kill_run_workers(home)
        stop_daemon(client)
