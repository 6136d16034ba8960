"""Atari (ALE): the Arcade Learning Environment's games, played in real time with ALE's minimal action sets."""

from __future__ import annotations

from gym_gui.core.envs import EnvFamily, KeyBinding, RenderKind, env_entry_of

NAME = "atari"
_K = KeyBinding
_PIXELS = RenderKind.PIXELS

# The v5 ids use ALE's minimal action set, which the key maps index.
_PONG_KEYS = (
    # In ALE's minimal Pong action set RIGHT moves the paddle up and LEFT moves it down.
    _K("Up", 2, "paddle up (RIGHT)"),
    _K("Down", 3, "paddle down (LEFT)"),
    _K("Space", 1, "serve (FIRE)"),
)
_BREAKOUT_KEYS = (
    _K("Left", 3, "move left"),
    _K("Right", 2, "move right"),
    _K("Space", 1, "launch the ball (FIRE)"),
)
_SPACE_INVADERS_KEYS = (
    _K("Left", 3, "move left"),
    _K("Right", 2, "move right"),
    _K("Space", 1, "fire"),
)

FAMILY = EnvFamily(
    name=NAME,
    title="Atari (ALE)",
    import_module="ale_py",  # registers the ALE/ ids with gymnasium on import
    entries=tuple(
        env_entry_of(env_id, NAME, title, _PIXELS, realtime=True, keys=keys, idle_action=0)
        for env_id, title, keys in (
            ("ALE/Pong-v5", "Pong", _PONG_KEYS),
            ("ALE/Breakout-v5", "Breakout", _BREAKOUT_KEYS),
            ("ALE/SpaceInvaders-v5", "Space Invaders", _SPACE_INVADERS_KEYS),
        )
    ),
    prefixes=("ALE/",),
    entry_points=("ale_py",),
    # ale-py's wheels carry the ROMs: nothing is downloaded from anywhere but the package index.
    packages=("ale-py==0.12.*",),
    bundle_extras={"cleanrl": "atari"},
    docs=__name__,
    rank=60,
)
