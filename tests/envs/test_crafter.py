"""The Crafter family against the installed crafter: gym_gui's gymnasium adapter (spaces, seeding, episode
end, fresh infos), its key map (crafter's own GUI's keys) and how the SDK draws it."""

from __future__ import annotations

import subprocess
import sys

import crafter
import gymnasium
import numpy as np
import pytest
from gym_gui_sdk import render

from gym_gui.core.envs import RenderKind
from gym_gui.envs.catalog import env_entry, env_family, family_installed
from gym_gui.envs.check import check_env, make_env
from gym_gui.envs.families.crafter import KEYS, NOOP
from gym_gui.envs.families.crafter.env import ACTIONS, EPISODE_STEPS, RENDER_SIZE

IDS = ("CrafterReward-v1", "CrafterNoReward-v1")


def test_the_family_installs_crafter_exactly_and_its_module_registers_both_ids() -> None:
    family = env_family("crafter")
    assert family.packages == ("crafter==1.8.3",) and family.unavailable == ""
    assert family.install_hint == "install it with `gym-gui envs install crafter`"
    assert family_installed("crafter")
    for env_id in IDS:
        spec = gymnasium.spec(env_id)
        assert spec.entry_point == "gym_gui.envs.families.crafter.env:CrafterEnv"
        assert spec.max_episode_steps == EPISODE_STEPS == 10000
        status = check_env(env_id)
        assert status.installed and status.family == "crafter" and status.entry is env_entry(env_id)
    # The family's module is what registers them: a fresh interpreter knows them only after importing it.
    code = (
        "import gymnasium; assert 'CrafterReward-v1' not in gymnasium.registry; "
        "import gym_gui.envs.families.crafter.env; assert 'CrafterNoReward-v1' in gymnasium.registry"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_spaces_are_crafters_pixels_and_its_seventeen_actions() -> None:
    env = make_env("CrafterReward-v1")
    try:
        assert env.observation_space == gymnasium.spaces.Box(0, 255, (64, 64, 3), np.uint8)
        assert env.action_space == gymnasium.spaces.Discrete(17)
        assert tuple(crafter.constants.actions) == ACTIONS and ACTIONS[NOOP] == "noop"
        assert env.unwrapped.get_action_meanings() == list(ACTIONS)  # type: ignore[attr-defined]
        observation, info = env.reset(seed=0)
        assert env.observation_space.contains(observation) and info == {}
    finally:
        env.close()


def test_a_seed_draws_the_same_world_and_no_seed_the_next_one() -> None:
    """Three resets: drawing a world takes crafter a second or two."""
    env = make_env("CrafterReward-v1")
    try:
        episodes = []
        for _ in range(2):
            # The same seed and actions give the same world and episode, step for step.
            first, _ = env.reset(seed=7)
            env.action_space.seed(7)
            steps = [env.step(env.action_space.sample())[:2] for _ in range(30)]
            episodes.append([(first, 0.0), *steps])
        for (obs_a, reward_a), (obs_b, reward_b) in zip(*episodes, strict=True):
            assert np.array_equal(obs_a, obs_b) and reward_a == reward_b
        following, _ = env.reset()
        assert not np.array_equal(episodes[0][0][0], following)
    finally:
        env.close()


@pytest.mark.parametrize("env_id", IDS)
def test_death_terminates_and_each_step_has_its_own_info(env_id: str) -> None:
    env = make_env(env_id)
    try:
        env.reset(seed=0)
        env.action_space.seed(0)
        infos = []
        total = 0.0
        while True:
            _obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
            total += float(reward)
            infos.append(info)
            if terminated or truncated:
                break
        # A random player dies long before crafter's 10000 steps: death terminates, it does not truncate.
        assert terminated and not truncated and infos[-1]["discount"] == 0.0
        assert infos[-1]["inventory"]["health"] == 0
        assert set(infos[-1]["achievements"]) == set(crafter.constants.achievements)
        # Unlocked achievements are its reward, not the reward-free variant's.
        unlocked = sum(1 for count in infos[-1]["achievements"].values() if count)
        assert unlocked > 0
        if env_id == "CrafterNoReward-v1":
            assert total == 0.0
        else:
            assert total == pytest.approx(sum(info["reward"] for info in infos))
        # No two steps share an info object (crafter moves the player's position array in place).
        assert infos[0]["player_pos"] is not infos[1]["player_pos"]
    finally:
        env.close()


def test_frames_are_drawn_at_the_render_size_and_the_sdk_sees_pixels() -> None:
    env = make_env("CrafterReward-v1", render_mode="rgb_array")
    try:
        env.reset(seed=0)
        frame = env.render()
        assert isinstance(frame, np.ndarray) and frame.shape == (RENDER_SIZE, RENDER_SIZE, 3)
        assert frame.dtype == np.uint8 and render.render_kind_of(env) == render.PIXELS
        assert render.frame_payload(frame).startswith(b"\x89PNG")
    finally:
        env.close()


@pytest.mark.parametrize("env_id", IDS)
def test_the_key_map_is_crafters_own_played_in_real_time(env_id: str) -> None:
    entry = env_entry(env_id)
    assert entry is not None and entry.keys == KEYS
    assert entry.render_kind is RenderKind.PIXELS and entry.realtime and entry.idle_action == NOOP
    assert entry.play_fps is None and entry.play_kwargs == ()  # the env's own 5 steps a second
    env = make_env(env_id)
    try:
        assert env.metadata["render_fps"] == 5
        # crafter/run_gui.py's keymap, key for key but its table's (T is gym_gui's takeover key):
        # every action but noop has one key.
        assert {key.key: ACTIONS[int(key.action)] for key in KEYS} == {
            "W": "move_up",
            "A": "move_left",
            "S": "move_down",
            "D": "move_right",
            "Space": "do",
            "Tab": "sleep",
            "R": "place_stone",
            "E": "place_table",
            "F": "place_furnace",
            "P": "place_plant",
            "1": "make_wood_pickaxe",
            "2": "make_stone_pickaxe",
            "3": "make_iron_pickaxe",
            "4": "make_wood_sword",
            "5": "make_stone_sword",
            "6": "make_iron_sword",
        }
        env.reset(seed=0)
        for key in KEYS:
            assert env.action_space.contains(np.int64(key.action))
            env.step(key.action)
    finally:
        env.close()
