"""The random worker's plugin: how gym_gui lists and launches it (loaded in gym_gui's own environment)."""

from __future__ import annotations

from gym_gui.core.workers import Capabilities, Lane, WorkerSpec
from gym_gui.workers import LaunchContext, ModuleLauncher, WorkerPlugin


def _launcher(context: LaunchContext) -> ModuleLauncher:
    return ModuleLauncher(context, "gym_gui_random_worker")


PLUGIN = WorkerPlugin(
    WorkerSpec(
        kind="random",
        display_name="Random Baseline",
        lane=Lane.TELEMETRY,
        capabilities=Capabilities(pause=True, multi_agent=True),
        rank=90,
        default_budget=("episodes", 100),
        description="Seeded random actions on any environment: the baseline every agent is compared with.",
    ),
    launcher=_launcher,
)
