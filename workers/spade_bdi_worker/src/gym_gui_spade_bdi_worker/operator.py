"""`python -m gym_gui_spade_bdi_worker.operator --q-table FILE`: a Spade BDI run's Q-table as an operator.

The table acts greedily, as an evaluation run plays it (no exploring, no learning). No SPADE and no
XMPP: the process loads the plain Q-table file (:mod:`gym_gui_spade_bdi_worker.checkpoint`) and
answers over the SDK's operator pipe (:func:`gym_gui_sdk.operator.serve`), so it is ready in the
time numpy takes to import. Ties between equal values are broken by the slot's own
``random.Random(seed)`` with the learner's rule (:func:`~gym_gui_spade_bdi_worker.learner.greedy_action`).

A table learned on a FrozenLake map asks for each turn's grid: a map of the same size but other
tiles has the same spaces, so only the grid tells them apart; the slot's first turn is refused
(an :class:`~gym_gui_sdk.operator.OperatorError` naming both maps) before the table acts on it.
"""

from __future__ import annotations

import argparse
import random
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gym_gui_sdk.operator import (
    GRID,
    OBSERVATION,
    Decision,
    OperatorCard,
    OperatorError,
    OperatorRefused,
    SpaceSpec,
    Turn,
    serve,
)

from gym_gui_spade_bdi_worker.checkpoint import CheckpointRefused, QTableFile
from gym_gui_spade_bdi_worker.learner import greedy_action

NAME = "q-table"
KIND = "spade_bdi"


def operator_card(table: QTableFile, source_run: str = "") -> OperatorCard:
    """What a table acts on: the states and actions of its shape, the environment it learned on;
    the grid as well when it learned one map (see the module docstring)."""
    states, actions = table.shape
    return OperatorCard(
        name=NAME,
        kind=KIND,
        source_run=source_run,
        observation=SpaceSpec("Discrete", n=states),
        action=SpaceSpec("Discrete", n=actions),
        env_ids=(table.env_id,),
        inputs=(OBSERVATION, GRID) if table.map is not None else (OBSERVATION,),
        deterministic=True,
    )


class QTableOperator:
    """A Q-table played greedily in any number of slots, each breaking ties with its own generator."""

    def __init__(self, table: QTableFile, path: Path, source_run: str = "") -> None:
        self.table = table
        self.path = path
        self._card = operator_card(table, source_run)
        # Rows of Python floats: the learner's own representation, indexed faster than numpy's.
        self._rows: list[list[float]] = table.q.tolist()
        self._rngs: dict[int, random.Random] = {}
        self._map_checked: set[int] = set()

    @property
    def card(self) -> OperatorCard:
        return self._card

    def begin(self, slot: int, seed: int | None) -> None:
        self._rngs[slot] = random.Random(seed)
        self._map_checked.discard(slot)

    def act(self, turns: Sequence[Turn]) -> list[Decision]:
        return [Decision(self._action(turn)) for turn in turns]

    def _action(self, turn: Turn) -> int:
        rng = self._rngs.get(turn.slot)
        if rng is None:
            raise OperatorError(f"slot {turn.slot} has no episode (no begin)")
        if turn.slot not in self._map_checked:
            self._check_map(turn.grid)
            self._map_checked.add(turn.slot)
        state = turn.observation
        if not isinstance(state, int) or isinstance(state, bool) or not 0 <= state < len(self._rows):
            raise OperatorError(
                f"Q-table {self.path} acts on states 0 to {len(self._rows) - 1}, got the observation {state!r}"
            )
        return greedy_action(self._rows[state], rng)

    def _check_map(self, grid: dict[str, Any] | None) -> None:
        tiles = grid.get("tiles") if grid is not None else None
        if tiles is None:
            return  # an environment without a grid: nothing to compare the map with
        try:
            self.table.check_fits(self.table.env_id, self.table.shape, list(tiles), self.path)
        except CheckpointRefused as exc:
            raise OperatorError(str(exc)) from None

    def end(self, slot: int) -> None:
        self._rngs.pop(slot, None)
        self._map_checked.discard(slot)

    def close(self) -> None:
        pass


def _arguments(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m gym_gui_spade_bdi_worker.operator")
    parser.add_argument("--q-table", type=Path, required=True, help="the Q-table file to play")
    parser.add_argument("--source-run", default="", help="the run the table comes from (for its card)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    arguments = _arguments(sys.argv[1:] if argv is None else argv)

    def make() -> QTableOperator:
        try:
            table = QTableFile.load(arguments.q_table)
        except CheckpointRefused as exc:
            raise OperatorRefused(str(exc)) from None
        return QTableOperator(table, arguments.q_table, arguments.source_run)

    return serve(make)


if __name__ == "__main__":
    sys.exit(main())
