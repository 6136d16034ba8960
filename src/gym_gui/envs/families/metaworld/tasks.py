"""Meta-World's single tasks as gym_gui ids: ``gym_gui/MetaWorld-<task>``, the env Meta-World's
``Meta-World/MT1`` makes for ``env_name=<task>``."""

from __future__ import annotations

from typing import Any, Literal

import gymnasium
import metaworld
from metaworld.sawyer_xyz_env import SawyerXYZEnv

from gym_gui.envs.families.metaworld import TASKS, task_id


class MetaWorldTask(gymnasium.Wrapper[Any, Any, Any, Any]):
    """Meta-World task ``task``, as ``gymnasium.make("Meta-World/MT1", env_name=task, ...)`` makes it.

    Its arguments are Meta-World's own, named here so that one it does not take is refused before a
    run starts.
    """

    # The arm's: its render modes and rate, read from the class before any env is made.
    metadata: dict[str, Any] = SawyerXYZEnv.metadata

    def __init__(
        self,
        task: str,
        render_mode: Literal["human", "rgb_array", "depth_array"] | None = None,
        seed: int | None = None,
        terminate_on_success: bool = False,
        reward_function_version: Literal["v1", "v2"] = "v2",
        camera_name: str | None = None,
        width: int = 480,
        height: int = 480,
    ) -> None:
        super().__init__(
            metaworld.make_mt_envs(  # type: ignore[arg-type]
                task,
                seed=seed,
                render_mode=render_mode,
                terminate_on_success=terminate_on_success,
                reward_function_version=reward_function_version,
                camera_name=camera_name,
                width=width,
                height=height,
            )
        )


def _register() -> None:
    for task in metaworld.ALL_V3_ENVIRONMENTS:
        if task in TASKS:
            gymnasium.register(task_id(task), entry_point=f"{__name__}:MetaWorldTask", kwargs={"task": task})


_register()
