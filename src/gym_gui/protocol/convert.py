"""Conversions between protocol messages and core records, with the checks a worker's input needs."""

from __future__ import annotations

import json
from collections.abc import Iterable

from gym_gui_sdk import trainer_pb2 as pb

from gym_gui.core.errors import GymGuiError
from gym_gui.core.records import (
    EpisodeRecord,
    MetricPoint,
    RunRecord,
    StateTransition,
    StepRow,
    WorkerDescription,
)
from gym_gui.core.states import RunState


class ProtocolViolation(GymGuiError):
    """A worker sent a message that breaks the protocol; its run fails with this reason."""


def run_info(record: RunRecord, run_dir: str = "", warning: str = "") -> pb.RunInfo:
    """The wire form of a registry row; ``warning`` is the daemon's live warning about the run, if any."""
    return pb.RunInfo(
        run_id=record.run_id,
        worker=record.worker,
        env_id=record.env_id,
        state=record.state.value,
        created_at=record.created_at,
        started_at=record.started_at or 0.0,
        ended_at=record.ended_at or 0.0,
        has_exit_code=record.exit_code is not None,
        exit_code=record.exit_code or 0,
        reason=record.reason,
        archived=record.archived,
        lane=record.lane,
        run_dir=run_dir,
        warning=warning,
    )


def run_record(info: pb.RunInfo) -> RunRecord:
    return RunRecord(
        run_id=info.run_id,
        worker=info.worker,
        env_id=info.env_id,
        lane=info.lane,
        state=RunState(info.state),
        created_at=info.created_at,
        started_at=info.started_at or None,
        ended_at=info.ended_at or None,
        exit_code=info.exit_code if info.has_exit_code else None,
        reason=info.reason,
        archived=info.archived,
    )


def state_change(transition: StateTransition) -> pb.StateChange:
    return pb.StateChange(
        run_id=transition.run_id,
        from_state=transition.from_state.value if transition.from_state else "",
        to_state=transition.to_state.value,
        time=transition.time,
        reason=transition.reason,
    )


def step_rows(batch: pb.StepBatch) -> list[StepRow]:
    """The rows of a column-wise step batch, in storage column order.

    Raises:
        ProtocolViolation: when the columns differ in length or a step index is negative.
    """
    n = len(batch.step)
    lengths = {
        "episode": len(batch.episode),
        "reward": len(batch.reward),
        "terminated": len(batch.terminated),
        "truncated": len(batch.truncated),
        "action": len(batch.action),
        "observation": len(batch.observation),
        "info": len(batch.info),
        "render": len(batch.render),
        "wall_time": len(batch.wall_time),
    }
    bad = [f"{name}={length}" for name, length in lengths.items() if length != n]
    if bad:
        raise ProtocolViolation(f"step batch columns differ in length: step={n}, " + ", ".join(bad))
    renders = [r or None for r in batch.render]
    return list(
        zip(
            batch.episode,
            batch.step,
            batch.reward,
            batch.terminated,
            batch.truncated,
            batch.action,
            batch.observation,
            batch.info,
            renders,
            batch.wall_time,
            strict=True,
        )
    )


def episode_record(message: pb.Episode) -> EpisodeRecord:
    return EpisodeRecord(
        episode=message.episode,
        seed=message.seed if message.has_seed else None,
        steps=message.steps,
        total_reward=message.total_reward,
        terminated=message.terminated,
        truncated=message.truncated,
        started_at=message.started_at,
        ended_at=message.ended_at,
        info=message.info or "{}",
    )


def metric_points(metrics: Iterable[pb.Metric]) -> list[MetricPoint]:
    """Raises ProtocolViolation for a metric without a tag."""
    points = []
    for m in metrics:
        if not m.tag:
            raise ProtocolViolation("metric without a tag")
        points.append(MetricPoint(tag=m.tag, step=m.step, wall_time=m.wall_time, value=m.value))
    return points


def worker_description(message: pb.WorkerDescription) -> WorkerDescription:
    """The record of a DescribeWorker reply.

    Raises:
        ProtocolViolation: when the plugin's answer is not a JSON object.
    """
    try:
        details = json.loads(message.description_json or "{}")
    except ValueError as exc:
        raise ProtocolViolation(f"worker description of {message.worker!r} is not JSON: {exc}") from None
    if not isinstance(details, dict):
        raise ProtocolViolation(f"worker description of {message.worker!r} is not a JSON object")
    return WorkerDescription(
        kind=message.worker,
        display_name=message.display_name,
        lane=message.lane,
        available=message.available,
        unavailable_reason=message.unavailable_reason,
        bundle=message.bundle,
        bundle_installed=message.bundle_installed,
        details=details,
    )
