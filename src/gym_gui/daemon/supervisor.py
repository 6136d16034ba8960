"""The supervisor: the one way in to the daemon's runs, for the gRPC services and the daemon process.

``Supervisor`` owns the live runs: it and its parts are the only code that changes a ``LiveRun``.
It takes what clients ask (submit, cancel, control, delete) and what workers report
(registration, their stream, lifecycle phases, artifacts), and hands the rest to its parts, each
with one job:

- ``live.LiveRuns``: the live runs, their lock, and how a state change is recorded and told;
- ``scheduler.Scheduler``: the supervision loop, and which queued runs start within the limit;
- ``launching.Launching``: a run's plan, bundle, environment and manifest, to a worker process;
- ``ending.Ending``: watching workers for their end, the verdict, and finishing a run;
- ``disk.DiskWatch``: free space: no run starts on a nearly full disk, live runs warn when it is low;
- ``recovery.reconcile``: what an earlier daemon left, settled after a restart.
"""

from __future__ import annotations

import contextlib
import logging
import secrets
import shutil
import time
from collections.abc import Iterator
from typing import Any

from gym_gui_sdk import trainer_pb2 as pb

from gym_gui.bus.run_bus import RUNS_TOPIC, RunBus
from gym_gui.core.config import MAX_RENDER_FPS, RunConfig
from gym_gui.core.controls import Control, control_refusal
from gym_gui.core.errors import ConfigError, DiskFull, RunBusy, UnknownEnv
from gym_gui.core.ids import make_run_id
from gym_gui.core.records import LaunchPreview, RunRecord
from gym_gui.core.states import RunState
from gym_gui.core.workers import Launch, WorkerSpec
from gym_gui.daemon import recovery
from gym_gui.daemon.disk import DiskWatch
from gym_gui.daemon.ending import STREAM_DRAIN_SECONDS, Ending
from gym_gui.daemon.executors import Executor, LaunchSpec, signal_group
from gym_gui.daemon.importing import ImportRequest, ModelImports
from gym_gui.daemon.launching import Launching
from gym_gui.daemon.live import (
    Command,
    LiveRun,
    LiveRuns,
    Phase,
    SupervisorSettings,
    TrialLink,
    token_digest,
)
from gym_gui.daemon.scheduler import Scheduler
from gym_gui.datasets.store import DatasetStore, check_dataset
from gym_gui.envs.catalog import env_entry
from gym_gui.envs.check import check_env, check_env_kwargs
from gym_gui.storage.home import Home
from gym_gui.storage.registry import RunRegistry
from gym_gui.storage.run_dir import MODEL_KINDS, RunDir, file_sha256
from gym_gui.workers import (
    BundleDirectory,
    HelperOwner,
    SecretsChecker,
    WorkerCatalog,
    WorkerLauncher,
    worker_catalog,
)
from gym_gui.workers.bundles import app_environment

__all__ = ["LiveRun", "Supervisor", "SupervisorSettings"]

log = logging.getLogger(__name__)

_CONTROLS = {
    Command.PAUSE: Control.PAUSE,
    Command.RESUME: Control.RESUME,
    Command.CHECKPOINT_NOW: Control.CHECKPOINT,
    Command.SET_RENDER_RATE: Control.RENDER_RATE,
}


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
        tls_ca: str | None = None,
    ) -> None:
        self.home = home
        self.registry = registry
        self.bus = bus
        self.settings = settings or SupervisorSettings()
        self.catalog = catalog or worker_catalog()
        self.bundles = bundles or self.catalog.bundle_directory(home.bundles_dir)
        self.runs = LiveRuns(home, registry, bus)
        self.ending = Ending(self.runs, self.settings)
        self.launching = Launching(
            self.runs,
            self.ending,
            executor,
            address,
            self.catalog,
            self.bundles,
            self.settings.thread_env(),
            tls_ca=tls_ca,
        )
        self.disk = DiskWatch(self.runs, self.settings, registry.reserve)
        self.datasets = DatasetStore(home)
        self.scheduler = Scheduler(self.runs, self.launching, self.ending, self.disk, self.settings)
        self.imports = ModelImports(self.runs, self.launching, self.catalog, self.disk)

    @property
    def launchers(self) -> dict[str, WorkerLauncher]:
        """The launcher of every kind whose runs this daemon starts."""
        return self.launching.launchers

    # ------------------------------------------------------------ lifecycle of the loop

    def reconcile(self) -> None:
        """Settle what an earlier daemon left (before :meth:`start_loop`); see :func:`recovery.reconcile`."""
        recovery.reconcile(self.runs, self.catalog, self.launching.ray_executor)

    def start_loop(self) -> None:
        """Start the supervision loop (call :meth:`reconcile` first)."""
        self.scheduler.start_loop()

    def stop_loop(self) -> None:
        """Stop supervising (workers keep running; a later daemon re-attaches or reconciles them): nothing
        more is started, ended or timed out by the loop. :meth:`close` follows once no stream is left."""
        self.scheduler.stop_loop()

    def close(self) -> None:
        """Stop the launchers' helper processes and close the runs' storage: once no worker streams
        to this daemon any more (a batch that came after would be refused as if storage had failed)."""
        for launcher in self.launchers.values():
            if isinstance(launcher, HelperOwner):
                launcher.close()
        with self.runs.lock:
            for run in self.runs.all():
                if run.writer is not None:
                    run.writer.close()

    def tick(self) -> None:
        """One pass of the supervision loop, now."""
        self.scheduler.tick()

    # ------------------------------------------------------------ submitting

    def submit(
        self,
        config: RunConfig,
        secret_env: dict[str, str] | None = None,
        trial: TrialLink | None = None,
    ) -> tuple[RunRecord, str, LaunchPreview | None]:
        """Validate and register a run; returns its record, for client-driven runs its token, and
        for a dry run the plan it resolved (None when it could not: the run failed, saying why).
        A sweep's trial run (``trial``) carries its sweep and trial in its row and its manifest.

        Raises:
            ConfigError / UnknownEnv: before anything is stored or started.
            DiskFull: the disk holds less than ``min_free_bytes``; nothing is stored.
        """
        spec = self._admit(config, secret_env)
        refusal = "" if config.dry_run else self.disk.refusal()
        if refusal:
            raise DiskFull(f"{refusal}; free some space and submit the run again")
        now = time.time()
        with self.runs.lock:
            label = _label(config) + (f"-trial{trial.trial}" if trial is not None else "")
            run_id = make_run_id(config.env_id, label, config.seed, int(now), exists=self._taken)
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
                sweep_id=trial.sweep_id if trial is not None else "",
                trial=trial.trial if trial is not None else None,
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
            run.manifest = files.create_manifest(app_environment(spec.bundle), rerun_of=config.rerun_of)
            if trial is not None:
                run.manifest.update(
                    optuna_db=trial.storage, optuna_study=trial.study, optuna_trial=trial.trial
                )
            self.registry.create(record)
            self.registry.set_token_hash(run_id, run.token_hash)
            self.runs.add(run)
        self.runs.publish_row(run_id)
        if config.dry_run:
            # Resolved here rather than on a launch thread: the reply carries the plan.
            plan = self.launching.dry_run(run)
            return self.registry.get(run_id), "", plan
        if spec.launch is Launch.CLIENT:
            self.runs.open_writer(run)
            self.runs.transition(run, RunState.STARTING, "client drives the run")
            return self.registry.get(run_id), token, None
        self.tick()
        return self.registry.get(run_id), "", None

    def preview(self, config: RunConfig, secret_env: dict[str, str] | None = None) -> LaunchPreview:
        """What a run of ``config`` would execute, checked and planned as submit and launch do; nothing
        is stored. Its run id is the one a submit now would get.

        Raises:
            ConfigError / UnknownEnv: what submit or the launch would refuse, naming the field.
        """
        spec = self._admit(config, secret_env)
        run_id = make_run_id(config.env_id, _label(config), config.seed, int(time.time()), exists=self._taken)
        run = LiveRun(
            run_id=run_id,
            spec=spec,
            config=config,
            run_dir=self.home.run_dir(run_id),
            secret_env=dict(secret_env or {}),
        )
        return self.launching.preview(run)

    def import_model(self, request: ImportRequest) -> RunRecord:
        """Store a model file trained elsewhere as a COMPLETED run of its own (see :mod:`importing`).

        Raises:
            ConfigError: the file or what it is said to be is refused; nothing is stored.
        """
        return self.imports.import_model(request)

    def _admit(self, config: RunConfig, secret_env: dict[str, str] | None = None) -> WorkerSpec:
        """The checks a config passes before anything is stored: its worker kind, its env, its launcher's
        (``secret_env``: the secrets it was given, of which a launcher that asks learns the names only)."""
        plugin = self.catalog.plugin(config.worker)
        spec = plugin.spec
        if not spec.available:
            raise ConfigError(f"worker {spec.display_name!r} is unavailable: {spec.unavailable_reason}")
        if config.mode == "evaluate" and not spec.capabilities.evaluation:
            raise ConfigError(f"field 'mode': {spec.display_name} runs have no models to evaluate")
        if config.warm_start is not None and not spec.capabilities.warm_start:
            raise ConfigError(
                f"field 'warm_start': {spec.display_name} runs cannot start from another run's saved model"
            )
        entry = env_entry(config.env_id)
        if entry is not None and entry.agents and not spec.capabilities.multi_agent:
            seating = [p.spec.display_name for p in self.catalog.plugins() if p.spec.capabilities.multi_agent]
            raise ConfigError(
                f"field 'env_id': {config.env_id} has {len(entry.agents)} agents, and {spec.display_name} plays "
                f"one; a kind that seats every agent: {', '.join(seating) or 'none is installed'}"
            )
        if config.rerun_of is not None and not self.registry.exists(config.rerun_of):
            raise ConfigError(f"field 'rerun_of': there is no run {config.rerun_of} to re-run")
        try:
            if plugin.bundle is None:
                # A worker with its own bundle decides which env ids it can make (its launcher checks);
                # the others run in gym_gui's environment, whose gymnasium answers, for the arguments too.
                check_env(config.env_id)
                check_env_kwargs(config.env_id, config.env_kwargs)
            if config.dataset is not None:
                # Before the kind's own checks, which may read the dataset's card.
                space = self.disk.space()
                check_dataset(
                    self.datasets, config.dataset, config.env_id, None if space is None else space.free
                )
            if spec.launch is Launch.DAEMON:
                launcher = self.launching.launcher(config.worker)
                launcher.validate(config)
                if isinstance(launcher, SecretsChecker):
                    launcher.check_secrets(config, frozenset(secret_env or {}))
        except UnknownEnv as exc:
            # Whoever found the id unknown (gym_gui's gymnasium or a kind's plugin), the line names the
            # field, as every other refusal of a config does.
            message = str(exc)
            raise UnknownEnv(
                message if message.startswith("field ") else f"field 'env_id': {message}"
            ) from None
        return spec

    def _taken(self, run_id: str) -> bool:
        return run_id in self.runs or self.registry.exists(run_id) or self.home.run_dir(run_id).exists()

    # ------------------------------------------------------------ control

    def cancel(self, run_id: str) -> RunRecord:
        """Stop a run: a queued one is CANCELLED at once, a live one's worker is told to stop and
        signalled; a run this daemon holds nothing of (no worker it could stop) is CANCELLED at once.

        Raises:
            RunBusy: the run has ended (its end recorded, or decided and not recorded yet).
        """
        with self.runs.lock:
            record = self.registry.get(run_id)
            if record.state.terminal:
                raise RunBusy(f"run {run_id} already ended ({record.state.value})")
            run = self.runs.get(run_id)
            if run is not None and run.end is not None:
                state, reason = run.end
                raise RunBusy(
                    f"run {run_id} already ended ({state.value}: {reason}); the daemon is still recording it"
                )
            if record.state is RunState.QUEUED or run is None:
                why = (
                    "before it started"
                    if record.state is RunState.QUEUED
                    else "(no worker of it was running)"
                )
                self.runs.transition_id(run_id, RunState.CANCELLED, f"cancelled by user {why}")
                if run is not None:
                    self.runs.remove(run_id)
                self.runs.publish_row(run_id)
                return self.registry.get(run_id)
            if run.cancel_requested_at is None:
                run.cancel_requested_at = time.monotonic()
                if run.process is None and run.orphan_pid is None and run.spec.launch is Launch.DAEMON:
                    # Still resolving its command: Launching ends it without starting anything.
                    return self.registry.get(run_id)
                run.send(Command.STOP, reason="cancelled by user")
                if run.process is not None:
                    run.process.terminate()
                elif run.orphan_pid is not None:
                    signal_group(run.orphan_pid, 15)
        self.tick()
        return self.registry.get(run_id)

    def prune(self, run_id: str, reason: str) -> bool:
        """Stop a sweep's trial run its pruner judged weak: like a cancel, but it ends PRUNED with
        ``reason``. Returns whether it was stopping (False: it had ended, or had no worker to stop).
        """
        with self.runs.lock:
            run = self.runs.get(run_id)
            if run is None or run.end is not None or run.cancel_requested_at is not None:
                return False
            if run.process is None and run.orphan_pid is None:
                return False
            run.pruned = reason
            run.cancel_requested_at = time.monotonic()
            run.send(Command.STOP, reason=reason)
            if run.process is not None:
                run.process.terminate()
            else:
                assert run.orphan_pid is not None
                signal_group(run.orphan_pid, 15)
        self.tick()
        return True

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
        with self.runs.lock:
            record = self.registry.get(run_id)
            run = self.runs.get(run_id)
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
        """Delete a run's directory and its row.

        A run with a worker is refused; one whose worker is gone (its end decided, perhaps not
        recorded yet) or that this daemon holds nothing of can always be deleted.

        Raises:
            RunBusy: a worker of the run may still be running (cancel it first).
        """
        with self.runs.lock:
            record = self.registry.get(run_id)
            run = self.runs.get(run_id)
            if record.state.active and run is not None and run.end is None:
                raise RunBusy(f"run {run_id} is {record.state.value}: cancel it before deleting it")
            if run is not None and run.writer is not None:
                run.writer.close()
            run_dir = self.home.run_dir(run_id)
            # The directory is moved aside first so a half-deleted run never looks like a run.
            if run_dir.exists():
                trash = run_dir.with_name(f".deleting-{run_id}-{secrets.token_hex(4)}")
                run_dir.rename(trash)
                shutil.rmtree(trash, ignore_errors=True)
            self.registry.delete(run_id)
            self.runs.remove(run_id)
        self.bus.publish(RUNS_TOPIC, "removed", run_id)
        self.bus.close_run(run_id)

    def publish_row(self, run_id: str) -> None:
        self.runs.publish_row(run_id)

    def warning(self, run_id: str) -> str:
        """What a live run's viewers are warned of now (its end held, the disk low), or ""."""
        run = self.runs.get(run_id)
        return "" if run is None else run.held_end or run.warning

    # ------------------------------------------------------------ workers

    def register(self, run_id: str, token: str, pid: int) -> LiveRun:
        """Authenticate a worker for ``run_id`` and give it a session token.

        Raises:
            PermissionError: when the token is not that run's.
        """
        with self.runs.lock:
            run = self.runs.get(run_id)
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
        with self.runs.lock:
            run = self.runs.get(run_id)
        if run is None or not run.session_token:
            return None
        if not secrets.compare_digest(run.session_token, session_token):
            return None
        return run

    def is_worker_token(self, token: str) -> bool:
        digest = token_digest(token)
        with self.runs.lock:
            return any(
                secrets.compare_digest(run.token_hash, digest)
                or (run.session_token and secrets.compare_digest(run.session_token, token))
                or (run.claim_hash and secrets.compare_digest(run.claim_hash, digest))
                for run in self.runs.all()
            )

    def claim_launch(self, run_id: str, claim: str) -> LaunchSpec:
        """The command of a run whose worker a remote launcher starts (a Ray job), given once.

        Raises:
            PermissionError: the claim is not this run's, or was spent already.
        """
        with self.runs.lock:
            run = self.runs.get(run_id)
            spec = None if run is None else run.pending_launch
            if run is None or spec is None or not run.claim_hash:
                raise PermissionError(f"run {run_id} has no launch to claim")
            if not secrets.compare_digest(run.claim_hash, token_digest(claim)):
                raise PermissionError(f"invalid launch claim for run {run_id}")
            run.pending_launch = None
            run.claim_hash = ""
            return spec

    def stream_opened(self, run: LiveRun) -> bool:
        """A worker opened its Publish stream; returns whether it resumes an earlier one.

        Raises:
            RunBusy: the run already has an open stream, or its end is decided (nothing it sends
                would be stored).
        """
        with self.runs.lock:
            if run.end is not None or run.writer is None:
                raise RunBusy(run.ended_stream_message())
            if run.stream_open:
                raise RunBusy(f"run {run.run_id} already has an open stream")
            resumed = run.ever_streamed or run.adopted or run.orphan_pid is not None
            run.stream_open = True
            run.ever_streamed = True
            run.stream_done.clear()
            run.last_seen = time.monotonic()
        return resumed

    @contextlib.contextmanager
    def taking_in(self, run: LiveRun) -> Iterator[None]:
        """A message arrived from the run's worker: it is alive (any message is a heartbeat). Until
        the daemon has taken it in (converted, checked, handed to storage: waiting while storage
        or the daemon's memory bound holds the stream back), the stream is busy, not silent: the
        silence that fails a run is its worker's, between two messages, never the daemon's."""
        run.last_seen = time.monotonic()
        run.stream_busy = True
        try:
            yield
        finally:
            run.stream_busy = False
            run.last_seen = time.monotonic()

    def lifecycle(self, run: LiveRun, lifecycle: pb.Lifecycle) -> None:
        """A lifecycle phase the worker reported (the ingest has checked it may report it now).

        STARTED makes the run RUNNING and stores how it renders; PAUSED and RESUMED follow the
        worker; an end it reports (COMPLETED, FAILED, CANCELLED) is kept for the verdict, given
        once its process is gone.
        """
        phase = lifecycle.phase
        if phase == Phase.STARTED:
            run.started = True
            if run.writer is not None:
                run.writer.set_meta("render_kind", lifecycle.render_kind or "none")
                run.writer.set_meta("spaces", lifecycle.spaces or "{}")
            if self.registry.get(run.run_id).state is RunState.STARTING:
                self.runs.transition(run, RunState.RUNNING, "worker started")
        elif phase in (Phase.PAUSED, Phase.RESUMED):
            state = self.registry.get(run.run_id).state
            if phase == Phase.PAUSED and state is RunState.RUNNING:
                self.runs.transition(run, RunState.PAUSED, "paused")
            elif phase == Phase.RESUMED and state is RunState.PAUSED:
                self.runs.transition(run, RunState.RUNNING, "resumed")
        elif phase in (Phase.COMPLETED, Phase.FAILED, Phase.CANCELLED):
            run.reported = phase
            run.reported_message = lifecycle.message

    def record_artifact(self, run: LiveRun, kind: str, path: str, step: int, meta: dict[str, Any]) -> None:
        """An artifact the worker wrote (its path checked to be inside the run): into the manifest.

        A saved model is registered with the sha256 of its file, taken here whatever the worker
        says, so the checkpoint browser and an operator's choice can tell a file changed since
        (workers write a model whole and rename it into place before announcing it).
        """
        if run.manifest is None:
            return
        file = RunDir(run.run_dir).artifact_path(path)
        if kind in MODEL_KINDS and file is not None:
            try:
                meta = {**meta, "sha256": file_sha256(file)}
            except OSError as exc:
                log.warning("run %s: %s not hashed: %s", run.run_id, path, exc)
        run.manifest.add_artifact(kind, path, step, meta)

    def stream_failed(self, run: LiveRun, reason: str) -> None:
        """The worker's stream broke the protocol or storage refused its data: the run fails with
        ``reason`` (or the first reason it was given)."""
        with self.runs.lock:
            run.violation = run.violation or reason

    def stream_ended(self, run: LiveRun) -> None:
        """The worker's Publish stream closed (its end, a broken connection, or a violation)."""
        run.stream_open = False
        run.stream_done.set()
        self.tick()
        pid = run.process.pid if run.process is not None else run.orphan_pid
        if pid is not None and run.exited_at is None and not run.finalized:
            self.scheduler.tick_at_exit(pid, STREAM_DRAIN_SECONDS)


def _label(config: RunConfig) -> str:
    """What a run id says the run does: the algorithm (or worker kind), ``-eval`` for an evaluation."""
    return (config.algorithm or config.worker) + ("-eval" if config.mode == "evaluate" else "")
