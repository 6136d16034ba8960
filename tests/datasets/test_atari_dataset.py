"""A Minari dataset written from an Atari run, whose screens are stored compact: Minari's own loader reads
back every stored screen exact, and the first one rebuilt from the episode's seed."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import orjson
import pytest
from gym_gui_sdk.encoding import loads_observation

from gym_gui.core.config import parse_run_config
from gym_gui.core.states import RunState
from gym_gui.datasets.recording import RunSource, record_dataset
from gym_gui.datasets.store import DatasetStore
from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.home import Home
from gym_gui.storage.run_dir import RunDir
from gym_gui.storage.telemetry import TelemetryReader

ale_py = pytest.importorskip("ale_py", reason="the Atari family (ale-py) is not installed")


def test_a_dataset_of_an_atari_run_holds_its_screens_as_arrays(
    client: DaemonClient, home: Home, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(home.datasets_dir))
    seed = 4
    record, _token = client.submit(
        parse_run_config(
            {"worker": "random", "env_id": "ALE/Pong-v5", "seed": seed, "budget": {"timesteps": 90}}
        )
    )
    final = client.wait_for_end(record.run_id, timeout=120)
    assert final.state is RunState.COMPLETED, final.reason
    run_dir = home.run_dir(record.run_id)
    reader = TelemetryReader(RunDir(run_dir).telemetry_path)
    try:
        stored = reader.steps(0)
    finally:
        reader.close()
    assert stored[0].observation.startswith('{"ndarray":')

    recorded = record_dataset(DatasetStore(home), "pong/random-v0", [RunSource.of(record.run_id, run_dir)])
    assert (recorded.episodes, recorded.steps, recorded.left_out) == (1, 90, ())

    import minari

    dataset = minari.load_dataset("pong/random-v0")
    (episode,) = list(dataset.iterate_episodes())
    observations = episode.observations
    assert observations.dtype == np.uint8 and observations.shape == (91, 210, 160, 3)
    for number, step in enumerate(stored, start=1):
        assert np.array_equal(observations[number], loads_observation(step.observation))
    assert episode.actions.tolist() == [orjson.loads(step.action) for step in stored]
    gym.register_envs(ale_py)
    env = gym.make("ALE/Pong-v5")
    try:
        assert np.array_equal(observations[0], env.reset(seed=seed)[0])
    finally:
        env.close()
