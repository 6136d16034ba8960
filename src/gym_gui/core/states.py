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
    # Stopped by a sweep's pruner (its trial looked worse than the others at the same step): an end
    # of its own, neither the user's cancel nor a failure.
    PRUNED = "PRUNED"

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


# Where a started run can end: a worker, however it went, ends its run in one of these.
_ENDS = frozenset({RunState.COMPLETED, RunState.FAILED, RunState.CANCELLED, RunState.LOST, RunState.PRUNED})

TRANSITIONS: dict[RunState, frozenset[RunState]] = {
    RunState.QUEUED: frozenset({RunState.STARTING, RunState.CANCELLED, RunState.FAILED}),
    RunState.STARTING: frozenset({RunState.RUNNING}) | _ENDS,
    RunState.RUNNING: frozenset({RunState.PAUSED}) | _ENDS,
    RunState.PAUSED: frozenset({RunState.RUNNING}) | _ENDS,
    **{end: frozenset() for end in _ENDS},
}


def check_transition(current: RunState, target: RunState) -> None:
    """Raise :class:`IllegalTransition` unless the run model allows ``current → target``."""
    if target not in TRANSITIONS[current]:
        allowed = ", ".join(sorted(s.value for s in TRANSITIONS[current])) or "none (final state)"
        raise IllegalTransition(
            f"a run cannot go from {current.value} to {target.value}; allowed from {current.value}: {allowed}"
        )


class SweepState(StrEnum):
    """A sweep's state: RUNNING (trials are asked and played), STOPPING (no new trial; the running
    ones are being cancelled), then one of its ends: COMPLETED (its count played), STOPPED (by the
    user) or FAILED."""

    RUNNING = "RUNNING"
    STOPPING = "STOPPING"
    COMPLETED = "COMPLETED"
    STOPPED = "STOPPED"
    FAILED = "FAILED"

    @property
    def ended(self) -> bool:
        return self not in (SweepState.RUNNING, SweepState.STOPPING)
