"""The CleanRL tests' daemon: one per test module (CleanRL runs are the slow part; the daemon is not)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.home import Home
from tests.fixtures import SHARED_BUNDLES
from tests.support import module_daemon


@pytest.fixture(scope="module")
def cleanrl_daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[DaemonClient, Home]]:
    """One daemon for the module (CleanRL runs are the slow part; the daemon is not)."""
    root = tmp_path_factory.mktemp("cleanrl_home")
    with module_daemon(root, SHARED_BUNDLES, ["--cancel-grace", "20"]) as daemon:
        yield daemon
