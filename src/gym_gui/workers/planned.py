"""The roster's kinds whose workers are not built yet: listed (greyed, with the reason) so users see what is coming."""

from __future__ import annotations

from gym_gui.core.workers import Capabilities, Lane, WorkerSpec
from gym_gui.workers.api import WorkerPlugin

SPADE_BDI = WorkerPlugin(
    WorkerSpec(
        kind="spade_bdi",
        display_name="Spade BDI Worker",
        lane=Lane.TELEMETRY,
        capabilities=Capabilities(pause=True, checkpoint=True, evaluation=True),
        bundle="spade_bdi",
        unavailable_reason="the Spade BDI worker and its bundle are not built yet",
        rank=10,
        description="A SPADE BDI agent learning by Q-learning.",
    )
)
