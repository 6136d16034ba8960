"""highway-env: driving decisions among simulated traffic (lane changes, speed), played one decision
per key press; its road and vehicles are simulated in pure Python, so a step takes tens of ms."""

from __future__ import annotations

from gym_gui.core.envs import EnvFamily, KeyBinding, RenderKind, env_entry_of

NAME = "highway"
_K = KeyBinding
_PIXELS = RenderKind.PIXELS

# highway-env's own keys (its EventHandler): the road runs left to right, the left lane is above.
# DiscreteMetaAction's actions: 0 LANE_LEFT, 1 IDLE, 2 LANE_RIGHT, 3 FASTER, 4 SLOWER.
META_KEYS = (
    _K("Up", 0, "change to the lane on the left (LANE_LEFT)"),
    _K("Space", 1, "keep lane and speed (IDLE)"),
    _K("Down", 2, "change to the lane on the right (LANE_RIGHT)"),
    _K("Right", 3, "speed up (FASTER)"),
    _K("Left", 4, "slow down (SLOWER)"),
)
# The intersection's has no lane changes: 0 SLOWER, 1 IDLE, 2 FASTER.
SPEED_KEYS = (
    _K("Left", 0, "slow down (SLOWER)"),
    _K("Space", 1, "keep the speed (IDLE)"),
    _K("Right", 2, "speed up (FASTER)"),
)

FAMILY = EnvFamily(
    name=NAME,
    title="highway-env",
    import_module="highway_env",  # registers its ids on import
    entries=(
        # The fast ids only: highway-v0 simulates 15 ticks a step with 50 vehicles, half a second a step.
        env_entry_of("highway-fast-v0", NAME, "Highway (fast)", _PIXELS, realtime=False, keys=META_KEYS),
        env_entry_of("merge-v1", NAME, "Merge", _PIXELS, realtime=False, keys=META_KEYS),
        env_entry_of("roundabout-v1", NAME, "Roundabout", _PIXELS, realtime=False, keys=META_KEYS),
        env_entry_of("intersection-v0", NAME, "Intersection", _PIXELS, realtime=False, keys=SPEED_KEYS),
        env_entry_of("parking-v0", NAME, "Parking", _PIXELS, realtime=False),
        env_entry_of("racetrack-v1", NAME, "Racetrack", _PIXELS, realtime=False),
    ),
    # highway-env's ids share no prefix: its scenarios' names.
    prefixes=(
        "highway-",
        "merge-",
        "roundabout-",
        "intersection-",
        "parking-",
        "racetrack-",
        "exit-",
        "lane-keeping-",
        "two-way-",
        "u-turn-",
    ),
    entry_points=("highway_env",),
    packages=("highway-env==1.12.1",),
    # highway-env draws nothing when SDL's video driver is "dummy", the one gym_gui's workers get (they
    # have no screen); SDL's offscreen driver needs none either, and highway-env draws under it.
    environment={"SDL_VIDEODRIVER": "offscreen"},
    docs=__name__,
    rank=64,
)
