"""The worker side of the telemetry path: register with the daemon, stream batched records, take control."""

from __future__ import annotations

import json
import logging
import os
import queue
import signal
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import grpc

from gym_gui_sdk import (
    ENV_DAEMON_ADDRESS,
    ENV_RUN_DIR,
    ENV_RUN_ID,
    ENV_RUN_TOKEN,
    __version__,
)
from gym_gui_sdk import trainer_pb2 as pb
from gym_gui_sdk import trainer_pb2_grpc as pb_grpc

log = logging.getLogger(__name__)

# Worker messages may carry encoded frames; both ends agree on this ceiling.
MAX_MESSAGE_BYTES = 64 * 1024 * 1024
# A step batch is sent early once its render payloads reach this size.
_BATCH_RENDER_BYTES = 2 * 1024 * 1024
_END = object()

Phase = pb.Lifecycle.Phase


class WorkerError(RuntimeError):
    """The worker cannot go on talking to the daemon (rejected, disconnected or misconfigured)."""


@dataclass(frozen=True)
class Registration:
    """What the daemon tells a worker when it registers."""

    run_id: str
    config: dict[str, Any]
    run_dir: str
    render_fps: float


def channel_options() -> list[tuple[str, int]]:
    return [
        ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
        ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
    ]


class WorkerSession:
    """One run's connection to the daemon.

    Records are buffered and sent in batches on one bidirectional ``Publish`` stream; steps
    travel column-wise in batches of at most ``batch_steps`` or ``batch_seconds``. Sending
    blocks when the daemon is behind (gRPC flow control fills the bounded outbox), so nothing
    is ever dropped on the way to storage. Control messages from the daemon update
    :attr:`stop_requested`, :attr:`paused` and :attr:`render_fps`.

    The session is thread-safe: steps may be recorded from one thread while another records
    metrics. Call :meth:`start` first and :meth:`finish` last.
    """

    def __init__(
        self,
        address: str,
        run_id: str,
        run_token: str,
        *,
        batch_steps: int = 512,
        batch_seconds: float = 0.2,
        heartbeat_seconds: float = 1.0,
        outbox_size: int = 8,
    ) -> None:
        self.address = address
        self.run_id = run_id
        self._run_token = run_token
        self.batch_steps = batch_steps
        self.batch_seconds = batch_seconds
        self.heartbeat_seconds = heartbeat_seconds
        self.stop_requested = threading.Event()
        self.checkpoint_requested = threading.Event()
        self._resume = threading.Event()
        self._resume.set()
        self.render_fps = 0.0
        self.acked_seq = 0
        self._lock = threading.Lock()
        self._seq = 0
        self._outbox: queue.Queue[Any] = queue.Queue(maxsize=outbox_size)
        self._error: BaseException | None = None
        self._channel: grpc.Channel | None = None
        self._reader: threading.Thread | None = None
        self._ticker: threading.Thread | None = None
        self._closed = threading.Event()
        self._clear_steps()

    # ------------------------------------------------------------ setup

    @classmethod
    def from_env(cls, **kwargs: Any) -> WorkerSession:
        """Build a session from the variables the daemon puts in every worker's environment."""
        missing = [
            name for name in (ENV_DAEMON_ADDRESS, ENV_RUN_ID, ENV_RUN_TOKEN) if not os.environ.get(name)
        ]
        if missing:
            raise WorkerError(
                "not started by the gym_gui daemon: missing environment variable(s) " + ", ".join(missing)
            )
        return cls(
            os.environ[ENV_DAEMON_ADDRESS], os.environ[ENV_RUN_ID], os.environ[ENV_RUN_TOKEN], **kwargs
        )

    @staticmethod
    def run_dir_from_env() -> str | None:
        return os.environ.get(ENV_RUN_DIR)

    def start(self) -> Registration:
        """Register with the daemon and open the Publish stream.

        Raises:
            WorkerError: when the daemon is unreachable or refuses the run token.
        """
        self._channel = grpc.insecure_channel(self.address, options=channel_options())
        stub = pb_grpc.WorkerServiceStub(self._channel)
        try:
            reply = stub.RegisterWorker(
                pb.RegisterWorkerRequest(
                    run_id=self.run_id, run_token=self._run_token, pid=os.getpid(), worker_version=__version__
                ),
                metadata=[("authorization", f"Bearer {self._run_token}")],
                timeout=30,
                wait_for_ready=True,
            )
        except grpc.RpcError as exc:
            raise WorkerError(f"daemon at {self.address} refused registration: {_rpc_text(exc)}") from None
        self.render_fps = reply.render_fps
        responses = stub.Publish(
            self._requests(),
            metadata=[("authorization", f"Bearer {reply.session_token}"), ("x-run-id", self.run_id)],
        )
        self._reader = threading.Thread(
            target=self._read_control, args=(responses,), name="gym-gui-control", daemon=True
        )
        self._reader.start()
        self._ticker = threading.Thread(target=self._tick, name="gym-gui-heartbeat", daemon=True)
        self._ticker.start()
        return Registration(
            run_id=self.run_id,
            config=json.loads(reply.config_json or "{}"),
            run_dir=reply.run_dir,
            render_fps=reply.render_fps,
        )

    def install_signal_handlers(self) -> None:
        """Turn SIGTERM and SIGINT into a stop request, so the worker ends cleanly and flushes.

        Call from the main thread.
        """

        def _stop(_signum: int, _frame: Any) -> None:
            self.stop_requested.set()
            self._resume.set()

        signal.signal(signal.SIGTERM, _stop)
        signal.signal(signal.SIGINT, _stop)

    # ------------------------------------------------------------ records

    def started(self, render_kind: str = "none", spaces: dict[str, Any] | None = None) -> None:
        """Tell the daemon the worker is running (the run becomes RUNNING)."""
        self._send(
            pb.WorkerMessage(
                lifecycle=pb.Lifecycle(
                    phase=Phase.STARTED, render_kind=render_kind, spaces=json.dumps(spaces or {})
                )
            )
        )

    def step(
        self,
        episode: int,
        step: int,
        reward: float,
        terminated: bool,
        truncated: bool,
        action: str,
        observation: str,
        info: str = "{}",
        render: bytes = b"",
        wall_time: float | None = None,
    ) -> None:
        """Record one step; ``action``, ``observation`` and ``info`` are JSON text (see :mod:`encoding`)."""
        with self._lock:
            self._b_episode.append(episode)
            self._b_step.append(step)
            self._b_reward.append(reward)
            self._b_terminated.append(terminated)
            self._b_truncated.append(truncated)
            self._b_action.append(action)
            self._b_observation.append(observation)
            self._b_info.append(info)
            self._b_render.append(render)
            self._b_wall_time.append(time.time() if wall_time is None else wall_time)
            if render:
                self._render_bytes += len(render)
            if len(self._b_step) >= self.batch_steps or self._render_bytes >= _BATCH_RENDER_BYTES:
                self._flush_steps_locked()

    def episode(
        self,
        episode: int,
        steps: int,
        total_reward: float,
        terminated: bool,
        truncated: bool,
        started_at: float,
        ended_at: float | None = None,
        seed: int | None = None,
        info: str = "{}",
    ) -> None:
        """Record the end of an episode; its steps are sent before it."""
        message = pb.WorkerMessage(
            episode=pb.Episode(
                episode=episode,
                seed=seed or 0,
                has_seed=seed is not None,
                steps=steps,
                total_reward=total_reward,
                terminated=terminated,
                truncated=truncated,
                started_at=started_at,
                ended_at=time.time() if ended_at is None else ended_at,
                info=info,
            )
        )
        with self._lock:
            self._flush_steps_locked()
            self._send_locked(message)

    def metrics(self, points: list[tuple[str, int, float]], wall_time: float | None = None) -> None:
        """Record scalar metrics as ``(tag, step, value)``."""
        now = time.time() if wall_time is None else wall_time
        self._send(
            pb.WorkerMessage(
                metrics=pb.MetricBatch(
                    metrics=[
                        pb.Metric(tag=tag, step=step, value=value, wall_time=now)
                        for tag, step, value in points
                    ]
                )
            )
        )

    def artifact(self, kind: str, path: str, step: int = 0, meta: dict[str, Any] | None = None) -> None:
        """Register a file of the run (``path`` relative to the run directory)."""
        self._send(
            pb.WorkerMessage(
                artifact=pb.Artifact(kind=kind, path=path, step=step, meta=json.dumps(meta or {}))
            )
        )

    def log(self, line: str, stream: str = "worker") -> None:
        self._send(pb.WorkerMessage(log=pb.LogLine(stream=stream, line=line)))

    def event(self, level: str, message: str, data: dict[str, Any] | None = None) -> None:
        """Record something a user should see (``level``: INFO, WARNING or ERROR)."""
        self._send(
            pb.WorkerMessage(event=pb.WorkerEvent(level=level, message=message, data=json.dumps(data or {})))
        )

    def lifecycle(self, phase: Phase, message: str = "") -> None:
        self._send(pb.WorkerMessage(lifecycle=pb.Lifecycle(phase=phase, message=message)))

    # ------------------------------------------------------------ control

    @property
    def paused(self) -> bool:
        return not self._resume.is_set()

    def wait_if_paused(self) -> None:
        """Block while the daemon has the run paused (a stop request ends the wait)."""
        if self._resume.is_set():
            return
        self.lifecycle(Phase.PAUSED)
        while not self._resume.wait(0.2):
            if self.stop_requested.is_set() or self._error is not None:
                return
        self.lifecycle(Phase.RESUMED)

    def finish(self, phase: Phase = Phase.COMPLETED, message: str = "", timeout: float = 60.0) -> None:
        """Send what is buffered and the final lifecycle, close the stream, and wait until the
        daemon has stored everything (its last acknowledgement).

        Raises:
            WorkerError: when the daemon broke the stream or did not confirm in ``timeout``.
        """
        with self._lock:
            self._flush_steps_locked()
            self._send_locked(pb.WorkerMessage(lifecycle=pb.Lifecycle(phase=phase, message=message)))
            final_seq = self._seq
            self._closed.set()
            self._outbox.put(_END)
        assert self._reader is not None
        self._reader.join(timeout)
        if self._channel is not None:
            self._channel.close()
        if self._error is not None:
            raise WorkerError(f"stream to the daemon failed: {self._error}")
        if self.acked_seq < final_seq:
            raise WorkerError(
                f"daemon confirmed {self.acked_seq} of {final_seq} messages within {timeout:.0f}s"
            )

    # ------------------------------------------------------------ internals

    def _clear_steps(self) -> None:
        self._b_episode: list[int] = []
        self._b_step: list[int] = []
        self._b_reward: list[float] = []
        self._b_terminated: list[bool] = []
        self._b_truncated: list[bool] = []
        self._b_action: list[str] = []
        self._b_observation: list[str] = []
        self._b_info: list[str] = []
        self._b_render: list[bytes] = []
        self._b_wall_time: list[float] = []
        self._render_bytes = 0
        self._batch_started = time.monotonic()

    def _flush_steps_locked(self) -> None:
        if not self._b_step:
            return
        batch = pb.StepBatch(
            episode=self._b_episode,
            step=self._b_step,
            reward=self._b_reward,
            terminated=self._b_terminated,
            truncated=self._b_truncated,
            action=self._b_action,
            observation=self._b_observation,
            info=self._b_info,
            render=self._b_render,
            wall_time=self._b_wall_time,
        )
        self._clear_steps()
        self._send_locked(pb.WorkerMessage(steps=batch))

    def _send(self, message: pb.WorkerMessage) -> None:
        with self._lock:
            self._send_locked(message)

    def _send_locked(self, message: pb.WorkerMessage) -> None:
        # Sequence numbers are given under the lock so the outbox order is the seq order.
        if self._error is not None:
            raise WorkerError(f"stream to the daemon failed: {self._error}")
        if self._closed.is_set():
            raise WorkerError("session already finished")
        self._seq += 1
        message.seq = self._seq
        while True:
            try:
                self._outbox.put(message, timeout=0.5)
                return
            except queue.Full:
                if self._error is not None:
                    raise WorkerError(f"stream to the daemon failed: {self._error}") from None

    def _requests(self) -> Iterator[pb.WorkerMessage]:
        while True:
            item = self._outbox.get()
            if item is _END:
                return
            yield item

    def _read_control(self, responses: Iterator[pb.ControlMessage]) -> None:
        Command = pb.ControlMessage.Command
        try:
            for control in responses:
                if control.command == Command.ACK:
                    self.acked_seq = max(self.acked_seq, control.seq)
                elif control.command == Command.STOP:
                    self.stop_requested.set()
                    self._resume.set()
                elif control.command == Command.PAUSE:
                    self._resume.clear()
                elif control.command == Command.RESUME:
                    self._resume.set()
                elif control.command == Command.SET_RENDER_RATE:
                    self.render_fps = control.render_fps
                elif control.command == Command.CHECKPOINT_NOW:
                    self.checkpoint_requested.set()
        except grpc.RpcError as exc:
            self._error = WorkerError(_rpc_text(exc))
            self.stop_requested.set()
            self._resume.set()
            log.error("daemon ended the stream: %s", _rpc_text(exc))

    def _tick(self) -> None:
        # Heartbeats, and the time bound of a step batch that fills slowly.
        next_beat = time.monotonic()
        while not self._closed.is_set() and self._error is None:
            now = time.monotonic()
            with self._lock:
                if self._closed.is_set():
                    return
                try:
                    if self._b_step and now - self._batch_started >= self.batch_seconds:
                        self._flush_steps_locked()
                    if now >= next_beat:
                        self._send_locked(pb.WorkerMessage(heartbeat=pb.Heartbeat(wall_time=time.time())))
                        next_beat = now + self.heartbeat_seconds
                except WorkerError:
                    return
            self._closed.wait(min(self.batch_seconds, self.heartbeat_seconds) / 2)


def _rpc_text(exc: grpc.RpcError) -> str:
    code = exc.code() if hasattr(exc, "code") else None
    details = exc.details() if hasattr(exc, "details") else str(exc)
    return f"{code.name if code else 'ERROR'}: {details}"
