"""The environment catalog: gymnasium env ids by family, with render kind, human key maps and docs."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from importlib import resources
from typing import NamedTuple


class Family(StrEnum):
    """A group of environments that one install step provides."""

    TOY_TEXT = "toy_text"
    CLASSIC_CONTROL = "classic_control"
    BOX2D = "box2d"
    MINIGRID = "minigrid"
    MUJOCO = "mujoco"
    ATARI = "atari"
    PROCGEN = "procgen"


class RenderKind(StrEnum):
    """How an environment is drawn: natively from its state (grid) or as RGB frames (pixels)."""

    GRID = "grid"
    PIXELS = "pixels"


@dataclass(frozen=True)
class FamilyInfo:
    """What a family is and how to install it.

    Attributes:
        family: the family.
        title: the name shown to users.
        install_hint: the command that installs the family, shown when one of its ids is missing.
        import_module: the module whose import proves the family is installed (and, for MiniGrid and
            Atari, registers its ids with gymnasium).
    """

    family: Family
    title: str
    install_hint: str
    import_module: str


FAMILIES: dict[Family, FamilyInfo] = {
    info.family: info
    for info in (
        # Toy-text and classic control make() without pygame, but every frame they render needs it,
        # so pygame is what "installed" means for them.
        FamilyInfo(Family.TOY_TEXT, "Toy Text", 'pip install "gymnasium[toy-text]"', "pygame"),
        FamilyInfo(
            Family.CLASSIC_CONTROL, "Classic Control", 'pip install "gymnasium[classic-control]"', "pygame"
        ),
        FamilyInfo(Family.BOX2D, "Box2D", 'pip install "gymnasium[box2d]"', "Box2D"),
        FamilyInfo(Family.MINIGRID, "MiniGrid", "pip install minigrid", "minigrid"),
        FamilyInfo(Family.MUJOCO, "MuJoCo", 'pip install "gymnasium[mujoco]"', "mujoco"),
        FamilyInfo(Family.ATARI, "Atari (ALE)", 'pip install "gymnasium[atari]" ale-py', "ale_py"),
        FamilyInfo(
            Family.PROCGEN,
            "Procgen",
            # Procgen registers with the old `gym` package (< 0.26) and ships wheels only for old
            # Pythons, so it belongs in a worker bundle, not the app's environment.
            "pip install procgen (needs Python <= 3.10 and gym < 0.26; install it in a worker bundle)",
            "procgen",
        ),
    )
}


# An action a key sends: a discrete action index, or a vector for continuous (Box) action spaces.
Action = int | tuple[float, ...]


class KeyBinding(NamedTuple):
    """One key of a human key map.

    ``key`` is a Qt key name without its ``Key_`` prefix (``"Left"``, ``"Space"``, ``"PageUp"``,
    ``"P"``), so ``getattr(Qt.Key, "Key_" + key)`` finds it.
    """

    key: str
    action: Action
    description: str


class Chord(NamedTuple):
    """Keys of a key map held together, and the action they send.

    On an Atari joystick Up + Right + Space is UPRIGHTFIRE, not the action of whichever key came
    last. ``keys`` are key names as :class:`KeyBinding` spells them, each one a key of the same map.
    """

    keys: tuple[str, ...]
    action: Action
    description: str


# A keyword argument's value the play view makes an env with (``("frameskip", 1)``).
PlayArgument = tuple[str, int | float | str | bool]


@dataclass(frozen=True)
class EnvEntry:
    """One catalog environment.

    Attributes:
        env_id: the id registered in gymnasium.
        family: the family that provides it.
        title: the name shown to users.
        human_playable: whether the GUI offers keyboard play.
        render_kind: grid (drawn from the env's state) or pixels (RGB frames).
        realtime: True when human play runs at the env's fps (classic control, Box2D, Atari); False
            for turn-based play, one step per key press.
        keys: the human key map. Turn-based: each press steps the env once with that key's action.
            Real-time, discrete actions: the most recently pressed key still held gives the action.
            Real-time, continuous actions: the vectors of all held keys are added and clipped to the
            action space, so Up+Left on LunarLanderContinuous fires main and left engines together.
        idle_action: the action sent on a real-time frame with no key held. ``None`` means the env
            has no no-op (CartPole), so play waits for a key instead of stepping.
        doc: file name of its Markdown description in ``gym_gui/core/env_docs/``.
        chords: the action each set of held keys sends (one key's too), for a joystick whose combined
            moves are actions of their own (Atari's UPRIGHTFIRE). With chords, the held keys send the
            action of the largest chord all of whose keys are held (a combination the env lacks plays
            the largest part of it that it has), the one with the most recently pressed keys winning a
            tie, and the idle action when no chord is held. Without chords the rules above hold.
        play_kwargs: the keyword arguments the play view makes the env with, recorded as the run's
            ``env_kwargs`` (ALE: ``frameskip=1``, a step a frame).
        play_fps: the steps a second of real-time play where the env's ``render_fps`` does not give
            its pace (ALE with one frame a step: the console's 60); None: its ``render_fps``.
    """

    env_id: str
    family: Family
    title: str
    human_playable: bool
    render_kind: RenderKind
    realtime: bool
    keys: tuple[KeyBinding, ...] = ()
    idle_action: Action | None = None
    doc: str = ""
    chords: tuple[Chord, ...] = ()
    play_kwargs: tuple[PlayArgument, ...] = ()
    play_fps: float | None = None


def doc_name(env_id: str) -> str:
    """Return the Markdown file name used for ``env_id`` (``ALE/Pong-v5`` → ``ale-pong-v5.md``)."""
    return env_id.lower().replace("/", "-") + ".md"


def _entry(
    env_id: str,
    family: Family,
    title: str,
    render_kind: RenderKind,
    *,
    realtime: bool,
    keys: tuple[KeyBinding, ...] = (),
    idle_action: Action | None = None,
    chords: tuple[Chord, ...] = (),
    play_kwargs: tuple[PlayArgument, ...] = (),
    play_fps: float | None = None,
) -> EnvEntry:
    return EnvEntry(
        env_id=env_id,
        family=family,
        title=title,
        human_playable=bool(keys),
        render_kind=render_kind,
        realtime=realtime,
        keys=keys,
        idle_action=idle_action,
        doc=doc_name(env_id),
        chords=chords,
        play_kwargs=play_kwargs,
        play_fps=play_fps,
    )


_K = KeyBinding
_GRID, _PIXELS = RenderKind.GRID, RenderKind.PIXELS

# Action numbers below are those of the gymnasium 1.4 / minigrid 3.2 sources (see each env's doc).
_FROZEN_LAKE_KEYS = (
    _K("Left", 0, "move left"),
    _K("Down", 1, "move down"),
    _K("Right", 2, "move right"),
    _K("Up", 3, "move up"),
)
_CLIFF_KEYS = (
    _K("Up", 0, "move up"),
    _K("Right", 1, "move right"),
    _K("Down", 2, "move down"),
    _K("Left", 3, "move left"),
)
_TAXI_KEYS = (
    _K("Down", 0, "move south"),
    _K("Up", 1, "move north"),
    _K("Right", 2, "move east"),
    _K("Left", 3, "move west"),
    _K("P", 4, "pick up the passenger"),
    _K("D", 5, "drop off the passenger"),
)
_BLACKJACK_KEYS = (
    _K("H", 1, "hit: take another card"),
    _K("S", 0, "stick: stop and let the dealer play"),
)
# The same keys as minigrid's own manual_control.py.
_MINIGRID_KEYS = (
    _K("Left", 0, "turn left"),
    _K("Right", 1, "turn right"),
    _K("Up", 2, "move forward"),
    _K("PageUp", 3, "pick up an object"),
    _K("Tab", 3, "pick up an object"),
    _K("PageDown", 4, "drop the carried object"),
    _K("Shift", 4, "drop the carried object"),
    _K("Space", 5, "toggle (open a door, open a box)"),
    _K("Return", 6, "done"),
)
# ALE (Atari): what gym_gui.envs.ale makes of ALE's minimal action sets, for the three ids known without
# ale-py installed (a test holds them equal). The play view makes them with one frame a step, at 60 a second.
_PONG_KEYS = (
    # In ALE's minimal Pong action set RIGHT moves the paddle up and LEFT moves it down.
    _K("Up", 2, "paddle up (RIGHT)"),
    _K("Down", 3, "paddle down (LEFT)"),
    _K("Space", 1, "serve (FIRE)"),
)
_PONG_CHORDS = (
    Chord(("Space",), 1, "serve (FIRE)"),
    Chord(("Up",), 2, "paddle up (RIGHT)"),
    Chord(("Down",), 3, "paddle down (LEFT)"),
    Chord(("Up", "Space"), 4, "RIGHTFIRE"),
    Chord(("Down", "Space"), 5, "LEFTFIRE"),
)
_BREAKOUT_KEYS = (
    _K("Left", 3, "move left (LEFT)"),
    _K("Right", 2, "move right (RIGHT)"),
    _K("Space", 1, "launch the ball (FIRE)"),
)
_BREAKOUT_CHORDS = (
    Chord(("Space",), 1, "launch the ball (FIRE)"),
    Chord(("Right",), 2, "move right (RIGHT)"),
    Chord(("Left",), 3, "move left (LEFT)"),
)
_SPACE_INVADERS_KEYS = (
    _K("Left", 3, "move left (LEFT)"),
    _K("Right", 2, "move right (RIGHT)"),
    _K("Space", 1, "fire (FIRE)"),
)
_SPACE_INVADERS_CHORDS = (
    Chord(("Space",), 1, "fire (FIRE)"),
    Chord(("Right",), 2, "move right (RIGHT)"),
    Chord(("Left",), 3, "move left (LEFT)"),
    Chord(("Right", "Space"), 4, "RIGHTFIRE"),
    Chord(("Left", "Space"), 5, "LEFTFIRE"),
)
_ALE_PLAY_KWARGS: tuple[PlayArgument, ...] = (("frameskip", 1),)
_ALE_FRAME_RATE = 60.0

ENV_CATALOG: dict[str, EnvEntry] = {
    entry.env_id: entry
    for entry in (
        # Toy text: turn-based, one step per key.
        _entry(
            "FrozenLake-v1", Family.TOY_TEXT, "Frozen Lake 4x4", _GRID, realtime=False, keys=_FROZEN_LAKE_KEYS
        ),
        _entry(
            "FrozenLake8x8-v1",
            Family.TOY_TEXT,
            "Frozen Lake 8x8",
            _GRID,
            realtime=False,
            keys=_FROZEN_LAKE_KEYS,
        ),
        _entry("CliffWalking-v1", Family.TOY_TEXT, "Cliff Walking", _GRID, realtime=False, keys=_CLIFF_KEYS),
        # gymnasium 1.4 registers Taxi as v4 (v3 is refused as deprecated).
        _entry("Taxi-v4", Family.TOY_TEXT, "Taxi", _GRID, realtime=False, keys=_TAXI_KEYS),
        _entry("Blackjack-v1", Family.TOY_TEXT, "Blackjack", _PIXELS, realtime=False, keys=_BLACKJACK_KEYS),
        # Classic control: real time at the env's fps.
        _entry(
            "CartPole-v1",
            Family.CLASSIC_CONTROL,
            "Cart Pole",
            _PIXELS,
            realtime=True,
            keys=(_K("Left", 0, "push the cart left"), _K("Right", 1, "push the cart right")),
            idle_action=None,  # CartPole has no no-op: play waits while no key is held
        ),
        _entry(
            "MountainCar-v0",
            Family.CLASSIC_CONTROL,
            "Mountain Car",
            _PIXELS,
            realtime=True,
            keys=(_K("Left", 0, "accelerate left"), _K("Right", 2, "accelerate right")),
            idle_action=1,
        ),
        _entry(
            "MountainCarContinuous-v0",
            Family.CLASSIC_CONTROL,
            "Mountain Car (continuous)",
            _PIXELS,
            realtime=True,
            keys=(_K("Left", (-1.0,), "full force left"), _K("Right", (1.0,), "full force right")),
            idle_action=(0.0,),
        ),
        _entry(
            "Acrobot-v1",
            Family.CLASSIC_CONTROL,
            "Acrobot",
            _PIXELS,
            realtime=True,
            keys=(_K("Left", 0, "torque -1 on the joint"), _K("Right", 2, "torque +1 on the joint")),
            idle_action=1,
        ),
        _entry(
            "Pendulum-v1",
            Family.CLASSIC_CONTROL,
            "Pendulum",
            _PIXELS,
            realtime=True,
            keys=(
                _K("Left", (2.0,), "full counter-clockwise torque"),
                _K("Right", (-2.0,), "full clockwise torque"),
            ),
            idle_action=(0.0,),
        ),
        # Box2D.
        _entry(
            "LunarLander-v3",
            Family.BOX2D,
            "Lunar Lander",
            _PIXELS,
            realtime=True,
            keys=(
                _K("Up", 2, "fire the main engine"),
                _K("Left", 1, "fire the left orientation engine (drift left)"),
                _K("Right", 3, "fire the right orientation engine (drift right)"),
            ),
            idle_action=0,
        ),
        _entry(
            "LunarLanderContinuous-v3",
            Family.BOX2D,
            "Lunar Lander (continuous)",
            _PIXELS,
            realtime=True,
            keys=(
                _K("Up", (1.0, 0.0), "main engine at full throttle"),
                _K("Left", (0.0, -1.0), "left booster at full throttle"),
                _K("Right", (0.0, 1.0), "right booster at full throttle"),
            ),
            idle_action=(0.0, 0.0),
        ),
        _entry(
            "CarRacing-v3",
            Family.BOX2D,
            "Car Racing",
            _PIXELS,
            realtime=True,
            # The same values as car_racing.py's own keyboard loop.
            keys=(
                _K("Left", (-1.0, 0.0, 0.0), "steer left"),
                _K("Right", (1.0, 0.0, 0.0), "steer right"),
                _K("Up", (0.0, 1.0, 0.0), "gas"),
                _K("Down", (0.0, 0.0, 0.8), "brake"),
            ),
            idle_action=(0.0, 0.0, 0.0),
        ),
        _entry("BipedalWalker-v3", Family.BOX2D, "Bipedal Walker", _PIXELS, realtime=True),
        # MiniGrid: turn-based.
        _entry(
            "MiniGrid-Empty-5x5-v0",
            Family.MINIGRID,
            "Empty room 5x5",
            _GRID,
            realtime=False,
            keys=_MINIGRID_KEYS,
        ),
        _entry(
            "MiniGrid-Empty-8x8-v0",
            Family.MINIGRID,
            "Empty room 8x8",
            _GRID,
            realtime=False,
            keys=_MINIGRID_KEYS,
        ),
        _entry(
            "MiniGrid-DoorKey-5x5-v0",
            Family.MINIGRID,
            "Door & key 5x5",
            _GRID,
            realtime=False,
            keys=_MINIGRID_KEYS,
        ),
        _entry(
            "MiniGrid-FourRooms-v0", Family.MINIGRID, "Four rooms", _GRID, realtime=False, keys=_MINIGRID_KEYS
        ),
        # MuJoCo: joint torques, not something a keyboard can drive.
        _entry("HalfCheetah-v5", Family.MUJOCO, "Half Cheetah", _PIXELS, realtime=True),
        _entry("Hopper-v5", Family.MUJOCO, "Hopper", _PIXELS, realtime=True),
        _entry("Walker2d-v5", Family.MUJOCO, "Walker 2D", _PIXELS, realtime=True),
        _entry("Ant-v5", Family.MUJOCO, "Ant", _PIXELS, realtime=True),
        _entry("Humanoid-v5", Family.MUJOCO, "Humanoid", _PIXELS, realtime=True),
        # Atari: the v5 ids use ALE's minimal action set, which the key maps index.
        _entry(
            "ALE/Pong-v5",
            Family.ATARI,
            "Pong",
            _PIXELS,
            realtime=True,
            keys=_PONG_KEYS,
            idle_action=0,
            chords=_PONG_CHORDS,
            play_kwargs=_ALE_PLAY_KWARGS,
            play_fps=_ALE_FRAME_RATE,
        ),
        _entry(
            "ALE/Breakout-v5",
            Family.ATARI,
            "Breakout",
            _PIXELS,
            realtime=True,
            keys=_BREAKOUT_KEYS,
            idle_action=0,
            chords=_BREAKOUT_CHORDS,
            play_kwargs=_ALE_PLAY_KWARGS,
            play_fps=_ALE_FRAME_RATE,
        ),
        _entry(
            "ALE/SpaceInvaders-v5",
            Family.ATARI,
            "Space Invaders",
            _PIXELS,
            realtime=True,
            keys=_SPACE_INVADERS_KEYS,
            idle_action=0,
            chords=_SPACE_INVADERS_CHORDS,
            play_kwargs=_ALE_PLAY_KWARGS,
            play_fps=_ALE_FRAME_RATE,
        ),
        # Procgen.
        _entry("procgen-coinrun-v0", Family.PROCGEN, "CoinRun", _PIXELS, realtime=True),
        _entry("procgen-starpilot-v0", Family.PROCGEN, "StarPilot", _PIXELS, realtime=True),
    )
}

# Ids outside the catalog still get a family from their prefix, so their install hint can be shown.
_PREFIXES: tuple[tuple[str, Family], ...] = (
    ("MiniGrid-", Family.MINIGRID),
    ("BabyAI-", Family.MINIGRID),
    ("ALE/", Family.ATARI),
    ("procgen", Family.PROCGEN),
)


def env_entry(env_id: str) -> EnvEntry | None:
    """Return the catalog entry of ``env_id``, or None when the id is not in the catalog."""
    return ENV_CATALOG.get(env_id)


def family_of(env_id: str) -> Family | None:
    """Return the family of ``env_id``: from the catalog, else from its prefix, else None.

    Prefixes: ``MiniGrid-`` and ``BabyAI-`` are MiniGrid, ``ALE/`` is Atari, ``procgen`` is Procgen
    (also in gym's ``procgen:procgen-…`` form).
    """
    entry = ENV_CATALOG.get(env_id)
    if entry is not None:
        return entry.family
    for prefix, family in _PREFIXES:
        if env_id.startswith(prefix):
            return family
    return None


def family_info(family: Family | str) -> FamilyInfo:
    """Return the title, install hint and import module of ``family`` (a Family or its value).

    Raises:
        ValueError: if ``family`` is not a known family value.
    """
    return FAMILIES[Family(family)]


def env_doc(env_id: str) -> str:
    """Return the Markdown description of a catalog env.

    Raises:
        KeyError: if ``env_id`` is not in the catalog.
        FileNotFoundError: if its Markdown file is missing from the installed package.
    """
    entry = ENV_CATALOG.get(env_id)
    if entry is None:
        raise KeyError(f"{env_id!r} is not in the environment catalog")
    return resources.files("gym_gui.core").joinpath("env_docs", entry.doc).read_text(encoding="utf-8")


def catalog_by_family() -> dict[Family, list[EnvEntry]]:
    """Return every catalog entry grouped by family, families and entries in catalog order.

    Every family appears, even one with no entries (so a picker can show it and its install hint).
    """
    grouped: dict[Family, list[EnvEntry]] = {family: [] for family in Family}
    for entry in ENV_CATALOG.values():
        grouped[entry.family].append(entry)
    return grouped
