"""A person plays Crafter and ViZDoom in the real play view: their keys send their actions in real time, at
crafter's own 5 steps a second and Doom's 35 tics, with the no-op while no key is held; Qt knows every key
of every catalog key map."""

from __future__ import annotations

import json

import numpy as np
from pytestqt.qtbot import QtBot

from gym_gui.envs.catalog import catalog
from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.home import Home
from gym_gui.storage.run_dir import RunDir
from gym_gui.storage.telemetry import TelemetryReader
from gym_gui.ui.daemon_link import DaemonLink
from gym_gui.ui.human_play import HumanPlayWidget, qt_key
from tests.ui.test_atari_play import key, playing


def acting(widget: HumanPlayWidget, action: int) -> bool:
    outcome = widget.outcome
    return outcome is not None and outcome.action == action


def press_until_acting(qtbot: QtBot, widget: HumanPlayWidget, name: str, action: int) -> None:
    qtbot.keyPress(widget, key(name))
    qtbot.waitUntil(lambda: acting(widget, action), timeout=20_000)
    qtbot.keyRelease(widget, key(name))
    qtbot.waitUntil(lambda: acting(widget, 0), timeout=20_000)  # released: the no-op again


def stored(home: Home, client: DaemonClient, widget: HumanPlayWidget) -> tuple[list[int], dict[str, object]]:
    run_id = widget.run_id
    widget.close_session()
    assert client.wait_for_end(run_id, timeout=60).state.value == "CANCELLED"
    run_dir = RunDir(client.get_run(run_id).record.run_dir)
    reader = TelemetryReader(run_dir.telemetry_path)
    try:
        actions = [json.loads(step.action) for step in reader.steps(0)]
    finally:
        reader.close()
    return actions, run_dir.read_config().env_kwargs


def test_every_catalog_key_is_a_qt_key() -> None:
    for entry in catalog().values():
        for binding in entry.keys:
            assert qt_key(binding.key) == int(key(binding.key).value), (entry.env_id, binding.key)


def test_a_person_plays_vizdoom_basic_moving_and_shooting_at_35_tics_a_second(
    qtbot: QtBot, link: DaemonLink, client: DaemonClient, home: Home
) -> None:
    widget = playing(qtbot, link, "VizdoomBasic-v1")
    assert widget.fps == 35.0
    qtbot.waitUntil(lambda: widget.outcome is not None and widget.outcome.step >= 5, timeout=20_000)
    assert acting(widget, 0)
    # Basic's buttons are MOVE_LEFT, MOVE_RIGHT, ATTACK: action 3, 2, 1.

    def ammunition() -> float:
        outcome = widget.outcome
        assert outcome is not None and outcome.observation["screen"].shape == (240, 320, 3)
        return float(outcome.observation["gamevariables"][0])

    assert ammunition() == 50.0
    # Fire first, from where the player starts: seed 0's monster is not straight ahead, so the
    # episode goes on. Held until the pistol has shot (a few tics after the press).
    qtbot.keyPress(widget, key("Space"))
    qtbot.waitUntil(lambda: acting(widget, 1) and ammunition() < 50.0, timeout=20_000)
    qtbot.keyRelease(widget, key("Space"))
    qtbot.waitUntil(lambda: acting(widget, 0), timeout=20_000)
    press_until_acting(qtbot, widget, "Left", 3)
    press_until_acting(qtbot, widget, "D", 2)
    actions, env_kwargs = stored(home, client, widget)
    pressed = [action for i, action in enumerate(actions) if i == 0 or action != actions[i - 1]]
    assert [action for action in pressed if action != 0] == [1, 3, 2] and env_kwargs == {}


def test_a_person_plays_crafter_with_its_own_keys_at_five_steps_a_second(
    qtbot: QtBot, link: DaemonLink, client: DaemonClient, home: Home
) -> None:
    widget = playing(qtbot, link, "CrafterReward-v1")
    assert widget.fps == 5.0
    qtbot.waitUntil(lambda: widget.outcome is not None and widget.outcome.step >= 2, timeout=20_000)
    assert acting(widget, 0)  # noop while no key is held
    first = np.asarray(widget.outcome.observation)  # type: ignore[union-attr]
    press_until_acting(qtbot, widget, "A", 1)  # move left
    press_until_acting(qtbot, widget, "Space", 5)  # do
    press_until_acting(qtbot, widget, "Tab", 6)  # sleep: Tab stays with the view, not Qt's focus chain
    assert not np.array_equal(first, np.asarray(widget.outcome.observation))  # type: ignore[union-attr]
    actions, _env_kwargs = stored(home, client, widget)
    pressed = [action for i, action in enumerate(actions) if i == 0 or action != actions[i - 1]]
    assert [action for action in pressed if action != 0] == [1, 5, 6]
