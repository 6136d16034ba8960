"""The MiniHack + NetHack family against the installed nle and minihack: gym_gui's ids draw frames of
NetHack's tiles around the agent, with its message and status, and the key maps send the keys NetHack
knows."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import gymnasium
import numpy as np
import pytest
from gym_gui_sdk.render import PIXELS, render_kind_of
from PySide6.QtCore import Qt

from gym_gui.core.envs import EnvEntry
from gym_gui.envs.catalog import env_family, family_entries, family_of
from gym_gui.envs.check import check_env, make_env
from gym_gui.envs.families.minihack import ACTIONS
from gym_gui.envs.families.minihack.tiles import MAP_COLS, MAP_ROWS, TILE, VIEWS

ENTRIES = family_entries("minihack")
# What a key types, for the keys that type a character (the letters type their lower case).
TYPED = {"Less": "<", "Greater": ">", "Period": ".", "Comma": ",", "Return": "\r", "Escape": "\x1b"}
ARROWS = {
    "Up": "k",
    "Down": "j",
    "Left": "h",
    "Right": "l",
    "Home": "y",
    "PageUp": "u",
    "End": "b",
    "PageDown": "n",
}


def _ids(entries: list[EnvEntry]) -> list[str]:
    return [entry.env_id for entry in entries]


@pytest.fixture
def room() -> Iterator[gymnasium.Env[Any, Any]]:
    env = make_env("gym_gui/MiniHack-Room-15x15-v0", render_mode="rgb_array")
    yield env
    env.close()


def test_the_family_installs_nle_without_pips_resolver_and_offers_gym_guis_ids() -> None:
    family = env_family("minihack")
    assert family.packages == ("nle==1.3.0", "minihack==1.0.2", "pybind11==3.1.0")
    assert family.install_options == ("--no-deps",)
    assert gymnasium.__version__.startswith("1.4")  # nle pins 1.2.0, and runs on it
    assert check_env("gym_gui/MiniHack-Room-5x5-v0").family == "minihack"
    assert family_of("MiniHack-Eat-v0") == family_of("gym_gui/NetHackOracle-v0") == "minihack"
    registered = {env_id for env_id in gymnasium.registry if env_id.startswith("gym_gui/")}
    assert {"gym_gui/MiniHack-Quest-Hard-v0", "gym_gui/NetHackScore-v0"} <= registered
    # Boxoban downloads its levels on first use: gym_gui does not offer it.
    assert "MiniHack-Boxoban-Hard-v0" in gymnasium.registry
    assert not any("Boxoban" in env_id for env_id in registered)


@pytest.mark.parametrize("entry", ENTRIES, ids=_ids(ENTRIES))
def test_each_key_sends_the_action_nethack_takes_for_that_key(entry: EnvEntry) -> None:
    env = make_env(entry.env_id)
    try:
        actions = env.unwrapped.actions
        assert tuple(action.name for action in actions) == ACTIONS[entry.env_id]
        assert env.action_space == gymnasium.spaces.Discrete(len(actions))
        for key in entry.keys:
            assert getattr(Qt.Key, f"Key_{key.key}", None) is not None, key
            typed = TYPED.get(key.key) or ARROWS.get(key.key) or key.key.lower()
            assert chr(int(actions[key.action])) == typed, key
    finally:
        env.close()
    assert not entry.realtime and entry.human_playable


def test_a_frame_is_the_message_the_map_window_and_the_status(room: gymnasium.Env[Any, Any]) -> None:
    assert render_kind_of(room) == PIXELS
    room.reset(seed=0)
    frame = room.render()
    rows, cols = VIEWS["MiniHack-Room-15x15-v0"]
    text_above, text_below = 2 * 14 + 4, 14 + 4
    assert frame.shape == (text_above + rows * TILE + text_below, cols * TILE, 3) and frame.dtype == np.uint8
    # The welcome message above the map, the status line below it: text is drawn in both.
    assert frame[:text_above].any() and frame[-text_below:].any()
    # Without rgb_array nothing is drawn.
    plain = make_env("gym_gui/MiniHack-Room-15x15-v0")
    try:
        plain.reset(seed=0)
        assert plain.render() is None and render_kind_of(plain) != PIXELS
    finally:
        plain.close()


def test_the_map_window_always_shows_the_agent(room: gymnasium.Env[Any, Any]) -> None:
    rows, cols = VIEWS["MiniHack-Room-15x15-v0"]
    room.reset(seed=1)
    room.action_space.seed(1)
    game = room.unwrapped
    for _ in range(60):
        _obs, _reward, terminated, truncated, _info = room.step(room.action_space.sample())
        if terminated or truncated:
            break
        window = room.render()[2 * 14 + 4 :][: rows * TILE]
        whole = game.render()  # NetHack's own drawing of the whole map
        x, y = (int(v) for v in game.last_observation[game._blstats_index][:2])
        placed = [
            (top, left)
            for top in range(MAP_ROWS - rows + 1)
            for left in range(MAP_COLS - cols + 1)
            if np.array_equal(
                whole[top * TILE : (top + rows) * TILE, left * TILE : (left + cols) * TILE], window
            )
        ]
        assert any(top <= y < top + rows and left <= x < left + cols for top, left in placed)


def test_nethack_ids_draw_the_whole_map_and_store_no_screen_descriptions() -> None:
    env = make_env("gym_gui/NetHackScore-v0", render_mode="rgb_array")
    try:
        obs, _info = env.reset(seed=0)
        assert env.render().shape[1] == MAP_COLS * TILE
        assert "screen_descriptions" not in obs
        assert "screen_descriptions" in gymnasium.spec("NetHackScore-v0").make().observation_space.spaces  # type: ignore[union-attr]
        assert {"glyphs", "blstats", "message", "tty_chars", "inv_strs"} <= set(obs)
    finally:
        env.close()
