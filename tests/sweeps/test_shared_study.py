"""One study on PostgreSQL played by two daemons with two homes: real PostgreSQL 15 on loopback (password
auth, the password only in the daemons' environment), real daemons over gRPC, real CleanRL PPO trials."""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import optuna
import pytest
import yaml

from gym_gui.core.errors import ConfigError
from gym_gui.core.records import SweepRecord
from gym_gui.core.states import RunState, SweepState
from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.home import Home
from gym_gui.sweeps.study import TRIAL_HOME_ATTR, TRIAL_RUNS_ATTR, StudyView
from tests.fixtures import SHARED_BUNDLES
from tests.postgres import Postgres
from tests.support import (
    assert_one_line_error,
    files_containing,
    gym_gui,
    kill_run_workers,
    module_daemon,
    stop_daemon,
    wait_until,
)
from tests.sweeps.test_sweeps import PPO, ended, write_spec

# Each test plays several CleanRL trials on two daemons at once: on a loaded two-core machine a 2k-step
# PPO trial takes minutes, more than the suite's default limit per test.
pytestmark = pytest.mark.timeout(1500)
DAEMON_ARGS = ["--heartbeat-timeout", "10", "--cancel-grace", "20", "--max-concurrent", "1"]


@pytest.fixture(scope="module")
def daemons(
    tmp_path_factory: pytest.TempPathFactory, postgres: Postgres
) -> Iterator[tuple[tuple[DaemonClient, Home], tuple[DaemonClient, Home]]]:
    """Two daemons, each with its home, both given the database password in their environment only."""
    with pytest.MonkeyPatch.context() as env:
        env.setenv("PGPASSWORD", postgres.password)
        with (
            module_daemon(tmp_path_factory.mktemp("home_a"), SHARED_BUNDLES, DAEMON_ARGS) as a,
            module_daemon(tmp_path_factory.mktemp("home_b"), SHARED_BUNDLES, DAEMON_ARGS) as b,
        ):
            yield a, b


def spec_data(directory: Path, postgres: Postgres, study: str, **fields: Any) -> dict[str, Any]:
    """A spec of PPO trials (test_sweeps' space and objective) whose study is ``study`` in PostgreSQL."""
    path = write_spec(
        directory / f"{study}.yaml",
        storage=postgres.url,
        study=study,
        parallel=1,
        **fields,
    )
    data: dict[str, Any] = yaml.safe_load(path.read_text())
    return data


def runs_of(client: DaemonClient, sweep_id: str) -> list[Any]:
    return [r for r in client.list_runs() if r.sweep_id == sweep_id]


def test_two_daemons_play_one_study_of_four_trials_without_duplicating_one(
    daemons: tuple[tuple[DaemonClient, Home], tuple[DaemonClient, Home]], postgres: Postgres, tmp_path: Path
) -> None:
    (client_a, home_a), (client_b, home_b) = daemons
    data = spec_data(tmp_path, postgres, "shared-ppo", trials=4)
    started_a = client_a.start_sweep(json.dumps(data))
    started_b = client_b.start_sweep(json.dumps(data))  # the same storage and study: joins it
    assert (
        (started_a.storage, started_a.study)
        == (started_b.storage, started_b.study)
        == (postgres.url, "shared-ppo")
    )

    # Both daemons play a trial at once (each plays one at a time).
    wait_until(
        lambda: (
            any(r.state is RunState.RUNNING for r in runs_of(client_a, started_a.sweep_id))
            and any(r.state is RunState.RUNNING for r in runs_of(client_b, started_b.sweep_id))
        ),
        300,
        "both daemons to run a trial",
    )
    end_a = wait_until(lambda: ended(client_a, started_a.sweep_id), 900, "daemon A's sweep to end")
    end_b = wait_until(lambda: ended(client_b, started_b.sweep_id), 900, "daemon B's sweep to end")
    assert end_a.state is SweepState.COMPLETED and end_b.state is SweepState.COMPLETED, (end_a, end_b)

    study = optuna.load_study(study_name="shared-ppo", storage=postgres.url)
    trials = study.get_trials()
    assert sorted(t.number for t in trials) == [0, 1, 2, 3]
    assert all(t.state == optuna.trial.TrialState.COMPLETE for t in trials)
    played: dict[str, list[int]] = {home_a.home_id: [], home_b.home_id: []}
    homes = {home_a.home_id: (client_a, home_a, started_a), home_b.home_id: (client_b, home_b, started_b)}
    for trial in trials:
        home_id = trial.user_attrs[TRIAL_HOME_ATTR]
        played[home_id].append(trial.number)
        client, home, sweep = homes[home_id]
        (run_id,) = trial.user_attrs[TRIAL_RUNS_ATTR]
        run = client.get_run(run_id).record
        assert run.state is RunState.COMPLETED
        assert (run.sweep_id, run.trial) == (sweep.sweep_id, trial.number)
        assert Path(run.run_dir).is_relative_to(home.runs_dir)
        (other,) = [c for h, (c, _, _) in homes.items() if h != home_id]
        assert run_id not in {r.run_id for r in other.list_runs()}
    assert all(played.values()), played  # each daemon played trials of the study
    for client, _home, sweep in homes.values():
        assert len(runs_of(client, sweep.sweep_id)) == len(played[_home.home_id])

    # Either daemon shows every trial; the other home's are marked, without run links.
    view = StudyView.from_data(client_a.get_sweep(started_a.sweep_id).study)
    assert sorted(t.number for t in view.trials) == [0, 1, 2, 3]
    shown = gym_gui("sweep", "show", started_a.sweep_id, home=home_a.root)
    assert shown.returncode == 0, shown.stderr
    rows = [line for line in shown.stdout.splitlines() if "COMPLETE" in line and "│" in line]
    assert len(rows) == 4
    assert sum(f"in home {home_b.home_id}" in row for row in rows) == len(played[home_b.home_id])
    for trial in trials:
        if trial.user_attrs[TRIAL_HOME_ATTR] == home_a.home_id:
            assert any(trial.user_attrs[TRIAL_RUNS_ATTR][0] in row for row in rows)

    # The study read straight from PostgreSQL, as a user names it.
    direct = gym_gui("sweep", "show", "--storage", postgres.url, "--study", "shared-ppo", home=home_b.root)
    assert direct.returncode == 0, direct.stderr
    assert len([line for line in direct.stdout.splitlines() if "COMPLETE" in line]) == 4
    assert sum(f"in home {home_a.home_id}" in line for line in direct.stdout.splitlines()) == len(
        played[home_a.home_id]
    )

    # The password is in the daemons' environment only: no file of either home holds it.
    for home in (home_a, home_b):
        assert files_containing(home.root, postgres.password.encode()) == []


def test_a_restarted_daemon_leaves_another_daemons_running_trial_alone(
    daemons: tuple[tuple[DaemonClient, Home], tuple[DaemonClient, Home]],
    postgres: Postgres,
    tmp_path: Path,
) -> None:
    (client_a, home_a), _b = daemons
    data = spec_data(
        tmp_path, postgres, "restart-ppo", trials=2, config={**PPO, "budget": {"timesteps": 500_000}}
    )
    sweep_a = client_a.start_sweep(json.dumps(data))
    run_a = wait_until(
        lambda: next((r for r in runs_of(client_a, sweep_a.sweep_id) if r.state is RunState.RUNNING), None),
        300,
        "daemon A's trial to run",
    )
    home_c = Home(tmp_path / "home_c").ensure()
    client_c = DaemonClient.connect(home_c.root, daemon_args=DAEMON_ARGS)
    try:
        sweep_c = client_c.start_sweep(json.dumps(data))
        wait_until(
            lambda: any(r.state is RunState.RUNNING for r in runs_of(client_c, sweep_c.sweep_id)),
            300,
            "daemon C's trial to run",
        )
        # C dies with its trial's worker: its trial's run is lost; A's trial goes on.
        os.kill(client_c.info.pid, signal.SIGKILL)
        client_c.close()
        kill_run_workers(home_c)
        client_c = DaemonClient.connect(home_c.root, daemon_args=DAEMON_ARGS)
        record: SweepRecord = wait_until(lambda: ended(client_c, sweep_c.sweep_id), 300, "C's sweep to end")
        assert record.state is SweepState.COMPLETED
        assert record.reason == "2 trials played, 1 of them by this daemon"

        study = optuna.load_study(study_name="restart-ppo", storage=postgres.url)
        by_home = {t.user_attrs[TRIAL_HOME_ATTR]: t for t in study.get_trials()}
        assert by_home[home_c.home_id].state == optuna.trial.TrialState.FAIL
        assert by_home[home_a.home_id].state == optuna.trial.TrialState.RUNNING
        assert by_home[home_a.home_id].user_attrs[TRIAL_RUNS_ATTR] == [run_a.run_id]
        assert client_a.get_run(run_a.run_id).record.state is RunState.RUNNING
    finally:
        kill_run_workers(home_c)
        stop_daemon(client_c)
    client_a.stop_sweep(sweep_a.sweep_id)
    final = wait_until(lambda: ended(client_a, sweep_a.sweep_id), 120, "A's sweep to stop")
    assert final.state is SweepState.STOPPED


def test_a_storage_url_with_a_password_is_refused_and_nothing_stored(
    daemons: tuple[tuple[DaemonClient, Home], tuple[DaemonClient, Home]], postgres: Postgres, tmp_path: Path
) -> None:
    (client_a, home_a), _b = daemons
    url = f"postgresql+psycopg://{postgres.user}:{postgres.password}@127.0.0.1:{postgres.port}/{postgres.database}"
    spec = write_spec(tmp_path / "secret.yaml", storage=url, study="secret")
    before = {r.sweep_id for r in client_a.list_sweeps()}
    refused = gym_gui("sweep", "start", str(spec), home=home_a.root)
    assert_one_line_error(refused, "field 'storage'", "holds a password", "PGPASSWORD", "~/.pgpass")
    assert postgres.password not in refused.stderr
    # The daemon refuses it too (a client that skips the CLI's check), in the same words.
    with pytest.raises(ConfigError, match="holds a password") as raised:
        client_a.start_sweep(json.dumps(yaml.safe_load(spec.read_text())))
    assert postgres.password not in str(raised.value)
    assert {r.sweep_id for r in client_a.list_sweeps()} == before
    assert files_containing(home_a.root, postgres.password.encode()) == []


def test_joining_a_study_with_another_space_is_refused_naming_the_difference(
    daemons: tuple[tuple[DaemonClient, Home], tuple[DaemonClient, Home]], postgres: Postgres, tmp_path: Path
) -> None:
    (client_a, _home_a), (client_b, home_b) = daemons
    data = spec_data(tmp_path, postgres, "joined-ppo", trials=1)
    sweep_a = client_a.start_sweep(json.dumps(data))
    other = write_spec(
        tmp_path / "other.yaml",
        storage=postgres.url,
        study="joined-ppo",
        trials=1,
        space={**data["space"], "num-envs": {"type": "categorical", "choices": [1, 2]}},
    )
    swept = {r.sweep_id for r in client_b.list_sweeps()}
    refused = gym_gui("sweep", "start", str(other), home=home_b.root)
    assert_one_line_error(refused, "study 'joined-ppo' cannot be joined", "space.num-envs.choices", "[1, 2]")
    assert {r.sweep_id for r in client_b.list_sweeps()} == swept
    assert {p.name for p in home_b.sweeps_dir.glob("*")} == swept  # no directory left of the refused one
    final = wait_until(lambda: ended(client_a, sweep_a.sweep_id), 600, "A's sweep to end")
    assert final.state is SweepState.COMPLETED
    assert len(optuna.load_study(study_name="joined-ppo", storage=postgres.url).trials) == 1
