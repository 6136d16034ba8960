"""The window warns while a live run's disk is low: a mark and tooltip on the run's state, and the status bar."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from pytestqt.qtbot import QtBot

from gym_gui.core.config import parse_run_config
from gym_gui.core.controls import Control
from gym_gui.core.states import RunState
from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.home import Home
from gym_gui.ui.main_window import MainWindow
from gym_gui.ui.runs.model import STATE, WARNING_ROLE


@pytest.fixture
def home(small_home: Home) -> Home:
    """The test's daemon and window use a home on a 16 MB filesystem (about 14 MB free)."""
    return small_home


@pytest.fixture
def daemon_args() -> list[str]:
    # Every run may start, and warns from its start.
    return ["--heartbeat-timeout", "10", "--cancel-grace", "3", "--min-free-mb", "1", "--warn-free-mb", "100"]


def test_the_window_warns_while_a_live_run_s_disk_is_low(
    qtbot: QtBot, home: Home, client: DaemonClient, window: MainWindow
) -> None:
    mount = home.root.parent
    config = parse_run_config(
        {
            "worker": "random",
            "env_id": "FrozenLake-v1",
            "budget": {"episodes": 1_000_000_000},
            "telemetry": {"store_steps": False},
        }
    )
    record, _ = client.submit(config)
    run_id = record.run_id
    client.wait_for_state(run_id, RunState.RUNNING, timeout=60)
    client.control(run_id, Control.PAUSE)
    client.wait_for_state(run_id, RunState.PAUSED, timeout=60)

    qtbot.waitUntil(lambda: window.warning.isVisible(), timeout=30_000)
    assert window.warning.text().startswith("⚠ disk low: ") and f"free on {mount}" in window.warning.text()
    model = window.runs.model
    row = model.run_ids().index(run_id)
    state = model.index(row, STATE)
    assert str(state.data(WARNING_ROLE)).startswith("disk low: ")
    # The window hears of the pause through its watch of the daemon's runs, maybe after the warning.
    qtbot.waitUntil(lambda: str(state.data(Qt.ItemDataRole.ToolTipRole)).startswith("PAUSED"), timeout=30_000)
    tooltip = str(state.data(Qt.ItemDataRole.ToolTipRole))
    assert "⚠ disk low: " in tooltip and f"free on {mount}" in tooltip

    # An ended run warns no more, and nor does the window.
    client.cancel(run_id)
    client.wait_for_end(run_id, timeout=60)
    qtbot.waitUntil(lambda: not window.warning.isVisible(), timeout=30_000)
    assert not state.data(WARNING_ROLE)
