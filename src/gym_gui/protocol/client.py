"""DaemonClient: the one way the GUI and CLI talk to the daemon, starting it when none answers."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import grpc
from gym_gui_sdk import trainer_pb2 as pb
from gym_gui_sdk import trainer_pb2_grpc as pb_grpc
from gym_gui_sdk.channel import open_channel
from gym_gui_sdk.json_object import json_object

from gym_gui.core.controls import Control
from gym_gui.core.daemon_file import DaemonFile, read_daemon_file
from gym_gui.core.errors import ConfigError, GymGuiError
from gym_gui.core.processes import process_alive, wait_exit
from gym_gui.core.pruning import PruneResult, PruneRules
from gym_gui.core.records import (
    DaemonHealth,
    LaunchPreview,
    RunDetail,
    RunEvent,
    RunRecord,
    RunUpdated,
    SweepDetail,
    SweepRecord,
    TelemetryEvent,
    WorkerDescription,
)
from gym_gui.core.run_query import RunPage, RunQuery
from gym_gui.core.states import RunState
from gym_gui.protocol import convert
from gym_gui.protocol.errors import DaemonError, error_from_rpc

if TYPE_CHECKING:
    from gym_gui.core.config import RunConfig

# Exit status of a daemon that found another one already serving its home (gym_gui.daemon.__main__).
_EXIT_ALREADY_RUNNING = 3


class TelemetryStream:
    """A viewer subscription: iterate for its events (core records), :meth:`grant` credits as they are consumed."""

    def __init__(
        self, stub: pb_grpc.TrainerServiceStub, metadata: list[tuple[str, str]], run_id: str, credits: int
    ) -> None:
        self._requests: queue.Queue[pb.SubscribeRequest | None] = queue.Queue()
        self._requests.put(pb.SubscribeRequest(run_id=run_id, credits=credits))
        self._call = stub.Subscribe(self._iter_requests(), metadata=metadata)

    def _iter_requests(self) -> Iterator[pb.SubscribeRequest]:
        while True:
            item = self._requests.get()
            if item is None:
                return
            yield item

    def grant(self, credits: int) -> None:
        self._requests.put(pb.SubscribeRequest(credits=credits))

    def __iter__(self) -> Iterator[TelemetryEvent]:
        try:
            for message in self._call:
                event = convert.telemetry_event(message)
                if event is not None:
                    yield event
        except grpc.RpcError as exc:
            if exc.code() != grpc.StatusCode.CANCELLED:
                raise error_from_rpc(exc) from None

    def close(self) -> None:
        self._requests.put(None)
        self._call.cancel()


class DaemonClient:
    """A connection to the daemon of one GYM_GUI_HOME.

    Wire messages stay here: every method takes and returns core records (conversions in
    :mod:`gym_gui.protocol.convert`). Every method raises a :class:`GymGuiError` subclass carrying the daemon's message.
    """

    def __init__(self, info: DaemonFile) -> None:
        self.info = info
        self._channel = open_channel(info.address, info.tls_ca)
        self._stub = pb_grpc.TrainerServiceStub(self._channel)
        self._metadata = [("authorization", f"Bearer {info.token}")]

    # ------------------------------------------------------------ connecting

    @classmethod
    def connect(
        cls,
        home: Path,
        *,
        autostart: bool = True,
        timeout: float = 30.0,
        daemon_args: list[str] | None = None,
    ) -> DaemonClient:
        """Connect to the daemon of ``home``; start one first when none answers and ``autostart``.

        Raises:
            DaemonError: when no daemon answers (and none could be started in ``timeout``).
        """
        client = cls._try(home)
        if client is not None:
            return client
        if not autostart:
            raise DaemonError(
                f"no gym_gui daemon is running for {home}; start one with `gym-gui daemon start`"
            )
        return cls._start(home, timeout, daemon_args or [])

    @classmethod
    def _try(cls, home: Path) -> DaemonClient | None:
        info = read_daemon_file(home / "daemon.json")
        if info is None:
            return None
        client = cls(info)
        try:
            client.health(timeout=3)
        except GymGuiError:
            client.close()
            return None
        return client

    @classmethod
    def _start(cls, home: Path, timeout: float, daemon_args: list[str]) -> DaemonClient:
        home.mkdir(parents=True, exist_ok=True)
        stderr_path = home / "daemon.stderr.log"
        with open(stderr_path, "ab") as stderr:
            process = subprocess.Popen(
                [sys.executable, "-m", "gym_gui.daemon", "--home", str(home), *daemon_args],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=stderr,
                start_new_session=True,
                env={**os.environ, "GYM_GUI_HOME": str(home)},
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            client = cls._try(home)
            if client is not None:
                return client
            code = process.poll()
            if code is not None and code != _EXIT_ALREADY_RUNNING:
                detail = stderr_path.read_text(errors="replace").strip().splitlines()[-5:]
                raise DaemonError(
                    f"the gym_gui daemon failed to start (exit code {code}): " + " | ".join(detail)
                )
            time.sleep(0.05)
        raise DaemonError(
            f"the gym_gui daemon did not answer within {timeout:.0f}s; see {home / 'daemon.log'}"
        )

    def close(self) -> None:
        self._channel.close()

    def __enter__(self) -> DaemonClient:
        return self

    def __exit__(self, *_exc: Any) -> None:
        self.close()

    # ------------------------------------------------------------ calls

    def _call(self, method: str, request: Any, timeout: float | None = 30.0) -> Any:
        try:
            return getattr(self._stub, method)(request, metadata=self._metadata, timeout=timeout)
        except grpc.RpcError as exc:
            raise error_from_rpc(exc) from None

    def health(self, timeout: float = 10.0) -> DaemonHealth:
        return convert.daemon_health(self._call("GetHealth", pb.HealthRequest(), timeout))

    def submit(self, config: RunConfig, secret_env: dict[str, str] | None = None) -> tuple[RunRecord, str]:
        """Submit a run; returns its record and the run token (for client-driven runs only)."""
        reply = self._call(
            "SubmitRun",
            pb.SubmitRunRequest(config_json=config.model_dump_json(), secret_env=secret_env or {}),
            120,
        )
        return convert.run_record(reply.info), reply.run_token

    def submit_json(
        self, config_json: str, secret_env: dict[str, str] | None = None
    ) -> tuple[RunRecord, str]:
        """Submit a config as JSON text, validated by the daemon."""
        reply = self._call(
            "SubmitRun", pb.SubmitRunRequest(config_json=config_json, secret_env=secret_env or {}), 120
        )
        return convert.run_record(reply.info), reply.run_token

    def dry_run(
        self, config: RunConfig, secret_env: dict[str, str] | None = None
    ) -> tuple[RunRecord, LaunchPreview | None]:
        """Submit ``config`` as a dry run: the daemon records a run that launches nothing and replies
        with the plan it resolved (None when it could not: the run failed and its reason says why)."""
        request = pb.SubmitRunRequest(
            config_json=config.model_copy(update={"dry_run": True}).model_dump_json(),
            secret_env=secret_env or {},
        )
        reply = self._call("SubmitRun", request, 300)
        plan = convert.launch_preview(reply.plan) if reply.HasField("plan") else None
        return convert.run_record(reply.info), plan

    def preview(self, config: RunConfig, secret_env: dict[str, str] | None = None) -> LaunchPreview:
        """What the daemon would execute for ``config`` (its worker kind's validate and plan); nothing
        is stored. ``secret_env`` decides the plan as it would at submit and is shown only as ``***``.

        Raises:
            ConfigError: what submit would refuse, naming the field.
        """
        request = pb.PreviewRunRequest(config_json=config.model_dump_json(), secret_env=secret_env or {})
        return convert.launch_preview(self._call("PreviewRun", request, 300))

    def list_runs(self, include_archived: bool = False) -> list[RunRecord]:
        """Every run, oldest first (archived ones only if asked)."""
        return self.list_page(RunQuery(include_archived=include_archived)).runs

    def list_page(self, query: RunQuery) -> RunPage:
        """The page of runs ``query`` asks for, with how many match it and the cursor of the next page.

        Raises:
            ConfigError: the query's cursor is not a page's (``after``).
        """
        reply = self._call("ListRuns", convert.list_runs_request(query))
        return RunPage([convert.run_record(info) for info in reply.runs], reply.total, reply.next)

    def get_run(self, run_id: str) -> RunDetail:
        return convert.run_detail(self._call("GetRun", pb.RunRef(run_id=run_id)))

    def cancel(self, run_id: str) -> RunRecord:
        return convert.run_record(self._call("CancelRun", pb.RunRef(run_id=run_id)))

    def archive(self, run_id: str, archived: bool = True) -> RunRecord:
        request = pb.ArchiveRunRequest(run_id=run_id, archived=archived)
        return convert.run_record(self._call("ArchiveRun", request))

    def delete(self, run_id: str) -> None:
        self._call("DeleteRun", pb.RunRef(run_id=run_id))

    def prune(self, rules: PruneRules) -> PruneResult:
        """Delete the ended runs ``rules`` match (a dry run only lists them); what went and the disk
        it gave back.

        Raises:
            ConfigError: a rule is not one there can be (named by its option).
        """
        reply = self._call("PruneRuns", convert.prune_runs_request(rules), 600)
        return convert.prune_result(reply, rules.dry_run)

    def control(self, run_id: str, control: Control, render_fps: float = 0.0) -> RunRecord:
        """Ask ``run_id``'s worker for ``control`` (``render_fps`` goes with RENDER_RATE)."""
        request = pb.ControlRunRequest(
            run_id=run_id, command=convert.control_command(control), render_fps=render_fps
        )
        return convert.run_record(self._call("ControlRun", request))

    def describe_worker(self, worker: str, **query: str) -> WorkerDescription:
        """What the daemon knows of a worker kind: lane, availability, and its plugin's answer to
        ``query`` (for CleanRL: ``algorithm``, ``scripts_dir``, ``python``; empty values are dropped)."""
        request = pb.DescribeWorkerRequest(worker=worker, query={k: v for k, v in query.items() if v})
        return convert.worker_description(self._call("DescribeWorker", request, 300))

    def start_sweep(self, spec_json: str) -> SweepRecord:
        """Start a sweep from its spec (JSON text, checked by the daemon against the worker's parameters).

        Raises:
            ConfigError: a field of the spec is wrong (named).
        """
        return convert.sweep_record(self._call("StartSweep", pb.StartSweepRequest(spec_json=spec_json), 300))

    def list_sweeps(self) -> list[SweepRecord]:
        return [
            convert.sweep_record(info) for info in self._call("ListSweeps", pb.ListSweepsRequest()).sweeps
        ]

    def get_sweep(self, sweep_id: str) -> SweepDetail:
        """The sweep and its study as the daemon reads it now (``study``: StudyView data or ``{"error": …}``)."""
        reply = self._call("GetSweep", pb.SweepRef(sweep_id=sweep_id), 60)
        return SweepDetail(
            record=convert.sweep_record(reply.info), study=json.loads(reply.study_json or "{}")
        )

    def stop_sweep(self, sweep_id: str) -> SweepRecord:
        """No new trials; its running trial runs are cancelled; it ends STOPPED once they have."""
        return convert.sweep_record(self._call("StopSweep", pb.SweepRef(sweep_id=sweep_id)))

    def evaluation_config(
        self,
        run_id: str,
        episodes: int,
        checkpoint: str | None = None,
        seed: int | None = None,
        render_fps: float = 30.0,
        real_time: bool = False,
        env_id: str | None = None,
        epsilon: float = 0.0,
    ) -> RunConfig:
        """The config of an evaluation run that plays a trained run's model (its final one by default).

        ``real_time`` plays at the environment's own frame rate, to be watched in the Live tab;
        ``epsilon`` is the share of steps played with a random action (ε-greedy noise).
        ``env_id`` is the environment to play (default: the trained run's); the daemon's worker plugin
        decides whether the model may play it, and checks the rest (that the kind evaluates, that the
        model exists).

        Raises:
            ConfigError: when ``run_id`` is not a training run.
        """
        from gym_gui.core.config import parse_run_config  # its models are built for the calls that need them

        detail = self.get_run(run_id)
        trained = json.loads(detail.config_json or "{}")
        if trained.get("mode", "train") != "train":
            raise ConfigError(f"run {run_id} is not a training run; only those have models to play")
        # The model plays with the parameters it was trained with (its kind takes what it needs, such
        # as CleanRL's own interpreter); a config stored by an older gym_gui reads as today's.
        params = parse_run_config(trained).params
        return parse_run_config(
            {
                "worker": detail.record.worker,
                "mode": "evaluate",
                "env_id": env_id or detail.record.env_id,
                "algorithm": trained.get("algorithm"),
                "seed": trained.get("seed") if seed is None else seed,
                "budget": {"episodes": episodes},
                "evaluation": {
                    "run_id": run_id,
                    "checkpoint": checkpoint,
                    "real_time": real_time,
                    "epsilon": epsilon,
                },
                "params": params,
                "telemetry": {"render_fps": render_fps},
            }
        )

    def rerun_config(self, run_id: str) -> RunConfig:
        """The config of a re-run of ``run_id``: its stored RunConfig (so the same seed) naming it as
        ``rerun_of``. :meth:`preview` of it says how today's package set differs from the original's.

        Raises:
            RunNotFound: there is no such run.
            ConfigError: its stored config is not one this gym_gui can run.
        """
        from gym_gui.core.config import parse_run_config  # as in evaluation_config

        detail = self.get_run(run_id)

        def no_config(_: object) -> ConfigError:
            return ConfigError(f"run {run_id} has no stored config to re-run")

        stored = json_object(detail.config_json or "{}", no_config, no_config)
        return parse_run_config({**stored, "rerun_of": run_id})

    def import_model(
        self, path: str, worker: str, algorithm: str, env_id: str, origin: str = ""
    ) -> RunRecord:
        """Store the model file at ``path`` (absolute, on the daemon's machine) as a finished run of its
        own, once ``worker``'s loader has loaded it as a model of ``algorithm`` for ``env_id``;
        ``origin`` says where it came from when that is not ``path`` (``hf://ORG/NAME@COMMIT``).

        Raises:
            ConfigError: the loader's refusal (or a bad argument); nothing is stored.
        """
        request = pb.ImportModelRequest(
            path=path, worker=worker, algorithm=algorithm, env_id=env_id, origin=origin
        )
        return convert.run_record(self._call("ImportModel", request, 300))

    def shutdown(self) -> None:
        self._call("Shutdown", pb.ShutdownRequest())

    def stop(self, timeout: float = 15.0) -> bool:
        """Shut the daemon down and wait up to ``timeout`` seconds for its process to be gone (it
        writes to its home until then); whether it is. Its running workers keep going."""
        pid = self.info.pid
        self.shutdown()
        self.close()
        return wait_exit(pid, timeout) or not process_alive(pid)

    def watch_runs(
        self, run_id: str = "", include_archived: bool = False, limit: int = 0
    ) -> Iterator[RunEvent]:
        """Snapshots of the matching runs (watching every run: the newest ``limit``, 0 for all), then
        every change, until the caller stops iterating."""
        request = pb.WatchRunsRequest(run_id=run_id, include_archived=include_archived, limit=limit)
        call = self._stub.WatchRuns(request, metadata=self._metadata)
        try:
            for message in call:
                event = convert.run_event(message)
                if event is not None:
                    yield event
        except grpc.RpcError as exc:
            if exc.code() != grpc.StatusCode.CANCELLED:
                raise error_from_rpc(exc) from None
        finally:
            call.cancel()

    def subscribe(self, run_id: str, credits: int = 32) -> TelemetryStream:
        return TelemetryStream(self._stub, self._metadata, run_id, credits)

    def wait_for_end(self, run_id: str, timeout: float) -> RunRecord:
        """Block until ``run_id`` reaches a final state; returns its record.

        Raises:
            DaemonError: when ``timeout`` passes first.
        """
        return self.wait_for_state(run_id, timeout=timeout)

    def wait_for_state(self, run_id: str, *states: RunState, timeout: float) -> RunRecord:
        """Block until ``run_id`` is in one of ``states`` or has ended; returns its record.

        Raises:
            DaemonError: when ``timeout`` passes first.
        """
        wanted = frozenset(states)
        done = threading.Event()
        result: list[RunRecord] = []

        def watch() -> None:
            try:
                for event in self.watch_runs(run_id=run_id, include_archived=True):
                    if isinstance(event, RunUpdated) and event.record.run_id == run_id:
                        record = event.record
                        if record.state in wanted or record.state.terminal:
                            result.append(record)
                            done.set()
                            return
                    if done.is_set():
                        return
            except GymGuiError:
                done.set()

        thread = threading.Thread(target=watch, daemon=True)
        thread.start()
        if not done.wait(timeout):
            done.set()
            target = " or ".join(sorted(s.value for s in wanted)) if wanted else "a final state"
            raise DaemonError(f"run {run_id} did not reach {target} within {timeout:.0f}s")
        if not result:
            raise DaemonError(f"lost the daemon while waiting for run {run_id}")
        return result[0]
