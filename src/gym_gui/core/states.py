"""Run states, the one table of transitions between them, and the rules read from it: whether a run
has ended, and whether a worker process may exist for it."""

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
        """Whether a run in this state has ended: no state follows it in ``TRANSITIONS``.

        The one "has this run ended" rule: the registry stamps ``ended_at`` by it, the daemon ends
        a viewer's stream by it, and the CLI and the window stop following a run by it.
        """
        return not TRANSITIONS[self]

    @property
    def active(self) -> bool:
        """Whether a worker process may exist for a run in this state: it has left the queue and not ended."""
        return self is not RunState.QUEUED and not self.terminal


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
