"""MiniGrid and BabyAI: grid worlds with a mission, played one step per key press.

BabyAI's levels ship inside minigrid (3.2): their mission is a sentence of BabyAI's language
(``obs["mission"]``), drawn again at every reset.
"""

from __future__ import annotations

from gym_gui.core.envs import EnvFamily, KeyBinding, RenderKind, env_entry_of

NAME = "minigrid"
_K = KeyBinding
_GRID = RenderKind.GRID

# The same keys as minigrid's own manual_control.py; action numbers of minigrid 3.2.
KEYS = (
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

# BabyAI's levels from the simplest (one room, one instruction) to the hardest (nine rooms, any sentence).
BABYAI = (
    ("BabyAI-GoToRedBallGrey-v0", "BabyAI: go to the red ball"),
    ("BabyAI-GoToLocal-v0", "BabyAI: go to an object"),
    ("BabyAI-PickupLoc-v0", "BabyAI: pick up, by location"),
    ("BabyAI-PutNextLocal-v0", "BabyAI: put next to"),
    ("BabyAI-OpenDoor-v0", "BabyAI: open a door"),
    ("BabyAI-Synth-v0", "BabyAI: Synth"),
    ("BabyAI-BossLevel-v0", "BabyAI: boss level"),
)

FAMILY = EnvFamily(
    name=NAME,
    title="MiniGrid",
    import_module="minigrid",
    entries=tuple(
        env_entry_of(env_id, NAME, title, _GRID, realtime=False, keys=KEYS)
        for env_id, title in (
            ("MiniGrid-Empty-5x5-v0", "Empty room 5x5"),
            ("MiniGrid-Empty-8x8-v0", "Empty room 8x8"),
            ("MiniGrid-DoorKey-5x5-v0", "Door & key 5x5"),
            ("MiniGrid-FourRooms-v0", "Four rooms"),
            *BABYAI,
        )
    ),
    prefixes=("MiniGrid-", "BabyAI-"),
    entry_points=("minigrid",),
    docs=__name__,
    rank=50,
)
