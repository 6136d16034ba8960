"""d3rlpy's logging into gym_gui (in the bundle): a LoggerAdapter that sends each point d3rlpy's fit writes as a
metric of the run, beside d3rlpy's own TensorBoard adapter writing the run's event files.

d3rlpy's logger averages each metric over an epoch and writes them all at its end (``write_metric``
between ``before_write_metric`` and ``after_write_metric``): losses and timings of the updates, then
the evaluators' scores. They are sent at the epoch's gradient step under gym_gui's tags
(:mod:`gym_gui_d3rlpy_worker.run_params`), with the D4RL-style normalised score of the environment's
return when the dataset has reference scores, and the dataset's own return beside it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gym_gui_d3rlpy_worker.run_params import (
    DATASET_NORMALIZED_METRIC,
    DATASET_RETURN_METRIC,
    EVALUATOR_TAGS,
    LOSS_PREFIX,
    NORMALIZED_METRIC,
    RETURN_METRIC,
    TIME_PREFIX,
    normalized_score,
)

# (tag, step, value) points, as WorkerSession.metrics takes them.
Points = list[tuple[str, int, float]]


def tag_of(name: str) -> str:
    """gym_gui's tag for a metric d3rlpy's fit writes under ``name``."""
    if name in EVALUATOR_TAGS:
        return EVALUATOR_TAGS[name]
    return f"{TIME_PREFIX}{name}" if name.startswith("time_") else f"{LOSS_PREFIX}{name}"


class Reference:
    """The dataset's own score, drawn beside the policy's: its mean return and reference scores."""

    def __init__(self, mean_return: float, ref_min: float | None, ref_max: float | None) -> None:
        self.mean_return = mean_return
        self.ref_min = ref_min
        self.ref_max = ref_max

    def points(self, step: int) -> Points:
        points = [(DATASET_RETURN_METRIC, step, self.mean_return)]
        score = normalized_score(self.mean_return, self.ref_min, self.ref_max)
        if score is not None:
            points.append((DATASET_NORMALIZED_METRIC, step, score))
        return points

    def normalized(self, value: float) -> float | None:
        return normalized_score(value, self.ref_min, self.ref_max)


class GymGuiAdapter:
    """A d3rlpy LoggerAdapter whose points go to ``send`` (the run's ``WorkerSession.metrics``) each epoch."""

    def __init__(self, send: Callable[[Points], None], reference: Reference) -> None:
        self.send = send
        self.reference = reference
        self.points: Points = []

    def write_params(self, params: dict[str, Any]) -> None:
        """The config is in the run's config.json already."""

    def before_write_metric(self, epoch: int, step: int) -> None:
        self.points = []

    def write_metric(self, epoch: int, step: int, name: str, value: float) -> None:
        self.points.append((tag_of(name), step, float(value)))
        if tag_of(name) == RETURN_METRIC and (score := self.reference.normalized(float(value))) is not None:
            self.points.append((NORMALIZED_METRIC, step, score))

    def after_write_metric(self, epoch: int, step: int) -> None:
        self.send([*self.points, *self.reference.points(step)])
        self.points = []

    def save_model(self, epoch: int, algo: Any) -> None:
        """Checkpoints are the worker's (every N steps, on request, the final model)."""

    def close(self) -> None:
        """Nothing held open."""

    def watch_model(self, epoch: int, step: int) -> None:
        """Parameters and gradients are TensorBoard's (d3rlpy's adapter writes their histograms)."""


class GymGuiAdapterFactory:
    """d3rlpy's LoggerAdapterFactory of :class:`GymGuiAdapter`."""

    def __init__(self, send: Callable[[Points], None], reference: Reference) -> None:
        self.send = send
        self.reference = reference

    def create(self, algo: Any, experiment_name: str, n_steps_per_epoch: int) -> GymGuiAdapter:
        return GymGuiAdapter(self.send, self.reference)
