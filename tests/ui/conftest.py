"""Fixtures for the cockpit tests: real Qt widgets (offscreen) linked to a real daemon in a temporary home."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pytestqt.qtbot import QtBot

from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.home import Home
from gym_gui.ui.daemon_link import DaemonLink


@pytest.fixture
def link(qtbot: QtBot, home: Home, client: DaemonClient) -> Iterator[DaemonLink]:
    """A DaemonLink connected to the test's daemon (the `client` fixture started it)."""
    link = DaemonLink(home.root, autostart=False)
    link.connect_daemon()
    qtbot.waitUntil(lambda: link.connected, timeout=20_000)
    yield link
    link.close()
