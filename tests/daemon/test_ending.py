"""A run always ends, with its first real cause: its directory removed while it runs, its end not
recordable for a while, or a row the daemon holds no worker of — cancel and delete still work."""

from __future__ import annotations

import os
import re
import shutil
import signal
import sqlite3
import time

import pytest

from gym_gui.core.errors import RunBusy, RunNotFound
from gym_gui.core.processes import process_alive
from gym_gui.core.records import RunRecord
from gym_gui.core.states import RunState
from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.home import Home
from gym_gui.storage.registry import RunRegistry
from gym_gui.storage.run_dir import RunDir
from tests.support import gym_gui, random_config, wait_until


def running_run(client: DaemonClient, registry: RunRegistry) -> tuple[str, int]:
    """A random run that would go on for hours, RUNNING; its id and its worker's pid."""
    record, _ = client.submit(random_config("CartPole-v1", episodes=1_000_000_000))
    client.wait_for_state(record.run_id, RunState.RUNNING, timeout=60)
    pid = wait_until(lambda: registry.get(record.run_id).pid, 30, "the worker's pid")
    return record.run_id, pid


def test_a_run_whose_directory_is_removed_fails_saying_so_and_can_be_deleted(
    client: DaemonClient, home: Home, registry: RunRegistry
) -> None:
    run_id, pid = running_run(client, registry)
    run_dir = home.run_dir(run_id)
    shutil.rmtree(run_dir)

    final = client.wait_for_end(run_id, timeout=30)
    assert final.state is RunState.FAILED
    assert final.reason == f"run directory {run_dir} was removed while the run was live"
    wait_until(lambda: not process_alive(pid), 30, "the worker to be stopped")
    assert not run_dir.exists()  # nothing recreated it

    result = gym_gui("delete", "--yes", run_id, home=home.root)
    assert result.returncode == 0, result.stderr
    with pytest.raises(RunNotFound):
        registry.get(run_id)


def test_a_run_whose_end_cannot_be_recorded_yet_keeps_its_first_cause_until_it_is(
    client: DaemonClient, home: Home, registry: RunRegistry
) -> None:
    run_id, pid = running_run(client, registry)
    # Another process holds the registry's write lock: the daemon cannot record anything for a while.
    blocker = sqlite3.connect(home.registry_path, isolation_level=None)
    try:
        blocker.execute("BEGIN IMMEDIATE")
        os.killpg(pid, signal.SIGKILL)
        held = wait_until(
            lambda: client.get_run(run_id).record.warning, 60, "the run's row to say its end is held"
        )
        assert "database is locked" in held
        assert "its end (FAILED: killed by signal 9) is held until it can be recorded" in held
        assert client.get_run(run_id).record.state is RunState.RUNNING
        # A cancel now cannot change how it ended, and says so.
        with pytest.raises(RunBusy, match=re.escape("already ended (FAILED: killed by signal 9)")):
            client.cancel(run_id)
    finally:
        blocker.close()

    final = client.wait_for_end(run_id, timeout=60)
    assert (final.state, final.reason) == (RunState.FAILED, "killed by signal 9")
    assert RunDir(home.run_dir(run_id)).read_manifest().final_state is RunState.FAILED
    assert not client.get_run(run_id).record.warning


def orphan_row(home: Home, registry: RunRegistry, name: str) -> str:
    """A RUNNING row the daemon holds nothing of (no worker, nothing in memory): what a lost end left."""
    run_id = f"CartPole-v1__random__0__{name}"
    RunDir(home.run_dir(run_id)).create()
    registry.create(
        RunRecord(
            run_id=run_id,
            worker="random",
            env_id="CartPole-v1",
            lane="telemetry",
            state=RunState.RUNNING,
            created_at=time.time(),
        )
    )
    return run_id


def test_cancel_and_delete_work_on_a_run_with_no_worker(
    client: DaemonClient, home: Home, registry: RunRegistry
) -> None:
    cancelled = orphan_row(home, registry, "1")
    result = gym_gui("cancel", cancelled, home=home.root, timeout=30)
    assert result.returncode == 0, result.stderr
    record = registry.get(cancelled)
    assert (record.state, record.reason) == (
        RunState.CANCELLED,
        "cancelled by user (no worker of it was running)",
    )

    deleted = orphan_row(home, registry, "2")
    result = gym_gui("delete", "--yes", deleted, home=home.root, timeout=30)
    assert result.returncode == 0, result.stderr
    with pytest.raises(RunNotFound):
        registry.get(deleted)
    assert not home.run_dir(deleted).exists()
