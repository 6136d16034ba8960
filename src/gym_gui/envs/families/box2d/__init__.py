"""Box2D: gymnasium's physics games (landers, walkers, a racing car), played in real time."""

from __future__ import annotations

from gym_gui.core.envs import EnvFamily, KeyBinding, RenderKind, env_entry_of

NAME = "box2d"
_K = KeyBinding
_PIXELS = RenderKind.PIXELS

FAMILY = EnvFamily(
    name=NAME,
    title="Box2D",
    import_module="Box2D",
    entries=(
        env_entry_of(
            "LunarLander-v3",
            NAME,
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
        env_entry_of(
            "LunarLanderContinuous-v3",
            NAME,
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
        env_entry_of(
            "CarRacing-v3",
            NAME,
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
        env_entry_of("BipedalWalker-v3", NAME, "Bipedal Walker", _PIXELS, realtime=True),
    ),
    entry_points=("gymnasium.envs.box2d",),
    docs=__name__,
    rank=30,
)
