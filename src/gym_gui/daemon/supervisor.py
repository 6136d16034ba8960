"""The supervisor: queues runs, launches workers through an Executor, watches them and decides how they end."""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import queue
import secrets
import shutil
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from gym_gui_sdk import ENV_DAEMON_ADDRESS, ENV_RUN_DIR, ENV_RUN_ID, ENV_RUN_TOKEN
from gym_gui_sdk import trainer_pb2 as pb

from gym_gui.bus.run_bus import RUNS_TOPIC, RunBus
from gym_gui.core.config import MAX_RENDER_FPS, RunConfig
from gym_gui.core.controls import Control, control_refusal
from gym_gui.core.errors import ConfigError, GymGuiError, RunBusy, StorageError
from gym_gui.core.ids import make_run_id
from gym_gui.core.records import BundleProgress, EventRecord, LaunchPreview, RunRecord, StateTransition
from gym_gui.core.states import RunState
from gym_gui.core.workers import Launch, WorkerSpec
from gym_gui.daemon.executors import Executor, LaunchSpec, WorkerProcess, process_alive, tail
from gym_gui.daemon.preview import launch_preview
from gym_gui.envs.check import check_env
from gym_gui.storage.home import Home
from gym_gui.storage.registry import RunRegistry
from gym_gui.storage.run_dir import ManifestWriter, RunDir
from gym_gui.storage.telemetry import TelemetryWriter
from gym_gui.workers import (
    BundleDirectory,
    LaunchContext,
    LaunchPlan,
    WorkerCatalog,
    WorkerLauncher,
    worker_catalog,
)
from gym_gui.workers.bundles import app_environment

log = logging.getLogger(__name__)

Command = pb.ControlMessage.Command
Phase = pb.Lifecycle.Phase

_CONTROLS = {
    Command.PAUSE: Control.PAUSE,
    Command.RESUME: Control.RESUME,
    Command.CHECKPOINT_NOW: Control.CHECKPOINT,
    Command.SET_RENDER_RATE: Control.RENDER_RATE,
}

# Variables a worker inherits from the daemon's environment; everything else is set explicitly.
_INHERITED_ENV = (
    "PATH",
    "HOME",
    "LANG",
    "LC_ALL",
    "TMPDIR",
    "USER",
    "OPENBLAS_CORETYPE",
    "OPENBLAS_L2_SIZE",
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "CUDA_VISIBLE_DEVICES",
)


def token_digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


@dataclass
class SupervisorSettings:
    max_concurrent: int = os.cpu_count() or 1
    heartbeat_timeout: float = 20.0
    register_timeout: float = 120.0
    cancel_grace: float = 5.0
    tick_seconds: float = 0.1


@dataclass(eq=False)
class LiveRun:
    """What the daemon holds in memory about a run that has (or may get) a worker."""

    run_id: str
    spec: WorkerSpec
    config: RunConfig
    run_dir: Path
    token: str = ""
    token_hash: str = ""
    session_token: str = ""
    process: WorkerProcess | None = None
    orphan_pid: int | None = None  # a worker started by an earlier daemon
    writer: TelemetryWriter | None = None
    launched_at: float = field(default_factory=time.monotonic)
    last_seen: float = field(default_factory=time.monotonic)
    stream_open: bool = False
    stream_busy: bool = False
    stream_done: threading.Event = field(default_factory=threading.Event)
    ever_streamed: bool = False
    started: bool = False
    reported: int = Phase.PHASE_UNSPECIFIED
    reported_message: str = ""
    violation: str = ""
    heartbeat_lost: bool = False
    cancel_requested_at: float | None = None
    killed: bool = False
    exited_at: float | None = None
    exit_code: int | None = None
    render_fps: float = 0.0
    launching: bool = False  # resolving its command; no process yet
    secret_env: dict[str, str] = field(default_factory=dict)
    controls: queue.Queue[pb.ControlMessage] = field(default_factory=queue.Queue)
    manifest: ManifestWriter | None = None
    finalized: bool = False

    def send(self, command: Command, render_fps: float = 0.0, reason: str = "") -> None:
        self.controls.put(pb.ControlMessage(command=command, render_fps=render_fps, reason=reason))


class Supervisor:
    """Owns the live runs. Thread-safe: gRPC handlers and the supervision loop call into it."""

    def __init__(
        self,
        home: Home,
        registry: RunRegistry,
        bus: RunBus,
        executor: Executor,
        address: str,
        settings: SupervisorSettings | None = None,
        bundles: BundleDirectory | None = None,
        catalog: WorkerCatalog | None = None,
    ) -> None:
        self.home = home
        self.registry = registry
        self.bus = bus
        self.executor = executor
        self.address = address
        self.settings = settings or SupervisorSettings()
        self.catalog = catalog or worker_catalog()
        self.bundles = bundles or BundleDirectory(home.bundles_dir, self.catalog.bundles())
        context = LaunchContext(home, self.bundles)
        # The launcher of every kind whose runs this daemon starts, built once from its plugin.
        self.launchers: dict[str, WorkerLauncher] = {}
        for plugin in self.catalog.plugins():
            launcher = plugin.launcher(context) if plugin.spec.available else None
            if launcher is not None:
                self.launchers[plugin.kind] = launcher
        self._installing: set[str] = set()
        self._lock = threading.RLock()
        self._live: dict[str, LiveRun] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------ lifecycle of the loop

    def start_loop(self) -> None:
        """Start the supervision loop (call :meth:`reconcile` first)."""
        self._thread = threading.Thread(target=self._loop, name="gym-gui-supervisor", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop supervising (workers keep running; a later daemon re-attaches or reconciles them)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)
        with self._lock:
            for run in self._live.values():
                if run.writer is not None:
                    run.writer.close()

    def _loop(self) -> None:
        while not self._stop.wait(self.settings.tick_seconds):
            try:
                self.tick()
            except Exception:  # the loop must outlive any one run's trouble
                log.exception("supervisor tick failed")

    # ------------------------------------------------------------ submitting

    def submit(
        self, config: RunConfig, secret_env: dict[str, str] | None = None
    ) -> tuple[RunRecord, str, LaunchPreview | None]:
        """Validate and register a run; returns its record, for client-driven runs its token, and
        for a dry run the plan it resolved (None when it could not: the run failed, saying why).

        Raises:
            ConfigError / UnknownEnv: before anything is stored or started.
        """
        spec = self._admit(config)
        now = time.time()
        with self._lock:
            run_id = make_run_id(config.env_id, _label(config), config.seed, int(now), exists=self._taken)
            run_dir = self.home.run_dir(run_id)
            files = RunDir(run_dir)
            files.create()
            files.write_config(config)
            record = RunRecord(
                run_id=run_id,
                worker=config.worker,
                env_id=config.env_id,
                lane=spec.lane_for(config.mode).value,
                state=RunState.QUEUED,
                created_at=now,
            )
            token = secrets.token_urlsafe(32)
            run = LiveRun(
                run_id=run_id,
                spec=spec,
                config=config,
                run_dir=run_dir,
                token=token,
                token_hash=token_digest(token),
                render_fps=config.telemetry.render_fps,
                secret_env=dict(secret_env or {}),
                launching=config.dry_run,  # resolved below, never by the loop
            )
            run.manifest = files.create_manifest(app_environment(spec.bundle))
            self.registry.create(record)
            self.registry.set_token_hash(run_id, run.token_hash)
            self._live[run_id] = run
        self._publish_row(run_id)
        if config.dry_run:
            # Resolved here rather than on a launch thread: the reply carries the plan.
            self._open_writer(run)
            self._transition(run, RunState.STARTING, "dry-run: resolving the command")
            plan = self._prepare(run)
            return self.registry.get(run_id), "", plan
        if spec.launch is Launch.CLIENT:
            self._open_writer(run)
            self._transition(run, RunState.STARTING, "client drives the run")
            return self.registry.get(run_id), token, None
        self.tick()
        return self.registry.get(run_id), "", None

    def preview(self, config: RunConfig, secret_env: dict[str, str] | None = None) -> LaunchPreview:
        """What a run of ``config`` would execute, checked and planned as submit and launch do; nothing
        is stored. Its run id is the one a submit now would get.

        Raises:
            ConfigError / UnknownEnv: what submit or the launch would refuse, naming the field.
        """
        spec = self._admit(config)
        run_id = make_run_id(config.env_id, _label(config), config.seed, int(time.time()), exists=self._taken)
        run = LiveRun(
            run_id=run_id,
            spec=spec,
            config=config,
            run_dir=self.home.run_dir(run_id),
            secret_env=dict(secret_env or {}),
        )
        plan = self._launcher(config.worker).plan(run_id, config, run.run_dir, run.secret_env)
        return self._preview(run, plan, *self._launch_env(run, plan))

    def _admit(self, config: RunConfig) -> WorkerSpec:
        """The checks a config passes before anything is stored: its worker kind, its env, its launcher's."""
        plugin = self.catalog.plugin(config.worker)
        spec = plugin.spec
        if not spec.available:
            raise ConfigError(f"worker {spec.display_name!r} is unavailable: {spec.unavailable_reason}")
        if config.mode == "evaluate" and not spec.capabilities.evaluation:
            raise ConfigError(f"field 'mode': {spec.display_name} runs have no models to evaluate")
        if plugin.bundle is None:
            # A worker with its own bundle decides which env ids it can make (its launcher checks);
            # the others run in gym_gui's environment, whose gymnasium answers.
            check_env(config.env_id)
        if spec.launch is Launch.DAEMON:
            self._launcher(config.worker).validate(config)
        return spec

    def _taken(self, run_id: str) -> bool:
        return run_id in self._live or self.registry.exists(run_id) or self.home.run_dir(run_id).exists()

    def _launcher(self, kind: str) -> WorkerLauncher:
        launcher = self.launchers.get(kind)
        if launcher is None:
            raise ConfigError(f"worker {kind!r} cannot be launched by the daemon")
        return launcher

    def _begin(self, run: LiveRun, reason: str) -> None:
        """STARTING, then resolve the command outside the lock (it may ask a bundle) and start it."""
        run.launching = True
        self._open_writer(run)
        self._transition(run, RunState.STARTING, reason)
        threading.Thread(target=self._prepare, args=(run,), name=f"launch-{run.run_id}", daemon=True).start()

    def _prepare(self, run: LiveRun) -> LaunchPreview | None:
        """Resolve a run's command and start it; a dry run instead records the plan and returns it."""
        try:
            plan = self._launcher(run.config.worker).plan(run.run_id, run.config, run.run_dir, run.secret_env)
        except GymGuiError as exc:
            with self._lock:
                self._finish(run, RunState.FAILED, f"not launched: {exc}")
            return None
        except Exception as exc:  # a launcher bug must fail the run, never the daemon
            log.exception("run %s: resolving its command failed", run.run_id)
            with self._lock:
                self._finish(run, RunState.FAILED, f"not launched: {type(exc).__name__}: {exc}")
            return None
        with self._lock:
            if run.finalized:
                return None
            env, worker_secrets = self._launch_env(run, plan)
            if run.manifest is not None:
                try:
                    run.manifest.update(command=plan.argv, cwd=str(run.run_dir), **plan.manifest)
                except StorageError as exc:
                    self._finish(run, RunState.FAILED, f"not launched: {exc}")
                    return None
            for warning in plan.warnings:
                self._event(run, "WARNING", warning)
            if run.config.dry_run:
                preview = self._preview(run, plan, env, worker_secrets)
                self._event(
                    run,
                    "INFO",
                    "dry run: nothing launched",
                    kind="dry-run",
                    data={
                        "argv": preview.argv,
                        "cwd": preview.cwd,
                        "env": preview.env,
                        "display": preview.display,
                        **plan.manifest,
                    },
                )
                self._finish(run, RunState.COMPLETED, "dry-run")
                return preview
            if run.cancel_requested_at is not None:
                self._finish(run, RunState.CANCELLED, "cancelled by user before it started")
                return None
            self._start_process(run, plan.argv, env)
            return None

    def _launch_env(self, run: LiveRun, plan: LaunchPlan) -> tuple[dict[str, str], dict[str, str]]:
        """The worker's whole environment, and the run's secrets that reach it."""
        worker_secrets = run.secret_env if plan.secrets is None else plan.secrets
        return {**self._worker_env(run), **plan.env, **worker_secrets}, dict(worker_secrets)

    def _preview(
        self, run: LiveRun, plan: LaunchPlan, env: dict[str, str], worker_secrets: dict[str, str]
    ) -> LaunchPreview:
        bundle_dirs = {name: self.bundles.path(name) for name in self.catalog.bundles()}
        return launch_preview(run.run_id, plan, run.run_dir, env, worker_secrets, bundle_dirs)

    def _event(
        self,
        run: LiveRun,
        level: str,
        message: str,
        kind: str = "daemon",
        data: dict[str, object] | None = None,
    ) -> None:
        """Something the user should see about a run: stored with it and sent to its viewers."""
        text = json.dumps(data or {})
        self._open_writer(run)
        assert run.writer is not None
        if run.writer.error is None:
            run.writer.put_event(
                EventRecord(time=time.time(), kind=kind, level=level, message=message, data=text)
            )
        self.bus.publish(run.run_id, "event", pb.WorkerEvent(level=level, message=message, data=text))

    # ------------------------------------------------------------ control

    def cancel(self, run_id: str) -> RunRecord:
        record = self.registry.get(run_id)
        if record.state.terminal:
            raise RunBusy(f"run {run_id} already ended ({record.state.value})")
        with self._lock:
            run = self._live.get(run_id)
            if record.state is RunState.QUEUED:
                self._transition_id(run_id, RunState.CANCELLED, "cancelled by user before it started")
                if run is not None:
                    self._live.pop(run_id, None)
                self._publish_row(run_id)
                return self.registry.get(run_id)
            if run is None:
                raise RunBusy(f"run {run_id} has no worker this daemon can reach")
            if run.cancel_requested_at is None:
                run.cancel_requested_at = time.monotonic()
                if run.process is None and run.orphan_pid is None and run.spec.launch is Launch.DAEMON:
                    # Still resolving its command: _prepare ends it without starting anything.
                    return self.registry.get(run_id)
                run.send(Command.STOP, reason="cancelled by user")
                if run.process is not None:
                    run.process.terminate()
                elif run.orphan_pid is not None:
                    _signal_pid(run.orphan_pid, 15)
        self.tick()
        return self.registry.get(run_id)

    def control(self, run_id: str, command: Command, render_fps: float = 0.0) -> RunRecord:
        """Pass a control (pause, resume, checkpoint now, render rate) on to a run's worker.

        Raises:
            ConfigError: an unknown command or a render rate out of range.
            RunBusy: naming why the run cannot take it now (its worker kind, its state).
        """
        control = _CONTROLS.get(command)
        if control is None:
            raise ConfigError("command must be PAUSE, RESUME, SET_RENDER_RATE or CHECKPOINT_NOW")
        if control is Control.RENDER_RATE and not 0.0 <= render_fps <= MAX_RENDER_FPS:
            raise ConfigError(
                f"render rate must be between 0 and {MAX_RENDER_FPS:g} frames per second (got {render_fps:g})"
            )
        with self._lock:
            record = self.registry.get(run_id)
            run = self._live.get(run_id)
            spec = run.spec if run is not None else self.catalog.spec(record.worker)
            refusal = control_refusal(
                control, record.state, spec.capabilities, spec.display_name, record.lane
            )
            if refusal:
                raise RunBusy(f"run {run_id}: {refusal}")
            if run is None:
                raise RunBusy(f"run {run_id} has no worker this daemon can reach")
            if control is Control.CHECKPOINT and run.config.mode == "evaluate":
                raise RunBusy(f"run {run_id} is an evaluation: it trains no model to checkpoint")
            if control is Control.RENDER_RATE:
                run.render_fps = render_fps
            run.send(command, render_fps=render_fps)
        return record

    def delete(self, run_id: str) -> None:
        record = self.registry.get(run_id)
        if not record.state.terminal and record.state is not RunState.QUEUED:
            raise RunBusy(f"run {run_id} is {record.state.value}: cancel it before deleting it")
        with self._lock:
            self._live.pop(run_id, None)
            run_dir = self.home.run_dir(run_id)
            # The directory is moved aside first so a half-deleted run never looks like a run.
            if run_dir.exists():
                trash = run_dir.with_name(f".deleting-{run_id}-{secrets.token_hex(4)}")
                run_dir.rename(trash)
                shutil.rmtree(trash, ignore_errors=True)
            self.registry.delete(run_id)
        self.bus.publish(RUNS_TOPIC, "removed", run_id)
        self.bus.close_run(run_id)

    def live(self, run_id: str) -> LiveRun | None:
        with self._lock:
            return self._live.get(run_id)

    # ------------------------------------------------------------ workers

    def register(self, run_id: str, token: str, pid: int) -> LiveRun:
        """Authenticate a worker for ``run_id`` and give it a session token.

        Raises:
            PermissionError: when the token is not that run's.
        """
        with self._lock:
            run = self._live.get(run_id)
            if run is None or not secrets.compare_digest(run.token_hash, token_digest(token)):
                raise PermissionError(f"no active run {run_id} with that token")
            if run.stream_open:
                raise RunBusy(f"run {run_id} already has a connected worker")
            run.session_token = secrets.token_urlsafe(32)
            run.last_seen = time.monotonic()
            if run.process is None and run.orphan_pid is None and run.spec.launch is Launch.DAEMON:
                run.orphan_pid = pid
            return run

    def session(self, run_id: str, session_token: str) -> LiveRun | None:
        with self._lock:
            run = self._live.get(run_id)
        if run is None or not run.session_token:
            return None
        if not secrets.compare_digest(run.session_token, session_token):
            return None
        return run

    def is_worker_token(self, token: str) -> bool:
        digest = token_digest(token)
        with self._lock:
            return any(
                secrets.compare_digest(run.token_hash, digest)
                or (run.session_token and secrets.compare_digest(run.session_token, token))
                for run in self._live.values()
            )

    def on_started(self, run: LiveRun, render_kind: str, spaces: str) -> None:
        run.started = True
        if run.writer is not None:
            run.writer.set_meta("render_kind", render_kind or "none")
            run.writer.set_meta("spaces", spaces or "{}")
        if self.registry.get(run.run_id).state is RunState.STARTING:
            self._transition(run, RunState.RUNNING, "worker started")

    def on_paused(self, run: LiveRun, paused: bool) -> None:
        state = self.registry.get(run.run_id).state
        if paused and state is RunState.RUNNING:
            self._transition(run, RunState.PAUSED, "paused")
        elif not paused and state is RunState.PAUSED:
            self._transition(run, RunState.RUNNING, "resumed")

    def on_stream_end(self, run: LiveRun) -> None:
        run.stream_open = False
        run.stream_done.set()
        self.tick()

    # ------------------------------------------------------------ supervision

    def tick(self) -> None:
        """One pass: finalize ended runs, enforce heartbeats and cancel grace, start queued runs."""
        with self._lock:
            now = time.monotonic()
            for run in list(self._live.values()):
                if run.finalized:
                    continue
                self._check(run, now)
            self._start_queued()

    def _check(self, run: LiveRun, now: float) -> None:
        settings = self.settings
        if run.process is not None and run.exit_code is None:
            code = run.process.poll()
            if code is not None:
                run.exit_code = code
                run.exited_at = now
        elif run.orphan_pid is not None and run.exited_at is None and not process_alive(run.orphan_pid):
            run.exited_at = now

        if run.violation and not run.killed:
            self._kill(run)
        if (
            run.cancel_requested_at is not None
            and not run.killed
            and now - run.cancel_requested_at > settings.cancel_grace
        ):
            self._kill(run)

        if (
            run.stream_open
            and not run.stream_busy
            and not run.heartbeat_lost
            and now - run.last_seen > settings.heartbeat_timeout
        ):
            run.heartbeat_lost = True
            log.warning("run %s: no heartbeat for %.0fs", run.run_id, now - run.last_seen)
            self._kill(run)

        client_driven = run.spec.launch is Launch.CLIENT
        has_worker = client_driven or run.process is not None or run.orphan_pid is not None
        if (
            has_worker
            and not run.ever_streamed
            and not run.heartbeat_lost
            and now - run.launched_at > settings.register_timeout
        ):
            run.heartbeat_lost = True
            run.violation = run.violation or f"worker did not connect within {settings.register_timeout:.0f}s"
            self._kill(run)

        if client_driven:
            ended = (
                (run.ever_streamed and run.stream_done.is_set()) or run.heartbeat_lost or bool(run.violation)
            )
        else:
            process_gone = run.exited_at is not None
            # Give the stream a moment to drain into storage after the process is gone.
            stream_settled = not run.stream_open or (run.exited_at is not None and now - run.exited_at > 10.0)
            ended = process_gone and stream_settled
        if ended:
            state, reason = self._verdict(run)
            self._finish(run, state, reason)

    def _verdict(self, run: LiveRun) -> tuple[RunState, str]:
        code = run.exit_code
        if run.violation:
            return RunState.FAILED, run.violation
        if run.cancel_requested_at is not None:
            return RunState.CANCELLED, "cancelled by user"
        if run.heartbeat_lost:
            return RunState.FAILED, f"heartbeat lost: no message for {self.settings.heartbeat_timeout:.0f}s"
        if code is not None and code != 0:
            how = f"killed by signal {-code}" if code < 0 else f"exit code {code}"
            if run.reported == Phase.FAILED and run.reported_message:
                # The worker named the cause (e.g. the script's own error line): say that.
                return RunState.FAILED, f"{how}: {run.reported_message}"
            stderr = tail(RunDir(run.run_dir).worker_stderr_log, 1500)
            return RunState.FAILED, f"{how}: {stderr}" if stderr else how
        if run.reported == Phase.COMPLETED:
            return RunState.COMPLETED, run.reported_message or "completed"
        if run.reported == Phase.CANCELLED:
            return RunState.CANCELLED, run.reported_message or "stopped by the worker"
        if run.reported == Phase.FAILED:
            return RunState.FAILED, run.reported_message or "the worker reported a failure"
        if run.orphan_pid is not None and code is None:
            return (
                RunState.FAILED,
                "worker ended without reporting completion (exit code unknown: started by an earlier daemon)",
            )
        return RunState.FAILED, "worker exited without reporting completion"

    def _finish(self, run: LiveRun, state: RunState, reason: str) -> None:
        run.finalized = True
        writer = run.writer
        if writer is not None:
            with contextlib.suppress(StorageError):
                writer.flush(timeout=60)
            if writer.error is not None and state is RunState.COMPLETED:
                state, reason = RunState.FAILED, f"storage failed: {writer.error}"
        # Everything on disk is final before anyone hears the run ended.
        if run.manifest is not None:
            try:
                run.manifest.update(ended_at=time.time(), final_state=state.value)
            except StorageError as exc:
                log.error("run %s: its end is not in its manifest: %s", run.run_id, exc)
        self._transition(run, state, reason, exit_code=run.exit_code)
        if writer is not None:
            writer.close()
            run.writer = None
        with self._lock:
            self._live.pop(run.run_id, None)
        self.bus.close_run(run.run_id)
        log.info("run %s: %s (%s)", run.run_id, state.value, reason)

    def _kill(self, run: LiveRun) -> None:
        run.killed = True
        run.send(Command.STOP, reason=run.violation or "stopping")
        if run.process is not None:
            run.process.kill()
        elif run.orphan_pid is not None:
            _signal_pid(run.orphan_pid, 9)

    def _start_queued(self) -> None:
        active = sum(
            1
            for run in self._live.values()
            if run.spec.launch is Launch.DAEMON
            and not run.finalized
            and (run.launching or run.process or run.orphan_pid)
        )
        for record in self.registry.in_states(RunState.QUEUED):
            if active >= self.settings.max_concurrent:
                return
            run = self._live.get(record.run_id)
            if run is None or run.launching or run.spec.launch is not Launch.DAEMON:
                continue
            bundle = self._bundle_of(run)
            if bundle is not None and run.config.source.python is None and not self.bundles.installed(bundle):
                self._install_bundle(bundle)
                continue
            self._begin(run, "launching worker")
            active += 1

    def _install_bundle(self, name: str) -> None:
        """Create a worker bundle on first use, telling every run that waits for it how it goes."""
        if name in self._installing:
            return
        self._installing.add(name)

        def waiting() -> list[LiveRun]:
            with self._lock:
                return [
                    run
                    for run in self._live.values()
                    if not run.launching
                    and not run.finalized
                    and run.spec.launch is Launch.DAEMON
                    and self._bundle_of(run) == name
                ]

        def progress(update: BundleProgress) -> None:
            level = "ERROR" if update.phase == "failed" else "INFO"
            for run in waiting():
                # Viewers read the fields (step, total, phase, message) from the event's data.
                message = f"worker bundle {name}: {update.text()}"
                self._event(run, level, message, kind="bundle", data=update.data())

        def install() -> None:
            try:
                self.bundles.install(name, progress=progress)
            except GymGuiError as exc:
                log.error("bundle %s: %s", name, exc)
                progress(BundleProgress(name, 0, 0, "failed", str(exc)))
                with self._lock:
                    for run in waiting():
                        if self.registry.get(run.run_id).state is RunState.QUEUED:
                            self._transition(
                                run, RunState.FAILED, f"worker bundle {name} could not be installed: {exc}"
                            )
                            self._live.pop(run.run_id, None)
            finally:
                self._installing.discard(name)
            self.tick()

        log.info("installing worker bundle %s on first use", name)
        threading.Thread(target=install, name=f"bundle-{name}", daemon=True).start()

    def _bundle_of(self, run: LiveRun) -> str | None:
        """The bundle a run's worker needs installed, or None when it runs in gym_gui's environment."""
        bundle = self.catalog.plugin(run.config.worker).bundle
        return bundle.name if bundle is not None else None

    def _worker_env(self, run: LiveRun) -> dict[str, str]:
        env = {k: os.environ[k] for k in _INHERITED_ENV if k in os.environ}
        env.update(
            {
                ENV_DAEMON_ADDRESS: self.address,
                ENV_RUN_ID: run.run_id,
                ENV_RUN_TOKEN: run.token,
                ENV_RUN_DIR: str(run.run_dir),
                "GYM_GUI_HOME": str(self.home.root),
                "PYTHONUNBUFFERED": "1",
                "SDL_VIDEODRIVER": "dummy",
                "SDL_AUDIODRIVER": "dummy",
            }
        )
        return env

    def _start_process(self, run: LiveRun, argv: list[str], env: dict[str, str]) -> None:
        files = RunDir(run.run_dir)
        spec = LaunchSpec(
            run_id=run.run_id,
            argv=argv,
            cwd=run.run_dir,
            env=env,
            stdout_path=files.worker_stdout_log,
            stderr_path=files.worker_stderr_log,
            secret_keys=frozenset(run.secret_env),
        )
        run.secret_env = {}
        run.launched_at = time.monotonic()
        try:
            run.process = self.executor.launch(spec)
        except OSError as exc:
            self._finish(run, RunState.FAILED, f"could not start the worker: {exc}")
            return
        finally:
            run.launching = False
        self.registry.set_process(run.run_id, run.process.pid)

    def _open_writer(self, run: LiveRun) -> None:
        if run.writer is None:
            run.writer = TelemetryWriter(RunDir(run.run_dir).telemetry_path)
            run.writer.start()

    # ------------------------------------------------------------ state changes

    def _transition(self, run: LiveRun, state: RunState, reason: str, exit_code: int | None = None) -> None:
        transition = self._transition_id(run.run_id, state, reason, exit_code)
        if run.writer is not None and run.writer.error is None:
            run.writer.put_event(
                EventRecord(
                    time=transition.time, kind="state", level="INFO", message=f"{state.value}: {reason}"
                )
            )

    def _transition_id(
        self, run_id: str, state: RunState, reason: str, exit_code: int | None = None
    ) -> StateTransition:
        transition = self.registry.transition(run_id, state, reason, exit_code=exit_code)
        self.bus.publish(run_id, "state", transition)
        self._publish_row(run_id, transition)
        return transition

    def _publish_row(self, run_id: str, transition: StateTransition | None = None) -> None:
        if transition is not None:
            self.bus.publish(RUNS_TOPIC, "change", transition)
        self.bus.publish(RUNS_TOPIC, "updated", self.registry.get(run_id))

    def publish_row(self, run_id: str) -> None:
        self._publish_row(run_id)

    # ------------------------------------------------------------ restart

    def reconcile(self) -> None:
        """Settle the runs an earlier daemon left active.

        A run whose worker process is gone becomes LOST; one whose process still lives is
        kept, waiting for its worker to reconnect with its run token.
        """
        for record in self.registry.in_states(RunState.STARTING, RunState.RUNNING, RunState.PAUSED):
            try:
                spec = self.catalog.spec(record.worker)
            except GymGuiError as exc:
                self._transition_id(record.run_id, RunState.LOST, f"daemon restarted and {exc}")
                continue
            if record.pid is not None and process_alive(record.pid):
                try:
                    config = RunDir(self.home.run_dir(record.run_id)).read_config()
                except StorageError as exc:
                    self._transition_id(
                        record.run_id,
                        RunState.LOST,
                        f"daemon restarted and the run's config is unreadable: {exc}",
                    )
                    continue
                token_hash = self.registry.token_hash(record.run_id) or ""
                run = LiveRun(
                    run_id=record.run_id,
                    spec=spec,
                    config=config,
                    run_dir=self.home.run_dir(record.run_id),
                    token_hash=token_hash,
                    orphan_pid=record.pid,
                    started=record.state is not RunState.STARTING,
                )
                run.manifest = self._open_manifest(run)
                self._open_writer(run)
                self._live[record.run_id] = run
                log.info(
                    "run %s: worker pid %d still alive, waiting for it to reconnect",
                    record.run_id,
                    record.pid,
                )
            else:
                self._transition_id(
                    record.run_id, RunState.LOST, "the worker process vanished while no daemon watched it"
                )
        for record in self.registry.in_states(RunState.QUEUED):
            try:
                spec = self.catalog.spec(record.worker)
                config = RunDir(self.home.run_dir(record.run_id)).read_config()
            except GymGuiError as exc:
                self._transition_id(
                    record.run_id,
                    RunState.FAILED,
                    f"queued run cannot start after the daemon restarted: {exc}",
                )
                continue
            run = LiveRun(
                run_id=record.run_id,
                spec=spec,
                config=config,
                run_dir=self.home.run_dir(record.run_id),
            )
            run.token = secrets.token_urlsafe(32)
            run.token_hash = token_digest(run.token)
            self.registry.set_token_hash(run.run_id, run.token_hash)
            run.manifest = self._open_manifest(run)
            self._live[record.run_id] = run

    @staticmethod
    def _open_manifest(run: LiveRun) -> ManifestWriter | None:
        # A manifest that cannot be opened costs the run its record of artifacts, not its supervision.
        try:
            return RunDir(run.run_dir).open_manifest()
        except StorageError as exc:
            log.error("run %s: its manifest is not kept up to date: %s", run.run_id, exc)
            return None


def _label(config: RunConfig) -> str:
    """What a run id says the run does: the algorithm (or worker kind), ``-eval`` for an evaluation."""
    return (config.algorithm or config.worker) + ("-eval" if config.mode == "evaluate" else "")


def _signal_pid(pid: int, sig: int) -> None:
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)
