"""Every installed family plays: one episode of one of its envs with the random worker, through a real
daemon, stored step by step with its frames."""

from __future__ import annotations

import io
from collections.abc import Iterator

import numpy as np
import pytest
from PIL import Image

from gym_gui.core.config import parse_run_config
from gym_gui.core.envs import RenderKind
from gym_gui.core.states import RunState
from gym_gui.envs.catalog import env_entry, env_families
from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.home import Home
from gym_gui.storage.run_dir import RunDir
from gym_gui.storage.telemetry import TelemetryReader
from tests.fixtures import SHARED_BUNDLES
from tests.support import module_daemon, random_config

# One env of each family this machine installs (gym_gui's own families and those `make test` adds).
ONE_PER_FAMILY = {
    "toy_text": "FrozenLake-v1",
    "classic_control": "CartPole-v1",
    "box2d": "LunarLander-v3",
    "mujoco": "Hopper-v5",
    "minigrid": "MiniGrid-Empty-5x5-v0",
    "atari": "ALE/Breakout-v5",
    "crafter": "CrafterReward-v1",
    "minihack": "gym_gui/MiniHack-Room-5x5-v0",
    "highway": "highway-fast-v0",
    "vizdoom": "VizdoomBasic-v1",
    "metaworld": "gym_gui/MetaWorld-reach-v3",
    "dm_control": "dm_control/cartpole-swingup-v0",
    "pettingzoo": "tictactoe_v3",  # every seat random: tests/envs/test_pettingzoo.py has more
}
# The steps a long episode is cut at (the run's budget; its last step is truncated): Meta-World's 500
# and DeepMind Control's 1000 steps would each draw a frame, a fifth of a second on a CPU.
STEP_CAPS = {"gym_gui/MetaWorld-reach-v3": 40, "dm_control/cartpole-swingup-v0": 40}
# Families that cannot be installed on this machine: their catalog line says why (test_catalog.py).
NOT_HERE = {"procgen"}


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[DaemonClient, Home]]:
    with module_daemon(
        tmp_path_factory.mktemp("families_home"), SHARED_BUNDLES, ["--max-concurrent", "2"]
    ) as d:
        yield d


def test_every_family_has_an_episode_test_or_a_reason() -> None:
    assert set(ONE_PER_FAMILY) | NOT_HERE == set(env_families())
    assert all(env_families()[name].unavailable for name in NOT_HERE)


@pytest.mark.parametrize("env_id", list(ONE_PER_FAMILY.values()))
def test_one_random_episode_is_stored_with_its_frames(daemon: tuple[DaemonClient, Home], env_id: str) -> None:
    client, home = daemon
    entry = env_entry(env_id)
    assert entry is not None
    cap = {"timesteps": STEP_CAPS[env_id]} if env_id in STEP_CAPS else {}
    record, _token = client.submit(random_config(env_id, episodes=1, **cap))
    final = client.wait_for_end(record.run_id, timeout=180)
    assert final.state is RunState.COMPLETED, final.reason

    reader = TelemetryReader(RunDir(home.run_dir(record.run_id)).telemetry_path)
    try:
        episodes = reader.episodes()
        assert len(episodes) == 1 and episodes[0].steps > 0
        assert reader.step_count() == episodes[0].steps
        assert reader.meta("render_kind") == ("grid" if entry.render_kind is RenderKind.GRID else "pixels")
        first, last = reader.steps(0, 0, 1)[0], reader.steps(0, episodes[0].steps - 1)[0]
        assert first.render  # a frame (or grid) from the first step: Live and Replay draw it
        if entry.render_kind is RenderKind.PIXELS:  # a drawn frame, not a blank one
            assert np.asarray(Image.open(io.BytesIO(first.render))).std() > 0
        assert last.terminated or last.truncated
    finally:
        reader.close()


def test_a_babyai_reset_printing_sampling_rejected_keeps_the_stream_whole(
    daemon: tuple[DaemonClient, Home],
) -> None:
    """BabyAI's level generator prints "Sampling rejected: …" to standard output when it draws a level
    again (seed 4 of PickupLoc: three times); the worker's stream does not go through its output."""
    client, home = daemon
    config = parse_run_config(
        {"worker": "random", "env_id": "BabyAI-PickupLoc-v0", "seed": 4, "budget": {"episodes": 2}}
    )
    record, _token = client.submit(config)
    final = client.wait_for_end(record.run_id, timeout=180)
    assert final.state is RunState.COMPLETED, final.reason
    run_dir = RunDir(home.run_dir(record.run_id))
    reader = TelemetryReader(run_dir.telemetry_path)
    try:
        episodes = reader.episodes()
        assert [episode.seed for episode in episodes] == [4, 5]
        assert reader.step_count() == sum(episode.steps for episode in episodes) > 0
        assert reader.meta("render_kind") == "grid"
    finally:
        reader.close()
    assert "Sampling rejected" in run_dir.worker_stdout_log.read_text()
