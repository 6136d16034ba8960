"""The DeepMind Control family against the installed dm-control and shimmy: the suite tasks the catalog
lists are as its docs say, draw frames through EGL, and a random worker stores their dict observations."""

from __future__ import annotations

import json

import gymnasium
import numpy as np
import pytest
from gym_gui_sdk.render import PIXELS, render_kind_of

from gym_gui.core.envs import EnvEntry
from gym_gui.core.states import RunState
from gym_gui.envs.catalog import env_doc, family_entries, family_installed, family_of
from gym_gui.envs.check import make_env
from gym_gui.envs.families.dm_control import TASKS, task_id
from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.home import Home
from gym_gui.storage.run_dir import RunDir
from gym_gui.storage.telemetry import TelemetryReader
from tests.support import random_config, stop_daemon

ENTRIES = family_entries("dm_control")
# Imports shimmy as gym_gui does: with the family's MUJOCO_GL=egl set first, and its ids registered.
assert family_installed("dm_control")


@pytest.mark.parametrize("entry", ENTRIES, ids=[entry.env_id for entry in ENTRIES])
def test_each_listed_task_has_the_spaces_and_length_its_doc_gives(entry: EnvEntry) -> None:
    task = entry.env_id.removeprefix("dm_control/").removesuffix("-v0")
    _goal, observation, actions = TASKS[task]
    env = make_env(entry.env_id)
    try:
        spaces = env.observation_space.spaces  # type: ignore[attr-defined]
        assert {name: space.shape for name, space in spaces.items()} == observation
        assert env.action_space == gymnasium.spaces.Box(-1, 1, (actions,), np.float64)
        assert env.unwrapped._env._step_limit == 1000  # type: ignore[attr-defined]
    finally:
        env.close()
    assert not entry.human_playable and entry.render_kind.value == PIXELS
    assert f"`{entry.env_id}`" in env_doc(entry.env_id)


def test_the_catalog_lists_shimmys_ids_and_claims_the_others() -> None:
    assert task_id("cheetah-run") == "dm_control/cheetah-run-v0" in gymnasium.registry
    assert family_of("dm_control/quadruped-walk-v0") == "dm_control"


def test_a_task_draws_frames_through_egl() -> None:
    env = make_env(task_id("cartpole-swingup"), render_mode="rgb_array")
    try:
        env.reset(seed=0)
        assert render_kind_of(env) == PIXELS
        frame = env.render()
        assert frame.shape == (240, 320, 3) and frame.any()  # type: ignore[union-attr]
    finally:
        env.close()


def test_a_random_run_stores_each_steps_dict_observation_and_frames(home: Home) -> None:
    client = DaemonClient.connect(home.root)
    try:
        record, _token = client.submit(random_config(task_id("reacher-easy"), episodes=1, timesteps=5))
        final = client.wait_for_end(record.run_id, timeout=180)
    finally:
        stop_daemon(client)
    assert final.state is RunState.COMPLETED, final.reason
    reader = TelemetryReader(RunDir(home.run_dir(record.run_id)).telemetry_path)
    try:
        steps = reader.steps(0, 0, 5)
        assert len(steps) == 5 and steps[-1].truncated and steps[0].render
        for step in steps:
            observation = json.loads(step.observation)
            assert {name: np.shape(value) for name, value in observation.items()} == TASKS["reacher-easy"][1]
            assert json.loads(step.info)["timestep.discount"] == 1.0
    finally:
        reader.close()
