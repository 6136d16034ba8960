"""MiniHack and NetHack (NLE): the NetHack Learning Environment's dungeons, played one move per key press.

Its ids are gym_gui's ``gym_gui/<NLE id>`` (:mod:`.tiles`, imported once the family is installed): NLE
draws no ``rgb_array`` frames, gym_gui's ids draw them from NetHack's tiles.
"""

from __future__ import annotations

from gym_gui.core.envs import EnvEntry, EnvFamily, KeyBinding, RenderKind, env_entry_of

NAME = "minihack"

# The keys of NLE's actions, by action name: NetHack's own letters (its "vi keys" move), with the
# arrows and the keypad's corner keys for the moves. An env's key map binds the actions it has, each
# key to the first action of that name (a one-square move, not the run of the same name).
_KEYS: dict[str, tuple[tuple[str, ...], str]] = {
    "N": (("K", "Up"), "move north"),
    "E": (("L", "Right"), "move east"),
    "S": (("J", "Down"), "move south"),
    "W": (("H", "Left"), "move west"),
    "NE": (("U", "PageUp"), "move north-east"),
    "SE": (("N", "PageDown"), "move south-east"),
    "SW": (("B", "End"), "move south-west"),
    "NW": (("Y", "Home"), "move north-west"),
    "UP": (("Less",), "go up the stairs (<)"),
    "DOWN": (("Greater",), "go down the stairs (>)"),
    "WAIT": (("Period",), "wait a turn (.)"),
    "MORE": (("Return",), "show the next message (--More--)"),
    "ESC": (("Escape",), "cancel, close a menu"),
    "PICKUP": (("Comma",), "pick up what lies here (,)"),
    "APPLY": (("A",), "apply a tool, such as a key on a door (a)"),
    "OPEN": (("O",), "open a door (o)"),
    "SEARCH": (("S",), "search around for hidden things (s)"),
    "EAT": (("E",), "eat (e)"),
    "DROP": (("D",), "drop (d)"),
    "INVENTORY": (("I",), "show the inventory (i)"),
    "QUAFF": (("Q",), "drink a potion (q)"),
    "READ": (("R",), "read a scroll or a book (r)"),
    "ZAP": (("Z",), "zap a wand (z)"),
    "FIRE": (("F",), "fire from the quiver (f)"),
}

# Each entry's actions, in the order of its action space (NLE's ``env.unwrapped.actions``).
_MOVES = "N E S W NE SE SW NW"
_SCORE = f"MORE {_MOVES} {_MOVES} UP DOWN WAIT KICK EAT SEARCH"
# NetHackChallenge's: NLE's full action set (nle.nethack.ACTIONS).
_ALL = (
    f"{_MOVES} {_MOVES} UP DOWN WAIT MORE EXTCMD EXTLIST ADJUST ANNOTATE APPLY ATTRIBUTES "
    "AUTOPICKUP CALL CAST CHAT CLOSE CONDUCT DIP DROP DROPTYPE EAT ENGRAVE ENHANCE ESC FIGHT FIRE "
    "FORCE GLANCE HISTORY INVENTORY INVENTTYPE INVOKE JUMP KICK KNOWN KNOWNCLASS LOOK LOOT MONSTER "
    "MOVE MOVEFAR OFFER OPEN OPTIONS OVERVIEW PAY PICKUP PRAY PUTON QUAFF QUIT QUIVER READ REDRAW "
    "REMOVE RIDE RUB RUSH RUSH2 SAVE SEARCH SEEALL SEEAMULET SEEARMOR SEEGOLD SEERINGS SEESPELLS "
    "SEETOOLS SEETRAP SEEWEAPON SHELL SIT SWAP TAKEOFF TAKEOFFALL TELEPORT THROW TIP TRAVEL TURN "
    "TWOWEAPON UNTRAP VERSION VERSIONSHORT WEAR WHATDOES WHATIS WIELD WIPE ZAP PLUS MINUS SPACE APOS "
    "QUOTE NUM_0 NUM_1 NUM_2 NUM_3 NUM_4 NUM_5 NUM_6 NUM_7 NUM_8 NUM_9 DOLLAR"
)
ACTIONS: dict[str, tuple[str, ...]] = {
    env_id: tuple(names.split())
    for env_id, names in (
        ("gym_gui/MiniHack-Room-5x5-v0", _MOVES),
        ("gym_gui/MiniHack-Room-15x15-v0", _MOVES),
        ("gym_gui/MiniHack-MazeWalk-9x9-v0", _MOVES),
        ("gym_gui/MiniHack-KeyRoom-S5-v0", f"{_MOVES} PICKUP APPLY"),
        ("gym_gui/MiniHack-River-v0", _MOVES),
        ("gym_gui/MiniHack-HideNSeek-v0", _MOVES),
        ("gym_gui/NetHackScore-v0", _SCORE),
        ("gym_gui/NetHackChallenge-v0", _ALL),
    )
}
_TITLES = {
    "gym_gui/MiniHack-Room-5x5-v0": "MiniHack room 5x5",
    "gym_gui/MiniHack-Room-15x15-v0": "MiniHack room 15x15",
    "gym_gui/MiniHack-MazeWalk-9x9-v0": "MiniHack maze walk 9x9",
    "gym_gui/MiniHack-KeyRoom-S5-v0": "MiniHack key room 5x5",
    "gym_gui/MiniHack-River-v0": "MiniHack river",
    "gym_gui/MiniHack-HideNSeek-v0": "MiniHack hide and seek",
    "gym_gui/NetHackScore-v0": "NetHack (score)",
    "gym_gui/NetHackChallenge-v0": "NetHack Challenge",
}


def key_map(actions: tuple[str, ...]) -> tuple[KeyBinding, ...]:
    """The keys of the actions ``actions`` names that have one, each bound to its action's index."""
    bindings = []
    for name, (keys, description) in _KEYS.items():
        if name in actions:
            bindings += [KeyBinding(key, actions.index(name), description) for key in keys]
    return tuple(bindings)


def _entry(env_id: str) -> EnvEntry:
    return env_entry_of(
        env_id, NAME, _TITLES[env_id], RenderKind.PIXELS, realtime=False, keys=key_map(ACTIONS[env_id])
    )


FAMILY = EnvFamily(
    name=NAME,
    title="MiniHack + NetHack (NLE)",
    import_module="gym_gui.envs.families.minihack.tiles",  # registers gym_gui/<id> (and NLE's ids)
    modules=("nle", "minihack"),
    entries=tuple(_entry(env_id) for env_id in ACTIONS),
    prefixes=("gym_gui/MiniHack-", "gym_gui/NetHack", "MiniHack-", "NetHack"),
    entry_points=("minihack", "nle", "gym_gui.envs.families.minihack"),
    # nle 1.3.0 pins gymnasium==1.2.0 (1.2.0 pins 1.0.0) yet runs on gym_gui's 1.4: pip must not
    # resolve it, so this lists what nle and minihack need beyond gym_gui's environment (pybind11;
    # numpy, gymnasium and setuptools, whose pkg_resources minihack imports, are in the lock).
    packages=("nle==1.3.0", "minihack==1.0.2", "pybind11==3.1.0"),
    install_options=("--no-deps",),
    docs=__name__,
    rank=62,
)
