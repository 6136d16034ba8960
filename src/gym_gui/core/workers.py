"""The worker catalog: every kind of agent gym_gui can run, its lane, capabilities and bundle."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Lane(StrEnum):
    """How a worker's output reaches the user (DESIGN.md §4)."""

    TELEMETRY = "telemetry"  # every step streamed, stored, replayable
    ANALYTICS = "analytics"  # lifecycle, scalar metrics and artifacts only
    HYBRID = "hybrid"  # steps with prompts and replies, plus background metrics


class Launch(StrEnum):
    """Who drives the run's process."""

    DAEMON = "daemon"  # the supervisor spawns the worker process
    CLIENT = "client"  # the client steps the environment itself (human play) and publishes


@dataclass(frozen=True)
class Capabilities:
    pause: bool = False
    checkpoint: bool = False
    evaluation: bool = False


@dataclass(frozen=True)
class WorkerSpec:
    """One worker kind.

    Attributes:
        kind: the id used in configs and on the command line.
        display_name: the roster name shown to users.
        lane: which lane its runs are on.
        capabilities: what control it accepts.
        bundle: the virtual environment it runs in (``app`` = gym_gui's own).
        module: the Python module run as ``python -m module`` in that environment.
        launch: whether the daemon spawns it or the client drives it.
        unavailable_reason: empty when the kind can run; otherwise why it cannot yet.
    """

    kind: str
    display_name: str
    lane: Lane
    capabilities: Capabilities
    bundle: str
    module: str
    launch: Launch = Launch.DAEMON
    unavailable_reason: str = ""

    @property
    def available(self) -> bool:
        return not self.unavailable_reason


WORKERS: dict[str, WorkerSpec] = {
    spec.kind: spec
    for spec in (
        WorkerSpec(
            kind="human",
            display_name="Human-Only",
            lane=Lane.TELEMETRY,
            # The person playing is the one who pauses: human play takes no commands from the daemon.
            capabilities=Capabilities(),
            bundle="app",
            module="",
            launch=Launch.CLIENT,
        ),
        WorkerSpec(
            kind="spade_bdi",
            display_name="Spade BDI Worker",
            lane=Lane.TELEMETRY,
            capabilities=Capabilities(pause=True, checkpoint=True, evaluation=True),
            bundle="spade_bdi",
            module="gym_gui_spade_bdi_worker",
            unavailable_reason="the Spade BDI worker and its bundle are not built yet",
        ),
        WorkerSpec(
            kind="llm",
            display_name="LLM Multi-Step Worker",
            lane=Lane.HYBRID,
            capabilities=Capabilities(pause=True),
            bundle="app",
            module="gym_gui_llm_worker",
            unavailable_reason="the LLM Multi-Step worker is not built yet",
        ),
        WorkerSpec(
            kind="cleanrl",
            display_name="CleanRL Worker",
            lane=Lane.ANALYTICS,
            # Pause stops the script's process (SIGSTOP) and resume continues it (SIGCONT).
            capabilities=Capabilities(pause=True, checkpoint=True, evaluation=True),
            bundle="cleanrl",
            module="gym_gui_cleanrl_worker",
        ),
        WorkerSpec(
            kind="random",
            display_name="Random Baseline",
            lane=Lane.TELEMETRY,
            capabilities=Capabilities(pause=True),
            bundle="app",
            module="gym_gui_random_worker",
        ),
    )
}

# The roster as users see it, in this order.
ROSTER: tuple[str, ...] = ("human", "spade_bdi", "llm", "cleanrl")


def worker_spec(kind: str) -> WorkerSpec:
    """Return the catalog entry of ``kind``.

    Raises:
        KeyError: with a message listing the known kinds.
    """
    try:
        return WORKERS[kind]
    except KeyError:
        known = ", ".join(sorted(WORKERS))
        raise KeyError(f"unknown worker kind {kind!r}; known kinds: {known}") from None


def lane_of(kind: str, mode: str) -> Lane:
    """The lane of a run: its worker kind's, except that evaluating a trained model streams every
    step (telemetry lane) whatever lane the kind trains on."""
    if mode == "evaluate":
        return Lane.TELEMETRY
    return worker_spec(kind).lane
