"""A Minari dataset of the home as d3rlpy's MDPDataset (in the bundle): its steps in episode order, its
own mean return and its reference scores.

Minari keeps an episode as T+1 observations (the reset one first) and T actions, rewards, terminations
and truncations; d3rlpy's MDPDataset takes one row per step, the observation the action was taken in,
and an episode ends at a terminal or a timeout. So each episode gives ``observations[:-1]``, its
actions and rewards, ``terminals = terminations`` and ``timeouts = truncations``; an episode that ends
with neither (cut off) ends with a timeout, so d3rlpy never joins it to the next one. The last
observation (after the last action) is not kept: d3rlpy bootstraps no value past an episode's end.

Discrete observations (FrozenLake's cell, Taxi's state) are given to d3rlpy one-hot, as a Box of n
zeros and ones: its networks take vectors. :func:`observation_transform` is that encoding, which the
evaluation and the operator apply to the raw environment's observations too.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np


class DatasetError(RuntimeError):
    """The dataset cannot be read or learned from here; the message says which and why."""


@dataclass(frozen=True)
class OfflineData:
    """What a run learns from, and what it knows of the data."""

    mdp: Any  # d3rlpy.dataset.ReplayBuffer (an MDPDataset)
    episodes: int
    steps: int
    mean_return: float
    ref_min_score: float | None
    ref_max_score: float | None
    discrete_actions: bool
    env_spec: Any  # the env spec Minari recorded (None without one)


def observation_transform(space: Any) -> Callable[[np.ndarray], np.ndarray]:
    """What the networks see of a batch of raw observations of ``space``: one-hot rows for a Discrete
    space (n columns), flat float32 for a Box (its shape kept).

    Raises:
        DatasetError: a space of another kind (Dict, Tuple, MultiDiscrete…).
    """
    kind = type(space).__name__
    if kind == "Discrete":
        n, start = int(space.n), int(getattr(space, "start", 0))
        eye = np.eye(n, dtype=np.float32)
        return lambda batch: eye[np.asarray(batch, dtype=np.int64).reshape(-1) - start]
    if kind == "Box":
        return lambda batch: np.asarray(batch, dtype=np.float32)
    raise DatasetError(f"observations of a {kind} space: d3rlpy learns from Box and Discrete ones")


def load(name: str) -> OfflineData:
    """Minari's dataset ``name`` (under ``MINARI_DATASETS_PATH``) as an MDPDataset, episodes in order.

    Raises:
        DatasetError: Minari cannot load it, it has no steps, or its spaces are not ones d3rlpy takes.
    """
    import minari
    from d3rlpy.constants import ActionSpace
    from d3rlpy.dataset import MDPDataset

    try:
        dataset = minari.load_dataset(name)
    except Exception as exc:
        raise DatasetError(
            f"dataset {name!r} cannot be loaded by Minari: {type(exc).__name__}: {exc}"
        ) from None
    encode = observation_transform(dataset.observation_space)
    action_kind = type(dataset.action_space).__name__
    if action_kind not in ("Discrete", "Box"):
        raise DatasetError(
            f"dataset {name!r} has actions of a {action_kind} space: d3rlpy takes Box or Discrete"
        )
    discrete = action_kind == "Discrete"
    columns: dict[str, list[np.ndarray]] = {key: [] for key in ("obs", "act", "rew", "term", "timeout")}
    returns = []
    for episode in dataset.iterate_episodes():
        length = len(episode.actions)
        if length == 0:
            continue
        terminals = np.asarray(episode.terminations, dtype=bool).copy()
        timeouts = np.asarray(episode.truncations, dtype=bool).copy()
        if not (terminals[-1] or timeouts[-1]):
            timeouts[-1] = True  # cut off: ends here all the same
        rewards = np.asarray(episode.rewards, dtype=np.float32)
        columns["obs"].append(encode(np.asarray(episode.observations)[:length]))
        columns["act"].append(np.asarray(episode.actions))
        columns["rew"].append(rewards)
        columns["term"].append(terminals)
        columns["timeout"].append(timeouts)
        returns.append(float(rewards.sum()))
    if not returns:
        raise DatasetError(f"dataset {name!r} has no steps to learn from")
    actions = np.concatenate(columns["act"])
    if discrete:
        actions = actions.astype(np.int64).reshape(-1) - int(getattr(dataset.action_space, "start", 0))
        action_size = int(dataset.action_space.n)
    else:
        actions = actions.astype(np.float32).reshape(len(actions), -1)
        action_size = actions.shape[1]
    mdp = MDPDataset(
        observations=np.concatenate(columns["obs"]),
        actions=actions,
        rewards=np.concatenate(columns["rew"]),
        terminals=np.concatenate(columns["term"]),
        timeouts=np.concatenate(columns["timeout"]),
        action_space=ActionSpace.DISCRETE if discrete else ActionSpace.CONTINUOUS,
        action_size=action_size,
    )
    metadata = dataset.storage.metadata
    return OfflineData(
        mdp=mdp,
        episodes=len(returns),
        steps=int(sum(len(rows) for rows in columns["rew"])),
        mean_return=float(np.mean(returns)),
        ref_min_score=_number(metadata.get("ref_min_score")),
        ref_max_score=_number(metadata.get("ref_max_score")),
        discrete_actions=discrete,
        env_spec=dataset.spec.env_spec,
    )


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None
