"""Human play through the real widget: key presses step a real env, each episode is stored as a `human` run,
and the view draws at most ~30 pictures a second."""

from __future__ import annotations

import json
import time

import numpy as np
from gym_gui_sdk.render import decode_payload
from PySide6.QtCore import Qt
from pytestqt.qtbot import QtBot

from gym_gui.core.records import StepRecord
from gym_gui.envs.catalog import catalog
from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.home import Home
from gym_gui.storage.run_dir import RunDir
from gym_gui.storage.telemetry import TelemetryReader
from gym_gui.ui.daemon_link import DaemonLink
from gym_gui.ui.env_view import EnvView
from gym_gui.ui.human_play import HumanPlayWidget


def make_widget(qtbot: QtBot, link: DaemonLink, env_id: str, seed: int | None = 0) -> HumanPlayWidget:
    widget = HumanPlayWidget(link)
    qtbot.addWidget(widget)
    widget.resize(720, 480)
    widget.show()
    widget.set_env(env_id)
    widget.set_seed(seed)
    return widget


def key(name: str) -> Qt.Key:
    return getattr(Qt.Key, "Key_" + name)  # type: ignore[no-any-return]


def wait_for_state(qtbot: QtBot, client: DaemonClient, run_id: str, state: str) -> None:
    qtbot.waitUntil(lambda: client.get_run(run_id).record.state == state, timeout=20_000)


def wait_for_step(qtbot: QtBot, widget: HumanPlayWidget, step: int) -> None:
    """Wait until the widget shows the outcome of its ``step``-th step of the episode."""
    qtbot.waitUntil(lambda: widget.outcome is not None and widget.outcome.step == step, timeout=5_000)


def play_frozenlake_episode(qtbot: QtBot, link: DaemonLink) -> tuple[HumanPlayWidget, list[str]]:
    """Play FrozenLake-v1 (seed 0) by key clicks, Down and Right in turn, until the episode ends.

    The lake is slippery, so where the agent ends up is up to the env; the time limit (100 steps)
    bounds the episode whatever happens.
    """
    widget = make_widget(qtbot, link, "FrozenLake-v1")
    with qtbot.waitSignal(widget.episode_started, timeout=20_000):
        widget.start_episode()
    pressed: list[str] = []
    with qtbot.waitSignal(widget.episode_finished, timeout=30_000):
        for i in range(100):
            name = ("Down", "Right")[i % 2]
            qtbot.keyClick(widget, key(name))
            pressed.append(name)
            wait_for_step(qtbot, widget, len(pressed))
            assert widget.outcome is not None
            if widget.outcome.done:
                break
    return widget, pressed


def test_frozenlake_episode_played_by_keys_is_stored(
    qtbot: QtBot, link: DaemonLink, client: DaemonClient, home: Home
) -> None:
    widget, pressed = play_frozenlake_episode(qtbot, link)
    run_id = widget.run_id
    assert run_id
    outcome = widget.outcome
    assert outcome is not None and outcome.done
    wait_for_state(qtbot, client, run_id, "COMPLETED")
    assert client.get_run(run_id).record.worker == "human"

    keymap = {binding.key: binding.action for binding in catalog()["FrozenLake-v1"].keys}
    reader = TelemetryReader(RunDir(home.run_dir(run_id)).telemetry_path)
    try:
        steps = reader.steps(0)
        assert [json.loads(step.action) for step in steps] == [keymap[name] for name in pressed]
        assert [step.step for step in steps] == list(range(len(pressed)))
        assert steps[-1].terminated or steps[-1].truncated
        episode = reader.episode(0)
        assert episode.steps == len(pressed)
        assert episode.total_reward == outcome.total_reward
        # Every step of a grid game carries its grid; the last one is what the view shows.
        assert all(step.render for step in steps)
        last = decode_payload(steps[-1].render or b"")
        assert isinstance(last, dict)
        assert outcome.grid is not None and last["agent"] == outcome.grid["agent"]
    finally:
        reader.close()

    qtbot.waitUntil(lambda: not widget.env_view.has_pending, timeout=2_000)
    assert widget.env_view.frames_drawn > 0
    assert widget.env_view.grid is not None and widget.env_view.grid["game"] == "frozenlake"
    assert "done" in widget.status_line.text()

    # A key pressed after the end starts the next episode, as a run of its own; leaving it cancels it.
    with qtbot.waitSignal(widget.episode_started, timeout=20_000) as started:
        qtbot.keyClick(widget, key("Right"))
    second = started.args[0] if started.args else ""
    assert second and second != run_id
    qtbot.waitUntil(widget.session_ready, timeout=5_000)
    widget.close_session()
    wait_for_state(qtbot, client, second, "CANCELLED")


def _stored_steps(home: Home, run_id: str) -> list[StepRecord]:
    reader = TelemetryReader(RunDir(home.run_dir(run_id)).telemetry_path)
    try:
        return reader.steps(0)
    finally:
        reader.close()


def test_minigrid_turns_and_tab_are_game_keys(
    qtbot: QtBot, link: DaemonLink, client: DaemonClient, home: Home
) -> None:
    widget = make_widget(qtbot, link, "MiniGrid-Empty-5x5-v0")
    widget.seed_field.setFocus()
    qtbot.waitUntil(widget.seed_field.hasFocus, timeout=2_000)
    with qtbot.waitSignal(widget.episode_started, timeout=20_000):
        widget.start_episode()
    # Starting claims the keyboard from the seed field, so the game's keys reach the game.
    qtbot.waitUntil(widget.hasFocus, timeout=2_000)
    # The agent starts at (1, 1) facing right and the goal is at (3, 3); Tab (pick up) finds nothing.
    names = ["Tab", "Up", "Up", "Right", "Up", "Up"]
    expected_actions = [3, 2, 2, 1, 2, 2]
    for count, name in enumerate(names, start=1):
        qtbot.keyClick(widget, key(name))
        assert widget.hasFocus()  # Tab did not move the focus on
        wait_for_step(qtbot, widget, count)
    outcome = widget.outcome
    assert outcome is not None and outcome.terminated and outcome.total_reward > 0
    assert outcome.grid is not None and outcome.grid["agent"] == [3, 3]
    wait_for_state(qtbot, client, widget.run_id, "COMPLETED")
    detail = client.get_run(widget.run_id)
    assert detail.progress.steps == len(names)
    assert [json.loads(step.action) for step in _stored_steps(home, widget.run_id)] == expected_actions
    qtbot.waitUntil(lambda: widget.env_view.grid is not None and widget.env_view.grid["agent"] == [3, 3])
    keymap = {binding.key: binding.action for binding in catalog()["MiniGrid-Empty-5x5-v0"].keys}
    assert [keymap[name] for name in names] == expected_actions


def test_cartpole_realtime_episode_with_held_keys(
    qtbot: QtBot, link: DaemonLink, client: DaemonClient, home: Home
) -> None:
    widget = make_widget(qtbot, link, "CartPole-v1")
    with qtbot.waitSignal(widget.episode_started, timeout=20_000):
        widget.start_episode()
    assert widget.fps == 50.0
    # CartPole has no no-op: with no key held the clock beats but nothing steps.
    start_ticks = widget.ticks
    qtbot.waitUntil(lambda: widget.ticks >= start_ticks + 5, timeout=5_000)
    assert widget.outcome is not None and widget.outcome.step == 0

    # Balance for a while by holding the key that pushes the cart under the pole, then let it fall.
    held: list[str] = []

    def hold(name: str) -> None:
        if held and held[0] != name:
            qtbot.keyRelease(widget, key(held.pop()))
        if not held:
            qtbot.keyPress(widget, key(name))
            held.append(name)

    def balance() -> bool:
        outcome = widget.outcome
        assert outcome is not None
        if outcome.done or outcome.step >= 100:
            return True
        _x, _v, angle, angular_velocity = (float(v) for v in outcome.observation)
        hold("Right" if angle + 0.5 * angular_velocity > 0 else "Left")
        return False

    qtbot.waitUntil(balance, timeout=20_000)
    if held:
        qtbot.keyRelease(widget, key(held.pop()))
    qtbot.keyPress(widget, key("Left"))
    qtbot.waitUntil(lambda: widget.outcome is not None and widget.outcome.done, timeout=20_000)
    qtbot.keyRelease(widget, key("Left"))
    outcome = widget.outcome
    assert outcome is not None
    run_id = widget.run_id
    wait_for_state(qtbot, client, run_id, "COMPLETED")

    reader = TelemetryReader(RunDir(home.run_dir(run_id)).telemetry_path)
    try:
        steps = reader.steps(0)
        actions = {json.loads(step.action) for step in steps}
    finally:
        reader.close()
    assert len(steps) == outcome.step > 10
    assert actions == {0, 1}
    # Frames are stored at the render rate (15/s), not with every step (50/s); the last step always has one.
    framed = [step for step in steps if step.render]
    assert steps[-1].render
    duration = steps[-1].wall_time - steps[0].wall_time
    assert duration > 1.0
    # Each frame is followed by at least 1/15 s without one, so at most ~15 a second; steps come every
    # 1/50 s at best, so a frame waits for the first step past its 1/15 s: no fewer than half that.
    assert 0.5 * duration * widget.render_fps <= len(framed) <= duration * widget.render_fps + 2
    frame = decode_payload(framed[0].render or b"")
    assert isinstance(frame, np.ndarray) and frame.shape == (400, 600, 3)
    qtbot.waitUntil(lambda: not widget.env_view.has_pending, timeout=2_000)
    assert widget.env_view.frames_drawn > 0 and widget.env_view.frame is not None


def test_env_view_draws_at_most_30_pictures_a_second(qtbot: QtBot) -> None:
    view = EnvView()
    qtbot.addWidget(view)
    view.resize(320, 240)
    view.show()
    frames = [np.full((60, 80, 3), value, dtype=np.uint8) for value in (0, 80, 160, 240)]
    offered = 0
    started = time.monotonic()
    while time.monotonic() - started < 1.0:
        for _ in range(200):
            view.show_frame(frames[offered % len(frames)])
            offered += 1
        qtbot.wait(5)
    elapsed = time.monotonic() - started
    qtbot.waitUntil(lambda: not view.has_pending, timeout=1_000)
    assert offered > 2_000
    assert 5 <= view.frames_drawn <= 30 * (elapsed + 0.1) + 1
    # The latest picture wins.
    assert view.frame is not None and np.array_equal(view.frame, frames[(offered - 1) % len(frames)])

    view.clear("nothing to show")
    qtbot.waitUntil(lambda: view.frame is None and view.message == "nothing to show", timeout=1_000)
    view.show_payload(None)
    view.show_payload(b"")
    assert not view.has_pending  # no payload keeps the picture
    view.show_payload(b"not a payload")
    qtbot.waitUntil(lambda: view.message.startswith("cannot draw"), timeout=1_000)
