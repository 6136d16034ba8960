"""The environment a worker gets: its numeric thread pools sized to the runs that may go at once, and
what its env's family needs."""

from __future__ import annotations

import pytest
from gym_gui_sdk import ENV_FAMILY_MODULE, THREAD_ENV

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


def test_a_worker_gets_its_envs_family_variables_and_the_module_registering_its_id(home: Home) -> None:
    client = DaemonClient.connect(home.root)
    try:
        hopper, lava = (
            client.preview(
                parse_run_config({"worker": "random", "env_id": env_id, "budget": {"episodes": 1}})
            ).env
            for env_id in ("Hopper-v5", "MiniGrid-LavaGapS5-v0")
        )
    finally:
        stop_daemon(client)
    assert hopper[ENV_FAMILY_MODULE] == "mujoco" and hopper["MUJOCO_GL"] == "egl"
    # An id outside the catalog, of a family by its prefix: the worker imports minigrid to make it.
    assert lava[ENV_FAMILY_MODULE] == "minigrid"
