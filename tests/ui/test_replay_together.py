"""Replay together in the window, on a real daemon: two random operators of one comparison opened from the
runs table's menu beside Compare, every pane moved to one step by the buttons, the slider and Play, a
pane whose episode ended earlier done at its last step; and the menu's Replay together on chosen runs."""

from __future__ import annotations

from gym_gui_sdk.render import decode_payload
from PySide6.QtCore import Qt
from pytestqt.qtbot import QtBot

from gym_gui.core.records import StepRecord
from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.comparison import EPISODE_TOTALS
from gym_gui.storage.home import Home
from gym_gui.ui.main_window import MainWindow
from gym_gui.ui.replay_together.view import ReplayTogetherView
from gym_gui.ui.tabs.actor_strip import ACTOR_COLOURS
from tests.ui.test_replay_together_model import play_comparison, stored_steps


def trigger(window: MainWindow, entry: str) -> None:
    """Trigger ``entry`` of the runs table's context menu on the selected runs."""
    menu = window.runs.context_menu()
    assert menu is not None
    next(action for action in menu.actions() if action.text() == entry).trigger()


def wait_for_step(
    qtbot: QtBot, view: ReplayTogetherView, step: int, stored: dict[str, list[StepRecord]]
) -> None:
    """Wait until every pane shows shared step ``step``: its own run's stored step, or its last one,
    done, when its episode is shorter; its picture drawn from that step's payload."""
    qtbot.waitUntil(lambda: not view.reading and view.shown is not None and view.step == step, timeout=10_000)
    assert view.transport.slider.value() == step
    for pane in view.panes:
        steps = stored[pane.run.run_id]
        last = len(steps) - 1
        own = steps[min(step, last)]
        qtbot.waitUntil(
            lambda p=pane, s=own: p.env_view.grid == decode_payload(s.render or b""), timeout=2_000
        )
        earned = f"{sum(s.reward for s in steps[: own.step + 1]):g}"
        where = f"done at step {last}" if step >= last else f"step {step}"
        assert pane.status.text() == f"{where} · return {earned}"
        assert pane.actor.text() == "acted: operator"
        assert ACTOR_COLOURS["operator"] in pane.actor.styleSheet()


def test_a_comparison_replays_together_beside_compare_every_pane_at_one_step(
    window: MainWindow, qtbot: QtBot, client: DaemonClient, home: Home
) -> None:
    comparison, runs = play_comparison(client, home)
    run_ids = [run.run_id for run in runs]
    stored = {run.run_id: stored_steps(run, 0) for run in runs}
    lasts = sorted(len(steps) - 1 for steps in stored.values())
    assert lasts[0] < lasts[1]

    # The runs table's menu on one run of the comparison opens Compare and Replay together.
    qtbot.waitUntil(lambda: all(window.runs.comparison_of(r) == comparison for r in run_ids), timeout=30_000)
    window.runs.select(run_ids[1])
    trigger(window, "Open its comparison")
    view = window.replay_together
    qtbot.waitUntil(lambda: sorted(window.runs.selected_run_ids()) == sorted(run_ids), timeout=30_000)
    qtbot.waitUntil(
        lambda: window.compare_dock.isVisible() and EPISODE_TOTALS in window.compare.tags(), timeout=30_000
    )
    assert window.replay_together_dock.isVisible()
    assert sorted(pane.run.run_id for pane in view.panes) == sorted(run_ids)
    qtbot.waitUntil(lambda: view.shown is not None and not view.reading, timeout=10_000)
    assert [pane.title.text() for pane in view.panes] == [
        f"random — run {pane.run.run_id}" for pane in view.panes
    ]
    assert [view.episode_combo.itemData(i) for i in range(view.episode_combo.count())] == [0, 1]
    assert all(pane.strip.isVisible() for pane in view.panes)  # who acted, under the shared slider

    # Episode 0 for all; the forward button moves every pane a step.
    view.episode_combo.setCurrentIndex(1)
    view.episode_combo.activated.emit(1)
    qtbot.waitUntil(lambda: view.episode == 1 and not view.reading, timeout=10_000)
    view.episode_combo.setCurrentIndex(0)
    view.episode_combo.activated.emit(0)
    qtbot.waitUntil(lambda: view.episode == 0 and not view.reading, timeout=10_000)
    assert view.transport.slider.maximum() == lasts[1]
    wait_for_step(qtbot, view, 0, stored)
    for step in range(1, lasts[1] + 1):
        qtbot.mouseClick(view.transport.forward_button, Qt.MouseButton.LeftButton)
        wait_for_step(qtbot, view, step, stored)  # past the shorter episode's end: done at its last step
    qtbot.mouseClick(view.transport.back_button, Qt.MouseButton.LeftButton)
    wait_for_step(qtbot, view, lasts[1] - 1, stored)

    # The slider moves every pane; Play plays every pane on to the longest episode's end.
    view.transport.slider.setValue(lasts[0])
    wait_for_step(qtbot, view, lasts[0], stored)
    view.transport.slider.setValue(0)
    wait_for_step(qtbot, view, 0, stored)
    view.playback.set_speed(8.0)
    qtbot.mouseClick(view.transport.play_button, Qt.MouseButton.LeftButton)
    assert view.playing
    qtbot.waitUntil(lambda: not view.playing, timeout=20_000)
    wait_for_step(qtbot, view, lasts[1], stored)


def test_the_runs_tables_replay_together_entry_replays_the_selected_runs(
    window: MainWindow, qtbot: QtBot, client: DaemonClient, home: Home
) -> None:
    _comparison, runs = play_comparison(client, home)
    run_ids = [run.run_id for run in runs]
    qtbot.waitUntil(lambda: all(window.runs.info(r) is not None for r in run_ids), timeout=30_000)

    def entries() -> list[str]:
        menu = window.runs.context_menu()
        assert menu is not None
        return [action.text() for action in menu.actions()]

    window.runs.select(run_ids[0])
    assert "Replay together" not in entries()  # one run: nothing to replay it with
    window.runs.select(run_ids)
    assert "Replay together" in entries()
    trigger(window, "Replay together")
    view = window.replay_together
    assert window.replay_together_dock.isVisible()
    assert [pane.run.run_id for pane in view.panes] == window.runs.selected_run_ids()
    qtbot.waitUntil(lambda: view.shown is not None and not view.reading, timeout=10_000)
    assert view.episode == 0 and view.step == 0
    by_run = {run.run_id: run for run in runs}
    for pane, shown in zip(view.panes, view.shown.panes, strict=True):
        first = stored_steps(by_run[pane.run.run_id], 0)[0]
        assert shown.record == first
        qtbot.waitUntil(
            lambda p=pane, s=first: p.env_view.grid == decode_payload(s.render or b""), timeout=2_000
        )

    # More runs than panes: the window says so in one line and keeps what it shows.
    window.replay_runs_together([*run_ids, *run_ids, run_ids[0]])
    assert window.statusBar().currentMessage() == (
        "Replay together shows 2 to 4 runs side by side; the selection has 5"
    )
    assert [pane.run.run_id for pane in view.panes] == window.runs.selected_run_ids()
