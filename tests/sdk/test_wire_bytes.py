"""A step batch of large packed observations is written to the wire apart from the rest of its message
(protobuf serialises big bytes fields slowly) and parses back as the same message; any other message is
``SerializeToString``'s bytes."""

from __future__ import annotations

import numpy as np
from gym_gui_sdk import trainer_pb2 as pb
from gym_gui_sdk.courier import serialize


def screens_message(count: int, seq: int = 41) -> pb.WorkerMessage:
    rng = np.random.default_rng(3)
    message = pb.WorkerMessage(seq=seq)
    batch = message.steps
    batch.episode.extend([2] * count)
    batch.step.extend(range(count))
    batch.reward.extend([0.5] * count)
    batch.terminated.extend([False] * count)
    batch.truncated.extend([False] * count)
    batch.action.extend(["3"] * count)
    batch.info.extend(['{"lives":5}'] * count)
    batch.render.extend([b"\x89PNG"] + [b""] * (count - 1))
    batch.wall_time.extend([1.25] * count)
    batch.observation_array = rng.integers(0, 255, (count, 210, 160, 3), dtype=np.uint8).tobytes()
    batch.observation_dtype = "|u1"
    batch.observation_shape.extend([210, 160, 3])
    batch.episodes.add(episode=2, steps=count, total_reward=0.5 * count, terminated=True)
    return message


def test_a_batch_of_screens_parses_back_as_the_same_message_which_is_left_as_it_was() -> None:
    message = screens_message(20)
    before = message.SerializeToString()
    wire = serialize(message)
    assert pb.WorkerMessage.FromString(wire) == message
    assert message.SerializeToString() == before  # kept to be sent again after a reconnect
    # Written apart: the packed observations are the bytes' end, in a steps field of their own.
    assert wire.endswith(message.steps.observation_array)
    assert abs(len(wire) - len(before)) < 16


def test_other_messages_are_serialised_as_protobuf_does() -> None:
    small = screens_message(1)
    small.steps.observation_array = small.steps.observation_array[:600]
    small.steps.observation_shape[:] = [600]
    text = pb.WorkerMessage(seq=3)
    text.steps.step.append(0)
    text.steps.observation.append("[0.5,1.0]")
    heartbeat = pb.WorkerMessage(seq=4, heartbeat=pb.Heartbeat(wall_time=1.0))
    for message in (small, text, heartbeat):
        assert serialize(message) == message.SerializeToString()
