"""What the daemon's control messages do to a worker's session, and records that fail at the call."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from gym_gui_sdk import trainer_pb2 as pb
from gym_gui_sdk.worker import WorkerSession

Command = pb.ControlMessage.Command


def test_held_is_set_by_pause_and_stop_and_cleared_only_by_a_resume_before_a_stop() -> None:
    session = WorkerSession("127.0.0.1:1", "run", "token")  # not started: the stream is given below
    seen: list[tuple[bool, bool, bool]] = []

    def state() -> None:
        seen.append((session.held, session.paused, session.stop_requested.is_set()))

    def stream() -> Iterator[pb.ControlMessage]:
        # The reader handles each message before asking for the next: the state is read in between.
        state()
        for command in (
            Command.PAUSE,
            Command.RESUME,
            Command.ACK,
            Command.PAUSE,
            Command.STOP,
            Command.RESUME,
        ):
            yield pb.ControlMessage(command=command, seq=1)
            state()

    session._read_control(stream())
    assert seen == [
        (False, False, False),  # running
        (True, True, False),  # paused: the loop must look
        (False, False, False),  # resumed
        (False, False, False),  # an acknowledgement changes nothing
        (True, True, False),
        (True, False, True),  # stopped while paused: the wait ends, the stop stays
        (True, False, True),  # a resume after a stop does not clear it
    ]


def test_episode_and_metric_values_of_the_wrong_type_fail_the_call_not_a_later_batch() -> None:
    session = WorkerSession("127.0.0.1:1", "run", "token")
    with pytest.raises(ValueError, match="could not convert string to float"):
        session.episode(0, steps=3, total_reward="high", terminated=True, truncated=False, started_at=0.0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="could not convert string to float"):
        session.metrics([("episode/return", 3, "high")])  # type: ignore[list-item]
    assert session._batch.episodes == [] and session._batch.metrics == []
