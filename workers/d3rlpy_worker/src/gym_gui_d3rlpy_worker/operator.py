"""``python -m gym_gui_d3rlpy_worker.operator --model FILE --card JSON``: a d3rlpy run's model as an operator.

The plugin gives the card (the spaces of the run's dataset, recorded in its manifest); this process
loads the model (``d3rlpy.load_learnable``, on the CPU), checks it takes those observations, sends the
card and answers each batch of turns with one ``predict`` (:class:`policy.Policy`: Discrete
observations one-hot, as the model learned them). d3rlpy's ``predict`` is greedy, so the slots hold
nothing.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
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

from gym_gui_d3rlpy_worker.policy import ModelError, Policy, load_policy


def gym_space(spec: SpaceSpec) -> Any:
    """A gymnasium space of the card's kind, n and shape (bounds are not the card's: unbounded)."""
    import gymnasium

    if spec.kind == "Discrete":
        assert spec.n is not None
        return gymnasium.spaces.Discrete(spec.n)
    if spec.kind == "Box":
        return gymnasium.spaces.Box(-np.inf, np.inf, spec.shape, np.float32)
    raise OperatorRefused(f"a d3rlpy model acts on Box or Discrete spaces, not {spec}")


class PolicyOperator:
    """A loaded d3rlpy policy answering turns in one forward pass per batch."""

    def __init__(self, policy: Policy, card: OperatorCard) -> None:
        self.policy = policy
        self.card = card

    def begin(self, slot: int, seed: int | None) -> None:
        """Nothing to seed: ``predict`` draws no random numbers."""

    def act(self, turns: Sequence[Turn]) -> list[Decision]:
        """The policy's actions for the turns' observations.

        Raises:
            OperatorError: an observation is not of the card's shape.
        """
        expected = self.card.observation
        observations = [np.asarray(turn.observation) for turn in turns]
        if expected.kind == "Box" and any(obs.shape != expected.shape for obs in observations):
            shapes = sorted({obs.shape for obs in observations if obs.shape != expected.shape})
            raise OperatorError(
                f"{self.card.title} expects {expected} observations; it was given shapes {shapes}"
            )
        actions = self.policy.act_batch(observations)
        return [Decision(a if isinstance(a, int) else np.asarray(a).tolist()) for a in actions]

    def end(self, slot: int) -> None:
        """Nothing to forget (see :meth:`begin`)."""

    def close(self) -> None:
        """Nothing held open."""


def load_operator(model: str, card: OperatorCard) -> PolicyOperator:
    """The operator of ``model`` acting on the card's spaces.

    Raises:
        OperatorRefused: the model cannot be loaded, or takes other observations than the card's.
    """
    try:
        policy = load_policy(model, gym_space(card.observation), gym_space(card.action))
    except ModelError as exc:
        raise OperatorRefused(str(exc)) from None
    return PolicyOperator(policy, card)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m gym_gui_d3rlpy_worker.operator",
        description="Serve a d3rlpy run's saved model as an operator on standard input and output.",
    )
    parser.add_argument("--model", required=True, help="a .d3 file a d3rlpy run saved")
    parser.add_argument("--card", required=True, help="the operator's card as JSON (the plugin's)")
    options = parser.parse_args(argv)

    def make() -> PolicyOperator:
        try:
            card = OperatorCard.from_json(json.loads(options.card))
        except ValueError as exc:
            raise OperatorRefused(f"the card given is not one: {exc}") from None
        return load_operator(options.model, card)

    return serve(make)


if __name__ == "__main__":
    sys.exit(main())
