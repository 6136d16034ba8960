"""The operator pipe protocol: a real operator process answering, refusing, dying and hanging."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from gym_gui_sdk.operator import (
    OperatorCard,
    OperatorDied,
    OperatorError,
    OperatorProcess,
    OperatorRefused,
    SpaceSpec,
    Turn,
)

SERVER = """
import os, sys, time
from gym_gui_sdk.operator import Decision, OperatorCard, OperatorError, OperatorRefused, SpaceSpec, serve

class Doubler:
    card = OperatorCard(name="doubler", kind="test", observation=SpaceSpec("Box", shape=(2,)),
                        action=SpaceSpec("Box", shape=(2,)))

    def __init__(self):
        self.seeds = {}

    def begin(self, slot, seed):
        self.seeds[slot] = seed

    def act(self, turns):
        print("a library printing on standard output")
        decisions = []
        for turn in turns:
            if turn.observation == [13, 13]:
                print("unlucky observation, giving up", file=sys.stderr, flush=True)
                os._exit(3)
            if turn.observation == [7, 7]:
                time.sleep(60)
            if turn.observation == [5, 5]:
                raise OperatorError("cannot act on fives")
            decisions.append(Decision([2 * v for v in turn.observation],
                                      {"seed": self.seeds[turn.slot], "taken": turn.taken}))
        return decisions

    def end(self, slot):
        del self.seeds[slot]

    def close(self):
        pass

def make():
    if os.environ.get("REFUSE"):
        raise OperatorRefused("no model file at /nowhere/model.cleanrl_model")
    return Doubler()

sys.exit(serve(make))
"""


@pytest.fixture
def server(tmp_path: Path) -> list[str]:
    script = tmp_path / "doubler.py"
    script.write_text(SERVER)
    return [sys.executable, str(script)]


def start(server: list[str], tmp_path: Path, **env: str) -> OperatorProcess:
    return OperatorProcess(
        server, {"PATH": "/usr/bin:/bin", **env}, tmp_path / "operator.log", name="doubler"
    )


def test_an_operator_process_answers_every_slot_in_order_and_its_prints_do_not_break_the_pipe(
    server: list[str], tmp_path: Path
) -> None:
    operator = start(server, tmp_path)
    try:
        assert operator.card.name == "doubler"
        assert operator.card.observation == SpaceSpec("Box", shape=(2,))
        operator.begin(0, 11)
        operator.begin(1, None)
        decisions = operator.act([Turn(1, [1.5, 2]), Turn(0, [3, 4], taken=[0, 1], reward=1.0)])
        assert [d.action for d in decisions] == [[3.0, 4], [6, 8]]
        assert [d.note for d in decisions] == [{"seed": None, "taken": None}, {"seed": 11, "taken": [0, 1]}]
        operator.end(1)
        with pytest.raises(OperatorError, match="malformed act request: KeyError"):
            operator.act([Turn(1, [1, 1])])  # slot 1 has ended: the operator's failure is an error reply
        with pytest.raises(OperatorError, match="doubler: cannot act on fives"):
            operator.act([Turn(0, [5, 5])])
        assert operator.act([Turn(0, [1, 1])])[0].action == [2, 2]  # and it goes on answering
    finally:
        operator.close()
    assert "a library printing on standard output" in (tmp_path / "operator.log").read_text()


def test_an_operator_that_cannot_load_its_model_is_refused_in_its_own_words(
    server: list[str], tmp_path: Path
) -> None:
    with pytest.raises(OperatorRefused, match=r"^doubler: no model file at /nowhere/model.cleanrl_model$"):
        start(server, tmp_path, REFUSE="1")


def test_an_operator_that_dies_says_how_and_its_last_words(server: list[str], tmp_path: Path) -> None:
    operator = start(server, tmp_path)
    try:
        operator.begin(0, 1)
        with pytest.raises(
            OperatorDied, match="doubler exited with code 3 while answering: unlucky observation"
        ):
            operator.act([Turn(0, [13, 13])])
        with pytest.raises(OperatorDied):
            operator.act([Turn(0, [1, 1])])
    finally:
        operator.close()


def test_an_operator_that_stops_answering_is_stopped_and_counts_as_dead(
    server: list[str], tmp_path: Path
) -> None:
    operator = start(server, tmp_path)
    operator.timeout = 0.5
    try:
        operator.begin(0, 1)
        with pytest.raises(OperatorDied, match=r"did not answer within 0\.5 s"):
            operator.act([Turn(0, [7, 7])])
    finally:
        operator.close()


def test_a_mismatch_says_what_the_operator_expects_and_what_the_env_gives() -> None:
    card = OperatorCard(
        name="ppo",
        kind="cleanrl",
        observation=SpaceSpec("Box", shape=(4,)),
        action=SpaceSpec("Discrete", n=2),
        env_ids=("CartPole-v1",),
    )
    assert card.problem("FrozenLake-v1", SpaceSpec("Discrete", n=16), SpaceSpec("Discrete", n=4)) == (
        "ppo on CartPole-v1 expects Box(4,) observations; FrozenLake-v1 gives Discrete(16)"
    )
    assert card.problem("Acrobot-v1", SpaceSpec("Box", shape=(6,)), SpaceSpec("Discrete", n=3)) == (
        "ppo on CartPole-v1 expects Box(4,) observations; Acrobot-v1 gives Box(6,)"
    )
    assert card.problem("CartPole-v0", SpaceSpec("Box", shape=(4,)), SpaceSpec("Discrete", n=2)) is None
    assert (
        OperatorCard(name="random", kind="random").problem(
            "Pong", SpaceSpec("Box", shape=(210, 160, 3)), SpaceSpec("Discrete", n=6)
        )
        is None
    )
    assert OperatorCard.from_json(card.to_json()) == card
    llm = OperatorCard(
        name="qwen", kind="llm", action=SpaceSpec("Discrete", n=4), env_ids=("FrozenLake-v1",), env_bound=True
    )
    assert llm.problem("FrozenLake-v1", SpaceSpec("Discrete", n=16), SpaceSpec("Discrete", n=4)) is None
    assert llm.problem("CliffWalking-v1", SpaceSpec("Discrete", n=48), SpaceSpec("Discrete", n=4)) == (
        "qwen is set up for FrozenLake-v1 only; CliffWalking-v1 is another"
    )
    assert OperatorCard.from_json(llm.to_json()) == llm
    with pytest.raises(ValueError, match="field 'name'"):
        OperatorCard.from_json({**card.to_json(), "name": ""})
    with pytest.raises(ValueError, match=r"space kind .Tuple."):
        OperatorCard.from_json({**card.to_json(), "action": {"kind": "Tuple"}})
