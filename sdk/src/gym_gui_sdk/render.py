"""Render payloads: a compact JSON grid for grid games, a PNG frame for pixel envs.

The env is duck-typed on ``env.unwrapped`` (this module never imports gymnasium or minigrid), so it
runs in any worker bundle.

Grid payload (JSON object, UTF-8, always starting with ``{``)::

    {"v": 1, "game": "frozenlake" | "cliffwalking" | "taxi" | "minigrid",
     "rows": R, "cols": C, "tiles": [R strings of C characters], "agent": [row, col], ...}

Tiles and extra keys per game (all read from the env's current state):

- ``frozenlake``: the map's own letters, ``S`` start, ``F`` frozen, ``H`` hole, ``G`` goal;
  ``last_action`` (int or null).
- ``cliffwalking``: ``S`` start, ``.`` ground, ``C`` cliff, ``G`` goal; ``last_action``.
- ``taxi``: ``R`` ``G`` ``Y`` ``B`` at the four stands, ``.`` elsewhere; ``map``, the env's ASCII
  map (``R + 2`` strings; a wall lies east of cell ``(r, c)`` when ``map[r + 1][2 * c + 2] == "|"``);
  ``passenger`` (index 0-3 of a stand, 4 = in the taxi), ``passenger_at`` (``[r, c]`` or null when
  in the taxi), ``in_taxi``, ``destination`` (0-3), ``destination_at``, ``last_action``.
- ``minigrid``: ``tiles`` use minigrid's letters, ``.`` empty, ``W`` wall, ``F`` floor, ``D`` door,
  ``K`` key, ``A`` ball, ``B`` box, ``G`` goal, ``V`` lava, ``?`` unseen; ``colors`` and ``states``
  are row strings of single digits, minigrid's ``COLOR_TO_IDX`` (0 red, 1 green, 2 blue, 3 purple,
  4 yellow, 5 grey) and door state (0 open, 1 closed, 2 locked); ``dir`` (0 right, 1 down, 2 left,
  3 up), ``carrying`` (``{"type", "color"}`` or null), ``mission``, ``step``, ``max_steps``.

Pixel payload: the RGB frame as PNG bytes (``compress_level=1``: fast, still lossless). A worker
draws its frames through a :class:`FramePacer`: at the rate the run asks, and never for more than a
tenth of its time.
"""

from __future__ import annotations

import io
import json
import math
import time
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

from gym_gui_sdk.json_object import json_object

GRID = "grid"
PIXELS = "pixels"
NONE = "none"

GRID_PAYLOAD_VERSION = 1
_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_SEPARATORS = (",", ":")

# minigrid's OBJECT_TO_IDX (minigrid/core/constants.py), indexed by object id, as tile letters.
_MINIGRID_TILES = np.frombuffer(b"?.WFDKABGV@", dtype=np.uint8)
_MINIGRID_COLOR_NAMES = ("red", "green", "blue", "purple", "yellow", "grey")
_DIGITS = np.frombuffer(b"0123456789", dtype=np.uint8)


def _unwrapped(env: Any) -> Any:
    return getattr(env, "unwrapped", env)


def grid_game(env: Any) -> str | None:
    """Return the grid game ``env`` is: ``frozenlake``, ``cliffwalking``, ``taxi``, ``minigrid``, or None."""
    u = _unwrapped(env)
    if hasattr(u, "grid") and hasattr(u, "agent_pos"):
        return "minigrid"
    if hasattr(u, "shape") and hasattr(u, "_cliff"):
        return "cliffwalking"
    if hasattr(u, "desc"):
        if hasattr(u, "locs") and hasattr(u, "decode"):
            return "taxi"
        if hasattr(u, "nrow") and hasattr(u, "ncol"):
            return "frozenlake"
    return None


def render_kind_of(env: Any) -> str:
    """Return how ``env`` is drawn: GRID for grid games, PIXELS for ``render_mode="rgb_array"``, else NONE."""
    if grid_game(env) is not None:
        return GRID
    mode = getattr(env, "render_mode", None) or getattr(_unwrapped(env), "render_mode", None)
    return PIXELS if mode == "rgb_array" else NONE


def _state(u: Any) -> int:
    s = getattr(u, "s", None)
    if s is None:
        raise ValueError("the environment has no current state yet: reset it first")
    return int(s)


def _last_action(u: Any) -> int | None:
    action = getattr(u, "lastaction", None)
    return None if action is None else int(action)


def _desc_rows(desc: Any) -> list[str]:
    # desc is a 2-D numpy array of single bytes (dtype "S1"/"c").
    return [bytes(row.tobytes()).decode("ascii") for row in np.asarray(desc)]


def _frozenlake_board(u: Any) -> dict[str, Any]:
    return {
        "v": GRID_PAYLOAD_VERSION,
        "game": "frozenlake",
        "rows": int(u.nrow),
        "cols": int(u.ncol),
        "tiles": _desc_rows(u.desc),
    }


def _frozenlake(u: Any) -> dict[str, Any]:
    board = _frozenlake_board(u)
    r, c = divmod(_state(u), board["cols"])
    return {**board, "agent": [r, c], "last_action": _last_action(u)}


def _cliffwalking_board(u: Any) -> dict[str, Any]:
    rows, cols = (int(n) for n in u.shape)
    cliff = np.asarray(u._cliff, dtype=bool)
    tiles = np.full((rows, cols), ord("."), dtype=np.uint8)
    tiles[cliff] = ord("C")
    start_r, start_c = divmod(int(u.start_state_index), cols)
    tiles[start_r, start_c] = ord("S")
    # The env ends the episode in its bottom-right cell (cliffwalking.py: terminal_state).
    tiles[rows - 1, cols - 1] = ord("G")
    return {
        "v": GRID_PAYLOAD_VERSION,
        "game": "cliffwalking",
        "rows": rows,
        "cols": cols,
        "tiles": [row.tobytes().decode("ascii") for row in tiles],
    }


def _cliffwalking(u: Any) -> dict[str, Any]:
    board = _cliffwalking_board(u)
    r, c = divmod(_state(u), board["cols"])
    return {**board, "agent": [r, c], "last_action": _last_action(u)}


def _taxi(u: Any) -> dict[str, Any]:
    taxi_row, taxi_col, passenger, destination = (int(x) for x in u.decode(_state(u)))
    ascii_map = _desc_rows(u.desc)
    rows, cols = len(ascii_map) - 2, (len(ascii_map[0]) - 1) // 2
    # Cell (r, c) is drawn at map[r + 1][2c + 1]; its letter marks a stand.
    tiles = ["".join(ch if ch.isalpha() else "." for ch in line[1:-1:2]) for line in ascii_map[1:-1]]
    locs = [[int(r), int(c)] for r, c in u.locs]
    in_taxi = passenger >= len(locs)
    return {
        "v": GRID_PAYLOAD_VERSION,
        "game": "taxi",
        "rows": rows,
        "cols": cols,
        "tiles": tiles,
        "agent": [taxi_row, taxi_col],
        "map": ascii_map,
        "passenger": passenger,
        "passenger_at": None if in_taxi else locs[passenger],
        "in_taxi": in_taxi,
        "destination": destination,
        "destination_at": locs[destination],
        "last_action": _last_action(u),
    }


def _minigrid(u: Any) -> dict[str, Any]:
    if u.agent_pos is None or u.grid is None:
        raise ValueError("the environment has no current state yet: reset it first")
    # encode() is (width, height, 3) of (object, color, state); rows are y, so transpose.
    encoded = np.asarray(u.grid.encode()).transpose(1, 0, 2)
    objects = np.clip(encoded[:, :, 0], 0, len(_MINIGRID_TILES) - 1)
    tiles = _MINIGRID_TILES[objects]
    colors = _DIGITS[np.clip(encoded[:, :, 1], 0, 9)]
    states = _DIGITS[np.clip(encoded[:, :, 2], 0, 9)]
    x, y = (int(v) for v in u.agent_pos)
    carrying = getattr(u, "carrying", None)
    return {
        "v": GRID_PAYLOAD_VERSION,
        "game": "minigrid",
        "rows": int(encoded.shape[0]),
        "cols": int(encoded.shape[1]),
        "tiles": [row.tobytes().decode("ascii") for row in tiles],
        "colors": [row.tobytes().decode("ascii") for row in colors],
        "states": [row.tobytes().decode("ascii") for row in states],
        "agent": [y, x],
        "dir": int(u.agent_dir),
        "carrying": None if carrying is None else {"type": str(carrying.type), "color": str(carrying.color)},
        "mission": str(getattr(u, "mission", "")),
        "step": int(getattr(u, "step_count", 0)),
        "max_steps": int(getattr(u, "max_steps", 0)),
    }


_GRID_BUILDERS = {
    "frozenlake": _frozenlake,
    "cliffwalking": _cliffwalking,
    "taxi": _taxi,
    "minigrid": _minigrid,
}


def grid_description(env: Any) -> dict[str, Any]:
    """Return the grid payload of ``env``'s current state as a dict (see the module docstring).

    Raises:
        ValueError: if ``env`` is not one of the grid games, or has not been reset yet.
    """
    u = _unwrapped(env)
    game = grid_game(u)
    if game is None:
        raise ValueError(f"{type(u).__name__} is not a grid environment gym_gui can describe")
    return _GRID_BUILDERS[game](u)


def grid_payload(env: Any) -> bytes:
    """Return the grid payload of ``env``'s current state as compact JSON bytes.

    Raises:
        ValueError: if ``env`` is not one of the grid games, or has not been reset yet.
    """
    return json.dumps(grid_description(env), separators=_SEPARATORS, ensure_ascii=False).encode("utf-8")


# Games whose board never changes during an env's life: only the agent and its last action move.
_FIXED_BOARDS = {"frozenlake": _frozenlake_board, "cliffwalking": _cliffwalking_board}


class GridPayloads:
    """The grid payloads of one environment, step after step, without making again what never changes.

    FrozenLake's and CliffWalking's boards are fixed for an env's life, so their JSON is made once and
    each payload only adds the agent's cell and last action: the bytes are :func:`grid_payload`'s,
    at a small part of the cost (a worker sends one every step). Taxi and MiniGrid change more than
    the agent from step to step; theirs are made in full.

    Raises:
        ValueError: if ``env`` is not one of the grid games.
    """

    def __init__(self, env: Any) -> None:
        self._env = env
        self._u = _unwrapped(env)
        game = grid_game(self._u)
        if game is None:
            raise ValueError(f"{type(self._u).__name__} is not a grid environment gym_gui can describe")
        board = _FIXED_BOARDS.get(game)
        self._head = b""
        self._cols = 1
        if board is not None:
            fixed = board(self._u)
            self._cols = fixed["cols"]
            # The board's keys come first in grid_description's order; "agent" and "last_action" follow.
            text = json.dumps(fixed, separators=_SEPARATORS, ensure_ascii=False)
            self._head = (text[:-1] + ',"agent":[').encode("utf-8")

    def payload(self) -> bytes:
        """The env's current state as :func:`grid_payload` gives it.

        Raises:
            ValueError: if the env has not been reset yet.
        """
        if not self._head:
            return grid_payload(self._env)
        u = self._u
        r, c = divmod(_state(u), self._cols)
        action = _last_action(u)
        last = b"null" if action is None else b"%d" % action
        return b'%s%d,%d],"last_action":%s}' % (self._head, r, c, last)


def frame_payload(rgb: np.ndarray) -> bytes:
    """Return ``rgb`` (an ``H x W x 3`` uint8 array) as PNG bytes; decoding gives the same array back.

    Raises:
        ValueError: if ``rgb`` is not an ``H x W x 3`` uint8 array.
    """
    from PIL import Image  # deferred: pillow costs import time and only pixel envs need it

    array = np.asarray(rgb)
    if array.ndim != 3 or array.shape[2] != 3 or array.dtype != np.uint8:
        raise ValueError(
            f"a frame must be an H x W x 3 uint8 array, got shape {array.shape} dtype {array.dtype}"
        )
    buffer = io.BytesIO()
    Image.fromarray(np.ascontiguousarray(array)).save(buffer, format="PNG", compress_level=1)
    return buffer.getvalue()


Frame = TypeVar("Frame")

# The share of a worker's time its frames may take at most, whatever rate is asked: MuJoCo's software
# renderer takes ~0.1-0.2 s a frame, which at 10 frames a second would be all of it.
FRAME_SHARE = 0.1


class FramePacer:
    """When a worker draws its next frame: ``fps`` frames a second of wall time while drawing is cheap,
    and never more than ``share`` of the worker's time. A frame that took ``c`` seconds to draw makes
    the next wait at least ``c / share`` from its start (9 ``c`` after its end at a tenth), so a slow
    renderer draws fewer frames instead of slowing the run; a cheap one keeps the rate asked. The
    first frame's cost does not count: it sets the renderer up (MuJoCo makes its GL context, about a
    second), which the frames after it do not pay.

    Every worker that stores frames at the run's render rate draws them through one of these.
    """

    def __init__(self, share: float = FRAME_SHARE, clock: Callable[[], float] = time.monotonic) -> None:
        if not 0 < share <= 1:
            raise ValueError(f"share must be in (0, 1], got {share}")
        self.share = share
        self._clock = clock
        self._next = -math.inf  # when the next frame is due
        self._first = True

    def frame(self, draw: Callable[[], Frame], fps: float) -> Frame | None:
        """``draw()`` (timed) when a frame is due at ``fps`` frames a second, else None; never with
        ``fps`` 0 or less (the run asks for no frames)."""
        if fps <= 0:
            return None
        start = self._clock()
        if start < self._next:
            return None
        try:
            return draw()
        finally:
            cost = 0.0 if self._first else self._clock() - start
            self._first = False
            self._next = start + max(1.0 / fps, cost / self.share)


def render_payload(env: Any) -> bytes | None:
    """Return the payload of ``env``'s current state: a grid payload, a PNG frame, or None.

    None when the env is neither a grid game nor rendering ``rgb_array`` frames, or when its
    ``render()`` returns no frame.
    """
    kind = render_kind_of(env)
    if kind == GRID:
        return grid_payload(env)
    if kind == PIXELS:
        frame = env.render()
        return None if frame is None else frame_payload(frame)
    return None


def decode_payload(data: bytes) -> dict[str, Any] | np.ndarray:
    """Decode a render payload: a grid payload to its dict, a PNG frame to an ``H x W x 3`` uint8 array.

    Raises:
        ValueError: if ``data`` is neither a JSON object nor a PNG image.
    """
    if data[:1] == b"{":
        return json_object(
            data,
            lambda why: ValueError(f"a grid payload is not valid JSON: {why}"),
            lambda _: ValueError("a grid payload must be a JSON object"),
        )
    if data[: len(_PNG_SIGNATURE)] == _PNG_SIGNATURE:
        from PIL import Image

        with Image.open(io.BytesIO(data)) as image:
            return np.asarray(image.convert("RGB"), dtype=np.uint8)
    raise ValueError("not a render payload: expected a JSON grid object or a PNG frame")
