"""What the CORL tests share: the suite's CORL-shaped checkout, datasets made with Minari's own DataCollector, run configs."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from gym_gui.core.config import RunConfig, parse_run_config
from gym_gui.storage.home import Home

# A CORL-shaped checkout written for the suite: algorithms/offline/tiny_bc.py.
CHECKOUT = Path(__file__).resolve().parent / "corl_scripts"
PENDULUM = "pendulum/random-v0"
EPISODES = 6  # of Pendulum-v1's 200 steps


def make_dataset(home: Home, name: str, env_id: str, episodes: int, seed: int = 0, **refs: float) -> Any:
    """A dataset of random episodes in the home's datasets, recorded by Minari's own DataCollector as a
    user of Minari would (MINARI_DATASETS_PATH pointed at the home); returns it, as Minari loads it."""
    import minari

    before = os.environ.get("MINARI_DATASETS_PATH")
    os.environ["MINARI_DATASETS_PATH"] = str(home.datasets_dir)
    try:
        env = minari.DataCollector(gym.make(env_id))
        env.action_space.seed(seed)
        for episode in range(episodes):
            env.reset(seed=seed + episode)
            done = False
            while not done:
                _, _, terminated, truncated, _ = env.step(env.action_space.sample())
                done = terminated or truncated
        dataset = env.create_dataset(dataset_id=name, algorithm_name="random", author="gym_gui tests", **refs)
        env.close()
        return dataset
    finally:
        if before is None:
            os.environ.pop("MINARI_DATASETS_PATH", None)
        else:
            os.environ["MINARI_DATASETS_PATH"] = before


def episodes_of(dataset: Any) -> list[Any]:
    return list(dataset.iterate_episodes())


def corl_config(steps: int, dataset: str = PENDULUM, env_id: str = "Pendulum-v1", **extra: Any) -> RunConfig:
    """A run of the suite's tiny_bc on ``dataset``, its params merged with ``extra``'s."""
    params = {"scripts_dir": str(CHECKOUT), **extra.pop("params", {})}
    return parse_run_config(
        {
            "worker": "corl",
            "algorithm": "tiny_bc",
            "env_id": env_id,
            "dataset": dataset,
            "seed": 0,
            "budget": {"timesteps": steps},
            "params": params,
            **extra,
        }
    )


def observations(dataset: Any) -> np.ndarray:
    """Every observation an action was taken in, episode after episode (D4RL's ``observations``)."""
    return np.concatenate([episode.observations[:-1] for episode in episodes_of(dataset)])
