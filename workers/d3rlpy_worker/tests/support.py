"""What the d3rlpy tests share: datasets recorded with Minari's DataCollector, run configs, stored metrics."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

import gymnasium as gym

from gym_gui.core.config import RunConfig, parse_run_config
from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.home import Home
from gym_gui.storage.run_dir import RunDir
from gym_gui.storage.telemetry import TelemetryReader


@dataclass(frozen=True)
class OfflineHome:
    client: DaemonClient
    home: Home


def _record(
    dataset_id: str, episodes: int, seed: int, choose: Any, algorithm: str, env_id: str = "CartPole-v1"
) -> None:
    import minari

    env = minari.DataCollector(gym.make(env_id))
    env.action_space.seed(seed)
    for episode in range(episodes):
        observation, _ = env.reset(seed=seed + episode)
        done = False
        while not done:
            observation, _, terminated, truncated, _ = env.step(choose(observation))
            done = terminated or truncated
    env.create_dataset(dataset_id=dataset_id, algorithm_name=algorithm, author="gym_gui tests")
    env.close()


def collect_random(dataset_id: str, episodes: int, seed: int) -> None:
    """A CartPole dataset of random play, recorded by Minari's DataCollector under MINARI_DATASETS_PATH."""
    rng = random.Random(seed)
    _record(dataset_id, episodes, seed, lambda _: rng.randrange(2), "random")


def collect_frozenlake(dataset_id: str, episodes: int, seed: int) -> None:
    """A FrozenLake dataset of random play: Discrete observations, which d3rlpy learns one-hot."""
    rng = random.Random(seed)
    _record(dataset_id, episodes, seed, lambda _: rng.randrange(4), "random", env_id="FrozenLake-v1")


def balance(observation: Any) -> int:
    """A scripted CartPole controller that balances the pole for the whole episode (push toward the fall)."""
    return int(observation[2] + 0.5 * observation[3] > 0)


def collect_good(dataset_id: str, episodes: int, seed: int, epsilon: float) -> None:
    """CartPole played by :func:`balance` with ε-greedy noise: data of mixed quality from a good policy."""
    rng = random.Random(seed)
    _record(
        dataset_id,
        episodes,
        seed,
        lambda obs: rng.randrange(2) if rng.random() < epsilon else balance(obs),
        f"balance, epsilon {epsilon}",
    )


def d3rlpy_config(
    algorithm: str, dataset: str, steps: int, env_id: str = "CartPole-v1", **params: Any
) -> RunConfig:
    return parse_run_config(
        {
            "worker": "d3rlpy",
            "algorithm": algorithm,
            "env_id": env_id,
            "dataset": dataset,
            "seed": 1,
            "budget": {"timesteps": steps},
            "params": params,
        }
    )


def metrics(home: Home, run_id: str) -> dict[str, list[tuple[int, float]]]:
    """The run's stored metrics by tag: (step, value) in order."""
    reader = TelemetryReader(RunDir(home.run_dir(run_id)).telemetry_path)
    try:
        return {
            tag: [(point.step, point.value) for point in reader.metrics(tag)] for tag in reader.metric_tags()
        }
    finally:
        reader.close()
