"""Meta-World: fifty manipulation tasks of one simulated Sawyer arm, each a catalog entry of its own
(gym_gui's ``gym_gui/MetaWorld-<task>`` ids, :mod:`.tasks`); not keyboard-playable.

Meta-World registers one id for all its single tasks, ``Meta-World/MT1``, which takes the task as
``env_name=``; a catalog entry is one id, so gym_gui registers an id per task (the same env as MT1
with that task) and writes each task's doc from :data:`TASKS`.
"""

from __future__ import annotations

from gym_gui.core.envs import HEADLESS_MUJOCO, EnvEntry, EnvFamily, RenderKind, env_entry_of

NAME = "metaworld"
NAMESPACE = "gym_gui"
PREFIX = f"{NAMESPACE}/MetaWorld-"

# Meta-World 3.1's tasks (metaworld.ALL_V3_ENVIRONMENTS, in its order) and what each asks of the arm.
TASKS: dict[str, str] = {
    "assembly-v3": "pick up a nut and place it onto a peg",
    "basketball-v3": "dunk the basketball into the basket",
    "bin-picking-v3": "grasp the puck in one bin and place it into the other bin",
    "box-close-v3": "grasp the cover and close the box with it",
    "button-press-topdown-v3": "press a button from the top",
    "button-press-topdown-wall-v3": "bypass a wall and press a button from the top",
    "button-press-v3": "press a button from the front",
    "button-press-wall-v3": "bypass a wall and press a button from the front",
    "coffee-button-v3": "push the button on the coffee machine",
    "coffee-pull-v3": "pull a mug out of the coffee machine",
    "coffee-push-v3": "push a mug under the coffee machine",
    "dial-turn-v3": "rotate a dial 180 degrees",
    "disassemble-v3": "pick a nut out of a peg",
    "door-close-v3": "close a door on a revolving hinge",
    "door-lock-v3": "lock the door by rotating its lock clockwise",
    "door-open-v3": "open a door on a revolving hinge",
    "door-unlock-v3": "unlock the door by rotating its lock counter-clockwise",
    "hand-insert-v3": "insert the gripper into a hole",
    "drawer-close-v3": "push a drawer closed",
    "drawer-open-v3": "pull a drawer open",
    "faucet-open-v3": "rotate the faucet counter-clockwise",
    "faucet-close-v3": "rotate the faucet clockwise",
    "hammer-v3": "hammer a nail into the wall",
    "handle-press-side-v3": "press a handle down, from the side",
    "handle-press-v3": "press a handle down",
    "handle-pull-side-v3": "pull a handle up, from the side",
    "handle-pull-v3": "pull a handle up",
    "lever-pull-v3": "pull a lever down 90 degrees",
    "pick-place-wall-v3": "pick up a puck, bypass a wall and place the puck at the goal",
    "pick-out-of-hole-v3": "pick a puck up out of a hole",
    "pick-place-v3": "pick up a puck and place it at the goal",
    "plate-slide-v3": "slide a plate into a cabinet",
    "plate-slide-side-v3": "slide a plate into a cabinet from the side",
    "plate-slide-back-v3": "slide a plate out of a cabinet",
    "plate-slide-back-side-v3": "slide a plate out of a cabinet from the side",
    "peg-insert-side-v3": "insert a peg into a hole from the side",
    "peg-unplug-side-v3": "unplug a peg from the side",
    "soccer-v3": "kick a soccer ball into the goal",
    "stick-push-v3": "grasp a stick and push a box with it",
    "stick-pull-v3": "grasp a stick and pull a box with it",
    "push-v3": "push a puck to the goal",
    "push-wall-v3": "bypass a wall and push a puck to the goal",
    "push-back-v3": "pull a puck back to the goal",
    "reach-v3": "reach the goal position with the gripper",
    "reach-wall-v3": "bypass a wall and reach the goal position",
    "shelf-place-v3": "pick up a puck and place it onto a shelf",
    "sweep-into-v3": "sweep a puck into a hole",
    "sweep-v3": "sweep a puck off the table",
    "window-open-v3": "push a window open",
    "window-close-v3": "push a window closed",
}


def task_id(task: str) -> str:
    """gym_gui's id of Meta-World task ``task`` (``reach-v3`` → ``gym_gui/MetaWorld-reach-v3``)."""
    return PREFIX + task


def _title(task: str) -> str:
    return "Meta-World " + task.removesuffix("-v3").replace("-", " ")


def _describe(entry: EnvEntry) -> str:
    task = entry.env_id.removeprefix(PREFIX)
    return f"""# {entry.title}

`{entry.env_id}` · Meta-World

A simulated Sawyer arm on a table: {TASKS[task]}.

gym_gui's id for Meta-World's single-task env of `{task}`, as
`gymnasium.make("Meta-World/MT1", env_name="{task}")` makes it: each reset draws one of the task's
50 training variations (where the objects and the goal are). The env takes Meta-World's own
arguments (`seed`, `terminate_on_success`, `reward_function_version`, `camera_name`, `width`,
`height`).

## Observation
`Box((39,), float64)`: the gripper's position and opening (4), the positions and orientations of
up to two objects (14), the same 18 numbers one step earlier, and the goal's position (3).

## Actions
`Box(-1, 1, (4,), float32)`: the gripper's move along x, y and z, and its grip (−1 open, +1 closed).

## Reward
Meta-World's shaped reward (version 2), from 0 to 10 a step; `info["success"]` is 1.0 while the
task is solved.

## Episode end
Truncated after 500 steps; it does not end on success unless made with `terminate_on_success=True`.

## Install
Family: Meta-World. `gym-gui envs install metaworld` (metaworld 3.1.1, which pins mujoco 3.3.0,
the version gym_gui comes with). Frames (480 x 480) are drawn off screen through EGL
(`MUJOCO_GL=egl`), about a fifth of a second each on a CPU.

## Controls
Not playable by keyboard: the arm is driven by continuous moves. Watch an agent play it instead.
"""


FAMILY = EnvFamily(
    name=NAME,
    title="Meta-World",
    import_module="gym_gui.envs.families.metaworld.tasks",  # registers gym_gui/MetaWorld-<task>
    modules=("metaworld",),
    entries=tuple(
        env_entry_of(task_id(task), NAME, _title(task), RenderKind.PIXELS, realtime=True) for task in TASKS
    ),
    prefixes=(PREFIX, "Meta-World/"),
    entry_points=("metaworld", "gym_gui.envs.families.metaworld"),
    # metaworld pins mujoco==3.3.0, which gym_gui pins for it.
    packages=("metaworld==3.1.1",),
    # As MuJoCo's: frames drawn off screen through EGL, in the app, the daemon and workers alike.
    environment=HEADLESS_MUJOCO,
    docs=__name__,
    describe=_describe,
    rank=66,
)
