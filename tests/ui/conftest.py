"""Fixtures for the cockpit tests: real Qt widgets (offscreen) linked to a real daemon in a temporary home."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pytestqt.qtbot import QtBot

from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.home import Home
from gym_gui.ui.daemon_link import DaemonLink
from gym_gui.ui.main_window import MainWindow
from gym_gui.ui.settings import Settings


@pytest.fixture
def link(qtbot: QtBot, home: Home, client: DaemonClient) -> Iterator[DaemonLink]:
    """A DaemonLink connected to the test's daemon (the `client` fixture started it)."""
    link = DaemonLink(home.root, autostart=False)
    link.connect_daemon()
    qtbot.waitUntil(lambda: link.connected, timeout=20_000)
    yield link
    link.close()


@pytest.fixture
def window(qtbot: QtBot, home: Home, link: DaemonLink) -> Iterator[MainWindow]:
    """The cockpit window on the test's daemon, shown offscreen."""
    window = MainWindow(link, Settings(home.root))
    qtbot.addWidget(window)
    window.show()
    yield window
    window.run_view.clear()
