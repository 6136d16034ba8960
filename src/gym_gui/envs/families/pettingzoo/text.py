"""Classic games as a language model reads them: the board from the seat's side and its legal moves."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

# The seat to move is X, its opponent O: PettingZoo's Classic observations are drawn from the side of
# the seat that observes (plane 0 its own pieces, plane 1 the opponent's), so the text is too.
_MINE, _THEIRS = "X", "O"


def legal_moves(observation: Any) -> list[int]:
    """The moves the observation's action mask allows (every move when it has none)."""
    mask = observation.get("action_mask") if isinstance(observation, dict) else None
    return [] if mask is None else [int(i) for i in np.flatnonzero(np.asarray(mask))]


def _planes(observation: Any) -> np.ndarray:
    return np.asarray(observation["observation"] if isinstance(observation, dict) else observation)


def _tictactoe(observation: Any) -> str:
    planes = _planes(observation)
    # PettingZoo numbers the cells down the columns (0 | 3 | 6 on the top row): square i is planes[i // 3, i % 3].
    rows = []
    for row in range(3):
        cells = []
        for column in range(3):
            mine, theirs = planes[column, row]
            cells.append(_MINE if mine else _THEIRS if theirs else str(3 * column + row))
        rows.append(" | ".join(cells))
    return "\n".join(
        [
            "Tic-Tac-Toe: three in a row (across, down or diagonal) wins.",
            f"You are {_MINE}, your opponent is {_THEIRS}; an empty cell shows the move that takes it.",
            *rows,
        ]
    )


def _connect_four(observation: Any) -> str:
    planes = _planes(observation)
    rows = [
        " ".join(_MINE if mine else _THEIRS if theirs else "." for mine, theirs in planes[row])
        for row in range(planes.shape[0])
    ]
    return "\n".join(
        [
            "Connect Four: four in a row (across, down or diagonal) wins; a piece drops to the lowest "
            "free cell of its column.",
            f"You are {_MINE}, your opponent is {_THEIRS}, . is empty; the top row is printed first.",
            *rows,
            " ".join(str(column) for column in range(planes.shape[1])) + "  (column numbers: the moves)",
        ]
    )


_BOARDS: dict[str, Callable[[Any], str]] = {"tictactoe_v3": _tictactoe, "connect_four_v3": _connect_four}
GAMES = tuple(_BOARDS)


def board_text(env_id: str, observation: Any) -> str | None:
    """The seat's observation of ``env_id`` as text: the board and the legal moves; None for a game
    without a text rendering."""
    draw = _BOARDS.get(env_id)
    if draw is None:
        return None
    moves = legal_moves(observation)
    return f"{draw(observation)}\nLegal moves: {', '.join(map(str, moves)) or 'none'}"
