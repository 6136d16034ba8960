"""Evaluation batches against a real daemon: an operator whose process dies fails its own run with
the reason while the others play on; slots never change an episode's numbers."""

from __future__ import annotations

import sys
from pathlib import Path

from gym_gui_sdk.operator import OperatorCard

from gym_gui.core.states import RunState
from gym_gui.play.batch import EvaluationBatch
from gym_gui.play.operators import OperatorChoice, OperatorRef, Operators
from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.home import Home
from gym_gui.storage.run_dir import RunDir
from gym_gui.workers import OperatorPlan, worker_catalog

# An operator process that answers a few requests, then dies as a crashing model would.
DYING = """
import os, sys
from gym_gui_sdk.operator import Decision, OperatorCard, SpaceSpec, serve

class Dying:
    card = OperatorCard(name="dying", kind="test", observation=SpaceSpec("Discrete", n=16), action=SpaceSpec("Discrete", n=4))
    asked = 0
    def begin(self, slot, seed): pass
    def act(self, turns):
        Dying.asked += 1
        if Dying.asked > 5:
            print("out of memory in the model", file=sys.stderr, flush=True)
            os._exit(3)
        return [Decision(0) for _ in turns]
    def end(self, slot): pass
    def close(self): pass

sys.exit(serve(Dying))
"""


def test_an_operator_that_dies_fails_its_run_with_the_reason_and_the_others_play_on(
    client: DaemonClient, home: Home, tmp_path: Path
) -> None:
    script = tmp_path / "dying.py"
    script.write_text(DYING)
    card = OperatorCard(name="dying", kind="test")
    dying = OperatorChoice(
        OperatorRef("dying"), card, OperatorPlan(card, [sys.executable, str(script)]), tmp_path
    )
    random = Operators(home, worker_catalog(), client.list_runs).choose("random", "FrozenLake-v1")
    results = EvaluationBatch(client, [random, dying], "FrozenLake-v1", 40, 0, slots=4).run()

    assert results[0].error == "" and len(results[0].episodes) == 40
    assert "dying exited with code 3 while answering: out of memory in the model" in results[1].error
    ended = {r.run_id: client.wait_for_end(r.run_id, 60) for r in results}
    assert ended[results[0].run_id].state is RunState.COMPLETED
    failed = ended[results[1].run_id]
    assert failed.state is RunState.FAILED
    assert "out of memory in the model" in failed.reason


def test_slots_change_nothing_of_an_episodes_numbers(client: DaemonClient, home: Home) -> None:
    choice = Operators(home, worker_catalog(), client.list_runs).choose("random", "CliffWalking-v1")

    def numbers(slots: int) -> list[tuple[int | None, float, int]]:
        [result] = EvaluationBatch(client, [choice], "CliffWalking-v1", 12, 40, slots=slots).run()
        assert result.error == ""
        files = RunDir(client.wait_for_end(result.run_id, 60).run_dir)
        assert files.read_config().params == {"operator": "random", "control": "agent", "seeds": "procedural"}
        return [(e.seed, e.total_reward, e.length) for e in result.episodes]

    assert numbers(1) == numbers(5) == numbers(12)
