"""MuJoCo: gymnasium's simulated robots, driven by joint torques (no keyboard play)."""

from __future__ import annotations

from gym_gui.core.envs import HEADLESS_MUJOCO, EnvFamily, RenderKind, env_entry_of

NAME = "mujoco"
_PIXELS = RenderKind.PIXELS

FAMILY = EnvFamily(
    name=NAME,
    title="MuJoCo",
    import_module="mujoco",
    entries=tuple(
        env_entry_of(env_id, NAME, title, _PIXELS, realtime=True)
        for env_id, title in (
            ("HalfCheetah-v5", "Half Cheetah"),
            ("Hopper-v5", "Hopper"),
            ("Walker2d-v5", "Walker 2D"),
            ("Ant-v5", "Ant"),
            ("Humanoid-v5", "Humanoid"),
        )
    ),
    entry_points=("gymnasium.envs.mujoco",),
    # Frames are drawn off screen through EGL: no window, no display needed (the app, the daemon and
    # workers alike).
    environment=HEADLESS_MUJOCO,
    # CleanRL's continuous-action scripts (sac, td3, ppo_continuous_action) train on it.
    bundle_extras={"cleanrl": "mujoco"},
    docs=__name__,
    rank=40,
)
