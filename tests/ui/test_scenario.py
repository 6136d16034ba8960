"""The headline scenario, end to end on the real window against a real daemon, by mouse and keyboard only.

A researcher plays FrozenLake by keyboard, replays what they played, launches a CleanRL PPO run from
its form, watches its return curve climb in the Charts tab, opens its TensorBoard, and then watches
the trained agent play in an evaluation run's Live tab. Widgets are only read to check what the
screen shows; everything a user does goes through QTest mouse clicks and key presses.
"""

from __future__ import annotations

import hashlib
import json
import urllib.request
from functools import partial
from typing import TypeVar

import numpy as np
from gym_gui_sdk.render import decode_payload
from PySide6.QtCore import QPoint, Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import (
    QApplication,
    QComboBox,
    QLineEdit,
    QSpinBox,
    QTableView,
    QTableWidgetItem,
    QWidget,
)
from pytestqt.qtbot import QtBot

from gym_gui.core.states import RunState
from gym_gui.envs.catalog import catalog
from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.home import Home
from gym_gui.storage.run_dir import RunDir
from gym_gui.storage.telemetry import TelemetryReader
from gym_gui.ui.control_panel import AGENT, HUMAN
from gym_gui.ui.forms.form import GeneratedForm
from gym_gui.ui.main_window import MainWindow
from gym_gui.ui.runs.model import ID, RUN_ID_ROLE
from gym_gui.ui.tabs.base import RunTab
from gym_gui.ui.tabs.charts import ChartsTab
from gym_gui.ui.tabs.checkpoints import CheckpointsTab
from gym_gui.ui.tabs.live import LiveTab
from gym_gui.ui.tabs.replay import ReplayTab
from gym_gui.ui.tabs.tensorboard import TensorBoardTab
from gym_gui.workers import worker_catalog
from tests.ui.test_forms_and_runs import DESCRIBE_TIMEOUT
from tests.ui.test_human_play import key

# The CleanRL kind's episodic returns, as the window finds them (its spec's return metric).
RETURNS = worker_catalog().return_metric("cleanrl")

LEFT = Qt.MouseButton.LeftButton
NO_MODIFIER = Qt.KeyboardModifier.NoModifier
TIMESTEPS = 4096  # 8 PPO updates of 4 envs × 128 steps: long enough for the returns to rise
EPISODES = 1000  # evaluation episodes: far more than the test watches before it cancels
FINAL_MODEL = "checkpoints/final.cleanrl_model"
TabT = TypeVar("TabT", bound=RunTab)


def click(widget: QWidget, pos: QPoint | None = None) -> None:
    """A left click, at the widget's centre unless told where."""
    assert widget.isVisible() and widget.isEnabled(), widget
    QTest.mouseClick(widget, LEFT, NO_MODIFIER, widget.rect().center() if pos is None else pos)


def press(qtbot: QtBot, name: str, modifier: Qt.KeyboardModifier = NO_MODIFIER) -> None:
    """A key press where a keyboard delivers it: to the focused widget, else to the active window."""
    target = QApplication.focusWidget() or QApplication.activeWindow()
    assert target is not None, "no window is active"
    qtbot.keyClick(target, key(name), modifier)


def type_into(qtbot: QtBot, edit: QLineEdit | QSpinBox, text: str) -> None:
    """Click into a field, select what it holds and type over it."""
    click(edit)
    qtbot.waitUntil(edit.hasFocus, timeout=2_000)
    press(qtbot, "A", Qt.KeyboardModifier.ControlModifier)
    press_keys(qtbot, text)
    assert edit.text() == text


def choose(qtbot: QtBot, combo: QComboBox, typed: str, expected: str) -> None:
    """Open a combo box's list with a click, type the start of an entry and take it with Return."""
    click(combo)
    popup = combo.view().window()
    # The list is a window of its own: keys go to it once the platform has given it the keyboard.
    qtbot.waitUntil(
        lambda: popup.isVisible() and QApplication.focusWindow() is popup.windowHandle(), timeout=2_000
    )
    press_keys(qtbot, typed)
    press(qtbot, "Return")
    qtbot.waitUntil(
        lambda: not popup.isVisible() and QApplication.focusWindow() is combo.window().windowHandle(),
        timeout=2_000,
    )
    assert combo.currentText() == expected


def press_keys(qtbot: QtBot, text: str) -> None:
    """Type ``text`` where the keyboard focus is."""
    target = QApplication.focusWidget()
    assert target is not None, "nothing has the keyboard focus"
    qtbot.keyClicks(target, text)


def click_run(qtbot: QtBot, win: MainWindow, run_id: str) -> None:
    """Click the run's row in the runs table (it is selected and its tabs are shown)."""
    table = win.runs
    qtbot.waitUntil(lambda: run_id in table.run_ids(visible_only=True), timeout=20_000)
    view: QTableView = table.view
    row = next(
        r for r in range(table.proxy.rowCount()) if table.proxy.index(r, ID).data(RUN_ID_ROLE) == run_id
    )
    rect = view.visualRect(table.proxy.index(row, ID))
    assert view.viewport().rect().contains(rect.center()), "the run's row is scrolled out of view"
    click(view.viewport(), rect.center())
    qtbot.waitUntil(lambda: win.run_view.run is not None and win.run_view.run.run_id == run_id, timeout=5_000)


def open_tab(win: MainWindow, kind: type[TabT]) -> TabT:
    """Click the selected run's tab of ``kind``, found by its title text (not its position)."""
    title = kind.title
    tabs = win.run_view.tabs
    titles = [tabs.tabText(i) for i in range(tabs.count())]
    assert title in titles, titles
    index = titles.index(title)
    bar = tabs.tabBar()
    click(bar, bar.tabRect(index).center())
    assert tabs.currentIndex() == index
    page = tabs.widget(index)
    assert isinstance(page, kind) and page.isVisible()
    return page


def grid_is(tab: ReplayTab, expected: object) -> bool:
    return bool(tab.env_view.grid == expected)


def test_play_replay_train_chart_tensorboard_and_watch_the_trained_agent(
    qtbot: QtBot,
    window: MainWindow,
    client: DaemonClient,
    home: Home,
) -> None:
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow, timeout=5_000)
    control = window.control

    # ---------------------------------------------------------------- play FrozenLake by keyboard
    assert control.mode == HUMAN and window.centre.currentWidget() is window.human_play
    choose(qtbot, control.env_picker.combo, "FrozenLake-", "FrozenLake-v1")  # the list's type-ahead
    assert control.env_picker.env_id == "FrozenLake-v1"
    play = window.human_play
    assert play.env_id == "FrozenLake-v1"
    with qtbot.waitSignal(play.episode_started, timeout=20_000):
        click(play.start_button)
    qtbot.waitUntil(play.hasFocus, timeout=5_000)  # starting hands the keyboard to the game
    human_run = play.run_id
    pressed: list[str] = []
    with qtbot.waitSignal(play.episode_finished, timeout=30_000):
        for i in range(100):  # the lake is slippery; its time limit (100 steps) ends any episode
            name = ("Down", "Right")[i % 2]
            press(qtbot, name)
            pressed.append(name)
            qtbot.waitUntil(
                lambda: play.outcome is not None and play.outcome.step == len(pressed), timeout=5_000
            )
            assert play.outcome is not None
            if play.outcome.done:
                break
    assert play.outcome is not None and play.outcome.done
    assert "done" in play.status_line.text()
    qtbot.waitUntil(lambda: window.runs.state_of(human_run) == RunState.COMPLETED.value, timeout=20_000)

    # ---------------------------------------------------------------- replay what was played
    click_run(qtbot, window, human_run)
    assert control.mode == AGENT and window.centre.currentWidget() is window.run_view
    replay = open_tab(window, ReplayTab)
    reader = TelemetryReader(RunDir(home.run_dir(human_run)).telemetry_path)
    try:
        stored = reader.steps(0)
    finally:
        reader.close()
    keymap = {binding.key: binding.action for binding in catalog()["FrozenLake-v1"].keys}
    assert [json.loads(step.action) for step in stored] == [keymap[name] for name in pressed]
    qtbot.waitUntil(lambda: replay.last_step == len(pressed) - 1, timeout=10_000)
    assert replay.step == 0

    click(replay.env_view)  # the picture has no focus of its own: the click gives it to the tab
    qtbot.waitUntil(replay.hasFocus, timeout=2_000)
    for record in stored:
        assert replay.step == record.step
        assert replay.step_fields["action"].text() == record.action
        expected = decode_payload(record.render or b"")
        qtbot.waitUntil(partial(grid_is, replay, expected), timeout=2_000)
        press(qtbot, "Right")
    assert replay.step == replay.last_step  # Right at the end stays there
    last = replay.current_step()
    assert last is not None and (last.terminated or last.truncated)

    # Space plays the episode again from its start, here at 8×.
    choose(qtbot, replay.transport.speed_combo, "8", "8×")
    assert replay.speed == 8.0
    drawn = replay.env_view.frames_drawn
    click(replay.env_view)
    qtbot.waitUntil(replay.hasFocus, timeout=2_000)
    press(qtbot, "Space")
    assert replay.playing and replay.step == 0
    qtbot.waitUntil(lambda: not replay.playing, timeout=20_000)
    assert replay.step == replay.last_step
    if replay.last_step > 0:
        assert replay.env_view.frames_drawn > drawn

    # ---------------------------------------------------------------- launch CleanRL PPO from its form
    click(control.agent)
    assert control.mode == AGENT and control.agent_box.isEnabled()
    roster = control.roster
    item = next(roster.item(r) for r in range(roster.count()) if roster.item(r).text() == "CleanRL Worker")
    click(roster.viewport(), roster.visualItemRect(item).center())
    assert roster.kind() == "cleanrl" and control.train_new.isChecked()
    form = control.forms.currentWidget()
    assert isinstance(form, GeneratedForm)
    qtbot.waitUntil(lambda: form.description is not None, timeout=DESCRIBE_TIMEOUT)
    assert form.algorithm() == "ppo" and form.env_combo.currentText() == "CartPole-v1"
    type_into(qtbot, form.budget_edit, str(TIMESTEPS))
    qtbot.waitUntil(lambda: f"--total-timesteps {TIMESTEPS}" in form.preview.text(), timeout=DESCRIBE_TIMEOUT)
    with qtbot.waitSignal(form.run_submitted, timeout=120_000) as submitted:
        press(qtbot, "Return", Qt.KeyboardModifier.ControlModifier)  # Run ▸ Start run
    train_run = str(submitted.args[0])
    assert json.loads(client.get_run(train_run).config_json)["budget"]["timesteps"] == TIMESTEPS

    # ---------------------------------------------------------------- watch the return curve climb
    click_run(qtbot, window, train_run)
    live = next(tab for tab in window.run_view.tab_list() if tab.title == LiveTab.title)
    assert isinstance(live, LiveTab) and live.banner.isVisible()  # the analytics lane streams no steps
    charts = open_tab(window, ChartsTab)
    qtbot.waitUntil(lambda: len(charts.series(RETURNS)[0]) > 0, timeout=120_000)
    first_seen = len(charts.series(RETURNS)[0])
    assert window.runs.state_of(train_run) in (RunState.STARTING.value, RunState.RUNNING.value)
    qtbot.waitUntil(lambda: len(charts.series(RETURNS)[0]) > first_seen, timeout=60_000)
    qtbot.waitUntil(lambda: charts.points_drawn(RETURNS) > 0, timeout=5_000)
    assert RETURNS in charts.checked_tags()

    # ---------------------------------------------------------------- open its TensorBoard
    tensorboard = open_tab(window, TensorBoardTab)
    qtbot.waitUntil(lambda: tensorboard.ready or tensorboard.restart_button.isVisible(), timeout=90_000)
    assert tensorboard.ready, tensorboard.message.text()
    url = tensorboard.url
    assert url is not None and url.startswith("http://127.0.0.1:")
    with urllib.request.urlopen(url, timeout=10) as response:
        assert response.status == 200
        assert b"TensorBoard" in response.read()
    assert tensorboard.web_view is not None or tensorboard.open_button.isVisible()
    server = tensorboard.process
    assert server is not None and server.poll() is None

    qtbot.waitUntil(lambda: window.runs.state_of(train_run) == RunState.COMPLETED.value, timeout=240_000)
    # Back on the chart: every return the run stored reached it, and training made them rise.
    charts = open_tab(window, ChartsTab)
    reader = TelemetryReader(RunDir(home.run_dir(train_run)).telemetry_path)
    try:
        stored_returns = [point.value for point in reader.metrics(RETURNS)]
    finally:
        reader.close()
    qtbot.waitUntil(lambda: len(charts.series(RETURNS)[1]) == len(stored_returns), timeout=10_000)
    returns = charts.series(RETURNS)[1]
    assert list(returns) == stored_returns
    tenth = max(1, len(returns) // 10)
    assert np.mean(returns[-tenth:]) > np.mean(returns[:tenth]), (returns[:tenth], returns[-tenth:])

    # ---------------------------------------------------------------- watch the trained agent play
    qtbot.waitUntil(lambda: control.trained.runs.findText(train_run) >= 0, timeout=5_000)  # "Use trained" too
    checkpoints = open_tab(window, CheckpointsTab)

    def final_model() -> QTableWidgetItem | None:
        table = checkpoints.models
        kinds = [table.item(r, 1) for r in range(table.rowCount())]
        row = next((r for r, kind in enumerate(kinds) if kind is not None and kind.text() == "final"), None)
        return None if row is None else table.item(row, 0)

    qtbot.waitUntil(lambda: final_model() is not None, timeout=20_000)
    final = final_model()
    assert final is not None
    cell = checkpoints.models.visualItemRect(final)
    click(checkpoints.models.viewport(), cell.center())
    assert checkpoints.selected_model() == FINAL_MODEL
    # Real time (the default here) plays at CartPole's 50 steps/s: ask for plenty of episodes, watch,
    # then stop it.
    assert checkpoints.real_time.isChecked()
    type_into(qtbot, checkpoints.episodes, str(EPISODES))
    assert checkpoints.episodes.value() == EPISODES
    with qtbot.waitSignal(checkpoints.evaluation_started, timeout=30_000) as started:
        click(checkpoints.evaluate_button)
    evaluation = str(started.args[0])

    # The window follows the evaluation run: its own tabs, Live first and shown.
    qtbot.waitUntil(
        lambda: window.run_view.run is not None and window.run_view.run.run_id == evaluation, timeout=20_000
    )
    tabs = window.run_view.tabs
    assert tabs.tabText(tabs.currentIndex()) == "Live"
    watching = tabs.currentWidget()
    assert isinstance(watching, LiveTab) and not watching.banner.isVisible()
    pictures: set[bytes] = set()

    def pictures_drawn() -> int:
        frame = watching.env_view.frame
        if isinstance(frame, np.ndarray):
            assert frame.shape == (400, 600, 3)  # CartPole's own picture
            pictures.add(hashlib.blake2b(frame.tobytes(), digest_size=16).digest())
        return len(pictures)

    qtbot.waitUntil(lambda: pictures_drawn() >= 3, timeout=120_000)  # the picture moves
    # Live, not a replay after the fact: the evaluation is far from done.
    assert window.runs.state_of(evaluation) in (RunState.STARTING.value, RunState.RUNNING.value)
    steps = watching.steps_seen
    qtbot.waitUntil(lambda: watching.steps_seen > steps and watching.model.rowCount() > 0, timeout=30_000)
    # The training run's TensorBoard server stopped when its tabs were let go.
    qtbot.waitUntil(lambda: server.poll() is not None, timeout=15_000)

    press(qtbot, "Period", Qt.KeyboardModifier.ControlModifier)  # Run ▸ Cancel selected run
    qtbot.waitUntil(lambda: window.runs.state_of(evaluation) == RunState.CANCELLED.value, timeout=60_000)
    qtbot.waitUntil(lambda: "CANCELLED" in watching.status.text(), timeout=5_000)
    detail = client.get_run(evaluation)
    config = json.loads(detail.config_json)
    assert config["mode"] == "evaluate" and detail.record.lane == "telemetry"
    assert config["evaluation"] == {
        "run_id": train_run,
        "checkpoint": FINAL_MODEL,
        "real_time": True,
        "epsilon": 0.0,
    }
    assert config["budget"]["episodes"] == EPISODES
    assert detail.progress.steps > 0 and detail.progress.episodes < EPISODES
