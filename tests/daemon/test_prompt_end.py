"""A run ends when its worker does: the daemon watches the exiting process, not only its loop's tick."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import pytest

from gym_gui.core.config import parse_run_config
from gym_gui.core.processes import wait_exit
from gym_gui.core.states import RunState
from gym_gui.daemon.live import SupervisorSettings
from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.home import Home
from gym_gui.storage.run_dir import RunDir
from gym_gui.storage.telemetry import TelemetryReader
from tests.support import in_process_daemon


@pytest.fixture
def tickless_daemon(home: Home) -> Iterator[DaemonClient]:
    """A daemon whose supervision loop would look at its runs once an hour."""
    with in_process_daemon(home, SupervisorSettings(tick_seconds=3600)) as client:
        yield client


def test_a_finished_worker_ends_its_run_without_the_loops_tick(
    tickless_daemon: DaemonClient, home: Home
) -> None:
    client = tickless_daemon
    config = parse_run_config(
        {"worker": "random", "env_id": "CartPole-v1", "seed": 3, "budget": {"timesteps": 300}}
    )
    record, _token = client.submit(config)
    final = client.wait_for_end(record.run_id, timeout=60)
    assert final.state is RunState.COMPLETED, final.reason
    reader = TelemetryReader(RunDir(home.run_dir(record.run_id)).telemetry_path)
    try:
        assert reader.step_count() == 300
    finally:
        reader.close()


def test_wait_exit_sees_an_end_and_leaves_the_status_to_the_parent() -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", "import sys; sys.stdin.read(); sys.exit(7)"], stdin=subprocess.PIPE
    )
    try:
        assert not wait_exit(child.pid, 0.2)  # still running: the wait runs out
        assert child.stdin is not None
        child.stdin.close()
        assert wait_exit(child.pid, 60)
        assert child.wait(5) == 7  # not reaped by the watch
        assert wait_exit(child.pid, 0)  # a pid that is gone has ended
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
