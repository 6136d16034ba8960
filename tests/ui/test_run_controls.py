"""Pause, resume, checkpoint now and the render rate from the window, against a real daemon and real workers."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QPushButton
from pytestqt.qtbot import QtBot

from gym_gui.core.config import parse_run_config
from gym_gui.core.processes import process_alive
from gym_gui.play.seat import Seat
from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.registry import RunRegistry
from gym_gui.ui.daemon_link import DaemonLink
from gym_gui.ui.main_window import MainWindow
from gym_gui.ui.runs.table import RunsTable
from gym_gui.ui.tabs.live import LiveTab
from tests.support import wait_until, wait_until_stable


def _long_random_run(client: DaemonClient, env_id: str = "CartPole-v1", **telemetry: object) -> str:
    """A random-worker run far longer than a test watches (the `client` fixture kills it at the end)."""
    config = parse_run_config(
        {
            "worker": "random",
            "env_id": env_id,
            "seed": 0,
            "budget": {"timesteps": 100_000_000},
            "telemetry": telemetry,
        }
    )
    record, _ = client.submit(config)
    return record.run_id


def _click(qtbot: QtBot, button: QPushButton) -> None:
    assert button.isEnabled(), f"{button.text()} is disabled: {button.toolTip()}"
    qtbot.mouseClick(button, Qt.MouseButton.LeftButton)


def _menu_entries(table: RunsTable) -> dict[str, bool]:
    menu = table.context_menu()
    assert menu is not None
    try:
        return {action.text(): action.isEnabled() for action in menu.actions()}
    finally:
        menu.deleteLater()


def test_the_window_pauses_and_resumes_a_random_run_from_the_table_and_the_live_tab(
    qtbot: QtBot, window: MainWindow, client: DaemonClient, registry: RunRegistry
) -> None:
    run_id = _long_random_run(client)
    table = window.runs
    qtbot.waitUntil(lambda: table.state_of(run_id) == "RUNNING", timeout=30_000)
    table.select(run_id)
    live = window.run_view.tab_list()[0]
    assert isinstance(live, LiveTab) and live.run is not None and live.run.run_id == run_id
    qtbot.waitUntil(lambda: live.steps_seen > 0, timeout=30_000)
    pid = registry.get(run_id).pid
    assert pid is not None

    # Enabled from the run's state and its worker's capabilities: the random worker cannot checkpoint.
    assert table.pause_button.isEnabled() and not table.resume_button.isEnabled()
    assert not table.checkpoint_button.isEnabled()
    assert "worker random cannot checkpoint on demand" in table.checkpoint_button.toolTip()
    assert live.controls.pause_button.isEnabled() and not live.controls.resume_button.isEnabled()
    assert live.controls.checkpoint_button.isHidden()  # the Live tab shows only what the worker can do
    entries = _menu_entries(table)
    assert (entries["Pause"], entries["Resume"], entries["Checkpoint"]) == (True, False, False)

    _click(qtbot, table.pause_button)
    qtbot.waitUntil(lambda: table.state_of(run_id) == "PAUSED", timeout=30_000)
    qtbot.waitUntil(lambda: not live.paused_badge.isHidden(), timeout=10_000)
    assert "PAUSED" in live.status.text()
    assert registry.get(run_id).state.value == "PAUSED"
    assert process_alive(pid), "a paused run must keep its process"
    held = wait_until_stable(lambda: client.get_run(run_id).progress.steps, what="the paused run's steps")
    assert not table.pause_button.isEnabled() and table.resume_button.isEnabled()
    assert live.controls.resume_button.isEnabled() and not live.controls.pause_button.isEnabled()
    entries = _menu_entries(table)
    assert (entries["Pause"], entries["Resume"], entries["Checkpoint"]) == (False, True, False)

    _click(qtbot, live.controls.resume_button)
    qtbot.waitUntil(lambda: table.state_of(run_id) == "RUNNING", timeout=30_000)
    qtbot.waitUntil(lambda: live.paused_badge.isHidden(), timeout=10_000)
    wait_until(lambda: client.get_run(run_id).progress.steps > held + 5000, 60, "the resumed run to step on")
    assert registry.get(run_id).pid == pid and process_alive(pid), "resume must continue the same process"

    # The context menu's entries are the buttons: Pause from it, then Cancel a paused run.
    menu = table.context_menu()
    assert menu is not None
    (pause,) = [action for action in menu.actions() if action.text() == "Pause"]
    pause.trigger()
    menu.deleteLater()
    qtbot.waitUntil(lambda: table.state_of(run_id) == "PAUSED", timeout=30_000)
    _click(qtbot, table.cancel_button)
    qtbot.waitUntil(lambda: table.state_of(run_id) == "CANCELLED", timeout=30_000)
    assert [c.to_state for c in client.get_run(run_id).history][-2:] == ["PAUSED", "CANCELLED"]
    assert not any(button.isEnabled() for button in table.control_buttons.values())
    assert not live.controls.pause_button.isEnabled() and not live.controls.resume_button.isEnabled()


def test_the_live_tab_render_rate_starts_the_frames_of_a_pixel_env(
    qtbot: QtBot, link: DaemonLink, client: DaemonClient
) -> None:
    tab = LiveTab(link)
    qtbot.addWidget(tab)
    tab.resize(1000, 700)
    tab.show()
    assert not tab.controls.render_spin.isEnabled() and not tab.controls.pause_button.isEnabled()
    run_id = _long_random_run(client, render_fps=0)
    tab.attach(client.get_run(run_id).record)
    spin = tab.controls.render_spin
    assert not spin.isHidden()  # a telemetry-lane run streams frames
    qtbot.waitUntil(lambda: spin.isEnabled(), timeout=30_000)
    # Started without frames: steps arrive, pictures do not.
    qtbot.waitUntil(lambda: tab.steps_seen > 5000, timeout=30_000)
    assert tab.frames_offered == 0 and spin.value() == 0

    # As a user sets it: type the rate and press Enter.
    spin.setFocus()
    spin.selectAll()
    QTest.keyClicks(spin, "15")
    QTest.keyClick(spin, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: tab.frames_offered > 3, timeout=30_000)
    qtbot.waitUntil(lambda: tab.frames_drawn > 0, timeout=10_000)
    assert f"render rate 15 fps for {run_id}" in tab.control_message.text()
    tab.detach()
    client.cancel(run_id)
    client.wait_for_end(run_id, timeout=60)


def test_controls_a_worker_cannot_take_are_disabled_and_say_why(
    qtbot: QtBot, window: MainWindow, client: DaemonClient
) -> None:
    session = Seat(client, "FrozenLake-v1", seed=0)
    try:
        session.start()
        table = window.runs
        qtbot.waitUntil(lambda: table.state_of(session.run_id) == "RUNNING", timeout=30_000)
        table.select(session.run_id)
        for button in table.control_buttons.values():
            assert not button.isEnabled(), button.text()
        assert table.pause_button.toolTip() == "worker human cannot pause"
        assert table.checkpoint_button.toolTip() == "worker human cannot checkpoint on demand"
        entries = _menu_entries(table)
        assert not (entries["Pause"] or entries["Resume"] or entries["Checkpoint"])
        live = window.run_view.tab_list()[0]
        assert isinstance(live, LiveTab)
        assert not live.controls.pause_button.isEnabled() and not live.controls.resume_button.isEnabled()
        assert live.controls.pause_button.toolTip() == "worker human cannot pause"
        assert live.controls.checkpoint_button.isHidden()
    finally:
        session.close()
