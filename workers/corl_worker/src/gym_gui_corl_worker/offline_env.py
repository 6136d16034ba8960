"""What D4RL gives a CORL script, made from the run's dataset: its arrays, its normalised score, and the
env's offline methods (``get_dataset``, ``get_normalized_score``, ``ref_min_score``, ``ref_max_score``).

Runs in the corl bundle, in the script's process; the ``d4rl`` stand-in (``standin/d4rl``) is its face.
The dataset is the transitions file the plugin's plan wrote into the run (:mod:`transitions`), named by
``GYM_GUI_CORL_DATASET``. Real D4RL registers its own envs in gym; here the dataset's env is gym's own
(``Pendulum-v1``), and every env ``gym.make`` makes of the dataset's env id comes wrapped in
:class:`OfflineEnv`, which is where CORL's scripts look for the score (``env.get_normalized_score``).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gym
import numpy as np

from gym_gui_corl_worker.transitions import DATASET_VAR, Transitions, TransitionsError, read_transitions

# Called with each raw score a script normalises (the worker records it as the run's return).
SCORE_LISTENERS: list[Callable[[float], None]] = []
# Without reference returns a score is the raw return / 100, so CORL's "D4RL score" (normalised × 100)
# reads as the raw return.
NO_REFERENCE_SCALE = 100.0


class StandInError(RuntimeError):
    """The d4rl stand-in cannot serve the script (no dataset for the run, another env's dataset)."""


@functools.cache
def run_transitions() -> Transitions:
    """The run's transitions, read once.

    Raises:
        StandInError: the run names none, or its file cannot be read.
    """
    path = os.environ.get(DATASET_VAR)
    if not path:
        raise StandInError(
            f"gym_gui's d4rl stand-in has no dataset: {DATASET_VAR} is not set (runs of the corl kind get it "
            "from their --dataset)"
        )
    try:
        return read_transitions(Path(path))
    except TransitionsError as exc:
        raise StandInError(str(exc)) from None


def _check_env(env: Any) -> None:
    """Refuse an env that is not the dataset's: its data would be another env's."""
    spec = getattr(getattr(env, "unwrapped", env), "spec", None) or getattr(env, "spec", None)
    made = getattr(spec, "id", None)
    wanted = run_transitions().env_id
    if env is not None and made is not None and wanted is not None and made != wanted:
        raise StandInError(
            f"the run's dataset {run_transitions().meta.get('dataset')!r} was recorded on {wanted}, "
            f"and the script asks for the data of {made}"
        )


def get_dataset(env: Any = None) -> dict[str, np.ndarray]:
    """D4RL's ``env.get_dataset()``: one entry a step (observations, actions, rewards, terminals,
    timeouts), with ``next_observations`` besides (D4RL's files lack them; Minari keeps them)."""
    _check_env(env)
    return {name: array.copy() for name, array in run_transitions().arrays.items()}


def qlearning_dataset(
    env: Any = None, dataset: dict[str, np.ndarray] | None = None, terminate_on_end: bool = False, **_: Any
) -> dict[str, np.ndarray]:
    """D4RL's ``qlearning_dataset``: observations, actions, next_observations, rewards, terminals (and
    timeouts), one entry a transition.

    D4RL drops each episode's last step when it timed out (unless ``terminate_on_end``), because its
    files hold no observation after it; a Minari dataset does, so every step is a transition here.
    A ``dataset`` given (a script's own arrays) is used as it is, without that step dropped either.
    """
    if dataset is None:
        dataset = get_dataset(env)
    arrays = {name: np.asarray(dataset[name]) for name in dataset}
    arrays["rewards"] = arrays["rewards"].astype(np.float32)
    for name in ("observations", "actions", "next_observations"):
        if name in arrays:
            arrays[name] = arrays[name].astype(np.float32)
    return arrays


def normalized_score(score: Any) -> Any:
    """D4RL's normalisation of a return, by the dataset's reference returns when it has them, else
    ``score / 100``; each score goes to :data:`SCORE_LISTENERS` (their mean, for an array)."""
    raw = float(np.mean(score))
    for listener in SCORE_LISTENERS:
        listener(raw)
    refs = run_transitions().ref_scores()
    if refs is None:
        return score / NO_REFERENCE_SCALE
    low, high = refs
    return (score - low) / (high - low)


def reference_scores() -> tuple[float | None, float | None]:
    refs = run_transitions().ref_scores()
    return (None, None) if refs is None else refs


class OfflineEnv(gym.Wrapper):
    """A gym env made for the run's dataset, with the methods D4RL's offline envs have."""

    @property
    def ref_min_score(self) -> float | None:
        return reference_scores()[0]

    @property
    def ref_max_score(self) -> float | None:
        return reference_scores()[1]

    @property
    def dataset_name(self) -> str:
        return str(run_transitions().meta.get("dataset"))

    def get_dataset(self, *_: Any, **__: Any) -> dict[str, np.ndarray]:
        return get_dataset(self)

    def get_normalized_score(self, score: Any) -> Any:
        return normalized_score(score)


_PATCHED = "_gym_gui_offline"


def patch_gym_make() -> None:
    """Have ``gym.make`` wrap each env of the dataset's env id in :class:`OfflineEnv` (idempotent; nothing
    without a run's dataset, as when a script is only described)."""
    if not os.environ.get(DATASET_VAR) or getattr(gym.make, _PATCHED, False):
        return
    make = gym.make

    @functools.wraps(make)
    def offline_make(id: Any, *args: Any, **kwargs: Any) -> Any:
        env = make(id, *args, **kwargs)
        made = getattr(env.spec, "id", None) if getattr(env, "spec", None) is not None else None
        return OfflineEnv(env) if made == run_transitions().env_id else env

    setattr(offline_make, _PATCHED, True)
    gym.make = offline_make
    gym.envs.registration.make = offline_make
