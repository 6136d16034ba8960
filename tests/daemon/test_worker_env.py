"""The environment a worker gets: its numeric thread pools sized to the runs that may go at once."""

from __future__ import annotations

import pytest
from gym_gui_sdk import THREAD_ENV

from gym_gui.core.config import parse_run_config
from gym_gui.daemon.live import usable_cpus
from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.home import Home
from tests.support import stop_daemon

CONFIG = parse_run_config({"worker": "random", "env_id": "FrozenLake-v1", "budget": {"episodes": 1}})


def worker_threads(home: Home, max_concurrent: int) -> dict[str, str]:
    client = DaemonClient.connect(home.root, daemon_args=["--max-concurrent", str(max_concurrent)])
    try:
        env = client.preview(CONFIG).env
    finally:
        stop_daemon(client)
    return {name: env[name] for name in THREAD_ENV}


@pytest.mark.parametrize("max_concurrent", [1, 2, 64])
def test_each_worker_gets_the_cpus_its_share_of_the_concurrent_runs(
    home: Home, monkeypatch: pytest.MonkeyPatch, max_concurrent: int
) -> None:
    for name in THREAD_ENV:
        monkeypatch.delenv(name, raising=False)
    expected = str(max(1, usable_cpus() // max_concurrent))
    assert worker_threads(home, max_concurrent) == dict.fromkeys(THREAD_ENV, expected)


def test_thread_counts_set_where_the_daemon_starts_win(home: Home, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    monkeypatch.delenv("MKL_NUM_THREADS", raising=False)
    monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    expected = str(max(1, usable_cpus() // 1))
    assert worker_threads(home, 1) == {
        "OMP_NUM_THREADS": "3",
        "MKL_NUM_THREADS": expected,
        "OPENBLAS_NUM_THREADS": expected,
    }
