"""Seatings checked before launch: an operator whose card cannot act on a Classic seat is refused naming both."""

from __future__ import annotations

import pytest
from gym_gui_sdk.operator import OperatorCard, SpaceSpec

from gym_gui.core.errors import ConfigError
from gym_gui.play.operators import OperatorChoice, RandomOperator, parse_operator
from gym_gui.play.seats import check_seating, outcomes, swapped


def a_run_that_learned(observation: SpaceSpec, action: SpaceSpec) -> OperatorChoice:
    card = OperatorCard(name="ppo", kind="cleanrl", observation=observation, action=action, env_ids=("X-v0",))
    return OperatorChoice(parse_operator("run_1"), card)


@pytest.mark.parametrize(
    ("observation", "action", "needle"),
    [
        (SpaceSpec("Box", shape=(6, 7, 2)), SpaceSpec("Discrete", n=7), "seat observes Dict('action_mask'"),
        (SpaceSpec("any"), SpaceSpec("Discrete", n=2), "takes Discrete(7)"),
    ],
)
def test_an_operator_that_cannot_act_on_a_seats_spaces_is_refused_naming_the_seat(
    observation: SpaceSpec, action: SpaceSpec, needle: str
) -> None:
    def choose(text: str, env_id: str, spaces: tuple[SpaceSpec, SpaceSpec]) -> OperatorChoice:
        choice = a_run_that_learned(observation, action)
        problem = choice.card.problem(env_id, *spaces) if text == "run_1" else None
        if problem:
            raise ConfigError(f"operator {text}: {problem}")
        return (
            choice if text == "run_1" else OperatorChoice(parse_operator("random"), RandomOperator(None).card)
        )

    with pytest.raises(ConfigError, match=r"^seat player_1: operator run_1: ") as raised:
        check_seating("connect_four_v3", {"player_0": "random", "player_1": "run_1"}, choose)
    assert needle in str(raised.value) and "\n" not in str(raised.value)


def test_outcomes_and_rotations() -> None:
    assert outcomes({"a": 1.0, "b": -1.0}) == {"a": 1, "b": -1}
    assert outcomes({"a": 0.0, "b": 0.0}) == {"a": 0, "b": 0}
    assert swapped({"a": "x", "b": "y"}) == [{"a": "x", "b": "y"}, {"a": "y", "b": "x"}]
