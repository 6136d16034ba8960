"""An Atari run of the random worker stores its screens compact, and every stored screen read back is the
environment's own: the episode played again from its seed and stored actions gives the same arrays."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import orjson
import pytest
from gym_gui_sdk.encoding import loads_observation

from gym_gui.core.config import parse_run_config
from gym_gui.core.states import RunState
from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.home import Home
from gym_gui.storage.run_dir import RunDir
from gym_gui.storage.telemetry import TelemetryReader

ale_py = pytest.importorskip("ale_py", reason="the Atari family (ale-py) is not installed")


def test_a_breakout_run_stores_compact_screens_that_read_back_as_the_envs_own(
    client: DaemonClient, home: Home
) -> None:
    seed, steps = 11, 120
    record, _token = client.submit(
        parse_run_config(
            {"worker": "random", "env_id": "ALE/Breakout-v5", "seed": seed, "budget": {"timesteps": steps}}
        )
    )
    final = client.wait_for_end(record.run_id, timeout=120)
    assert final.state is RunState.COMPLETED, final.reason
    reader = TelemetryReader(RunDir(home.run_dir(record.run_id)).telemetry_path)
    try:
        stored = reader.steps(0)
        episode = reader.episode(0)
    finally:
        reader.close()
    assert len(stored) == steps and episode.seed == seed
    assert all(
        s.observation.startswith('{"ndarray":{"dtype":"|u1","shape":[210,160,3],"zlib":"') for s in stored
    )
    # A screen of 100,800 bytes is stored in a few hundred bytes of text, not ~400 KB of JSON list.
    assert max(len(s.observation) for s in stored) < 10_000

    gym.register_envs(ale_py)
    env = gym.make("ALE/Breakout-v5")
    try:
        env.reset(seed=seed)  # the episode's start: the stored observations are those after each step
        for number, step in enumerate(stored):
            observation = env.step(orjson.loads(step.action))[0]
            read = loads_observation(step.observation)
            assert isinstance(read, np.ndarray) and read.dtype == np.uint8 and read.shape == (210, 160, 3)
            assert np.array_equal(read, observation), f"step {number}'s stored screen is not the env's"
    finally:
        env.close()
