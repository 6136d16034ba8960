"""The kinds whose runs a client drives: Human-Only (a person plays by keyboard) and Operator (an
operator plays, a person may take over; arena panes and evaluation batches); each publishes like any worker."""

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

OPERATOR = WorkerPlugin(
    WorkerSpec(
        kind="operator",
        display_name="Operator",
        lane=Lane.TELEMETRY,
        # An arena seats an operator in each agent's seat of a multi-agent env (play/seats.py).
        capabilities=Capabilities(multi_agent=True),
        launch=Launch.CLIENT,
        rank=1,
        description=(
            "A trained model, a language model or the random baseline plays while you watch or take "
            "over (Hybrid, Arena, evaluation batches); every step says who acted."
        ),
    )
)
