"""The daemon's gRPC services: the control plane for clients and the worker plane for workers."""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import os
import queue
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import PurePosixPath
from typing import Any, TypeVar

import grpc
from gym_gui_sdk import trainer_pb2 as pb
from gym_gui_sdk import trainer_pb2_grpc as pb_grpc

from gym_gui import __version__
from gym_gui.bus.run_bus import RESUMED, RUNS_TOPIC, STARVED, STEPS, BusEvent, RunBus
from gym_gui.core.config import parse_run_config
from gym_gui.core.errors import GymGuiError, StorageError
from gym_gui.core.ids import validate_run_id
from gym_gui.core.records import ArtifactRecord, EventRecord, RunRecord
from gym_gui.daemon.supervisor import LiveRun, Supervisor
from gym_gui.protocol import convert
from gym_gui.protocol.convert import ProtocolViolation
from gym_gui.protocol.errors import status_code_for
from gym_gui.storage.home import Home
from gym_gui.storage.registry import RunRegistry
from gym_gui.storage.run_dir import RunDir
from gym_gui.storage.telemetry import TelemetryReader

log = logging.getLogger(__name__)

Command = pb.ControlMessage.Command
Phase = pb.Lifecycle.Phase
# How often a worker hears which of its messages are safely stored.
_ACK_SECONDS = 1.0
F = TypeVar("F", bound=Callable[..., Any])


def _user_errors(method: F) -> F:
    """Turn a gym_gui error into a status with its message; anything else stays an INTERNAL error."""

    @functools.wraps(method)
    def wrapper(self: Any, request: Any, context: grpc.ServicerContext) -> Any:
        try:
            return method(self, request, context)
        except GymGuiError as exc:
            context.abort(status_code_for(exc), str(exc))
        except KeyError as exc:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(exc.args[0] if exc.args else exc))

    return wrapper  # type: ignore[return-value]


class TrainerService(pb_grpc.TrainerServiceServicer):
    """Control plane: submit, inspect, watch, cancel, archive and delete runs."""

    def __init__(
        self,
        home: Home,
        registry: RunRegistry,
        bus: RunBus,
        supervisor: Supervisor,
        address: str,
        on_shutdown: Callable[[], None],
    ) -> None:
        self.home = home
        self.registry = registry
        self.bus = bus
        self.supervisor = supervisor
        self.address = address
        self.started_at = time.time()
        self._on_shutdown = on_shutdown

    def _info(self, record: RunRecord) -> pb.RunInfo:
        return convert.run_info(record, str(self.home.run_dir(record.run_id)))

    def _record(self, run_id: str) -> RunRecord:
        return self.registry.get(validate_run_id(run_id))

    @_user_errors
    def SubmitRun(self, request: pb.SubmitRunRequest, context: grpc.ServicerContext) -> pb.SubmitRunResponse:
        config = parse_run_config(request.config_json)
        record, token, plan = self.supervisor.submit(config, dict(request.secret_env))
        reply = pb.SubmitRunResponse(info=self._info(record), run_token=token)
        if plan is not None:
            reply.plan.CopyFrom(convert.launch_preview_message(plan))
        return reply

    @_user_errors
    def PreviewRun(self, request: pb.PreviewRunRequest, context: grpc.ServicerContext) -> pb.LaunchPreview:
        config = parse_run_config(request.config_json)
        return convert.launch_preview_message(self.supervisor.preview(config, dict(request.secret_env)))

    @_user_errors
    def CancelRun(self, request: pb.RunRef, context: grpc.ServicerContext) -> pb.RunInfo:
        return self._info(self.supervisor.cancel(validate_run_id(request.run_id)))

    @_user_errors
    def ListRuns(self, request: pb.ListRunsRequest, context: grpc.ServicerContext) -> pb.ListRunsResponse:
        return pb.ListRunsResponse(
            runs=[self._info(r) for r in self.registry.list(include_archived=request.include_archived)]
        )

    @_user_errors
    def GetRun(self, request: pb.RunRef, context: grpc.ServicerContext) -> pb.RunDetail:
        record = self._record(request.run_id)
        files = RunDir(self.home.run_dir(record.run_id))
        try:
            config_json = json.dumps(files.redacted_config())
        except StorageError:
            config_json = "{}"
        progress = pb.RunProgress()
        telemetry = files.telemetry_path
        if telemetry.exists():
            # A run whose writer has not initialised its database yet simply has no progress.
            with contextlib.suppress(GymGuiError):
                reader = TelemetryReader(telemetry)
                try:
                    progress = pb.RunProgress(
                        episodes=reader.episode_count(),
                        steps=reader.step_count(),
                        metrics=reader.metric_count(),
                        global_step=max(reader.metric_high_water().values(), default=0),
                    )
                finally:
                    reader.close()
        return pb.RunDetail(
            info=self._info(record),
            history=[convert.state_change(t) for t in self.registry.history(record.run_id)],
            config_json=config_json,
            progress=progress,
        )

    def WatchRuns(self, request: pb.WatchRunsRequest, context: grpc.ServicerContext) -> Iterator[pb.RunEvent]:
        sub = self.bus.subscribe(RUNS_TOPIC)
        context.add_callback(sub.close)
        try:
            for record in self.registry.list(include_archived=request.include_archived):
                if not request.run_id or record.run_id == request.run_id:
                    yield pb.RunEvent(snapshot=self._info(record))
            while context.is_active():
                event = sub.get(timeout=0.5)
                if event is None:
                    continue
                message = self._run_event(event, request)
                if message is not None:
                    yield message
        finally:
            sub.close()

    def _run_event(self, event: BusEvent, request: pb.WatchRunsRequest) -> pb.RunEvent | None:
        if event.kind == "removed":
            run_id = event.payload
            return pb.RunEvent(removed=run_id) if not request.run_id or run_id == request.run_id else None
        if event.kind == "change":
            change = convert.state_change(event.payload)
            return (
                pb.RunEvent(change=change) if not request.run_id or change.run_id == request.run_id else None
            )
        record: RunRecord = event.payload
        if request.run_id and record.run_id != request.run_id:
            return None
        if record.archived and not request.include_archived:
            return None
        return pb.RunEvent(updated=self._info(record))

    def Subscribe(
        self, request_iterator: Iterator[pb.SubscribeRequest], context: grpc.ServicerContext
    ) -> Iterator[pb.TelemetryEvent]:
        try:
            first = next(request_iterator)
        except StopIteration:
            return
        try:
            record = self._record(first.run_id)
        except GymGuiError as exc:
            context.abort(status_code_for(exc), str(exc))
            return
        run_id = record.run_id
        sub = self.bus.subscribe(run_id, first.credits)
        context.add_callback(sub.close)

        def take_credits() -> None:
            try:
                for grant in request_iterator:
                    sub.grant(grant.credits)
            except grpc.RpcError:
                pass
            finally:
                sub.close()

        threading.Thread(target=take_credits, name=f"credits-{run_id}", daemon=True).start()
        try:
            # The viewer first learns where the run stands; a finished run ends the stream here.
            history = self.registry.history(run_id)
            if history:
                yield pb.TelemetryEvent(run_id=run_id, state=convert.state_change(history[-1]))
            if self.registry.get(run_id).state.terminal:
                return
            while context.is_active():
                event = sub.get(timeout=0.5)
                if event is None:
                    if sub.closed:
                        return
                    continue
                yield _telemetry_event(event)
        finally:
            sub.close()

    @_user_errors
    def ArchiveRun(self, request: pb.ArchiveRunRequest, context: grpc.ServicerContext) -> pb.RunInfo:
        record = self._record(request.run_id)
        updated = self.registry.set_archived(record.run_id, request.archived)
        self.supervisor.publish_row(record.run_id)
        return self._info(updated)

    @_user_errors
    def DeleteRun(self, request: pb.RunRef, context: grpc.ServicerContext) -> pb.DeleteRunResponse:
        record = self._record(request.run_id)
        self.supervisor.delete(record.run_id)
        return pb.DeleteRunResponse(run_id=record.run_id)

    @_user_errors
    def ControlRun(self, request: pb.ControlRunRequest, context: grpc.ServicerContext) -> pb.RunInfo:
        record = self._record(request.run_id)
        return self._info(self.supervisor.control(record.run_id, request.command, request.render_fps))

    @_user_errors
    def DescribeWorker(
        self, request: pb.DescribeWorkerRequest, context: grpc.ServicerContext
    ) -> pb.WorkerDescription:
        plugin = self.supervisor.catalog.plugin(request.worker)
        spec = plugin.spec
        description = pb.WorkerDescription(
            worker=spec.kind,
            display_name=spec.display_name,
            lane=spec.lane.value,
            available=spec.available,
            unavailable_reason=spec.unavailable_reason,
            bundle=spec.bundle,
            bundle_installed=plugin.bundle is None or self.supervisor.bundles.installed(plugin.bundle.name),
        )
        launcher = self.supervisor.launchers.get(spec.kind)
        if launcher is not None:
            description.description_json = json.dumps(launcher.describe(dict(request.query)))
        return description

    def GetHealth(self, request: pb.HealthRequest, context: grpc.ServicerContext) -> pb.Health:
        return pb.Health(
            version=__version__,
            pid=os.getpid(),
            address=self.address,
            started_at=self.started_at,
            runs_by_state=self.registry.counts_by_state(),
            home=str(self.home.root),
            log_path=str(self.home.daemon_log),
            max_concurrent=self.supervisor.settings.max_concurrent,
        )

    def Shutdown(self, request: pb.ShutdownRequest, context: grpc.ServicerContext) -> pb.ShutdownResponse:
        threading.Thread(target=self._on_shutdown, name="gym-gui-shutdown", daemon=True).start()
        return pb.ShutdownResponse()


def _telemetry_event(event: BusEvent) -> pb.TelemetryEvent:
    run_id = event.run_id
    kind = event.kind
    if kind == STEPS:
        return pb.TelemetryEvent(run_id=run_id, steps=event.payload)
    if kind == "episode":
        return pb.TelemetryEvent(run_id=run_id, episode=event.payload)
    if kind == "metrics":
        return pb.TelemetryEvent(run_id=run_id, metrics=event.payload)
    if kind == "state":
        return pb.TelemetryEvent(run_id=run_id, state=convert.state_change(event.payload))
    if kind == "lifecycle":
        return pb.TelemetryEvent(run_id=run_id, lifecycle=event.payload)
    if kind == "event":
        return pb.TelemetryEvent(run_id=run_id, event=event.payload)
    if kind == STARVED:
        return pb.TelemetryEvent(run_id=run_id, starved=pb.Starved(coalesced=event.coalesced))
    if kind == RESUMED:
        return pb.TelemetryEvent(run_id=run_id, resumed=pb.Resumed(coalesced=event.coalesced))
    raise ValueError(f"unknown bus event kind {kind!r}")


class WorkerService(pb_grpc.WorkerServiceServicer):
    """Worker plane: registration and the per-run Publish stream into storage and the RunBus."""

    def __init__(self, supervisor: Supervisor, bus: RunBus) -> None:
        self.supervisor = supervisor
        self.bus = bus

    def RegisterWorker(
        self, request: pb.RegisterWorkerRequest, context: grpc.ServicerContext
    ) -> pb.RegisterWorkerResponse:
        try:
            run = self.supervisor.register(validate_run_id(request.run_id), request.run_token, request.pid)
        except PermissionError as exc:
            context.abort(grpc.StatusCode.UNAUTHENTICATED, str(exc))
        except GymGuiError as exc:
            context.abort(status_code_for(exc), str(exc))
        return pb.RegisterWorkerResponse(
            session_token=run.session_token,
            config_json=run.config.model_dump_json(),
            run_dir=str(run.run_dir),
            render_fps=run.render_fps,
        )

    def Publish(
        self, request_iterator: Iterator[pb.WorkerMessage], context: grpc.ServicerContext
    ) -> Iterator[pb.ControlMessage]:
        metadata = dict(context.invocation_metadata())
        token = str(metadata.get("authorization", "")).removeprefix("Bearer ")
        run = self.supervisor.session(str(metadata.get("x-run-id", "")), token)
        if run is None:
            context.abort(grpc.StatusCode.UNAUTHENTICATED, "unknown worker session")
            return
        if run.stream_open:
            context.abort(grpc.StatusCode.ALREADY_EXISTS, f"run {run.run_id} already has an open stream")
            return
        resumed = run.ever_streamed or run.orphan_pid is not None
        run.stream_open = True
        run.ever_streamed = True
        run.stream_done.clear()
        run.last_seen = time.monotonic()
        ingest = _Ingest(self.supervisor, self.bus, run, resumed)
        reader = threading.Thread(
            target=ingest.consume, args=(request_iterator,), name=f"ingest-{run.run_id}", daemon=True
        )
        reader.start()
        if run.render_fps:
            yield pb.ControlMessage(command=Command.SET_RENDER_RATE, render_fps=run.render_fps)
        acked = 0
        next_ack = time.monotonic() + _ACK_SECONDS
        try:
            while True:
                try:
                    control = run.controls.get(timeout=0.2)
                except queue.Empty:
                    if ingest.done.is_set() or not context.is_active():
                        break
                    if time.monotonic() >= next_ack:
                        next_ack = time.monotonic() + _ACK_SECONDS
                        stored = ingest.stored_seq
                        if stored > acked and run.writer is not None and run.writer.flush(timeout=5):
                            acked = stored
                            yield pb.ControlMessage(command=Command.ACK, seq=stored)
                    continue
                yield control
            reader.join()
            if ingest.violation:
                context.abort(grpc.StatusCode.INVALID_ARGUMENT, ingest.violation)
            yield pb.ControlMessage(command=Command.ACK, seq=ingest.stored_seq)
        finally:
            self.supervisor.on_stream_end(run)


class _Ingest:
    """Reads one Publish stream into storage (lossless, blocking) and the RunBus (lossy)."""

    def __init__(self, supervisor: Supervisor, bus: RunBus, run: LiveRun, resumed: bool) -> None:
        self.supervisor = supervisor
        self.bus = bus
        self.run = run
        self.resumed = resumed
        self.last_seq = 0
        self.stored_seq = 0  # every message up to this one is in the writer's hands
        self.violation = ""
        self.done = threading.Event()
        self._store_steps = run.config.telemetry.store_steps
        self._store_render = run.config.telemetry.store_render

    def _watermarks(self) -> None:
        """On a reconnected stream, what is already stored (the worker sends again what it had
        not seen confirmed, and the daemon keeps each record once)."""
        self._last_step: tuple[int, int] | None = None
        self._last_episode: int | None = None
        self._metric_steps: dict[str, int] = {}
        writer = self.run.writer
        if not self.resumed or writer is None:
            return
        writer.flush(timeout=60)
        reader = TelemetryReader(writer.path)
        try:
            self._last_step = reader.last_step_key()
            self._last_episode = reader.last_episode()
            self._metric_steps = reader.metric_high_water()
        finally:
            reader.close()

    def consume(self, messages: Iterator[pb.WorkerMessage]) -> None:
        run = self.run
        try:
            self._watermarks()
            for message in messages:
                run.last_seen = time.monotonic()
                self._handle(message)
                self.stored_seq = message.seq
        except ProtocolViolation as exc:
            self.violation = str(exc)
        except GymGuiError as exc:
            self.violation = f"storage rejected the worker's data: {exc}"
        except grpc.RpcError:
            log.info("run %s: worker stream broke", run.run_id)
        except Exception as exc:  # a malformed message must fail the run, never the daemon
            log.exception("run %s: bad worker message", run.run_id)
            self.violation = f"could not process a worker message: {exc}"
        finally:
            if run.writer is not None:
                with contextlib.suppress(GymGuiError):
                    run.writer.flush(timeout=60)
                if run.writer.error is not None and not self.violation:
                    self.violation = f"storage rejected the worker's data: {run.writer.error}"
            if self.violation:
                run.violation = self.violation
                log.warning("run %s: %s", run.run_id, self.violation)
            self.done.set()

    def _put(self, fn: Callable[..., None], *args: Any) -> None:
        # Blocking here is the backpressure: the stream is not read while storage is behind.
        run = self.run
        run.stream_busy = True
        try:
            fn(*args)
        finally:
            run.stream_busy = False
            run.last_seen = time.monotonic()

    def _handle(self, message: pb.WorkerMessage) -> None:
        run = self.run
        writer = run.writer
        assert writer is not None
        if message.seq != self.last_seq + 1:
            raise ProtocolViolation(
                f"message out of order: expected seq {self.last_seq + 1}, got {message.seq}"
            )
        self.last_seq = message.seq
        if writer.error is not None:
            raise ProtocolViolation(f"storage rejected the worker's data: {writer.error}")
        kind = message.WhichOneof("body")
        if kind is None:
            raise ProtocolViolation(f"message {message.seq} has no body")
        if kind == "heartbeat":
            return
        if kind != "lifecycle" and not run.started:
            raise ProtocolViolation(f"{kind} sent before the worker reported STARTED")
        if kind == "steps":
            batch = message.steps
            rows = convert.step_rows(batch)
            if self._last_step is not None:
                last = self._last_step
                rows = [row for row in rows if (row[0], row[1]) > last]
            if self._store_steps and rows:
                if not self._store_render:
                    rows = [(*row[:8], None, row[9]) for row in rows]
                self._put(writer.put_steps, rows)
            if batch.step:
                self.bus.publish(run.run_id, STEPS, batch)
            for episode in batch.episodes:
                self._episode(episode)
            if batch.metrics:
                self._metrics(batch.metrics)
        elif kind == "episode":
            self._episode(message.episode)
        elif kind == "metrics":
            self._metrics(message.metrics.metrics)
        elif kind == "lifecycle":
            self._lifecycle(message.lifecycle)
        elif kind == "artifact":
            self._artifact(message.artifact)
        elif kind == "log":
            line = message.log
            self._put(
                writer.put_event,
                EventRecord(
                    time=time.time(),
                    kind="log",
                    level="INFO",
                    message=line.line[:4000],
                    data=json.dumps({"stream": line.stream}),
                ),
            )
        elif kind == "event":
            event = message.event
            level = event.level.upper() if event.level.upper() in ("INFO", "WARNING", "ERROR") else "INFO"
            _json_object(event.data, "event data")
            self._put(
                writer.put_event,
                EventRecord(
                    time=time.time(),
                    kind="worker",
                    level=level,
                    message=event.message,
                    data=event.data or "{}",
                ),
            )
            self.bus.publish(run.run_id, "event", event)

    def _episode(self, episode: pb.Episode) -> None:
        if self._last_episode is not None and episode.episode <= self._last_episode:
            return
        assert self.run.writer is not None
        self._put(self.run.writer.put_episode, convert.episode_record(episode))
        self.bus.publish(self.run.run_id, "episode", episode)

    def _metrics(self, metrics: Sequence[pb.Metric]) -> None:
        points = convert.metric_points(metrics)
        if self._metric_steps:
            high = self._metric_steps
            points = [p for p in points if p.step > high.get(p.tag, -1)]
        if points:
            assert self.run.writer is not None
            self._put(self.run.writer.put_metrics, points)
        self.bus.publish(self.run.run_id, "metrics", pb.MetricBatch(metrics=metrics))

    def _lifecycle(self, lifecycle: pb.Lifecycle) -> None:
        run = self.run
        phase = lifecycle.phase
        if phase == Phase.STARTED:
            if run.started and not self.resumed:
                raise ProtocolViolation("STARTED sent twice")
            _json_object(lifecycle.spaces or "{}", "spaces")
            self.supervisor.on_started(run, lifecycle.render_kind, lifecycle.spaces)
        elif phase in (Phase.FAILED, Phase.CANCELLED):
            # A worker may fail (or be stopped) while still setting up, before STARTED.
            run.reported = phase
            run.reported_message = lifecycle.message
        elif not run.started:
            raise ProtocolViolation(f"lifecycle {Phase.Name(phase)} sent before STARTED")
        elif phase in (Phase.PAUSED, Phase.RESUMED):
            self.supervisor.on_paused(run, phase == Phase.PAUSED)
        elif phase == Phase.COMPLETED:
            run.reported = phase
            run.reported_message = lifecycle.message
        else:
            raise ProtocolViolation(f"unknown lifecycle phase {phase}")
        self.bus.publish(run.run_id, "lifecycle", lifecycle)

    def _artifact(self, artifact: pb.Artifact) -> None:
        run = self.run
        path = PurePosixPath(artifact.path)
        if not artifact.path or path.is_absolute() or ".." in path.parts:
            raise ProtocolViolation(f"artifact path {artifact.path!r} is not inside the run directory")
        meta = _json_object(artifact.meta or "{}", "artifact meta")
        assert run.writer is not None
        self._put(
            run.writer.put_artifact,
            ArtifactRecord(
                kind=artifact.kind, path=artifact.path, step=artifact.step, meta=artifact.meta or "{}"
            ),
        )
        if run.manifest is not None:
            run.manifest.add_artifact(artifact.kind, artifact.path, artifact.step, meta)


def _json_object(text: str, what: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise ProtocolViolation(f"{what} is not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise ProtocolViolation(f"{what} must be a JSON object")
    return value
