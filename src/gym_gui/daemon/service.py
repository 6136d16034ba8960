"""The daemon's gRPC services: the control plane for clients and the worker plane for workers.

They translate requests and replies; the runs themselves belong to the ``Supervisor``, and a
worker's stream is read by ``ingest.StreamIngest``.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import json
import logging
import os
import queue
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import grpc
from gym_gui_sdk import trainer_pb2 as pb
from gym_gui_sdk import trainer_pb2_grpc as pb_grpc

from gym_gui import __version__
from gym_gui.bus.run_bus import RESUMED, RUNS_TOPIC, STARVED, STEPS, BusEvent, RunBus
from gym_gui.core.config import parse_run_config
from gym_gui.core.errors import GymGuiError, RunBusy, RunNotFound, StorageError
from gym_gui.core.ids import validate_run_id
from gym_gui.core.records import RunRecord
from gym_gui.core.run_query import RunQuery
from gym_gui.daemon.importing import ImportRequest
from gym_gui.daemon.ingest import StreamIngest
from gym_gui.daemon.pruning import prune
from gym_gui.daemon.supervisor import Supervisor
from gym_gui.daemon.sweeping import Sweeping
from gym_gui.protocol import convert
from gym_gui.protocol.errors import status_code_for
from gym_gui.storage.home import Home
from gym_gui.storage.registry import RunRegistry
from gym_gui.storage.run_dir import RunDir
from gym_gui.storage.telemetry import TelemetryReader
from gym_gui.sweeps.spec import parse_spec

log = logging.getLogger(__name__)

Command = pb.ControlMessage.Command
# How often a worker hears which of its messages are safely stored.
_ACK_SECONDS = 1.0
F = TypeVar("F", bound=Callable[..., Any])


def handled(method: F) -> F:
    """How a handler's errors reach the client, for unary and streaming handlers alike.

    A gym_gui error becomes its status (``protocol.errors``) with its own message. Anything else is
    a bug: it is logged with its traceback and the call ends INTERNAL, saying where it failed and
    what was raised. A status the handler chose itself (``context.abort``) stands.
    """
    name = method.__name__

    def fail(exc: Exception, context: grpc.ServicerContext) -> None:
        # (grpc's stubs leave code() out; the server context has it since 1.38.)
        if context.code() is not None:  # type: ignore[attr-defined]  # the handler aborted on its own
            raise exc
        if isinstance(exc, GymGuiError):
            context.abort(status_code_for(exc), str(exc))
        log.error("%s failed", name, exc_info=exc)
        context.abort(
            grpc.StatusCode.INTERNAL,
            f"the daemon failed in {name}: {type(exc).__name__}: {exc} "
            "(a bug in gym_gui: the daemon's log has the traceback)",
        )

    if inspect.isgeneratorfunction(method):

        @functools.wraps(method)
        def streaming(self: Any, request: Any, context: grpc.ServicerContext) -> Iterator[Any]:
            try:
                yield from method(self, request, context)
            except Exception as exc:
                fail(exc, context)

        return streaming  # type: ignore[return-value]

    @functools.wraps(method)
    def unary(self: Any, request: Any, context: grpc.ServicerContext) -> Any:
        try:
            return method(self, request, context)
        except Exception as exc:
            fail(exc, context)

    return unary  # type: ignore[return-value]


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
        sweeping: Sweeping,
    ) -> None:
        self.home = home
        self.registry = registry
        self.bus = bus
        self.supervisor = supervisor
        self.sweeping = sweeping
        self.address = address
        self.started_at = time.time()
        self._on_shutdown = on_shutdown

    def _info(self, record: RunRecord) -> pb.RunInfo:
        run_dir = str(self.home.run_dir(record.run_id))
        return convert.run_info(record, run_dir, self.supervisor.warning(record.run_id))

    def _record(self, run_id: str) -> RunRecord:
        return self.registry.get(validate_run_id(run_id))

    @handled
    def SubmitRun(self, request: pb.SubmitRunRequest, context: grpc.ServicerContext) -> pb.SubmitRunResponse:
        config = parse_run_config(request.config_json)
        record, token, plan = self.supervisor.submit(config, dict(request.secret_env))
        reply = pb.SubmitRunResponse(info=self._info(record), run_token=token)
        if plan is not None:
            reply.plan.CopyFrom(convert.launch_preview_message(plan))
        return reply

    @handled
    def PreviewRun(self, request: pb.PreviewRunRequest, context: grpc.ServicerContext) -> pb.LaunchPreview:
        config = parse_run_config(request.config_json)
        return convert.launch_preview_message(self.supervisor.preview(config, dict(request.secret_env)))

    @handled
    def CancelRun(self, request: pb.RunRef, context: grpc.ServicerContext) -> pb.RunInfo:
        return self._info(self.supervisor.cancel(validate_run_id(request.run_id)))

    @handled
    def ListRuns(self, request: pb.ListRunsRequest, context: grpc.ServicerContext) -> pb.ListRunsResponse:
        # Only the page's own runs are made into messages: their directories and warnings are the cost.
        page = self.registry.page(convert.run_query(request))
        return pb.ListRunsResponse(runs=[self._info(r) for r in page.runs], total=page.total, next=page.next)

    @handled
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

    @handled
    def WatchRuns(self, request: pb.WatchRunsRequest, context: grpc.ServicerContext) -> Iterator[pb.RunEvent]:
        sub = self.bus.subscribe(RUNS_TOPIC)
        context.add_callback(sub.close)
        try:
            for record in self._watched(request):
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

    def _watched(self, request: pb.WatchRunsRequest) -> list[RunRecord]:
        """The runs a watch starts with: one run looked up by its id (not found in a listing of every
        run: 70× slower at 10,000 runs, bench/scale.py), the newest ``limit``, or all of them."""
        if not request.run_id and request.limit:
            newest = RunQuery(include_archived=request.include_archived, descending=True, limit=request.limit)
            return self.registry.page(newest).runs
        if not request.run_id:
            return self.registry.list(include_archived=request.include_archived)
        try:
            record = self.registry.get(request.run_id)
        except RunNotFound:
            return []  # as before: a watch of an unknown id waits for it to appear
        return [record] if request.include_archived or not record.archived else []

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

    @handled
    def Subscribe(
        self, request_iterator: Iterator[pb.SubscribeRequest], context: grpc.ServicerContext
    ) -> Iterator[pb.TelemetryEvent]:
        try:
            first = next(request_iterator)
        except StopIteration:
            return
        run_id = self._record(first.run_id).run_id
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

    @handled
    def ArchiveRun(self, request: pb.ArchiveRunRequest, context: grpc.ServicerContext) -> pb.RunInfo:
        record = self._record(request.run_id)
        updated = self.registry.set_archived(record.run_id, request.archived)
        self.supervisor.publish_row(record.run_id)
        return self._info(updated)

    @handled
    def DeleteRun(self, request: pb.RunRef, context: grpc.ServicerContext) -> pb.DeleteRunResponse:
        record = self._record(request.run_id)
        self.supervisor.delete(record.run_id)
        return pb.DeleteRunResponse(run_id=record.run_id)

    @handled
    def PruneRuns(self, request: pb.PruneRunsRequest, context: grpc.ServicerContext) -> pb.PruneRunsResponse:
        result = prune(self.supervisor, self.sweeping, convert.prune_rules(request))
        return pb.PruneRunsResponse(
            runs=[pb.PrunedRun(info=self._info(run.record), bytes=run.bytes) for run in result.runs],
            bytes=result.bytes,
            kept=result.kept,
            skipped=result.skipped,
        )

    @handled
    def ControlRun(self, request: pb.ControlRunRequest, context: grpc.ServicerContext) -> pb.RunInfo:
        record = self._record(request.run_id)
        return self._info(self.supervisor.control(record.run_id, request.command, request.render_fps))

    @handled
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
            description.description_json = json.dumps(launcher.describe(dict(request.query)).to_json())
        return description

    # ------------------------------------------------------------ sweeps

    @handled
    def StartSweep(self, request: pb.StartSweepRequest, context: grpc.ServicerContext) -> pb.SweepInfo:
        return convert.sweep_info(self.sweeping.start(parse_spec(request.spec_json)))

    @handled
    def ListSweeps(
        self, request: pb.ListSweepsRequest, context: grpc.ServicerContext
    ) -> pb.ListSweepsResponse:
        return pb.ListSweepsResponse(sweeps=[convert.sweep_info(r) for r in self.sweeping.sweeps()])

    @handled
    def GetSweep(self, request: pb.SweepRef, context: grpc.ServicerContext) -> pb.SweepDetail:
        detail = self.sweeping.get(request.sweep_id)
        return pb.SweepDetail(info=convert.sweep_info(detail.record), study_json=json.dumps(detail.study))

    @handled
    def StopSweep(self, request: pb.SweepRef, context: grpc.ServicerContext) -> pb.SweepInfo:
        return convert.sweep_info(self.sweeping.stop(request.sweep_id))

    @handled
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

    @handled
    def ImportModel(self, request: pb.ImportModelRequest, context: grpc.ServicerContext) -> pb.RunInfo:
        imported = ImportRequest(
            path=request.path,
            worker=request.worker,
            algorithm=request.algorithm,
            env_id=request.env_id,
            origin=request.origin,
        )
        return self._info(self.supervisor.import_model(imported))

    @handled
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

    @handled
    def RegisterWorker(
        self, request: pb.RegisterWorkerRequest, context: grpc.ServicerContext
    ) -> pb.RegisterWorkerResponse:
        try:
            run = self.supervisor.register(validate_run_id(request.run_id), request.run_token, request.pid)
        except PermissionError as exc:
            context.abort(grpc.StatusCode.UNAUTHENTICATED, str(exc))
        return pb.RegisterWorkerResponse(
            session_token=run.session_token,
            config_json=run.config.model_dump_json(),
            run_dir=str(run.run_dir),
            render_fps=run.render_fps,
        )

    @handled
    def ClaimLaunch(
        self, request: pb.ClaimLaunchRequest, context: grpc.ServicerContext
    ) -> pb.ClaimLaunchResponse:
        metadata = dict(context.invocation_metadata())
        claim = str(metadata.get("authorization", "")).removeprefix("Bearer ")
        try:
            spec = self.supervisor.claim_launch(validate_run_id(request.run_id), claim)
        except PermissionError as exc:
            context.abort(grpc.StatusCode.UNAUTHENTICATED, str(exc))
        return pb.ClaimLaunchResponse(
            argv=spec.argv,
            cwd=str(spec.cwd),
            env=spec.env,
            stdout_path=str(spec.stdout_path),
            stderr_path=str(spec.stderr_path),
        )

    @handled
    def Publish(
        self, request_iterator: Iterator[pb.WorkerMessage], context: grpc.ServicerContext
    ) -> Iterator[pb.ControlMessage]:
        metadata = dict(context.invocation_metadata())
        token = str(metadata.get("authorization", "")).removeprefix("Bearer ")
        run = self.supervisor.session(str(metadata.get("x-run-id", "")), token)
        if run is None:
            context.abort(grpc.StatusCode.UNAUTHENTICATED, "unknown worker session")
            return
        try:
            resumed = self.supervisor.stream_opened(run)
        except RunBusy as exc:
            context.abort(grpc.StatusCode.ALREADY_EXISTS, str(exc))
            return
        ingest = StreamIngest(self.supervisor, self.bus, run, resumed)
        reader = threading.Thread(
            target=ingest.consume, args=(request_iterator,), name=f"ingest-{run.run_id}", daemon=True
        )
        reader.start()
        try:
            if run.render_fps:
                yield pb.ControlMessage(command=Command.SET_RENDER_RATE, render_fps=run.render_fps)
            acked = 0
            next_ack = time.monotonic() + _ACK_SECONDS
            while True:
                try:
                    control = run.controls.get(timeout=0.2)
                except queue.Empty:
                    control = None
                if control is None:  # a look at the stream: woken by its ingest's end, or the time
                    if ingest.done.is_set() or not context.is_active():
                        break
                    if time.monotonic() >= next_ack:
                        next_ack = time.monotonic() + _ACK_SECONDS
                        stored = ingest.stored_seq
                        if stored > acked and ingest.writer is not None:
                            try:
                                flushed = ingest.writer.flush(timeout=5)
                            except StorageError as exc:
                                # Storage refused what was sent while the worker sends nothing more.
                                ingest.storage_failed(exc)
                                break
                            if flushed:
                                acked = stored
                                yield pb.ControlMessage(command=Command.ACK, seq=stored)
                    continue
                yield control
            if not ingest.violation:
                # (A stream failed from here may still be open: its reader ends once the call does.)
                reader.join()
            if ingest.violation:
                # The worker broke the protocol, or its run ended while it still sent (not its fault).
                code = (
                    grpc.StatusCode.FAILED_PRECONDITION
                    if ingest.ended_under_it
                    else grpc.StatusCode.INVALID_ARGUMENT
                )
                context.abort(code, ingest.violation)
            yield pb.ControlMessage(command=Command.ACK, seq=ingest.stored_seq)
        finally:
            self.supervisor.stream_ended(run)
