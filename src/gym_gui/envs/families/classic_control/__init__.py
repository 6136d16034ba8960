"""Classic Control: gymnasium's control problems, played in real time at the env's own rate."""

from __future__ import annotations

from gym_gui.core.envs import EnvFamily, KeyBinding, RenderKind, env_entry_of

NAME = "classic_control"
_K = KeyBinding
_PIXELS = RenderKind.PIXELS

FAMILY = EnvFamily(
    name=NAME,
    title="Classic Control",
    import_module="pygame",  # as Toy Text: its frames need pygame
    entries=(
        env_entry_of(
            "CartPole-v1",
            NAME,
            "Cart Pole",
            _PIXELS,
            realtime=True,
            keys=(_K("Left", 0, "push the cart left"), _K("Right", 1, "push the cart right")),
            idle_action=None,  # CartPole has no no-op: play waits while no key is held
        ),
        env_entry_of(
            "MountainCar-v0",
            NAME,
            "Mountain Car",
            _PIXELS,
            realtime=True,
            keys=(_K("Left", 0, "accelerate left"), _K("Right", 2, "accelerate right")),
            idle_action=1,
        ),
        env_entry_of(
            "MountainCarContinuous-v0",
            NAME,
            "Mountain Car (continuous)",
            _PIXELS,
            realtime=True,
            keys=(_K("Left", (-1.0,), "full force left"), _K("Right", (1.0,), "full force right")),
            idle_action=(0.0,),
        ),
        env_entry_of(
            "Acrobot-v1",
            NAME,
            "Acrobot",
            _PIXELS,
            realtime=True,
            keys=(_K("Left", 0, "torque -1 on the joint"), _K("Right", 2, "torque +1 on the joint")),
            idle_action=1,
        ),
        env_entry_of(
            "Pendulum-v1",
            NAME,
            "Pendulum",
            _PIXELS,
            realtime=True,
            keys=(
                _K("Left", (2.0,), "full counter-clockwise torque"),
                _K("Right", (-2.0,), "full clockwise torque"),
            ),
            idle_action=(0.0,),
        ),
    ),
    entry_points=("gymnasium.envs.classic_control",),
    docs=__name__,
    rank=20,
)
