"""The roster's kind whose worker is not built yet: listed (greyed, with the reason) so users see what is coming."""

from __future__ import annotations

from gym_gui.core.workers import Capabilities, Lane, WorkerSpec
from gym_gui.workers.api import WorkerPlugin

LLM = WorkerPlugin(
    WorkerSpec(
        kind="llm",
        display_name="LLM Multi-Step Worker",
        lane=Lane.HYBRID,
        capabilities=Capabilities(pause=True),
        unavailable_reason="the LLM Multi-Step worker is not built yet",
        rank=20,
        description="An agent that asks a language model for its actions.",
    )
)
