"""The d3rlpy tests' daemon: one per test module, its home's datasets made with Minari's own DataCollector."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.home import Home
from tests.fixtures import SHARED_BUNDLES
from tests.support import module_daemon
from workers.d3rlpy_worker.tests.support import (
    OfflineHome,
    collect_frozenlake,
    collect_good,
    collect_random,
)


@pytest.fixture(scope="module")
def d3rlpy_daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OfflineHome]:
    """A daemon on a home holding datasets Minari's DataCollector recorded: CartPole random play, a good
    CartPole controller with ε-greedy noise, FrozenLake random play."""
    root = tmp_path_factory.mktemp("d3rlpy_home")
    with module_daemon(root, SHARED_BUNDLES, ["--cancel-grace", "20"]) as (client, home):
        with pytest.MonkeyPatch.context() as env:
            env.setenv("MINARI_DATASETS_PATH", str(home.datasets_dir))
            collect_random("cartpole/random-v0", episodes=20, seed=0)
            collect_good("cartpole/good-eps-v0", episodes=8, seed=100, epsilon=0.3)
            collect_frozenlake("frozenlake/random-v0", episodes=30, seed=7)
        yield OfflineHome(client, home)


@pytest.fixture
def offline(d3rlpy_daemon: OfflineHome) -> OfflineHome:
    return d3rlpy_daemon


__all__ = ["DaemonClient", "Home"]
