"""Atari (ALE): every game ale-py registers as a catalog entry, with its key map from ALE's minimal action set and its doc.

A person plays a game with the arrow keys and Space (FIRE), held together for the joystick's combined
moves (Up + Right + Space is UPRIGHTFIRE), at the console's own 60 frames a second: the play view makes
the env with ``frameskip=1``, so a step is one frame, 1/60 s. The v5 ids' default of 4 frames a step
would run the game at 4 times its speed on a 60 Hz clock (or make a person's input coarse on a 15 Hz
one). Sticky actions (``repeat_action_probability`` 0.25, drawn by ALE on every frame) are kept: a
person's frames run the same dynamics as an agent's.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

import gymnasium

from gym_gui.core.envs import Chord, EnvEntry, KeyBinding, PlayArgument, RenderKind, doc_name
from gym_gui.envs import catalog
from gym_gui.envs.ale_actions import MINIMAL_ACTIONS
from gym_gui.envs.families.atari import NAME

# The Atari 2600's frames a second (NTSC), and so a person's steps a second at one frame a step.
FRAME_RATE = 60.0
PLAY_KWARGS: tuple[PlayArgument, ...] = (("frameskip", 1),)
OBSERVATION_SHAPE = (210, 160, 3)
INSTALL = "gym-gui envs install atari"
NOOP = "NOOP"

# The joystick's parts in the order keys are listed, and the key each one is by default.
_PARTS = ("UP", "DOWN", "LEFT", "RIGHT", "FIRE")
_KEYS = {"UP": "Up", "DOWN": "Down", "LEFT": "Left", "RIGHT": "Right", "FIRE": "Space"}
# Pong's paddle moves up and down the screen, but ALE names those moves RIGHT (up) and LEFT (down).
_GAME_KEYS = {"pong": {"RIGHT": "Up", "LEFT": "Down"}}
# What a move does in the games whose docs are written by hand (``ale-<game>-v5.md``).
_MOVE_NOTES = {
    "pong": {"FIRE": "serve", "RIGHT": "paddle up", "LEFT": "paddle down"},
    "breakout": {"FIRE": "launch the ball", "RIGHT": "move right", "LEFT": "move left"},
    "space_invaders": {"FIRE": "fire", "RIGHT": "move right", "LEFT": "move left"},
}
# Titles the ROM's name does not spell as the box did.
_TITLES = {
    "atlantis2": "Atlantis II",
    "et": "E.T. the Extra-Terrestrial",
    "hero": "H.E.R.O.",
    "jamesbond": "James Bond 007",
    "kung_fu_master": "Kung-Fu Master",
    "koolaid": "Kool-Aid Man",
    "montezuma_revenge": "Montezuma's Revenge",
    "mr_do": "Mr. Do!",
    "ms_pacman": "Ms. Pac-Man",
    "pacman": "Pac-Man",
    "pitfall2": "Pitfall II: Lost Caverns",
    "qbert": "Q*bert",
    "riverraid": "River Raid",
    "tic_tac_toe_3d": "3-D Tic-Tac-Toe",
    "trondead": "Tron: Deadly Discs",
    "up_n_down": "Up 'n Down",
    "wizard_of_wor": "Wizard of Wor",
    "yars_revenge": "Yars' Revenge",
}
_V5_ID = re.compile(r"ALE/\w+-v5")
_MEANING = re.compile(r"(UP|DOWN)?(LEFT|RIGHT)?(FIRE)?")


@dataclass(frozen=True)
class Game:
    """One ALE game: its v5 id, its ROM's name in ale-py and the title shown to users."""

    env_id: str
    rom: str
    title: str


def title(rom: str) -> str:
    """The title of ROM ``rom`` (``space_invaders`` → ``Space Invaders``, ``qbert`` → ``Q*bert``)."""
    return _TITLES.get(rom) or rom.replace("_", " ").title()


@functools.cache
def games() -> tuple[Game, ...]:
    """Every ``ALE/<Game>-v5`` id ale-py registers, by title; none when ale-py is not installed.

    Read from gymnasium's registry, which importing ale_py fills: no env is made, no ROM loaded.
    """
    if catalog.import_failure(NAME):  # the registry holds its ids once it imported
        return ()
    found = []
    for env_id, spec in gymnasium.registry.items():
        rom = spec.kwargs.get("game")
        if _V5_ID.fullmatch(env_id) and isinstance(rom, str):
            found.append(Game(env_id, rom, title(rom)))
    return tuple(sorted(found, key=lambda game: game.title.lower()))


def read_minimal_actions(rom: str) -> tuple[str, ...]:
    """ALE's minimal action set of ``rom``, by action name, read from the emulator (loads the ROM:
    about a quarter of a second, which is why :data:`MINIMAL_ACTIONS` keeps them).

    Raises:
        KeyError: when ale-py has no ROM of that name.
    """
    import ale_py
    from ale_py import ALEInterface, LoggerMode, roms

    # Its banner and ROM details, printed at every load otherwise, say nothing a user needs.
    ALEInterface.setLoggerMode(LoggerMode.Error)
    path = roms.get_rom_path(rom)
    if path is None:
        raise KeyError(f"ale-py {ale_py.__version__} has no ROM {rom!r}")
    ale = ALEInterface()
    ale.loadROM(path)
    return tuple(action.name for action in ale.getMinimalActionSet())


def minimal_actions(rom: str) -> tuple[str, ...]:
    """ALE's minimal action set of ``rom`` (a v5 env's ``Discrete(n)`` actions, by name, in order):
    from the table kept for this ale-py, else from the emulator (a ROM a later ale-py added)."""
    names = MINIMAL_ACTIONS.get(rom)
    return tuple(names.split()) if names is not None else read_minimal_actions(rom)


def parts(meaning: str) -> frozenset[str]:
    """The joystick parts of an action name (``UPRIGHTFIRE`` → UP, RIGHT, FIRE; NOOP → none).

    Raises:
        ValueError: for a name that is not a joystick action (ALE's paddle and reset actions).
    """
    match = _MEANING.fullmatch("" if meaning == NOOP else meaning)
    if match is None or (meaning != NOOP and not meaning):
        raise ValueError(f"{meaning!r} is not an ALE joystick action")
    return frozenset(part for part in match.groups() if part)


def _joined(keys: tuple[str, ...]) -> str:
    return " + ".join(keys)


def controls(rom: str, meanings: tuple[str, ...]) -> tuple[tuple[KeyBinding, ...], tuple[Chord, ...]]:
    """The key map of a game whose actions are ``meanings``: a key per joystick part the game uses
    (arrows, Space for FIRE) and a chord per action but NOOP, the keys of its parts (one key or more).

    A key's own action is the action of its one-key chord. A key whose part the game has only in
    combination (Atlantis never moves without firing) sends nothing alone: its binding holds the idle
    action (NOOP), or in a game without one (Video Checkers) its first chord's, what a press sends
    where a press is a step of its own.
    """
    key_of = {**_KEYS, **_GAME_KEYS.get(rom, {})}
    notes = _MOVE_NOTES.get(rom, {})

    def described(index: int) -> str:
        note = notes.get(meanings[index])
        return f"{note} ({meanings[index]})" if note else meanings[index]

    meaning_of: dict[Chord, str] = {}
    for index, meaning in enumerate(meanings):
        keys = tuple(key_of[part] for part in _PARTS if part in parts(meaning))
        if keys:
            meaning_of[Chord(keys, index, described(index))] = meaning
    chords = list(meaning_of)
    bindings = []
    for key in dict.fromkeys(key_of[part] for part in _PARTS):
        held_with = [chord for chord in chords if key in chord.keys]
        alone = next((chord for chord in held_with if chord.keys == (key,)), None)
        if alone is not None:
            bindings.append(KeyBinding(key, alone.action, alone.description))
        elif held_with:
            together = ", ".join(f"{_joined(chord.keys)}: {meaning_of[chord]}" for chord in held_with)
            fallback = meanings.index(NOOP) if NOOP in meanings else held_with[0].action
            bindings.append(KeyBinding(key, fallback, f"nothing alone ({together})"))
    return tuple(bindings), tuple(chords)


def game_entry(game: Game) -> EnvEntry:
    """The catalog entry of ``game``: pixels, real time at 60 frames a second, NOOP when no key is held
    (a game without NOOP waits for a key)."""
    meanings = minimal_actions(game.rom)
    keys, chords = controls(game.rom, meanings)
    return EnvEntry(
        env_id=game.env_id,
        family=NAME,
        title=game.title,
        human_playable=bool(keys),
        render_kind=RenderKind.PIXELS,
        realtime=True,
        keys=keys,
        idle_action=meanings.index(NOOP) if NOOP in meanings else None,
        doc=doc_name(game.env_id),
        chords=chords,
        play_kwargs=PLAY_KWARGS,
        play_fps=FRAME_RATE,
    )


@functools.cache
def entries() -> tuple[EnvEntry, ...]:
    """The entry of every game ale-py registers and has the ROM of, by title; none when ale-py is not
    installed. An id registered for a ROM ale-py lacks is no entry: making it says so (envs.check)."""
    found = []
    for game in games():
        try:
            found.append(game_entry(game))
        except KeyError:
            continue
    return tuple(found)


def entry(env_id: str) -> EnvEntry | None:
    """The entry of ALE game ``env_id``, or None (not a v5 id ale-py registers, or ale-py missing)."""
    return next((found for found in entries() if found.env_id == env_id), None)


def rom_of(env_id: str) -> str:
    """The ROM name of a registered ALE id.

    Raises:
        KeyError: when ale-py does not register ``env_id``.
    """
    for game in games():
        if game.env_id == env_id:
            return game.rom
    raise KeyError(f"{env_id!r} is not a game ale-py registers here")


# ------------------------------------------------------------ its doc


def doc_sections(entry: EnvEntry) -> dict[str, str]:
    """The sections of an ALE game's doc that come from ALE and its key map, by heading (``## Actions``
    …): observation, actions, install and controls. A hand-written doc holds them word for word."""
    meanings = minimal_actions(rom_of(entry.env_id))
    keys_of = {chord.action: chord.keys for chord in entry.chords}
    actions = "\n".join(
        f"| `{index}` | {meaning} | {_joined(keys_of[index]) if index in keys_of else 'no key held'} |"
        for index, meaning in enumerate(meanings)
    )
    key_rows = "\n".join(f"| {b.key} | `{b.action}` | {b.description} |" for b in entry.keys)
    together = [chord for chord in entry.chords if len(chord.keys) > 1]
    chord_rows = "\n".join(f"| {_joined(c.keys)} | `{c.action}` | {c.description} |" for c in together)
    chords = (
        f"\n\n| Keys held together | Action | What it does |\n|---|---|---|\n{chord_rows}" if together else ""
    )
    idle = (
        f"with no key held the action is `{entry.idle_action}` ({NOOP})"
        if entry.idle_action is not None
        else f"the game has no {NOOP}: with no key held it waits"
    )
    return {
        "## Observation": (
            f"A `{OBSERVATION_SHAPE}` RGB frame of the screen.\n"
            "The v5 id repeats each action for 4 frames and, with probability 0.25, repeats the previous\n"
            "action instead (sticky actions, drawn on every frame).\n"
            "gym_gui's play view makes it with `frameskip=1`: a step is one frame, 1/60 s, with the same\n"
            "sticky actions."
        ),
        "## Actions": (
            f"`Discrete({len(meanings)})`, ALE's minimal action set for this game.\n\n"
            f"| Action | Meaning | Keys |\n|---|---|---|\n{actions}"
        ),
        "## Install": f"Family: {catalog.env_family(NAME).title}. `{INSTALL}` (ale-py, which carries the ROMs).",
        "## Controls": (
            f"Real time at the game's {FRAME_RATE:g} frames a second; {idle}.\n"
            "Keys held together send their combined action; a combination the game does not have sends\n"
            "the largest part of it that it has, the keys pressed last first.\n\n"
            f"| Key | Action | What it does |\n|---|---|---|\n{key_rows}{chords}"
        ),
    }


def describe(entry: EnvEntry) -> str:
    """The Markdown doc of an ALE game that has no hand-written one (what the picker's Game Info shows)."""
    sections = doc_sections(entry)
    return (
        f"# {entry.title}\n\n`{entry.env_id}` · {catalog.env_family(NAME).title}\n\n"
        f"The Atari 2600 game {entry.title}, emulated by the Arcade Learning Environment (ALE).\n\n"
        f"## Observation\n{sections['## Observation']}\n\n"
        f"## Actions\n{sections['## Actions']}\n\n"
        "## Reward\nThe points the game scores in the step (its own score, as the console counts it).\n\n"
        "## Episode end\nTerminates when the game is over (in most games, when the last life is lost);\n"
        "truncated after 108,000 frames (30 minutes of play).\n\n"
        f"## Install\n{sections['## Install']}\n\n"
        f"## Controls\n{sections['## Controls']}\n"
    )
