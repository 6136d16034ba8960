"""Toy Text: gymnasium's small grid and card games, played one step per key press."""

from __future__ import annotations

from gym_gui.core.envs import EnvFamily, KeyBinding, RenderKind, env_entry_of

NAME = "toy_text"
_K = KeyBinding
_GRID, _PIXELS = RenderKind.GRID, RenderKind.PIXELS

# Action numbers below are those of the gymnasium 1.4 sources (see each env's doc).
FROZEN_LAKE_KEYS = (
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

FAMILY = EnvFamily(
    name=NAME,
    title="Toy Text",
    # They make() without pygame, but every frame they render needs it, so pygame is what
    # "installed" means for them.
    import_module="pygame",
    entries=(
        env_entry_of("FrozenLake-v1", NAME, "Frozen Lake 4x4", _GRID, realtime=False, keys=FROZEN_LAKE_KEYS),
        env_entry_of(
            "FrozenLake8x8-v1", NAME, "Frozen Lake 8x8", _GRID, realtime=False, keys=FROZEN_LAKE_KEYS
        ),
        env_entry_of("CliffWalking-v1", NAME, "Cliff Walking", _GRID, realtime=False, keys=_CLIFF_KEYS),
        # gymnasium 1.4 registers Taxi as v4 (v3 is refused as deprecated).
        env_entry_of("Taxi-v4", NAME, "Taxi", _GRID, realtime=False, keys=_TAXI_KEYS),
        env_entry_of("Blackjack-v1", NAME, "Blackjack", _PIXELS, realtime=False, keys=_BLACKJACK_KEYS),
    ),
    entry_points=("gymnasium.envs.toy_text",),
    docs=__name__,
    rank=10,
)
