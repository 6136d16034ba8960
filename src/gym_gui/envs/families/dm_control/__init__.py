"""DeepMind Control: the control suite's MuJoCo tasks through Farama's shimmy, whose ids are
``dm_control/<domain>-<task>-v0`` (not keyboard-playable). Each entry's doc is written from
:data:`TASKS`."""

from __future__ import annotations

from gym_gui.core.envs import HEADLESS_MUJOCO, EnvEntry, EnvFamily, RenderKind, env_entry_of

NAME = "dm_control"
PREFIX = "dm_control/"

# The suite's tasks the catalog lists: what each asks, its observation's arrays (name → shape) and
# its action's size. (The quadruped's tasks are left out: dm-control 1.0.28's quadruped calls
# numpy's in1d, which numpy 2.4 no longer has.)
TASKS: dict[str, tuple[str, dict[str, tuple[int, ...]], int]] = {
    "cartpole-balance": (
        "keep a pole upright on a cart that starts with it up",
        {"position": (3,), "velocity": (2,)},
        1,
    ),
    "cartpole-swingup": (
        "swing a pole up from hanging down, then balance it on the cart",
        {"position": (3,), "velocity": (2,)},
        1,
    ),
    "pendulum-swingup": (
        "swing a torque-limited pendulum up and hold it upright",
        {"orientation": (2,), "velocity": (1,)},
        1,
    ),
    "acrobot-swingup": (
        "swing a two-link acrobot up by its elbow alone and balance it",
        {"orientations": (4,), "velocity": (2,)},
        1,
    ),
    "ball_in_cup-catch": (
        "swing a ball on a string up into the cup that holds the string",
        {"position": (4,), "velocity": (4,)},
        2,
    ),
    "point_mass-easy": (
        "move a point mass to the target at the centre",
        {"position": (2,), "velocity": (2,)},
        2,
    ),
    "reacher-easy": (
        "reach a large target with a two-link arm",
        {"position": (2,), "to_target": (2,), "velocity": (2,)},
        2,
    ),
    "reacher-hard": (
        "reach a small target with a two-link arm",
        {"position": (2,), "to_target": (2,), "velocity": (2,)},
        2,
    ),
    "finger-spin": (
        "spin a hinged body with a two-link finger",
        {"position": (4,), "touch": (2,), "velocity": (3,)},
        2,
    ),
    "finger-turn_easy": (
        "turn a hinged body with a two-link finger until its tip reaches a large target",
        {"dist_to_target": (), "position": (4,), "target_position": (2,), "touch": (2,), "velocity": (3,)},
        2,
    ),
    "cheetah-run": ("run forward as fast as possible on two legs", {"position": (8,), "velocity": (9,)}, 6),
    "hopper-stand": (
        "stand up straight on a one-legged hopper",
        {"position": (6,), "touch": (2,), "velocity": (7,)},
        4,
    ),
    "hopper-hop": ("hop forward on one leg", {"position": (6,), "touch": (2,), "velocity": (7,)}, 4),
    "walker-stand": ("stand up and stay upright", {"height": (), "orientations": (14,), "velocity": (9,)}, 6),
    "walker-walk": ("walk forward at 1 m/s", {"height": (), "orientations": (14,), "velocity": (9,)}, 6),
    "walker-run": ("run forward at 8 m/s", {"height": (), "orientations": (14,), "velocity": (9,)}, 6),
    "humanoid-stand": (
        "stand up with a 21-joint humanoid and stay upright",
        {
            "com_velocity": (3,),
            "extremities": (12,),
            "head_height": (),
            "joint_angles": (21,),
            "torso_vertical": (3,),
            "velocity": (27,),
        },
        21,
    ),
    "humanoid-walk": (
        "walk forward at 1 m/s with a 21-joint humanoid",
        {
            "com_velocity": (3,),
            "extremities": (12,),
            "head_height": (),
            "joint_angles": (21,),
            "torso_vertical": (3,),
            "velocity": (27,),
        },
        21,
    ),
    "fish-swim": (
        "swim a fish to a target",
        {"joint_angles": (7,), "target": (3,), "upright": (), "velocity": (13,)},
        5,
    ),
    "swimmer-swimmer6": (
        "swim a six-link snake to a target",
        {"body_velocities": (18,), "joints": (5,), "to_target": (2,)},
        5,
    ),
    "manipulator-bring_ball": (
        "bring a ball to a target with a planar arm and its gripper",
        {
            "arm_pos": (8, 2),
            "arm_vel": (8,),
            "hand_pos": (4,),
            "object_pos": (4,),
            "object_vel": (3,),
            "target_pos": (4,),
            "touch": (5,),
        },
        5,
    ),
}


def task_id(task: str) -> str:
    """shimmy's id of suite task ``task`` (``cheetah-run`` → ``dm_control/cheetah-run-v0``)."""
    return f"{PREFIX}{task}-v0"


def _title(task: str) -> str:
    domain, name = task.split("-", 1)
    return f"{domain.replace('_', ' ').capitalize()} {name.replace('_', ' ')}"


def _describe(entry: EnvEntry) -> str:
    task = entry.env_id.removeprefix(PREFIX).removesuffix("-v0")
    goal, observation, actions = TASKS[task]
    arrays = ", ".join(f"`{name}` `{shape}`" for name, shape in observation.items())
    return f"""# {entry.title}

`{entry.env_id}` · DeepMind Control

DeepMind Control suite task `{task}`: {goal}.

## Observation
A dict of float64 arrays: {arrays}.

## Actions
`Box(-1, 1, ({actions},), float64)`: the actuators' controls.

## Reward
From 0 to 1 a step, by how well the task is done at that step; an episode's return is at most 1000.

## Episode end
Truncated after 1000 steps; suite tasks never terminate early. `info` carries dm_env's
`timestep.discount` and `timestep.step_type`.

## Install
Family: DeepMind Control. `gym-gui envs install dm_control` (dm-control 1.0.28, the newest that
runs on gym_gui's MuJoCo 3.3.0, and shimmy 2.0.1, which registers its `dm_control/` ids). Frames
(240 x 320) are drawn off screen through EGL (`MUJOCO_GL=egl`).

## Controls
Not playable by keyboard: the task is driven by continuous actuator controls. Watch an agent play
it instead.
"""


FAMILY = EnvFamily(
    name=NAME,
    title="DeepMind Control",
    import_module="shimmy",  # registers the dm_control/ ids on import
    modules=("shimmy", "dm_control"),
    entries=tuple(
        env_entry_of(task_id(task), NAME, _title(task), RenderKind.PIXELS, realtime=True) for task in TASKS
    ),
    prefixes=(PREFIX,),
    entry_points=("shimmy",),
    # dm-control 1.0.28 is the newest to run on MuJoCo 3.3.0, the version Meta-World pins and gym_gui
    # with it; later ones need MuJoCo >= 3.17 (and 4.x breaks them).
    packages=("dm-control==1.0.28", "shimmy[dm-control]==2.0.1"),
    # As MuJoCo's: frames drawn off screen through EGL, in the app, the daemon and workers alike.
    environment=HEADLESS_MUJOCO,
    docs=__name__,
    describe=_describe,
    rank=68,
)
