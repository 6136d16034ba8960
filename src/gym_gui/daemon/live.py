"""What the daemon holds in memory about its runs, and the one way a run's state change is recorded and told."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import queue
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from gym_gui_sdk import THREAD_ENV
from gym_gui_sdk import trainer_pb2 as pb

from gym_gui.bus.run_bus import RUNS_TOPIC, RunBus
from gym_gui.core.config import RunConfig
from gym_gui.core.daemon_options import DaemonOptions
from gym_gui.core.errors import StorageError
from gym_gui.core.records import EventRecord, StateTransition
from gym_gui.core.states import RunState
from gym_gui.core.workers import WorkerSpec
from gym_gui.daemon.executors import LaunchSpec, WorkerProcess
from gym_gui.storage.byte_budget import ByteBudget
from gym_gui.storage.home import Home
from gym_gui.storage.registry import RunRegistry
from gym_gui.storage.run_dir import ManifestWriter, RunDir
from gym_gui.storage.telemetry_writer import TelemetryWriter

Command = pb.ControlMessage.Command
Phase = pb.Lifecycle.Phase


def token_digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


# Free space on the home's filesystem below which no run starts, and below which live runs warn.
MIN_FREE_BYTES = 100_000_000
WARN_FREE_BYTES = 500_000_000


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity, so a container's limit counts)."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


@dataclass
class SupervisorSettings:
    max_concurrent: int = usable_cpus()
    heartbeat_timeout: float = 20.0
    register_timeout: float = 120.0
    cancel_grace: float = 5.0
    tick_seconds: float = 0.1
    min_free_bytes: int = MIN_FREE_BYTES
    warn_free_bytes: int = WARN_FREE_BYTES

    @property
    def worker_threads(self) -> int:
        """The threads each worker's numeric libraries get: the CPUs shared by the runs that may go
        at once. Left to themselves, torch and NumPy each take every core, and OpenMP's spin-waits
        then make concurrent runs crawl (two PPO runs of 2 threads each on 2 cores ran 20× slower
        than the same two runs with 1 thread each)."""
        return max(1, usable_cpus() // self.max_concurrent)

    @classmethod
    def from_options(cls, options: DaemonOptions) -> SupervisorSettings:
        """The defaults, with every option ``options`` sets."""
        settings = cls()
        if options.max_concurrent is not None:
            settings.max_concurrent = options.max_concurrent
        if options.min_free_mb is not None:
            settings.min_free_bytes = int(options.min_free_mb * 1e6)
        if options.warn_free_mb is not None:
            settings.warn_free_bytes = int(options.warn_free_mb * 1e6)
        if options.heartbeat_timeout is not None:
            settings.heartbeat_timeout = options.heartbeat_timeout
        if options.cancel_grace is not None:
            settings.cancel_grace = options.cancel_grace
        return settings

    def options(self) -> DaemonOptions:
        """Every option a user may choose, as this daemon runs with it."""
        return DaemonOptions(
            max_concurrent=self.max_concurrent,
            min_free_mb=self.min_free_bytes / 1e6,
            warn_free_mb=self.warn_free_bytes / 1e6,
            heartbeat_timeout=self.heartbeat_timeout,
            cancel_grace=self.cancel_grace,
        )

    def thread_env(self) -> dict[str, str]:
        """``THREAD_ENV`` set to ``worker_threads``; whatever the daemon's own environment sets wins."""
        return {name: os.environ.get(name) or str(self.worker_threads) for name in THREAD_ENV}


@dataclass(frozen=True)
class TrialLink:
    """What makes a run a sweep's trial run: the sweep, the trial's number, its study and storage (shown)."""

    sweep_id: str
    trial: int
    storage: str  # the study's storage URL without its password
    study: str


@dataclass(eq=False)
class LiveRun:
    """What the daemon holds in memory about a run that has (or may get) a worker.

    Only the supervisor writes it: ``Supervisor`` (``supervisor.py``) and its parts — this
    module, ``scheduler.py``, ``launching.py``, ``ending.py``, ``disk.py`` and ``recovery.py``. The gRPC
    services and the ingest of a worker's stream only read it; what they learn (a worker
    registered, a stream opened or ended, a message arrived, a lifecycle phase, an artifact, a
    violation) they report through ``Supervisor``'s methods, which change the run. A test
    (``tests/daemon/test_supervision.py``) fails when any other module assigns one of its fields.
    """

    run_id: str
    spec: WorkerSpec
    config: RunConfig
    run_dir: Path
    token: str = ""
    token_hash: str = ""
    session_token: str = ""
    process: WorkerProcess | None = None
    orphan_pid: int | None = None  # a worker started by an earlier daemon
    adopted: bool = False  # its worker was started by an earlier daemon (a local process or a Ray job)
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
    pruned: str = ""  # a sweep's pruner stopped it: why (its end is PRUNED, not CANCELLED)
    killed: bool = False
    exited_at: float | None = None
    exit_code: int | None = None
    render_fps: float = 0.0
    launching: bool = False  # resolving its command; no process yet
    secret_env: dict[str, str] = field(default_factory=dict)
    # A remote launcher's command, until it claims it once with the token hashed here (a Ray job).
    pending_launch: LaunchSpec | None = None
    claim_hash: str = ""
    # Commands for its worker's stream; None only wakes the stream's handler (its ingest ended).
    controls: queue.Queue[pb.ControlMessage | None] = field(default_factory=queue.Queue)
    manifest: ManifestWriter | None = None
    end: tuple[RunState, str] | None = None  # its end as decided (state, reason); recorded or not yet
    warning: str = ""  # what its viewers are warned of now (disk low), shown with its row
    held_end: str = ""  # why its decided end is not recorded yet (e.g. the registry's disk is full)

    @property
    def finalized(self) -> bool:
        """Whether its end is decided: nothing starts, warns or judges it any more; it is only recorded."""
        return self.end is not None

    def ended_stream_message(self) -> str:
        """What a stream of this run is told once its end is decided or its storage closed: nothing
        it sends is stored any more."""
        state, reason = self.end or (RunState.FAILED, "its storage is closed")
        return f"run {self.run_id} ended ({state.value}: {reason}); nothing it sends is stored"

    def send(self, command: Command, render_fps: float = 0.0, reason: str = "") -> None:
        self.controls.put(pb.ControlMessage(command=command, render_fps=render_fps, reason=reason))


class LiveRuns:
    """The live runs by id, the one lock the supervisor's parts share, and how a run's state changes.

    A state change goes to the registry (which checks it is legal), the run's viewers, the runs
    list and, while it has one, the run's own event log.
    """

    def __init__(self, home: Home, registry: RunRegistry, bus: RunBus) -> None:
        self.home = home
        self.registry = registry
        self.bus = bus
        self.lock = threading.RLock()
        self._runs: dict[str, LiveRun] = {}
        # The bytes of step rows every run's writer holds together: bounded, however many runs flood.
        self.step_budget = ByteBudget()

    def get(self, run_id: str) -> LiveRun | None:
        with self.lock:
            return self._runs.get(run_id)

    def add(self, run: LiveRun) -> None:
        with self.lock:
            self._runs[run.run_id] = run

    def remove(self, run_id: str) -> None:
        with self.lock:
            self._runs.pop(run_id, None)

    def all(self) -> list[LiveRun]:
        with self.lock:
            return list(self._runs.values())

    def __contains__(self, run_id: str) -> bool:
        with self.lock:
            return run_id in self._runs

    def transition(self, run: LiveRun, state: RunState, reason: str, exit_code: int | None = None) -> None:
        transition = self.transition_id(run.run_id, state, reason, exit_code)
        if run.writer is not None and run.writer.error is None:
            # Recorded in the registry is recorded: a writer failing meanwhile only loses the echo.
            with contextlib.suppress(StorageError):
                run.writer.put_event(
                    EventRecord(
                        time=transition.time, kind="state", level="INFO", message=f"{state.value}: {reason}"
                    )
                )

    def transition_id(
        self, run_id: str, state: RunState, reason: str, exit_code: int | None = None
    ) -> StateTransition:
        """Change the state of a run that may have nothing in memory (queued, or left by an earlier daemon)."""
        transition = self.registry.transition(run_id, state, reason, exit_code=exit_code)
        self.bus.publish(run_id, "state", transition)
        self.publish_row(run_id, transition)
        return transition

    def publish_row(self, run_id: str, transition: StateTransition | None = None) -> None:
        """Tell the runs list the run's row (and the change that made it) as the registry has it now."""
        if transition is not None:
            self.bus.publish(RUNS_TOPIC, "change", transition)
        self.bus.publish(RUNS_TOPIC, "updated", self.registry.get(run_id))

    def event(
        self,
        run: LiveRun,
        level: str,
        message: str,
        kind: str = "daemon",
        data: dict[str, object] | None = None,
    ) -> None:
        """Something the user should see about a run: stored with it and sent to its viewers."""
        text = json.dumps(data or {})
        self.open_writer(run)
        assert run.writer is not None
        if run.writer.error is None:
            run.writer.put_event(
                EventRecord(time=time.time(), kind=kind, level=level, message=message, data=text)
            )
        self.bus.publish(run.run_id, "event", pb.WorkerEvent(level=level, message=message, data=text))

    def open_writer(self, run: LiveRun) -> None:
        if run.writer is None:
            run.writer = TelemetryWriter(RunDir(run.run_dir).telemetry_path, budget=self.step_budget)
            run.writer.start()
