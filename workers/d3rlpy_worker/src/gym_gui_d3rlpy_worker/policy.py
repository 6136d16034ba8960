"""A trained d3rlpy model acting on an environment's raw observations (in the bundle): loaded from its ``.d3``
file, its observations encoded as in training (:func:`dataset.observation_transform`), its actions
d3rlpy's greedy ``predict``. The evaluation and the operator play with it.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from gym_gui_d3rlpy_worker.dataset import DatasetError, observation_transform


class ModelError(RuntimeError):
    """The file is not a d3rlpy model that can act on the environment; the message says why."""


class Policy:
    """A d3rlpy algorithm with its built networks, acting on observations of ``observation_space``."""

    def __init__(self, algo: Any, observation_space: Any, action_space: Any) -> None:
        self.algo = algo
        self.name = type(algo).__name__
        try:
            self._encode = observation_transform(observation_space)
        except DatasetError as exc:
            raise ModelError(str(exc)) from None
        self._discrete = type(action_space).__name__ == "Discrete"
        self._start = int(getattr(action_space, "start", 0)) if self._discrete else 0
        self._shape = tuple(getattr(action_space, "shape", ()) or ())
        expected = tuple(np.asarray(algo.impl.observation_shape).reshape(-1)) if algo.impl else ()
        probe = self._encode(np.asarray([observation_space.sample()]))
        if expected and tuple(probe.shape[1:]) != tuple(int(d) for d in expected):
            raise ModelError(
                f"the model takes observations of shape {tuple(expected)}; "
                f"the environment's become {tuple(probe.shape[1:])}"
            )

    def act_batch(self, observations: Sequence[Any]) -> list[Any]:
        """The greedy actions for raw observations, in one forward pass: ints (Discrete) or float arrays."""
        batch = self._encode(np.stack([np.asarray(obs) for obs in observations]))
        actions = self.algo.predict(batch)
        if self._discrete:
            return [int(action) + self._start for action in actions]
        return [np.asarray(action, dtype=np.float32).reshape(self._shape) for action in actions]

    def act(self, observation: Any) -> Any:
        return self.act_batch([observation])[0]


def load_policy(model_path: str | os.PathLike[str], observation_space: Any, action_space: Any) -> Policy:
    """The model saved at ``model_path`` (``algo.save``), on the CPU.

    Raises:
        ModelError: it cannot be loaded as a d3rlpy model, or takes other observations.
    """
    import d3rlpy

    try:
        algo = d3rlpy.load_learnable(os.fspath(model_path), device="cpu:0")
    except Exception as exc:
        first = (str(exc).strip().splitlines() or [""])[0][:300]
        raise ModelError(
            f"cannot load {model_path} as a d3rlpy model: {type(exc).__name__}: {first}"
        ) from None
    return Policy(algo, observation_space, action_space)


def make_env(env_id: str, kwargs: dict[str, Any] | None = None, render_mode: str | None = None) -> Any:
    """The run's environment, as gymnasium makes it in the bundle."""
    import gymnasium

    if render_mode is not None:
        return gymnasium.make(env_id, render_mode=render_mode, **(kwargs or {}))
    return gymnasium.make(env_id, **(kwargs or {}))


def encoded_env(env: Any) -> Any:
    """``env`` whose observations are what the networks take (one-hot for a Discrete space): d3rlpy's
    EnvironmentEvaluator hands them to ``predict`` as they come."""
    import gymnasium

    if type(env.observation_space).__name__ != "Discrete":
        return env
    encode = observation_transform(env.observation_space)
    space = gymnasium.spaces.Box(0.0, 1.0, (int(env.observation_space.n),), np.float32)

    class OneHot(gymnasium.ObservationWrapper):
        def __init__(self, inner: Any) -> None:
            super().__init__(inner)
            self.observation_space = space

        def observation(self, observation: Any) -> Any:
            return encode(np.asarray([observation]))[0]

    return OneHot(env)
