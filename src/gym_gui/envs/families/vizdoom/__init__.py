"""ViZDoom: Doom's scenarios for RL from pixels, played in real time at the engine's 35 tics a second.

Its ids' (``Vizdoom<Scenario>-v1``) observation is a dict, the screen (240x320 RGB) and the scenario's
game variables; their action is ``Discrete(n + 1)``: 0 presses nothing, action ``i`` presses the
scenario's button ``n - i`` alone (the wrapper's ``button_map``). Each scenario's key map is made from
its buttons, as its ``.cfg`` lists them.
"""

from __future__ import annotations

from gym_gui.core.envs import EnvFamily, KeyBinding, RenderKind, env_entry_of

NAME = "vizdoom"
NOOP = 0

# The buttons of each scenario in its .cfg's order (vizdoom 1.3.2's scenarios/*.cfg).
SCENARIOS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("VizdoomBasic-v1", "Basic", ("MOVE_LEFT", "MOVE_RIGHT", "ATTACK")),
    (
        "VizdoomDeadlyCorridor-v1",
        "Deadly corridor",
        ("MOVE_LEFT", "MOVE_RIGHT", "ATTACK", "MOVE_FORWARD", "MOVE_BACKWARD", "TURN_LEFT", "TURN_RIGHT"),
    ),
    ("VizdoomDefendCenter-v1", "Defend the center", ("TURN_LEFT", "TURN_RIGHT", "ATTACK")),
    ("VizdoomDefendLine-v1", "Defend the line", ("TURN_LEFT", "TURN_RIGHT", "ATTACK")),
    ("VizdoomHealthGathering-v1", "Health gathering", ("TURN_LEFT", "TURN_RIGHT", "MOVE_FORWARD")),
    (
        "VizdoomHealthGatheringSupreme-v1",
        "Health gathering supreme",
        ("TURN_LEFT", "TURN_RIGHT", "MOVE_FORWARD"),
    ),
    (
        "VizdoomMyWayHome-v1",
        "My way home",
        ("TURN_LEFT", "TURN_RIGHT", "MOVE_FORWARD", "MOVE_LEFT", "MOVE_RIGHT"),
    ),
    ("VizdoomPredictPosition-v1", "Predict position", ("TURN_LEFT", "TURN_RIGHT", "ATTACK")),
    ("VizdoomTakeCover-v1", "Take cover", ("MOVE_LEFT", "MOVE_RIGHT")),
)

# The keys of each button, and what it does. Left and Right turn; where a scenario cannot turn
# (Basic, Take cover) they move sideways, as A and D always do.
_BUTTON_KEYS = {
    "MOVE_FORWARD": (("Up", "W"), "move forward"),
    "MOVE_BACKWARD": (("Down", "S"), "move backward"),
    "TURN_LEFT": (("Left",), "turn left"),
    "TURN_RIGHT": (("Right",), "turn right"),
    "MOVE_LEFT": (("A",), "move (strafe) left"),
    "MOVE_RIGHT": (("D",), "move (strafe) right"),
    "ATTACK": (("Space",), "attack (fire)"),
}
_SIDESTEP_ARROWS = {"MOVE_LEFT": "Left", "MOVE_RIGHT": "Right"}


def button_action(buttons: tuple[str, ...], button: str) -> int:
    """The discrete action that presses ``button`` alone, on a scenario with ``buttons``."""
    return len(buttons) - buttons.index(button)


def keys_of(buttons: tuple[str, ...]) -> tuple[KeyBinding, ...]:
    """The key map of a scenario with ``buttons``: its keys in the order of the buttons."""
    turns = "TURN_LEFT" in buttons
    keys: list[KeyBinding] = []
    for button in buttons:
        names, description = _BUTTON_KEYS[button]
        if not turns and button in _SIDESTEP_ARROWS:
            names = (_SIDESTEP_ARROWS[button], *names)
        keys += [KeyBinding(name, button_action(buttons, button), description) for name in names]
    return tuple(keys)


FAMILY = EnvFamily(
    name=NAME,
    title="ViZDoom",
    import_module="vizdoom.gymnasium_wrapper",  # registers the Vizdoom ids with gymnasium on import
    entries=tuple(
        # A step is one game tic: real time at the env's render_fps, 35 a second; no key, no button.
        env_entry_of(
            env_id, NAME, title, RenderKind.PIXELS, realtime=True, keys=keys_of(buttons), idle_action=NOOP
        )
        for env_id, title, buttons in SCENARIOS
    ),
    prefixes=("Vizdoom",),
    entry_points=("vizdoom",),
    packages=("vizdoom==1.3.2",),
    docs=__name__,
    rank=64,
)
