"""The ViZDoom family against the installed vizdoom: its scenarios' key maps from their buttons, their dict
observations through the SDK's encoding, frames and seeding."""

from __future__ import annotations

import json

import gymnasium
import numpy as np
import pytest
from gym_gui_sdk import encoding, render

from gym_gui.core.envs import EnvEntry, RenderKind
from gym_gui.envs.catalog import env_entry, env_family, family_entries, family_installed, import_failure
from gym_gui.envs.check import check_env, make_env
from gym_gui.envs.families.vizdoom import NOOP, SCENARIOS

ENTRIES = family_entries("vizdoom")
BUTTONS = {env_id: buttons for env_id, _title, buttons in SCENARIOS}
KEY_OF_BUTTON = {
    "MOVE_FORWARD": {"Up", "W"},
    "MOVE_BACKWARD": {"Down", "S"},
    "TURN_LEFT": {"Left"},
    "TURN_RIGHT": {"Right"},
    "ATTACK": {"Space"},
}


def _ids(entries: list[EnvEntry]) -> list[str]:
    return [entry.env_id for entry in entries]


def test_the_family_installs_vizdoom_exactly_and_lists_its_scenarios() -> None:
    family = env_family("vizdoom")
    assert family.packages == ("vizdoom==1.3.2",) and family.unavailable == ""
    assert family.install_hint == "install it with `gym-gui envs install vizdoom`"
    assert family_installed("vizdoom") and family.import_module == "vizdoom.gymnasium_wrapper"
    assert not import_failure("vizdoom")  # its module registers the scenarios' ids when imported
    assert _ids(ENTRIES) == [env_id for env_id, _title, _buttons in SCENARIOS]
    for entry in ENTRIES:
        assert gymnasium.spec(entry.env_id).entry_point.startswith("vizdoom.")  # type: ignore[union-attr]
        status = check_env(entry.env_id)
        assert status.installed and status.family == "vizdoom" and status.entry is entry
    # Other ids of the package are the family's too (by their prefix).
    assert check_env("VizdoomBasic-MultiBinary-v1").family == "vizdoom"


@pytest.mark.parametrize("entry", ENTRIES, ids=_ids(ENTRIES))
def test_a_scenarios_keys_press_its_buttons_one_at_a_time(entry: EnvEntry) -> None:
    assert entry.render_kind is RenderKind.PIXELS and entry.realtime and entry.human_playable
    assert entry.idle_action == NOOP and entry.chords == () and entry.play_fps is None
    env = make_env(entry.env_id)
    try:
        game = env.unwrapped.game  # type: ignore[attr-defined]
        buttons = tuple(button.name for button in game.get_available_buttons())
        assert buttons == BUTTONS[entry.env_id]
        assert env.action_space == gymnasium.spaces.Discrete(len(buttons) + 1)
        assert env.metadata["render_fps"] == 35  # a step is a tic: real-time play at 35 a second
        button_map = env.unwrapped.button_map  # type: ignore[attr-defined]
        assert not button_map[NOOP].any()
        pressed: dict[str, set[str]] = {}
        for key in entry.keys:
            (down,) = np.flatnonzero(button_map[int(key.action)])
            pressed.setdefault(buttons[down], set()).add(key.key)
        # Every button has its keys; Left and Right turn, or move sideways where nothing turns.
        assert set(pressed) == set(buttons)
        turns = "TURN_LEFT" in buttons
        for button, keys in pressed.items():
            if button == "MOVE_LEFT":
                assert keys == ({"A"} if turns else {"A", "Left"})
            elif button == "MOVE_RIGHT":
                assert keys == ({"D"} if turns else {"D", "Right"})
            else:
                assert keys == KEY_OF_BUTTON[button]
        env.reset(seed=0)
        for key in entry.keys:
            env.step(key.action)
    finally:
        env.close()


def test_observations_are_dicts_the_sdk_encodes_and_frames_it_draws() -> None:
    env = make_env("VizdoomDefendCenter-v1", render_mode="rgb_array")
    try:
        observation, _info = env.reset(seed=0)
        assert set(observation) == {"screen", "gamevariables"}
        assert observation["screen"].shape == (240, 320, 3) and observation["screen"].dtype == np.uint8
        assert observation["gamevariables"].tolist() == [26.0, 100.0]  # ammunition, health
        decoded = json.loads(encoding.dumps(observation))
        assert np.array_equal(np.asarray(decoded["screen"], dtype=np.uint8), observation["screen"])
        assert decoded["gamevariables"] == [26.0, 100.0]
        assert render.render_kind_of(env) == render.PIXELS
        frame = env.render()
        assert isinstance(frame, np.ndarray) and np.array_equal(frame, observation["screen"])
        assert render.frame_payload(frame).startswith(b"\x89PNG")
    finally:
        env.close()


def test_a_seed_replays_the_same_episode() -> None:
    env = make_env("VizdoomBasic-v1")
    try:
        screens: list[list[np.ndarray]] = []
        rewards: list[list[float]] = []
        for _ in range(2):
            observation, _ = env.reset(seed=3)
            env.action_space.seed(3)
            screens.append([observation["screen"]])
            rewards.append([])
            for _step in range(40):
                observation, reward, _terminated, _truncated, _info = env.step(env.action_space.sample())
                screens[-1].append(observation["screen"])
                rewards[-1].append(float(reward))
        assert rewards[0] == rewards[1]
        assert all(np.array_equal(a, b) for a, b in zip(*screens, strict=True))
    finally:
        env.close()


def test_an_entry_is_found_by_its_id() -> None:
    entry = env_entry("VizdoomMyWayHome-v1")
    assert entry is not None and entry.title == "My way home" and entry.family == "vizdoom"
