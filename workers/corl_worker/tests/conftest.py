"""The CORL tests' daemon and dataset: one each per test module (runs are the slow part)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.home import Home
from tests.fixtures import SHARED_BUNDLES
from tests.support import module_daemon
from workers.corl_worker.tests.support import EPISODES, PENDULUM, make_dataset


@pytest.fixture(scope="module")
def corl_daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[DaemonClient, Home]]:
    """A daemon on a home holding a Pendulum-v1 dataset made by Minari's DataCollector (no reference scores)."""
    root = tmp_path_factory.mktemp("corl_home")
    with module_daemon(root, SHARED_BUNDLES, ["--cancel-grace", "20"]) as daemon:
        make_dataset(daemon[1], PENDULUM, "Pendulum-v1", EPISODES)
        yield daemon


@pytest.fixture(scope="module")
def pendulum(corl_daemon: tuple[DaemonClient, Home]) -> Any:
    """The module home's Pendulum-v1 dataset, as Minari loads it."""
    from minari.dataset.minari_dataset import MinariDataset

    _client, home = corl_daemon
    return MinariDataset(home.datasets_dir / PENDULUM / "data")
