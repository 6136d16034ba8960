"""Conversions between protocol messages and core records, with the checks a worker's input needs."""

from __future__ import annotations

import json
import math
import time
from collections.abc import Iterable, Sequence

import orjson
from gym_gui_sdk import trainer_pb2 as pb
from gym_gui_sdk.contract import ContractError, FormSpec
from gym_gui_sdk.json_object import json_object

from gym_gui.core.controls import Control
from gym_gui.core.errors import GymGuiError
from gym_gui.core.pruning import PrunedRun, PruneResult, PruneRules
from gym_gui.core.records import (
    DaemonHealth,
    EpisodeRecord,
    EventRecord,
    LaunchPreview,
    Lifecycle,
    MetricBatch,
    MetricPoint,
    Resumed,
    RunDetail,
    RunEvent,
    RunProgress,
    RunRecord,
    RunRemoved,
    RunUpdated,
    Starved,
    StateTransition,
    StepBatch,
    StepRow,
    SweepRecord,
    TelemetryEvent,
    WorkerDescription,
)
from gym_gui.core.rerun import PackageChange
from gym_gui.core.run_query import RunQuery, parse_states
from gym_gui.core.states import RunState, SweepState

Command = pb.ControlMessage.Command


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
        sweep_id=record.sweep_id,
        trial=record.trial if record.trial is not None else 0,
    )


def run_record(info: pb.RunInfo) -> RunRecord:
    """A client's record of a run: the registry's row plus where its files are."""
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
        run_dir=info.run_dir,
        warning=info.warning,
        sweep_id=info.sweep_id,
        trial=info.trial if info.sweep_id else None,
    )


def list_runs_request(query: RunQuery) -> pb.ListRunsRequest:
    return pb.ListRunsRequest(
        include_archived=query.include_archived,
        limit=query.limit,
        after=query.after,
        sort=query.sort,
        descending=query.descending,
        states=[state.value for state in query.states],
        worker=query.worker,
        env_id=query.env_id,
        sweep_id=query.sweep_id,
        text=query.text,
    )


def run_query(request: pb.ListRunsRequest) -> RunQuery:
    """The listing a request asks for (an empty sort: the creation order).

    Raises:
        ConfigError: a state, the sort or the limit is not one there is (named).
    """
    return RunQuery(
        include_archived=request.include_archived,
        states=parse_states(list(request.states), "states"),
        worker=request.worker,
        env_id=request.env_id,
        sweep_id=request.sweep_id,
        text=request.text,
        sort=request.sort or "created",
        descending=request.descending,
        limit=request.limit,
        after=request.after,
    )


def prune_runs_request(rules: PruneRules) -> pb.PruneRunsRequest:
    return pb.PruneRunsRequest(
        by_age=rules.older_than is not None,
        older_than=rules.older_than or 0.0,
        states=[state.value for state in rules.states],
        keep_best=rules.keep_best,
        per_sweep=rules.per_sweep,
        run_ids=list(rules.run_ids),
        dry_run=rules.dry_run,
    )


def prune_rules(request: pb.PruneRunsRequest) -> PruneRules:
    """The rules a prune request gives.

    Raises:
        ConfigError: a rule is not one there can be (named by its option).
    """
    return PruneRules(
        older_than=request.older_than if request.by_age else None,
        states=parse_states(list(request.states), "--state"),
        keep_best=request.keep_best,
        per_sweep=request.per_sweep,
        run_ids=tuple(request.run_ids),
        dry_run=request.dry_run,
    )


def prune_result(reply: pb.PruneRunsResponse, dry_run: bool) -> PruneResult:
    return PruneResult(
        runs=[PrunedRun(run_record(pruned.info), pruned.bytes) for pruned in reply.runs],
        bytes=reply.bytes,
        dry_run=dry_run,
        kept=list(reply.kept),
        skipped=list(reply.skipped),
    )


def sweep_info(record: SweepRecord) -> pb.SweepInfo:
    return pb.SweepInfo(
        sweep_id=record.sweep_id,
        name=record.name,
        state=record.state.value,
        directory=record.directory,
        storage=record.storage,
        study=record.study,
        spec_json=record.spec,
        created_at=record.created_at,
        ended_at=record.ended_at or 0.0,
        reason=record.reason,
    )


def sweep_record(info: pb.SweepInfo) -> SweepRecord:
    return SweepRecord(
        sweep_id=info.sweep_id,
        name=info.name,
        state=SweepState(info.state),
        directory=info.directory,
        storage=info.storage,
        study=info.study,
        spec=info.spec_json,
        created_at=info.created_at,
        ended_at=info.ended_at or None,
        reason=info.reason,
    )


def launch_preview_message(preview: LaunchPreview) -> pb.LaunchPreview:
    return pb.LaunchPreview(
        run_id=preview.run_id,
        argv=preview.argv,
        cwd=preview.cwd,
        env=preview.env,
        display=preview.display,
        script_argv=preview.script_argv,
        warnings=preview.warnings,
        packages=preview.packages,
        package_changes=[
            pb.PackageChange(name=change.name, old=change.old, new=change.new)
            for change in preview.package_changes
        ],
    )


def launch_preview(message: pb.LaunchPreview) -> LaunchPreview:
    return LaunchPreview(
        run_id=message.run_id,
        argv=list(message.argv),
        cwd=message.cwd,
        env=dict(message.env),
        display=message.display,
        script_argv=list(message.script_argv),
        warnings=list(message.warnings),
        packages=list(message.packages),
        package_changes=[PackageChange(c.name, c.old, c.new) for c in message.package_changes],
    )


def state_change(transition: StateTransition) -> pb.StateChange:
    return pb.StateChange(
        run_id=transition.run_id,
        from_state=transition.from_state.value if transition.from_state else "",
        to_state=transition.to_state.value,
        time=transition.time,
        reason=transition.reason,
    )


def state_transition(change: pb.StateChange) -> StateTransition:
    return StateTransition(
        run_id=change.run_id,
        from_state=RunState(change.from_state) if change.from_state else None,
        to_state=RunState(change.to_state),
        time=change.time,
        reason=change.reason,
    )


def run_detail(detail: pb.RunDetail) -> RunDetail:
    progress = detail.progress
    return RunDetail(
        record=run_record(detail.info),
        history=[state_transition(change) for change in detail.history],
        config_json=detail.config_json,
        progress=RunProgress(
            episodes=progress.episodes,
            steps=progress.steps,
            metrics=progress.metrics,
            last_wall_time=progress.last_wall_time,
            global_step=progress.global_step,
        ),
    )


def daemon_health(health: pb.Health) -> DaemonHealth:
    return DaemonHealth(
        version=health.version,
        pid=health.pid,
        address=health.address,
        started_at=health.started_at,
        runs_by_state=dict(health.runs_by_state),
        home=health.home,
        log_path=health.log_path,
        max_concurrent=health.max_concurrent,
    )


def run_event(event: pb.RunEvent) -> RunEvent | None:
    """The record of a WatchRuns event (None for a kind this client does not know)."""
    kind = event.WhichOneof("kind")
    if kind == "snapshot":
        return RunUpdated(run_record(event.snapshot), snapshot=True)
    if kind == "updated":
        return RunUpdated(run_record(event.updated))
    if kind == "change":
        return state_transition(event.change)
    if kind == "removed":
        return RunRemoved(event.removed)
    return None


_COMMANDS = {
    Control.PAUSE: Command.PAUSE,
    Control.RESUME: Command.RESUME,
    Control.CHECKPOINT: Command.CHECKPOINT_NOW,
    Control.RENDER_RATE: Command.SET_RENDER_RATE,
}


def control_command(control: Control) -> pb.ControlMessage.Command:
    return _COMMANDS[control]


def telemetry_event(event: pb.TelemetryEvent) -> TelemetryEvent | None:
    """The record of a Subscribe event (None for a kind this client does not know).

    A worker's message becomes an :class:`EventRecord` of kind ``worker`` stamped with the time
    it reached this client (the wire carries none).
    """
    body = event.WhichOneof("body")
    if body == "steps":
        return StepBatch(step_rows(event.steps))
    if body == "episode":
        return episode_record(event.episode)
    if body == "metrics":
        return MetricBatch(metric_points(event.metrics.metrics))
    if body == "state":
        return state_transition(event.state)
    if body == "lifecycle":
        lifecycle = event.lifecycle
        return Lifecycle(
            phase=pb.Lifecycle.Phase.Name(lifecycle.phase),
            message=lifecycle.message,
            render_kind=lifecycle.render_kind,
            spaces=lifecycle.spaces,
        )
    if body == "event":
        return EventRecord(
            time=time.time(),
            kind="worker",
            level=event.event.level,
            message=event.event.message,
            data=event.event.data or "{}",
        )
    if body == "starved":
        return Starved(event.starved.coalesced)
    if body == "resumed":
        return Resumed(event.resumed.coalesced)
    return None


def step_batch_bytes(batch: pb.StepBatch) -> int:
    """About the bytes ``batch`` holds: its columns' texts and payloads, its packed observations and 30
    a step for its numbers (within a few percent of its serialised size for a CartPole batch).

    Summed, not ``ByteSize()``: protobuf serialises a message to size it, at half a gigabyte a second,
    which for a batch of Atari screens took as long as storing them. Packed observations are counted
    from their shape, as reading the field copies it (``step_rows`` refuses bytes of another length).
    """
    packed = 0
    if batch.observation_dtype:
        import numpy as np  # as step_rows does for packed batches

        try:
            itemsize = np.dtype(batch.observation_dtype).itemsize
        except (TypeError, ValueError):
            itemsize = 0  # not a dtype: step_rows refuses the batch
        packed = len(batch.step) * itemsize * math.prod(batch.observation_shape)
    return (
        packed
        + sum(map(len, batch.observation))
        + sum(map(len, batch.render))
        + sum(map(len, batch.action))
        + sum(map(len, batch.info))
        + sum(map(len, batch.proposed_action))
        + sum(map(len, batch.agent))
        + 30 * len(batch.step)
    )


def step_rows(batch: pb.StepBatch, *, check_json: bool = False) -> list[StepRow]:
    """The rows of a column-wise step batch, in storage column order: each with who acted and the
    operator's proposal (``ACTOR_COLUMNS``) when the batch says who acted or names agents, then its
    agent (``AGENT_COLUMNS``) when the batch names agents, without them otherwise.

    ``check_json`` (the daemon, taking a worker's batch): each step's action, observation (unless
    packed: the daemon writes that JSON itself), info and proposed action must be one JSON value.

    Raises:
        ProtocolViolation: when the columns differ in length, an actor is not a known code, or (with
            ``check_json``) a JSON column holds something else, naming the step and the column.
    """
    agents = bool(batch.agent)
    n = len(batch.step)
    observations: Sequence[str] = batch.observation
    packed = bool(batch.observation_dtype or batch.observation_fields)
    if packed:
        if batch.observation:
            raise ProtocolViolation("a step batch has both packed and JSON observations")
        if batch.observation_dtype and batch.observation_fields:
            raise ProtocolViolation("a step batch packs its observations both as arrays and as dicts")
        # Imported here: NumPy is paid for by the clients that read packed steps (viewers, the
        # daemon's ingest), not by every command that lists runs.
        from gym_gui_sdk.encoding import unpack_dicts, unpack_observations

        try:
            if batch.observation_fields:
                fields = [(f.key, f.dtype, tuple(f.shape)) for f in batch.observation_fields]
                observations = unpack_dicts(batch.observation_array, fields, n)
            else:
                observations = unpack_observations(
                    batch.observation_array, batch.observation_dtype, tuple(batch.observation_shape), n
                )
        except ValueError as exc:
            raise ProtocolViolation(str(exc)) from None
    lengths = {
        "episode": len(batch.episode),
        "reward": len(batch.reward),
        "terminated": len(batch.terminated),
        "truncated": len(batch.truncated),
        "action": len(batch.action),
        "observation": len(observations),
        "info": len(batch.info),
        "render": len(batch.render),
        "wall_time": len(batch.wall_time),
    }
    actors = bool(batch.actor or batch.proposed_action)
    if actors:  # sent together, for every step, or not at all
        lengths["actor"] = len(batch.actor)
        lengths["proposed_action"] = len(batch.proposed_action)
    if agents:
        lengths["agent"] = len(batch.agent)
    bad = [f"{name}={length}" for name, length in lengths.items() if length != n]
    if bad:
        raise ProtocolViolation(f"step batch columns differ in length: step={n}, " + ", ".join(bad))
    renders = [r or None for r in batch.render]
    actions: Sequence[str] = batch.action
    infos: Sequence[str] = batch.info
    proposed: Sequence[str] = batch.proposed_action
    if check_json:
        # Taken out of the message once: each read of a repeated string field makes its str again.
        actions, infos = list(actions), list(infos)
        texts = {"action": actions, "info": infos}
        if not packed:
            observations = list(observations)
            texts["observation"] = observations
        if actors:
            proposed = list(proposed)
            texts["proposed_action"] = [text for text in proposed if text]
        for name, column in texts.items():
            _check_json_column(batch, name, column)
    columns = [
        batch.episode,
        batch.step,
        batch.reward,
        batch.terminated,
        batch.truncated,
        actions,
        observations,
        infos,
        renders,
        batch.wall_time,
    ]
    if actors:
        columns += [step_actors(batch), proposed]
    elif agents:
        columns += [[""] * n, [""] * n]
    if agents:
        columns.append(batch.agent)
    return list(zip(*columns, strict=True))


def json_problem(text: str) -> str:
    """Why ``text`` is not one JSON value, or "" when it is.

    orjson decides first (fast); it refuses two things the JSON grammar allows (a number beyond a
    double's range, an escaped lone surrogate), which the standard library's parser then takes,
    without its own extension (NaN and Infinity, which are not JSON).
    """
    try:
        orjson.loads(text)
    except orjson.JSONDecodeError:
        try:
            json.loads(text, parse_constant=_not_json_constant)
        except ValueError as exc:
            return str(exc)
    return ""


def _not_json_constant(name: str) -> None:
    raise ValueError(f"{name} is not JSON")


def _check_json_column(batch: pb.StepBatch, name: str, texts: Sequence[str]) -> None:
    """Raise ProtocolViolation naming the first step whose ``name`` (one of its texts) is not JSON.

    The ingest's hot path: each distinct text is parsed once (a batch repeats its actions and
    infos), by orjson; the rare failure is looked up text by text.
    """
    loads = orjson.loads
    try:
        for text in set(texts):
            loads(text)
        return
    except orjson.JSONDecodeError:
        pass
    bad = next(((text, why) for text in texts if (why := json_problem(text))), None)
    if bad is None:
        return  # only what orjson refuses and JSON allows
    text, why = bad
    index = _step_of_text(batch, name, text)
    raise ProtocolViolation(
        f"step {batch.step[index]} of episode {batch.episode[index]}: {name} is not valid JSON: {why}"
    )


def _step_of_text(batch: pb.StepBatch, name: str, text: str) -> int:
    """The index of the first step of ``batch`` whose column ``name`` holds ``text``."""
    return list(getattr(batch, name)).index(text)


def step_actors(batch: pb.StepBatch) -> list[str]:
    """Who acted at each step of ``batch`` (one of ``ACTORS``), from its ``actor`` codes.

    Raises:
        ProtocolViolation: naming the field, for a code that is not one of ``ACTORS``' or for a
            proposed action at a step that does not say who acted.
    """
    from gym_gui_sdk.step_batch import ACTORS  # with NumPy, as unpack_observations above

    try:
        actors = [ACTORS[code] for code in batch.actor]
    except IndexError:
        wrong = next(code for code in batch.actor if code >= len(ACTORS))
        known = ", ".join(f"{code} {actor or 'not recorded'}" for code, actor in enumerate(ACTORS))
        raise ProtocolViolation(
            f"step batch field actor has value {wrong}; it must be one of {known}"
        ) from None
    for actor, proposed in zip(actors, batch.proposed_action, strict=True):
        if proposed and not actor:
            raise ProtocolViolation(
                "step batch field proposed_action is set on a step whose actor is 0 (not recorded)"
            )
    return actors


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
        agent_returns=tuple((r.agent, r.total_reward) for r in message.agent_returns),
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
        ProtocolViolation: when the plugin's answer is not JSON or breaks the worker contract.
    """
    data = json_object(
        message.description_json or "{}",
        lambda why: ProtocolViolation(f"worker description of {message.worker!r} is not JSON: {why}"),
        lambda _: ProtocolViolation(f"worker description of {message.worker!r} is not a JSON object"),
    )
    try:
        form = FormSpec.from_json(data)
    except ContractError as exc:
        raise ProtocolViolation(f"worker description of {message.worker!r}: {exc}") from None
    return WorkerDescription(
        kind=message.worker,
        display_name=message.display_name,
        lane=message.lane,
        available=message.available,
        unavailable_reason=message.unavailable_reason,
        bundle=message.bundle,
        bundle_installed=message.bundle_installed,
        form=form,
    )
