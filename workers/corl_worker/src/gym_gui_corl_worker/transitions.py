"""The run's dataset as one file of transitions: D4RL's flat arrays, written from a Minari dataset in gym_gui's
venv (the daemon, at launch) and read in the corl bundle by the d4rl stand-in.

Why a file of its own rather than Minari in the bundle: CORL's scripts need old gym (0.23) and Minari 0.5
needs gymnasium 1; the bundle would then hold both, and Minari's reader besides, for what is a few numpy
arrays. The daemon already holds Minari (``gym_gui.datasets``), has just checked the dataset's files
against their recorded sha256, and the copy it writes into the run keeps exactly what the run learned
from, whatever happens to the dataset later.

Transition ``i`` is one stored step: ``observations[i]`` the observation the action was taken in,
``actions[i]``, ``rewards[i]``, ``next_observations[i]`` the one it led to, ``terminals[i]`` Minari's
termination and ``timeouts[i]`` its truncation. An episode's last step is always one or the other (an
episode that neither terminated nor was truncated, cut off when it was recorded, is marked a timeout),
so D4RL-style code that splits trajectories on ``terminals | timeouts`` finds every episode.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

# The variable naming the run's transitions file, set in the worker's environment by the plugin's plan.
DATASET_VAR = "GYM_GUI_CORL_DATASET"
# The arrays of the file, D4RL's names.
ARRAYS = ("observations", "actions", "rewards", "next_observations", "terminals", "timeouts")
FORMAT = 1
_META = "meta"


class TransitionsError(Exception):
    """The transitions file cannot be written or read as one (the message names the file and why)."""


@dataclass(frozen=True)
class Transitions:
    """The arrays of a transitions file and what it says of itself (:func:`meta_of`)."""

    arrays: Mapping[str, np.ndarray]
    meta: Mapping[str, Any]

    @property
    def env_id(self) -> str | None:
        value = self.meta.get("env_id")
        return value if isinstance(value, str) else None

    def ref_scores(self) -> tuple[float, float] | None:
        """The dataset's reference returns (``ref_min_score``, ``ref_max_score``), when it has both."""
        low, high = self.meta.get("ref_min_score"), self.meta.get("ref_max_score")
        if isinstance(low, int | float) and isinstance(high, int | float) and high != low:
            return float(low), float(high)
        return None


def meta_of(
    name: str,
    env_id: str | None,
    ref_min_score: float | None,
    ref_max_score: float | None,
    sha256: str,
) -> dict[str, Any]:
    """What a transitions file records of the dataset it was written from."""
    return {
        "format": FORMAT,
        "dataset": name,
        "env_id": env_id,
        "ref_min_score": ref_min_score,
        "ref_max_score": ref_max_score,
        "sha256": sha256,
    }


def write_transitions(data_dir: Path, target: Path, meta: Mapping[str, Any]) -> int:
    """Read the Minari dataset in ``data_dir`` (its ``data/``) through Minari's own reader and write its
    transitions to ``target`` (written aside, then renamed into place); returns how many.

    Raises:
        TransitionsError: the dataset holds an episode whose observations or actions are not flat
            arrays (a Dict or Tuple space), or the file cannot be written.
    """
    from minari.dataset.minari_dataset import MinariDataset

    dataset = MinariDataset(data_dir)
    parts: dict[str, list[np.ndarray]] = {name: [] for name in ARRAYS}
    for episode in dataset.iterate_episodes():
        observations, actions = episode.observations, episode.actions
        if not isinstance(observations, np.ndarray) or not isinstance(actions, np.ndarray):
            raise TransitionsError(
                f"{data_dir}: episode {episode.id} holds {type(observations).__name__} observations and "
                f"{type(actions).__name__} actions; CORL's scripts take flat arrays (Box spaces)"
            )
        steps = len(episode.rewards)
        terminals = np.asarray(episode.terminations, dtype=bool)
        timeouts = np.asarray(episode.truncations, dtype=bool).copy()
        if steps and not (terminals[-1] or timeouts[-1]):
            timeouts[-1] = True  # cut off when recorded: its end is an end all the same
        parts["observations"].append(observations[:steps].reshape(steps, -1))
        parts["next_observations"].append(observations[1 : steps + 1].reshape(steps, -1))
        parts["actions"].append(actions.reshape(steps, -1))
        parts["rewards"].append(np.asarray(episode.rewards, dtype=np.float32))
        parts["terminals"].append(terminals)
        parts["timeouts"].append(timeouts)
    arrays = {
        name: np.concatenate(chunks) if chunks else np.zeros((0,), dtype=np.float32)
        for name, chunks in parts.items()
    }
    for name in ("observations", "next_observations", "actions"):
        arrays[name] = arrays[name].astype(np.float32, copy=False)
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = target.with_name(f".{target.name}.writing")
    try:
        contents: dict[str, Any] = {**arrays, _META: np.array(json.dumps(dict(meta)))}
        with open(staging, "wb") as file:
            np.savez(file, **contents)
        os.replace(staging, target)
    except OSError as exc:
        staging.unlink(missing_ok=True)
        raise TransitionsError(f"{target}: cannot write the run's transitions: {exc.strerror}") from None
    return len(arrays["rewards"])


def read_transitions(path: Path) -> Transitions:
    """The transitions file at ``path``.

    Raises:
        TransitionsError: it is missing, not a transitions file, or of another format.
    """
    try:
        with np.load(path, allow_pickle=False) as data:
            missing = [name for name in (*ARRAYS, _META) if name not in data.files]
            if missing:
                raise TransitionsError(f"{path}: not a transitions file (no {', '.join(missing)})")
            arrays = {name: data[name] for name in ARRAYS}
            meta = json.loads(str(data[_META]))
    except (OSError, ValueError) as exc:
        raise TransitionsError(f"{path}: cannot be read as the run's transitions: {exc}") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise TransitionsError(f"{path}: a transitions file of another format ({meta!r})")
    return Transitions(arrays, meta)
