"""A saved CleanRL model as an operator: the process gym_gui asks for its actions (in the bundle).

``python -m gym_gui_cleanrl_worker.operator --model FILE --algo ALGO --env-id ENV [--scripts-dir DIR]
[--source-run RUN]`` loads the model as an evaluation does (:func:`evaluate.load_policy`), sends its card and answers each
batch of turns with one forward pass (``gym_gui_sdk.operator.serve``). gym_gui steps the raw
environment, so what the script's wrappers did between that environment and the network is done
here: observations are normalised with the statistics saved with the model (frozen: an
operator's answer depends on its observation only), and actions clipped as the script's env
clipped them. Wrappers that reshape observations (Atari's resized, grey, stacked frames) are not
emulated: the card declares the observations they make, so gym_gui refuses the raw env.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from gym_gui_sdk.operator import (
    Decision,
    OperatorCard,
    OperatorError,
    OperatorRefused,
    SpaceSpec,
    Turn,
    serve,
)

from gym_gui_cleanrl_worker.evaluate import Policy, add_source_arguments, load_policy
from gym_gui_cleanrl_worker.model_file import ModelError

KIND = "cleanrl"
# A batch of observations in, the same batch out.
BatchTransform = Callable[[np.ndarray], np.ndarray]


def _inner(env: Any) -> Any:
    """The env a wrapper wraps, None for the env itself."""
    inner = getattr(env, "env", None)
    return None if inner is None or inner is env else inner


def _is_action_wrapper(env: Any) -> bool:
    return any(cls.__name__ == "ActionWrapper" for cls in type(env).__mro__)


def _normalize(env: Any) -> BatchTransform:
    """NormalizeObservation's transform with its statistics as they are now (restored from the model)."""
    mean = np.array(env.obs_rms.mean, dtype=np.float64)
    scale = np.sqrt(np.array(env.obs_rms.var, dtype=np.float64) + float(getattr(env, "epsilon", 1e-8)))
    return lambda batch: (batch - mean) / scale


def _each(function: Callable[[Any], Any]) -> BatchTransform:
    """A wrapper's function of one observation, over a batch (a script's lambda may not take one)."""
    return lambda batch: np.stack([np.asarray(function(obs)) for obs in batch])


def observation_transform(env: Any) -> tuple[BatchTransform, Any]:
    """What the script's wrappers of ``env`` do to an observation before the network sees it, as one
    function of a batch, and the observation space that function takes.

    The wrappers are read from the outside in: NormalizeObservation (its saved statistics),
    TransformObservation (its function) and FlattenObservation are applied; wrappers that leave the
    observations alone are passed; the first other one that changes the observation space ends the
    walk, and its space is the one taken (Atari's frame stack: the network's own input).
    """
    steps: list[BatchTransform] = []
    while (inner := _inner(env)) is not None:
        name = type(env).__name__
        if name == "NormalizeObservation":
            steps.append(_normalize(env))
        elif name == "TransformObservation":
            steps.append(_each(getattr(env, "f", None) or env.func))  # gymnasium 1.x calls it func
        elif name == "FlattenObservation":
            steps.append(_each(env.observation))
        elif env.observation_space != inner.observation_space:
            break
        env = inner
    steps.reverse()  # the innermost wrapper sees the observation first

    def transform(batch: np.ndarray) -> np.ndarray:
        for step in steps:
            batch = step(batch)
        return batch

    return transform, env.observation_space


def action_transform(env: Any) -> Callable[[Any], Any]:
    """What the script's action wrappers of ``env`` (ClipAction) do to the network's action before the
    env takes it, outermost first."""
    wrappers = []
    while (inner := _inner(env)) is not None:
        if _is_action_wrapper(env):
            wrappers.append(env)
        env = inner

    def transform(action: Any) -> Any:
        for wrapper in wrappers:
            action = wrapper.action(action)
        return action

    return transform


class PolicyOperator:
    """A loaded CleanRL policy answering turns: deterministic, so its slots hold nothing."""

    def __init__(self, policy: Policy, source_run: str = "") -> None:
        self.policy = policy
        self._observe, observation_space = observation_transform(policy.env)
        self._taken = action_transform(policy.env)
        self.card = OperatorCard(
            name=policy.algo,
            kind=KIND,
            source_run=source_run,
            observation=SpaceSpec.of(observation_space),
            action=SpaceSpec.of(policy.env.action_space),
            env_ids=(policy.env_id,),
            deterministic=True,
        )

    def begin(self, slot: int, seed: int | None) -> None:
        """Nothing to seed: the policy draws no random numbers."""

    def act(self, turns: Sequence[Turn]) -> list[Decision]:
        """The policy's actions for the turns' observations, in one forward pass.

        Raises:
            OperatorError: an observation is not of the card's shape (the network would fail on it).
        """
        batch = np.stack([np.asarray(turn.observation, dtype=np.float32) for turn in turns])
        expected = self.card.observation
        if expected.kind == "Box" and batch.shape[1:] != expected.shape:
            got = f"an observation of shape {batch.shape[1:]}"
            raise OperatorError(f"{self.card.title} expects {expected} observations; it was given {got}")
        actions = self.policy.act_batch(self._observe(batch))
        # Discrete actions are ints already; a Box action goes out as a list of floats.
        return [Decision(a if isinstance(a, int) else np.asarray(self._taken(a)).tolist()) for a in actions]

    def end(self, slot: int) -> None:
        """Nothing to forget (see :meth:`begin`)."""

    def close(self) -> None:
        self.policy.close()


def load_operator(
    model: str, env_id: str, algorithm: str, scripts_dir: str | None = None, source_run: str = ""
) -> PolicyOperator:
    """The operator of the model file ``model`` of ``algorithm`` (its script: see
    :func:`evaluate.load_policy`) on ``env_id``.

    Raises:
        OperatorRefused: the loader's message, when the model cannot be loaded.
    """
    try:
        policy = load_policy(model, env_id, algorithm, scripts_dir)
    except ModelError as exc:
        raise OperatorRefused(str(exc)) from None
    except (
        Exception
    ) as exc:  # the script's own classes refusing the saved weights (a state dict of another net)
        first = (str(exc).strip().splitlines() or [""])[0][:300]
        raise OperatorRefused(f"cannot load {model}: {type(exc).__name__}: {first}") from None
    return PolicyOperator(policy, source_run)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m gym_gui_cleanrl_worker.operator",
        description="Serve a saved gym_gui CleanRL model as an operator on standard input and output.",
    )
    parser.add_argument("--model", required=True, help="a .cleanrl_model file written by the launcher")
    add_source_arguments(parser)
    parser.add_argument("--source-run", default="", help="the run the model comes from (for the card)")
    options = parser.parse_args(argv)
    return serve(
        lambda: load_operator(
            options.model, options.env_id, options.algo, options.scripts_dir, options.source_run
        )
    )


if __name__ == "__main__":
    sys.exit(main())
