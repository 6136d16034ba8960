"""A person plays Atari in the real play view: key presses drive ALE games at one frame a step, held keys
combine into the joystick's diagonal and fire moves, and the picker finds any game ale-py registers."""

from __future__ import annotations

import json

import numpy as np
from PySide6.QtCore import Qt
from pytestqt.qtbot import QtBot

from gym_gui.envs import ale
from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.home import Home
from gym_gui.storage.run_dir import RunDir
from gym_gui.storage.telemetry import TelemetryReader
from gym_gui.ui.control_panel import EnvPicker
from gym_gui.ui.daemon_link import DaemonLink
from gym_gui.ui.human_play import HumanPlayWidget

# Breakout draws its paddle, and the ball, in this red; the paddle in rows 189-192, the ball between the
# bricks (which end at row 92) and the paddle.
RED = np.array([200, 72, 72], dtype=np.uint8)


def key(name: str) -> Qt.Key:
    return getattr(Qt.Key, "Key_" + name)  # type: ignore[no-any-return]


def paddle_x(frame: np.ndarray) -> float:
    """The middle column of Breakout's paddle."""
    columns = np.flatnonzero((frame[189:193] == RED).all(axis=-1).any(axis=0))
    assert columns.size, "no paddle in the frame"
    return float(columns.mean())


def ball_in_play(frame: np.ndarray) -> bool:
    return bool((frame[93:189, 8:152] == RED).all(axis=-1).any())


def playing(qtbot: QtBot, link: DaemonLink, env_id: str) -> HumanPlayWidget:
    widget = HumanPlayWidget(link)
    qtbot.addWidget(widget)
    widget.resize(720, 480)
    widget.show()
    widget.set_env(env_id)
    widget.set_seed(0)
    with qtbot.waitSignal(widget.episode_started, timeout=30_000):
        widget.start_episode()
    qtbot.waitUntil(widget.hasFocus, timeout=2_000)
    return widget


def frame(widget: HumanPlayWidget) -> np.ndarray:
    outcome = widget.outcome
    assert outcome is not None
    return np.asarray(outcome.observation)


def stored_actions(home: Home, run_id: str) -> list[int]:
    reader = TelemetryReader(RunDir(home.run_dir(run_id)).telemetry_path)
    try:
        return [json.loads(step.action) for step in reader.steps(0)]
    finally:
        reader.close()


def test_keys_drive_breakout_fire_launches_the_ball_and_the_arrows_move_the_paddle(
    qtbot: QtBot, link: DaemonLink, client: DaemonClient, home: Home
) -> None:
    widget = playing(qtbot, link, "ALE/Breakout-v5")
    assert widget.fps == 60.0  # the console's frame rate: one frame a step
    # With no key held the game goes on with NOOP: the paddle stays, no ball is served.
    qtbot.waitUntil(lambda: widget.outcome is not None and widget.outcome.step >= 30, timeout=10_000)
    start = paddle_x(frame(widget))
    assert not ball_in_play(frame(widget)) and widget.outcome.action == 0  # type: ignore[union-attr]

    qtbot.keyPress(widget, key("Left"))
    qtbot.waitUntil(lambda: paddle_x(frame(widget)) < start - 40, timeout=10_000)
    qtbot.keyRelease(widget, key("Left"))
    left = paddle_x(frame(widget))

    qtbot.keyPress(widget, key("Right"))
    qtbot.waitUntil(lambda: paddle_x(frame(widget)) > left + 60, timeout=10_000)
    qtbot.keyRelease(widget, key("Right"))
    assert not ball_in_play(frame(widget))

    qtbot.keyPress(widget, key("Space"))
    qtbot.waitUntil(lambda: ball_in_play(frame(widget)), timeout=10_000)
    qtbot.keyRelease(widget, key("Space"))

    run_id = widget.run_id
    widget.close_session()
    qtbot.waitUntil(lambda: client.get_run(run_id).record.state == "CANCELLED", timeout=20_000)
    config = RunDir(client.get_run(run_id).record.run_dir).read_config()
    assert config.env_id == "ALE/Breakout-v5" and config.env_kwargs == {"frameskip": 1}
    actions = stored_actions(home, run_id)
    # NOOP, then LEFT (3) held, RIGHT (2) held, FIRE (1) held, in the order pressed.
    pressed = [action for i, action in enumerate(actions) if i == 0 or action != actions[i - 1]]
    assert [action for action in pressed if action != 0] == [3, 2, 1]


def test_held_keys_combine_into_the_games_diagonal_and_fire_moves(
    qtbot: QtBot, link: DaemonLink, client: DaemonClient, home: Home
) -> None:
    seaquest = ale.minimal_actions("seaquest")
    widget = playing(qtbot, link, "ALE/Seaquest-v5")

    def acting(meaning: str) -> bool:
        outcome = widget.outcome
        return outcome is not None and outcome.action == seaquest.index(meaning)

    for name in ("Up", "Right", "Space"):
        qtbot.keyPress(widget, key(name))
    qtbot.waitUntil(lambda: acting("UPRIGHTFIRE"), timeout=10_000)
    qtbot.keyRelease(widget, key("Up"))
    qtbot.waitUntil(lambda: acting("RIGHTFIRE"), timeout=10_000)
    qtbot.keyRelease(widget, key("Space"))
    qtbot.waitUntil(lambda: acting("RIGHT"), timeout=10_000)
    qtbot.keyPress(widget, key("Down"))
    qtbot.waitUntil(lambda: acting("DOWNRIGHT"), timeout=10_000)
    for name in ("Down", "Right"):
        qtbot.keyRelease(widget, key(name))
    qtbot.waitUntil(lambda: acting("NOOP"), timeout=10_000)
    run_id = widget.run_id
    # The keys table lists the chords under the keys.
    shown = [widget.keys_table.item(row, 0).text() for row in range(widget.keys_table.rowCount())]
    assert shown[:5] == ["Up", "Down", "Left", "Right", "Space"] and "Up + Right + Space" in shown

    # Tutankham has UPFIRE and RIGHTFIRE but no UPRIGHTFIRE: the key pressed first is left out.
    tutankham = ale.minimal_actions("tutankham")
    widget.set_env("ALE/Tutankham-v5")
    with qtbot.waitSignal(widget.episode_started, timeout=30_000):
        widget.start_episode()
    for name in ("Up", "Right", "Space"):
        qtbot.keyPress(widget, key(name))
    qtbot.waitUntil(
        lambda: widget.outcome is not None and widget.outcome.action == tutankham.index("RIGHTFIRE"),
        timeout=10_000,
    )
    for name in ("Up", "Right", "Space"):
        qtbot.keyRelease(widget, key(name))
    widget.close_session()

    qtbot.waitUntil(lambda: client.get_run(run_id).record.state == "CANCELLED", timeout=20_000)
    stored = {seaquest[action] for action in stored_actions(home, run_id)}
    assert {"UPRIGHTFIRE", "RIGHTFIRE", "RIGHT", "DOWNRIGHT", "NOOP"} <= stored


def test_the_picker_filters_every_atari_game_by_title_or_id(qtbot: QtBot) -> None:
    picker = EnvPicker()
    qtbot.addWidget(picker)
    picker.show()
    everything = picker.matches()
    atari = [env_id for env_id in everything if env_id.startswith("ALE/")]
    assert len(atari) >= 100 and "FrozenLake-v1" in everything

    qtbot.keyClicks(picker.filter, "montezuma")
    assert picker.matches() == ["ALE/MontezumaRevenge-v5"]
    qtbot.keyClick(picker.filter, Qt.Key.Key_Return)
    assert picker.env_id == "ALE/MontezumaRevenge-v5"
    assert picker.info.toPlainText().startswith("Montezuma's Revenge")
    assert "UPRIGHTFIRE" in picker.info.toPlainText()

    picker.filter.clear()
    qtbot.keyClicks(picker.filter, "ALE/pong")
    assert picker.matches() == ["ALE/Pong-v5"]
    # The family's heading shows with its match; the other families' are hidden.
    shown = [
        picker.combo.itemText(row)
        for row in range(picker.combo.count())
        if not picker.list_view.isRowHidden(row)
    ]
    assert shown == ["— Atari (ALE) —", "ALE/Pong-v5"]
    picker.filter.clear()
    assert picker.matches() == everything
