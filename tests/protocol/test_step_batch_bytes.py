"""The bytes a step batch holds, as the daemon counts them against its storage's memory bound, are its
serialised size within a few percent, for batches of text and of packed observations, without
serialising it."""

from __future__ import annotations

import numpy as np
import pytest
from gym_gui_sdk import trainer_pb2 as pb

from gym_gui.protocol.convert import step_batch_bytes


def batch(count: int, observation: np.ndarray | str) -> pb.StepBatch:
    steps = pb.StepBatch()
    steps.episode.extend([0] * count)
    steps.step.extend(range(count))
    steps.reward.extend([1.0] * count)
    steps.terminated.extend([False] * count)
    steps.truncated.extend([False] * count)
    steps.action.extend(["1"] * count)
    steps.info.extend(["{}"] * count)
    steps.render.extend([b""] * count)
    steps.wall_time.extend([1.7e9] * count)
    if isinstance(observation, str):
        steps.observation.extend([observation] * count)
    else:
        steps.observation_array = observation.tobytes() * count
        steps.observation_dtype = observation.dtype.str
        steps.observation_shape.extend(observation.shape)
    return steps


@pytest.mark.parametrize(
    ("count", "observation"),
    [
        (2048, "[0.0123456789,-0.0234567891,0.0345678912,-0.0456789123]"),  # CartPole's JSON
        (2048, np.zeros(4, dtype=np.float32)),  # CartPole's, packed
        (20, np.zeros((210, 160, 3), dtype=np.uint8)),  # Atari screens
        (5, np.zeros((17,), dtype=">f8")),
    ],
)
def test_a_batch_counts_about_its_serialised_size(count: int, observation: np.ndarray | str) -> None:
    steps = batch(count, observation)
    assert step_batch_bytes(steps) == pytest.approx(steps.ByteSize(), rel=0.15)


def test_a_batch_whose_dtype_is_not_one_counts_its_columns_only() -> None:
    steps = batch(3, np.zeros(4, dtype=np.float32))
    steps.observation_dtype = "not a dtype"
    assert step_batch_bytes(steps) == 3 * (1 + 2 + 30)
