"""The Human-Only worker kind: the window plays the environment by keyboard and publishes like any worker."""

from __future__ import annotations

from gym_gui.core.workers import Capabilities, Lane, Launch, WorkerSpec
from gym_gui.workers.api import WorkerPlugin

HUMAN = WorkerPlugin(
    WorkerSpec(
        kind="human",
        display_name="Human-Only",
        lane=Lane.TELEMETRY,
        # The person playing is the one who pauses: human play takes no commands from the daemon.
        capabilities=Capabilities(),
        launch=Launch.CLIENT,
        rank=0,
        description="You play by keyboard in the centre view; every episode is a stored, replayable run.",
    )
)
