"""Run states and the one table of transitions between them."""

from __future__ import annotations

from enum import StrEnum

from gym_gui.core.errors import IllegalTransition


class RunState(StrEnum):
    QUEUED = "QUEUED"
    STARTING = "STARTING"
    RUNNING = "RUNNING"
    PAUSED = "PAUSED"
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"
    LOST = "LOST"

    @property
    def terminal(self) -> bool:
        return self in TERMINAL_STATES

    @property
    def active(self) -> bool:
        """Whether a worker process may exist for a run in this state."""
        return self in (RunState.STARTING, RunState.RUNNING, RunState.PAUSED)


TERMINAL_STATES = frozenset({RunState.COMPLETED, RunState.FAILED, RunState.CANCELLED, RunState.LOST})

TRANSITIONS: dict[RunState, frozenset[RunState]] = {
    RunState.QUEUED: frozenset({RunState.STARTING, RunState.CANCELLED, RunState.FAILED}),
    RunState.STARTING: frozenset(
        {RunState.RUNNING, RunState.COMPLETED, RunState.FAILED, RunState.CANCELLED, RunState.LOST}
    ),
    RunState.RUNNING: frozenset(
        {RunState.PAUSED, RunState.COMPLETED, RunState.FAILED, RunState.CANCELLED, RunState.LOST}
    ),
    RunState.PAUSED: frozenset(
        {RunState.RUNNING, RunState.COMPLETED, RunState.FAILED, RunState.CANCELLED, RunState.LOST}
    ),
    RunState.COMPLETED: frozenset(),
    RunState.FAILED: frozenset(),
    RunState.CANCELLED: frozenset(),
    RunState.LOST: frozenset(),
}


def check_transition(current: RunState, target: RunState) -> None:
    """Raise :class:`IllegalTransition` unless the run model allows ``current → target``."""
    if target not in TRANSITIONS[current]:
        allowed = ", ".join(sorted(s.value for s in TRANSITIONS[current])) or "none (final state)"
        raise IllegalTransition(
            f"a run cannot go from {current.value} to {target.value}; allowed from {current.value}: {allowed}"
        )
