"""A person plays the turn-based pixel families in the real play view: each key press is one step of
MiniHack (NetHack's keys, the agent walking in the frame) and of highway-env (one driving decision)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from PySide6.QtCore import Qt
from pytestqt.qtbot import QtBot

from gym_gui.envs.catalog import catalog, env_family
from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.home import Home
from gym_gui.storage.run_dir import RunDir
from gym_gui.storage.telemetry import TelemetryReader
from gym_gui.ui.daemon_link import DaemonLink
from gym_gui.ui.human_play import HumanPlayWidget


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


def press(qtbot: QtBot, widget: HumanPlayWidget, names: list[str]) -> list[np.ndarray]:
    """Press each key in turn, waiting for its step; return the frame after each."""
    frames = []
    for count, name in enumerate(names, start=1):
        qtbot.keyClick(widget, getattr(Qt.Key, "Key_" + name))
        qtbot.waitUntil(
            lambda n=count: widget.outcome is not None and widget.outcome.step == n, timeout=20_000
        )
        assert widget.outcome is not None and widget.outcome.frame is not None
        frames.append(widget.outcome.frame)
        if widget.outcome.done:
            break
    return frames


def stored_actions(home: Home, run_id: str) -> list[int]:
    reader = TelemetryReader(RunDir(home.run_dir(run_id)).telemetry_path)
    try:
        return [json.loads(step.action) for step in reader.steps(0)]
    finally:
        reader.close()


def test_minihack_moves_by_nethacks_keys_and_the_arrows(
    qtbot: QtBot, link: DaemonLink, client: DaemonClient, home: Home
) -> None:
    env_id = "gym_gui/MiniHack-Room-15x15-v0"
    widget = playing(qtbot, link, env_id)
    assert widget.outcome is not None and widget.outcome.frame is not None
    start = widget.outcome.frame
    names = ["L", "Left", "J", "Up", "Y", "PageDown"]
    frames = press(qtbot, widget, names)
    # The agent moved (or bumped a wall, which NetHack says on the message line): the frame changed.
    assert any(not np.array_equal(start, frame) for frame in frames)
    keymap = {binding.key: binding.action for binding in catalog()[env_id].keys}
    widget.close_session()
    qtbot.waitUntil(
        lambda: client.get_run(widget.run_id).record.state in ("COMPLETED", "CANCELLED"), timeout=20_000
    )
    assert stored_actions(home, widget.run_id) == [keymap[name] for name in names[: len(frames)]]
    assert [keymap[name] for name in names] == [1, 3, 2, 0, 7, 5]  # E, W, S, N, NW, SE


def test_highway_takes_one_decision_a_key(
    qtbot: QtBot, link: DaemonLink, client: DaemonClient, home: Home, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The suite gives SDL its dummy driver, under which highway-env draws nothing; the play view makes
    # the env in this process, which draws as the app does where no SDL driver is set.
    monkeypatch.setenv("SDL_VIDEODRIVER", env_family("highway").environment["SDL_VIDEODRIVER"])
    widget = playing(qtbot, link, "highway-fast-v0")
    frames = press(qtbot, widget, ["Right", "Space"])
    assert frames[0].std() > 0  # a drawn road, not a blank frame
    widget.close_session()
    qtbot.waitUntil(
        lambda: client.get_run(widget.run_id).record.state in ("COMPLETED", "CANCELLED"), timeout=20_000
    )
    assert stored_actions(home, widget.run_id)[:1] == [3]  # FASTER
