"""The controls of a live run (pause, resume, checkpoint now, render rate): when each one applies, in one place."""

from __future__ import annotations

from enum import StrEnum

from gym_gui.core.states import RunState
from gym_gui.core.workers import Capabilities, Lane


class Control(StrEnum):
    """What a user may ask of a live run besides cancelling it."""

    PAUSE = "pause"
    RESUME = "resume"
    CHECKPOINT = "checkpoint"
    RENDER_RATE = "render-rate"


# The states a run must be in for each control. A checkpoint needs a RUNNING run: a paused worker
# may have stopped the process that would save it, so it is resumed first.
CONTROL_STATES: dict[Control, frozenset[RunState]] = {
    Control.PAUSE: frozenset({RunState.RUNNING}),
    Control.RESUME: frozenset({RunState.PAUSED}),
    Control.CHECKPOINT: frozenset({RunState.RUNNING}),
    Control.RENDER_RATE: frozenset({RunState.STARTING, RunState.RUNNING, RunState.PAUSED}),
}

_WHAT = {
    Control.PAUSE: "be paused",
    Control.RESUME: "be resumed",
    Control.CHECKPOINT: "checkpoint now",
    Control.RENDER_RATE: "change its render rate",
}


def control_refusal(
    control: Control, state: RunState, capabilities: Capabilities, worker: str, lane: str
) -> str:
    """Why ``control`` does not apply to a run now (empty when it does).

    Args:
        state: the run's state.
        capabilities: what its worker kind accepts.
        worker: the worker's name as the user knows it (for the message).
        lane: the run's lane (an analytics-lane run streams no frames, so it has no render rate).
    """
    if control in (Control.PAUSE, Control.RESUME) and not capabilities.pause:
        return f"worker {worker} cannot pause"
    if control is Control.CHECKPOINT and not capabilities.checkpoint:
        return f"worker {worker} cannot checkpoint on demand"
    if control is Control.RENDER_RATE and lane == Lane.ANALYTICS.value:
        return "an analytics-lane run streams no frames, so it has no render rate"
    allowed = CONTROL_STATES[control]
    if state in allowed:
        return ""
    if state.terminal:
        return f"the run has ended ({state.value})"
    if control is Control.CHECKPOINT and state is RunState.PAUSED:
        return "the run is PAUSED: resume it to checkpoint"
    needed = " or ".join(sorted(s.value for s in allowed))
    return f"the run is {state.value}: only a {needed} run can {_WHAT[control]}"
