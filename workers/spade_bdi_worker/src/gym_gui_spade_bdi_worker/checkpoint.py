"""Q-table checkpoints: one JSON file holding the table and what it was learned on, with its hash.

::

    {"format": "gym_gui.spade_bdi.q_table", "version": 1,
     "env_id": "FrozenLake-v1", "env_kwargs": {...}, "map": ["SFFF", ...] | null,
     "shape": [states, actions], "hyperparameters": {"alpha": ..., ...},
     "episode": N, "steps": T, "seed": S | null, "epsilon": e,
     "sha256": "<hex of the table's float64 little-endian bytes>",
     "q": [[...], ...]}

JSON keeps the file readable and exact (a float's repr reads back to the same float). The hash is
of the table itself, so an edited or damaged table is refused by it. Plain Python and numpy: the
plugin checks a file before a run is stored, the worker writes and reads them.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from gym_gui_sdk.json_object import json_object

FORMAT = "gym_gui.spade_bdi.q_table"
VERSION = 1
FINAL = "checkpoints/q_table.json"


class CheckpointRefused(ValueError):
    """A Q-table file cannot be used: unreadable, damaged (its hash), or of another environment or shape."""


# How deep a Q-table file's JSON goes: the file's object, a field's list or object (``q``,
# ``env_kwargs``), a row or a map's rows, their items. Deeper is no Q-table, and reading it could
# exhaust the recursion of whatever handles it next.
_MAX_DEPTH = 8


def _deeper_than(value: Any, limit: int) -> bool:
    """Whether JSON data ``value`` nests lists and objects more than ``limit`` levels deep (walked
    without recursion)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            if depth > limit:
                return True
            stack.extend((child, depth + 1) for child in (item.values() if isinstance(item, dict) else item))
    return False


def periodic_path(episode: int) -> str:
    """Where the checkpoint after ``episode`` episodes goes, relative to the run directory."""
    return f"checkpoints/q_table_ep{episode}.json"


def table_hash(q: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(q, dtype="<f8").tobytes()).hexdigest()


@dataclass
class QTableFile:
    """A Q-table and what it was learned on."""

    q: np.ndarray
    env_id: str
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    map: list[str] | None = None
    hyperparameters: dict[str, Any] = field(default_factory=dict)
    episode: int = 0
    steps: int = 0
    seed: int | None = None
    epsilon: float = 0.0

    @property
    def shape(self) -> tuple[int, int]:
        rows, cols = self.q.shape
        return int(rows), int(cols)

    def save(self, path: Path) -> str:
        """Write the file atomically (a reader never sees half of it); returns its table's hash."""
        digest = table_hash(self.q)
        data = {
            "format": FORMAT,
            "version": VERSION,
            "env_id": self.env_id,
            "env_kwargs": self.env_kwargs,
            "map": self.map,
            "shape": list(self.shape),
            "hyperparameters": self.hyperparameters,
            "episode": self.episode,
            "steps": self.steps,
            "seed": self.seed,
            "epsilon": self.epsilon,
            "sha256": digest,
            "q": self.q.tolist(),
        }
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(path.name + ".partial")
        with open(partial, "w", encoding="utf-8") as out:
            json.dump(data, out)
            out.flush()
            os.fsync(out.fileno())
        os.replace(partial, path)
        return digest

    @classmethod
    def load(cls, path: Path) -> QTableFile:
        """Read and check a file.

        Raises:
            CheckpointRefused: it cannot be read, is not a Q-table file, or its table does not
                match its hash (named with the path).
        """
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise CheckpointRefused(f"Q-table {path} cannot be read: {exc.strerror or exc}") from None
        except ValueError:  # not UTF-8
            raise CheckpointRefused(f"Q-table {path} is corrupt: it is not valid JSON") from None

        def not_a_table(_: object) -> CheckpointRefused:
            return CheckpointRefused(f"Q-table {path} is not a Spade BDI Q-table file")

        data = json_object(
            text,
            lambda why: CheckpointRefused(f"Q-table {path} is corrupt: it is not valid JSON ({why})"),
            not_a_table,
        )
        if data.get("format") != FORMAT:
            raise not_a_table(data)
        if _deeper_than(data, _MAX_DEPTH):
            raise CheckpointRefused(f"Q-table {path} is corrupt: it nests deeper than a Q-table file does")
        try:
            q = np.asarray(data["q"], dtype=np.float64)
            shape = tuple(int(n) for n in data["shape"])
            loaded = cls(
                q=q,
                env_id=str(data["env_id"]),
                env_kwargs=dict(data.get("env_kwargs") or {}),
                map=data.get("map"),
                hyperparameters=dict(data.get("hyperparameters") or {}),
                episode=int(data.get("episode", 0)),
                steps=int(data.get("steps", 0)),
                seed=data.get("seed"),
                epsilon=float(data.get("epsilon", 0.0)),
            )
            expected = str(data["sha256"])
        except (KeyError, TypeError, ValueError) as exc:
            raise CheckpointRefused(f"Q-table {path} is corrupt: {type(exc).__name__}: {exc}") from None
        if q.ndim != 2 or q.shape != shape:
            raise CheckpointRefused(
                f"Q-table {path} is corrupt: its table is {q.shape}, its header says {shape}"
            )
        if not np.isfinite(q).all():
            # NaN and infinity are JSON to Python's reader, but no action can be chosen by them.
            row = int(np.argwhere(~np.isfinite(q))[0][0])
            raise CheckpointRefused(
                f"Q-table {path} holds a value that is not a finite number (NaN or infinity) in row {row}"
            )
        if table_hash(q) != expected:
            raise CheckpointRefused(
                f"Q-table {path} is corrupt: its table does not match its sha256 {expected[:12]}…"
            )
        return loaded

    def check_fits(self, env_id: str, shape: tuple[int, int], grid: list[str] | None, path: Path) -> None:
        """Refuse a table learned on another environment, map or shape.

        Raises:
            CheckpointRefused: naming both environments or both shapes.
        """
        if self.env_id != env_id:
            raise CheckpointRefused(
                f"Q-table {path} was learned on {self.env_id} {list(self.shape)}, "
                f"this run is {env_id} {list(shape)}"
            )
        if self.shape != shape:
            raise CheckpointRefused(
                f"Q-table {path} has shape {list(self.shape)} (states, actions), "
                f"this run's {env_id} needs {list(shape)}"
            )
        if grid is not None and self.map is not None and self.map != grid:
            raise CheckpointRefused(
                f"Q-table {path} was learned on the map {'/'.join(self.map)}, this run's map is {'/'.join(grid)}"
            )
