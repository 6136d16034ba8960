"""NLE and MiniHack drawn as RGB frames: gym_gui's ``gym_gui/<id>`` ids, each the NLE env of ``<id>``
with NetHack's own tiles, its message line above them and its status line below.

NLE renders no ``rgb_array``: its ``pixel`` mode draws the 21 x 79 map from NetHack's 16-pixel tiles,
without the messages and the status a player reads. :class:`NetHackFrames` asks for that mode, keeps
the part of the map a task uses (a 5x5 MiniHack room is a speck in the whole map) and writes the
message and the status around it, so that a person can play from the frame alone.
"""

from __future__ import annotations

import inspect
import textwrap
from typing import Any, SupportsFloat

import gymnasium
import minihack  # noqa: F401 - registers the MiniHack-* ids (and, through nle, the NetHack* ones)
import numpy as np
from gymnasium.envs.registration import load_env_creator
from nle import nethack
from nle.env.base import NLE
from PIL import Image, ImageDraw, ImageFont

NAMESPACE = "gym_gui"
TILE = 16  # pixels a side of a NetHack tile
MAP_ROWS, MAP_COLS = nethack.DUNGEON_SHAPE
# The frame's window on the map (rows, columns of tiles) for the tasks the catalog lists; a window
# follows what has been seen and the agent. Other ids show the whole map, as NetHack itself does.
VIEWS: dict[str, tuple[int, int]] = {
    "MiniHack-Room-5x5-v0": (9, 23),
    "MiniHack-Room-15x15-v0": (17, 31),
    "MiniHack-MazeWalk-9x9-v0": (9, 23),
    "MiniHack-KeyRoom-S5-v0": (9, 23),
    "MiniHack-River-v0": (11, 27),
    "MiniHack-HideNSeek-v0": (11, 23),
}
# Ids gym_gui does not offer: Boxoban's levels are downloaded on first use, and the Custom ones are
# made from a level file the caller passes.
_SKIPPED = ("MiniHack-Boxoban-", "MiniHack-Navigation-Custom-", "MiniHack-Skill-Custom-")
# NLE's default observation but its screen_descriptions, a (21, 79, 80) text array that would add 132 kB
# to every stored step: the keys of gym_gui's NetHack ids that do not choose their own. (MiniHack's
# choose theirs.)
_NETHACK_KEYS = tuple(
    key
    for key in inspect.signature(NLE).parameters["observation_keys"].default
    if key != "screen_descriptions"
)
_TEXT_LINES = 2  # the message, wrapped
_LINE = 14  # pixels a line of text
_FONT_SIZE = 11
_STONE = nethack.GLYPH_CMAP_OFF  # solid rock: what NetHack draws where nothing has been seen


class NetHackFrames(gymnasium.Wrapper[Any, Any, Any, Any]):
    """The NLE env registered as ``nle_id``, drawn as RGB frames in ``rgb_array`` mode.

    Args:
        nle_id: the NLE or MiniHack id to make (``MiniHack-Room-5x5-v0``).
        view: the rows and columns of map tiles a frame shows.
        render_mode: ``rgb_array`` for frames, or None.
        kwargs: the env's own arguments, on top of those its id registers.
    """

    metadata: dict[str, Any] = {"render_modes": ["rgb_array"], "render_fps": 10}  # noqa: RUF012

    def __init__(
        self,
        nle_id: str,
        view: tuple[int, int] = (MAP_ROWS, MAP_COLS),
        render_mode: str | None = None,
        **kwargs: Any,
    ) -> None:
        spec = gymnasium.spec(nle_id)
        creator: Any = load_env_creator(spec.entry_point)  # type: ignore[arg-type]
        # NetHack draws its tiles only in its "pixel" mode; without frames, none at all ("human"
        # would print the screen at every render).
        drawn = render_mode == "rgb_array"
        game = creator(**{**spec.kwargs, **kwargs}, render_mode="pixel" if drawn else None)
        super().__init__(game)
        self._render_mode = render_mode if drawn else None
        self.view = (min(view[0], MAP_ROWS), min(view[1], MAP_COLS))
        self._font = ImageFont.load_default(_FONT_SIZE)

    @property  # the wrapped env's is "pixel"
    def render_mode(self) -> str | None:  # type: ignore[override]
        return self._render_mode

    # NLE writes each observation into the arrays of the last one: a step's own copy is what a caller
    # keeping observations (a replay buffer, a seat) expects.
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        observation, info = self.env.reset(seed=seed, options=options)
        return _copied(observation), info

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        observation, reward, terminated, truncated, info = self.env.step(action)
        return _copied(observation), reward, terminated, truncated, info

    def render(self) -> Any:
        """The frame: the message line, the map window and the status line; None without ``rgb_array``."""
        if self._render_mode is None:
            return None
        game: Any = self.env.unwrapped  # NLE (untyped)
        tiles = game.render()  # the whole map, drawn by NetHack
        # NLE 1.3's last observation holds these whatever keys the env returns.
        observation = game.last_observation
        glyphs = observation[game._glyph_index]
        blstats = observation[game._blstats_index]
        message = bytes(observation[game._message_index]).split(b"\0", 1)[0].decode("ascii", "replace")
        top, left = self._window(glyphs, int(blstats[nethack.NLE_BL_Y]), int(blstats[nethack.NLE_BL_X]))
        rows, cols = self.view
        window = tiles[top * TILE : (top + rows) * TILE, left * TILE : (left + cols) * TILE]
        return self._framed(window, message, _status(blstats))

    def _window(self, glyphs: np.ndarray, agent_row: int, agent_col: int) -> tuple[int, int]:
        """The top-left tile of the window: centred on what has been seen, moved to show the agent."""
        seen = np.argwhere(glyphs != _STONE)
        centre = (seen.min(axis=0) + seen.max(axis=0)) // 2 if len(seen) else (agent_row, agent_col)
        corner = []
        for at, agent, size, whole in zip(
            centre, (agent_row, agent_col), self.view, (MAP_ROWS, MAP_COLS), strict=True
        ):
            start = min(max(int(at) - size // 2, agent - size + 1), agent)
            corner.append(min(max(start, 0), whole - size))
        return corner[0], corner[1]

    def _framed(self, window: np.ndarray, message: str, status: str) -> np.ndarray:
        width = window.shape[1]
        above, below = _TEXT_LINES * _LINE + 4, _LINE + 4
        frame = Image.new("RGB", (width, above + window.shape[0] + below))
        frame.paste(Image.fromarray(window), (0, above))
        draw = ImageDraw.Draw(frame)
        # Characters a line holds, by the font's mean width (it is not monospaced).
        per_line = max(1, int(width / max(1.0, self._font.getlength("abcdefghij") / 10)))
        for number, line in enumerate(textwrap.wrap(message, per_line)[:_TEXT_LINES]):
            draw.text((4, 2 + number * _LINE), line, font=self._font, fill=(255, 255, 255))
        draw.text((4, above + window.shape[0] + 2), status, font=self._font, fill=(200, 200, 200))
        return np.asarray(frame)


def _copied(observation: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    return {key: array.copy() for key, array in observation.items()}


def _status(blstats: np.ndarray) -> str:
    """NetHack's bottom line, from the env's blstats."""
    b = [int(value) for value in blstats]
    return (
        f"Dlvl:{b[nethack.NLE_BL_DEPTH]} $:{b[nethack.NLE_BL_GOLD]} "
        f"HP:{b[nethack.NLE_BL_HP]}({b[nethack.NLE_BL_HPMAX]}) "
        f"Pw:{b[nethack.NLE_BL_ENE]}({b[nethack.NLE_BL_ENEMAX]}) AC:{b[nethack.NLE_BL_AC]} "
        f"Xp:{b[nethack.NLE_BL_XP]}/{b[nethack.NLE_BL_EXP]} T:{b[nethack.NLE_BL_TIME]}"
    )


def _chooses_keys(spec: gymnasium.envs.registration.EnvSpec) -> bool:
    """Whether the env's id or class chooses its observation (NetHackChallenge does), not NLE's default."""
    creator = load_env_creator(spec.entry_point)  # type: ignore[arg-type]
    return "observation_keys" in spec.kwargs or "observation_keys" in inspect.signature(creator).parameters


def _register() -> None:
    """Register ``gym_gui/<id>`` for every NLE and MiniHack id gym_gui offers."""
    for env_id, spec in list(gymnasium.registry.items()):
        if not env_id.startswith(("MiniHack-", "NetHack")) or env_id.startswith(_SKIPPED):
            continue
        kwargs: dict[str, Any] = {"nle_id": env_id, "view": VIEWS.get(env_id, (MAP_ROWS, MAP_COLS))}
        if env_id.startswith("NetHack") and not _chooses_keys(spec):
            kwargs["observation_keys"] = _NETHACK_KEYS
        gymnasium.register(
            f"{NAMESPACE}/{env_id}",
            entry_point=f"{__name__}:NetHackFrames",
            kwargs=kwargs,
            max_episode_steps=spec.max_episode_steps,
        )


_register()
