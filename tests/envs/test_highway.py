"""The highway-env family against the installed highway-env: its fast ids, their key maps sending the
DiscreteMetaAction each key says, and their frames."""

from __future__ import annotations

import re

import gymnasium
import pytest
from gym_gui_sdk.render import PIXELS, render_kind_of

from gym_gui.core.envs import EnvEntry
from gym_gui.envs.catalog import env_family, family_entries, family_installed, family_of
from gym_gui.envs.check import check_env, make_env

ENTRIES = family_entries("highway")
PLAYABLE = [entry for entry in ENTRIES if entry.human_playable]
assert family_installed("highway")


@pytest.fixture(autouse=True)
def _offscreen(monkeypatch: pytest.MonkeyPatch) -> None:
    # The suite gives SDL its dummy driver (tests/fixtures.py), under which highway-env draws nothing;
    # this process draws as the app does where no SDL driver is set, with the family's.
    monkeypatch.setenv("SDL_VIDEODRIVER", env_family("highway").environment["SDL_VIDEODRIVER"])


@pytest.mark.parametrize("entry", PLAYABLE, ids=[entry.env_id for entry in PLAYABLE])
def test_each_key_sends_the_meta_action_it_names(entry: EnvEntry) -> None:
    env = make_env(entry.env_id, render_mode="rgb_array")
    try:
        meanings = env.unwrapped.action_type.actions  # type: ignore[attr-defined]
        assert isinstance(env.action_space, gymnasium.spaces.Discrete)
        assert sorted({key.action for key in entry.keys}) == list(range(int(env.action_space.n)))
        for key in entry.keys:
            named = re.search(r"\(([A-Z_]+)\)$", key.description)
            assert named is not None and meanings[key.action] == named.group(1), key
        env.reset(seed=0)
        assert render_kind_of(env) == PIXELS
        frame = env.render()
        assert frame.ndim == 3 and frame.shape[2] == 3 and frame.std() > 0  # type: ignore[union-attr]
        _obs, _reward, terminated, truncated, _info = env.step(entry.keys[0].action)
        assert isinstance(terminated, bool) and isinstance(truncated, bool)
    finally:
        env.close()
    assert not entry.realtime


def test_the_continuous_ids_are_listed_but_not_played() -> None:
    unplayed = {entry.env_id for entry in ENTRIES if not entry.human_playable}
    assert unplayed == {"parking-v0", "racetrack-v1"}
    env = make_env("parking-v0")
    try:
        obs, _info = env.reset(seed=0)
        assert set(obs) == {"observation", "achieved_goal", "desired_goal"}
    finally:
        env.close()


def test_highway_envs_other_ids_are_the_familys_but_not_listed() -> None:
    assert "highway-fast-v0" in {entry.env_id for entry in ENTRIES}
    assert "highway-v0" not in {entry.env_id for entry in ENTRIES}  # half a second a step
    assert family_of("highway-v0") == family_of("u-turn-v1") == "highway"
    assert check_env("highway-v0").family == "highway"
