"""Crafter: an open-world survival game in 2-D (Minecraft's tech tree on a 64x64 map), played in real time.

crafter speaks the old gym API, so its ids are registered with gymnasium by gym_gui's adapter
(:mod:`gym_gui.envs.families.crafter.env`, the family's module: importing it imports crafter).
"""

from __future__ import annotations

from gym_gui.core.envs import EnvFamily, KeyBinding, RenderKind, env_entry_of

NAME = "crafter"
_K = KeyBinding
NOOP = 0

# Crafter's own GUI's keys (crafter/run_gui.py) but for its table, on E: T is gym_gui's takeover key.
# Action numbers are crafter.constants.actions' order.
KEYS = (
    _K("W", 3, "move up"),
    _K("A", 1, "move left"),
    _K("S", 4, "move down"),
    _K("D", 2, "move right"),
    _K("Space", 5, "do: collect, attack, eat or drink what is in front"),
    _K("Tab", 6, "sleep"),
    _K("R", 7, "place stone"),
    _K("E", 8, "place a table"),
    _K("F", 9, "place a furnace"),
    _K("P", 10, "place a sapling (plant)"),
    _K("1", 11, "make a wood pickaxe"),
    _K("2", 12, "make a stone pickaxe"),
    _K("3", 13, "make an iron pickaxe"),
    _K("4", 14, "make a wood sword"),
    _K("5", 15, "make a stone sword"),
    _K("6", 16, "make an iron sword"),
)

FAMILY = EnvFamily(
    name=NAME,
    title="Crafter",
    import_module=f"{__name__}.env",  # registers the ids with gymnasium; imports crafter
    modules=("crafter",),
    entries=tuple(
        # As crafter's GUI plays: real time at the env's 5 steps a second, noop while no key is held.
        env_entry_of(env_id, NAME, title, RenderKind.PIXELS, realtime=True, keys=KEYS, idle_action=NOOP)
        for env_id, title in (
            ("CrafterReward-v1", "Crafter"),
            ("CrafterNoReward-v1", "Crafter without reward"),
        )
    ),
    prefixes=("Crafter",),
    entry_points=(__name__,),
    packages=("crafter==1.8.3",),
    docs=__name__,
    rank=62,
)
