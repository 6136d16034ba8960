"""`gym-gui prune` against a real daemon: ended runs by age and state, each sweep's best kept, the disk
given back as du counts it, --dry-run changing nothing, a live run never touched, bad rules on one line."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import optuna
import pytest
from gym_gui_sdk.worker import WorkerSession

from gym_gui.core.config import parse_run_config
from gym_gui.core.pruning import PruneRules
from gym_gui.core.records import SweepRecord
from gym_gui.core.states import RunState, SweepState
from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.home import Home
from gym_gui.storage.registry import RunRegistry
from gym_gui.storage.space import format_bytes
from gym_gui.sweeps.spec import parse_spec, write_spec
from tests.fixtures import SHARED_BUNDLES
from tests.support import assert_one_line_error, gym_gui, module_daemon, run_record

DAY = 86400.0


@dataclass(frozen=True)
class Pruned:
    home: Home
    registry: RunRegistry
    client: DaemonClient


def _du(path: Path) -> int:
    """The disk under ``path`` as du counts it (bytes of allocated blocks)."""
    return int(
        subprocess.run(
            ["du", "-s", "--block-size=1", str(path)], capture_output=True, text=True, check=True
        ).stdout.split()[0]
    )


def _run(
    home: Home,
    registry: RunRegistry,
    run_id: str,
    state: RunState,
    ended_days_ago: float | None,
    size: int = 20_000,
    **fields: object,
) -> None:
    """A run's row in the daemon's registry (written directly, as bench/scale.py does: decision 0032)
    and a directory holding ``size`` bytes."""
    now = time.time()
    ended = None if ended_days_ago is None else now - ended_days_ago * DAY
    created = (ended or now) - 60
    registry.create(run_record(run_id, state, created_at=created, ended_at=ended, **fields))
    directory = home.run_dir(run_id)
    directory.mkdir(parents=True)
    (directory / "payload.bin").write_bytes(os.urandom(size))


def _sweep(
    home: Home, registry: RunRegistry, sweep_id: str, state: SweepState, values: list[float | None]
) -> None:
    """A sweep played elsewhere: its row, spec and an Optuna study (maximize) of trials with ``values``
    (None: pruned), each trial's run ended and in the registry."""
    directory = home.sweep_dir(sweep_id)
    directory.mkdir(parents=True)
    url = f"sqlite:///{directory / 'study.db'}"
    spec = parse_spec(
        {
            "config": {"worker": "random", "env_id": "CartPole-v1", "budget": {"episodes": 1}},
            "space": {"x": {"type": "float", "low": 0, "high": 10}},
            "objective": {"metric": "episode/return", "direction": "maximize"},
            "trials": len(values),
            "storage": url,
            "study": sweep_id,
        }
    )
    write_spec(directory, spec)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(study_name=sweep_id, storage=url, direction="maximize")
    distribution = optuna.distributions.FloatDistribution(0, 10)
    for number, value in enumerate(values):
        trial_state = (
            optuna.trial.TrialState.COMPLETE if value is not None else optuna.trial.TrialState.PRUNED
        )
        study.add_trial(
            optuna.trial.create_trial(
                params={"x": float(number)}, distributions={"x": distribution}, value=value, state=trial_state
            )
        )
        run_state = RunState.COMPLETED if value is not None else RunState.PRUNED
        _run(home, registry, f"{sweep_id}-t{number}", run_state, 0.01, sweep_id=sweep_id, trial=number)
    record = SweepRecord(
        sweep_id, sweep_id, state, str(directory), url, sweep_id, spec.model_dump_json(), time.time()
    )
    registry.create_sweep(record)


@pytest.fixture(scope="module")
def pruned(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pruned]:
    root: Path = tmp_path_factory.mktemp("prune_home")
    with module_daemon(root, SHARED_BUNDLES, ["--cancel-grace", "3"]) as (client, home):
        registry = RunRegistry(home.registry_path)
        # For the rules by age and state: no sweep's, and none ended in a sweep trial's way.
        _run(home, registry, "old-completed", RunState.COMPLETED, 40, size=50_000)
        _run(home, registry, "old-failed", RunState.FAILED, 45, archived=True)
        _run(home, registry, "new-failed", RunState.FAILED, 0.01)
        _run(home, registry, "old-but-running", RunState.RUNNING, None, size=1000, pid=None)
        # For --keep-best N --per-sweep: recent trials, so the rules by age never see them.
        _sweep(home, registry, "done", SweepState.COMPLETED, [1.0, 4.0, 3.0, 2.0, None])
        _sweep(home, registry, "playing", SweepState.RUNNING, [5.0])
        try:
            yield Pruned(home, registry, client)
        finally:
            registry.close()


def _ids(pruned: Pruned) -> set[str]:
    return {run.run_id for run in pruned.registry.list(include_archived=True)}


def test_old_and_failed_runs_go_with_the_disk_they_held_and_a_dry_run_changes_nothing(pruned: Pruned) -> None:
    home = pruned.home
    old = ["old-completed", "old-failed"]
    held = {run_id: _du(home.run_dir(run_id)) for run_id in old}
    before = _ids(pruned)

    dry = gym_gui("prune", "--older-than", "30d", "--dry-run", home=home.root)
    assert dry.returncode == 0, dry.stderr
    assert all(run_id in dry.stdout for run_id in old) and "old-but-running" not in dry.stdout
    assert (
        f"2 runs would be deleted, giving back {format_bytes(sum(held.values()))} (--dry-run: nothing changed)"
        in dry.stdout
    )
    assert _ids(pruned) == before and all(home.run_dir(run_id).exists() for run_id in old)

    # Asked first: no is no.
    refused = gym_gui("prune", "--older-than", "30d", "--state", "FAILED", home=home.root, input="n\n")
    assert refused.returncode == 1 and "old-failed" in refused.stdout
    assert _ids(pruned) == before

    failed = gym_gui("prune", "--older-than", "30d", "--state", "FAILED", home=home.root, input="y\n")
    assert failed.returncode == 0, failed.stderr
    assert f"1 run deleted, {format_bytes(held['old-failed'])} given back" in failed.stdout
    assert not home.run_dir("old-failed").exists() and "old-failed" not in _ids(pruned)

    documented = gym_gui("prune", "--older-than", "30d", "--yes", "--json", home=home.root)
    result = json.loads(documented.stdout)
    assert [run["record"]["run_id"] for run in result["runs"]] == ["old-completed"]
    assert result["dry_run"] is False and result["bytes"] == result["runs"][0]["bytes"] >= 50_000
    assert not home.run_dir("old-completed").exists()

    # The live run stays whatever its age; the recent failure stays for the rule by age.
    assert {"old-but-running", "new-failed"} <= _ids(pruned)
    assert home.run_dir("old-but-running").exists()
    again = gym_gui("prune", "--older-than", "30d", "--yes", home=home.root)
    assert "no run matches: nothing to prune" in again.stdout


def test_each_sweep_keeps_its_best_trials_and_a_playing_sweep_keeps_all(pruned: Pruned) -> None:
    home = pruned.home
    outside = _ids(pruned) - {run_id for run_id in _ids(pruned) if run_id.startswith(("done-", "playing-"))}
    result = gym_gui("prune", "--keep-best", "2", "--per-sweep", "--yes", home=home.root)
    assert result.returncode == 0, result.stderr
    # Values 1, 4, 3, 2 and a pruned trial: the two best (4 and 3) stay.
    assert "3 runs deleted" in result.stdout and "; 2 kept among their sweep's best" in result.stdout
    assert "kept playing-t0: its sweep playing is still playing" in result.stdout
    left = _ids(pruned)
    assert {"done-t1", "done-t2", "playing-t0"} <= left
    assert not {"done-t0", "done-t3", "done-t4"} & left
    assert outside <= left  # runs of no sweep are not this rule's


def test_a_live_run_is_never_pruned_whatever_the_rules_name(pruned: Pruned) -> None:
    client = pruned.client
    config = parse_run_config({"worker": "human", "env_id": "FrozenLake-v1", "budget": {"episodes": 1}})
    record, token = client.submit(config)
    session = WorkerSession(client.info.address, record.run_id, token)
    session.start()
    try:
        session.started("none")
        client.wait_for_state(record.run_id, RunState.RUNNING, timeout=30)
        # Any age, and the live run named: the daemon still leaves it.
        result = client.prune(PruneRules(older_than=0.0, run_ids=(record.run_id,)))
        assert result.runs == [] and result.bytes == 0
        assert client.get_run(record.run_id).record.state is RunState.RUNNING
        assert pruned.home.run_dir(record.run_id).exists()
    finally:
        session.finish()
    assert client.wait_for_end(record.run_id, timeout=30).state is RunState.COMPLETED


def test_rules_that_cannot_be_are_one_line_naming_the_option(tmp_path: Path) -> None:
    home = tmp_path / "home"
    assert_one_line_error(gym_gui("prune", "--older-than", "a month", home=home), "--older-than", "'a month'")
    assert_one_line_error(gym_gui("prune", "--state", "FAILED,RUNNING", home=home), "--state", "RUNNING")
    assert_one_line_error(gym_gui("prune", "--state", "BROKEN", home=home), "--state", "'BROKEN'")
    assert_one_line_error(gym_gui("prune", "--keep-best", "3", home=home), "--keep-best", "--per-sweep")
    assert_one_line_error(gym_gui("prune", home=home), "--older-than", "--state")
    assert_one_line_error(
        gym_gui("prune", "--keep-best", "-1", "--per-sweep", home=home), "--keep-best", code=2
    )
    # Refused before any daemon was asked.
    assert not (home / "daemon.json").exists()
