"""The worker side of the telemetry path: register with the daemon, stream batched records, take control."""

from __future__ import annotations

import json
import logging
import math
import os
import queue
import signal
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import grpc
import numpy as np

from gym_gui_sdk import (
    ENV_DAEMON_ADDRESS,
    ENV_HOME,
    ENV_RUN_ID,
    ENV_RUN_TOKEN,
    ENV_TLS_CA,
    __version__,
    encoding,
)
from gym_gui_sdk import trainer_pb2 as pb
from gym_gui_sdk import trainer_pb2_grpc as pb_grpc
from gym_gui_sdk.channel import WorkerError, open_channel, rpc_status
from gym_gui_sdk.courier import CourierStream, LocalStream
from gym_gui_sdk.json_object import json_object

log = logging.getLogger(__name__)

# A step batch is sent early once its render payloads and observations reach this size.
_BATCH_BYTES = 2 * 1024 * 1024

Phase = pb.Lifecycle.Phase


@dataclass(frozen=True)
class Registration:
    """What the daemon tells a worker when it registers."""

    run_id: str
    config: dict[str, Any]
    run_dir: str
    render_fps: float


class WorkerSession:
    """One run's connection to the daemon.

    Records are buffered and sent in batches on one bidirectional ``Publish`` stream; steps
    travel column-wise in batches of at most ``batch_steps`` or ``batch_seconds``. Sending
    blocks when the daemon is behind (gRPC flow control fills the bounded outbox), so nothing
    is ever dropped on the way to storage. Control messages from the daemon update
    :attr:`stop_requested`, :attr:`paused`, :attr:`held` and :attr:`render_fps`.

    The session is thread-safe: steps may be recorded from one thread while another records
    metrics. Call :meth:`start` first and :meth:`finish` last.

    With ``courier`` the stream is sent by a child process (see :mod:`gym_gui_sdk.courier`), so
    gRPC's threads never compete with the worker's loop for the GIL: what a worker process the
    daemon started (:meth:`from_env`) does. Without it, gRPC runs in this process: for a process
    that holds many sessions, or one that is not a worker.
    """

    def __init__(
        self,
        address: str,
        run_id: str,
        run_token: str,
        *,
        batch_steps: int = 2048,
        batch_seconds: float = 0.2,
        heartbeat_seconds: float = 1.0,
        outbox_size: int = 8,
        reconnect_seconds: float = 60.0,
        home: str | None = None,
        tls_ca: str | None = None,
        courier: bool = False,
    ) -> None:
        self.address = address
        self.run_id = run_id
        self._run_token = run_token
        self._batch_steps = batch_steps
        self.batch_seconds = batch_seconds
        self.heartbeat_seconds = heartbeat_seconds
        self.reconnect_seconds = reconnect_seconds
        self._home = home
        self._tls_ca = tls_ca if tls_ca is not None else os.environ.get(ENV_TLS_CA)
        self.stop_requested = threading.Event()
        # True while a pause or a stop waits for the loop: the one attribute a fast loop reads every
        # step, calling wait_if_paused and checking stop_requested only when it is set.
        self.held = False
        self.checkpoint_requested = threading.Event()
        self._resume = threading.Event()
        self._resume.set()
        self.render_fps = 0.0
        self.acked_seq = 0
        self.reconnects = 0
        self._lock = threading.Lock()
        self._seq = 0
        self._outbox_size = outbox_size
        self._stream: LocalStream | CourierStream = CourierStream() if courier else LocalStream()
        # Sent but not yet confirmed stored: sent again, renumbered, on a new stream after a reconnect.
        self._unacked: deque[pb.WorkerMessage] = deque()
        self._started_message: pb.WorkerMessage | None = None
        self._broken: str = ""
        self._error: BaseException | None = None
        self._reader: threading.Thread | None = None
        self._ticker: threading.Thread | None = None
        self._closed = threading.Event()
        self._registration: Registration | None = None
        # The dtype and shape of the arrays a batch packs (see _observation_locked), kept from batch
        # to batch; its parts apart, for step's quick path, with the bytes of one such array.
        self._b_pack: tuple[np.dtype[Any], tuple[int, ...]] | None = None
        self._b_dtype: np.dtype[Any] | None = None
        self._b_shape: tuple[int, ...] | None = None
        self._b_nbytes = 0
        self._b_limit = batch_steps  # steps a batch takes: batch_steps, or fewer when arrays are large
        self._clear_steps()

    @property
    def batch_steps(self) -> int:
        """The most steps one batch carries (fewer when its packed observations would pass 2 MiB)."""
        return self._batch_steps

    @batch_steps.setter
    def batch_steps(self, steps: int) -> None:
        with self._lock:
            self._batch_steps = steps
            self._set_limit_locked()

    # ------------------------------------------------------------ setup

    @classmethod
    def from_env(cls, **kwargs: Any) -> WorkerSession:
        """Build a session from the variables the daemon puts in every worker's environment (its
        stream sent by a courier process unless ``courier=False`` is given)."""
        missing = [
            name for name in (ENV_DAEMON_ADDRESS, ENV_RUN_ID, ENV_RUN_TOKEN) if not os.environ.get(name)
        ]
        if missing:
            raise WorkerError(
                "not started by the gym_gui daemon: missing environment variable(s) " + ", ".join(missing)
            )
        kwargs.setdefault("home", os.environ.get(ENV_HOME))
        kwargs.setdefault("courier", True)
        return cls(
            os.environ[ENV_DAEMON_ADDRESS], os.environ[ENV_RUN_ID], os.environ[ENV_RUN_TOKEN], **kwargs
        )

    def start(self) -> Registration:
        """Register with the daemon and open the Publish stream.

        Raises:
            WorkerError: when the daemon is unreachable or refuses the run token.
        """
        self._stream.start()  # a courier's start-up overlaps the registration
        try:
            registration = self._open(self.address)
        except grpc.RpcError as exc:
            raise WorkerError(f"daemon at {self.address} refused registration: {_rpc_text(exc)}") from None
        self._ticker = threading.Thread(target=self._tick, name="gym-gui-heartbeat", daemon=True)
        self._ticker.start()
        return registration

    def _open(self, address: str) -> Registration:
        """Register at ``address`` and open a fresh Publish stream with a fresh outbox."""
        with open_channel(address, self._tls_ca) as channel:
            reply = pb_grpc.WorkerServiceStub(channel).RegisterWorker(
                pb.RegisterWorkerRequest(
                    run_id=self.run_id, run_token=self._run_token, pid=os.getpid(), worker_version=__version__
                ),
                metadata=[("authorization", f"Bearer {self._run_token}")],
                timeout=10 if self._registration else 30,
                wait_for_ready=True,
            )
        self.address = address
        self.render_fps = reply.render_fps
        self._seq = 0
        self._broken = ""
        responses = self._stream.open(
            address,
            self._tls_ca,
            [("authorization", f"Bearer {reply.session_token}"), ("x-run-id", self.run_id)],
            self._outbox_size,
        )
        self._reader = threading.Thread(
            target=self._read_control, args=(responses,), name="gym-gui-control", daemon=True
        )
        self._reader.start()
        if self._registration is None:
            self._registration = Registration(
                run_id=self.run_id,
                config=json.loads(reply.config_json or "{}"),
                run_dir=reply.run_dir,
                render_fps=reply.render_fps,
            )
        return self._registration

    def _daemon_address(self) -> str:
        # A restarted daemon listens on a new port; its daemon.json says which.
        if self._home:
            try:
                with open(os.path.join(self._home, "daemon.json"), encoding="utf-8") as f:
                    address = json_object(f.read()).get("address")
                if isinstance(address, str) and address:
                    return address
            except (OSError, ValueError):
                pass
        return self.address

    def _reconnect_locked(self) -> None:
        """Find the daemon again, register, and send again what it has not confirmed.

        Raises:
            WorkerError: when no daemon takes the run back within ``reconnect_seconds``.
        """
        reason = self._broken
        log.warning("stream to the daemon broke (%s); reconnecting", reason)
        deadline = time.monotonic() + self.reconnect_seconds
        while True:
            try:
                self._open(self._daemon_address())
                break
            except grpc.RpcError as exc:
                if exc.code() == grpc.StatusCode.UNAUTHENTICATED or time.monotonic() > deadline:
                    self._error = WorkerError(
                        f"lost the daemon ({reason}) and could not reconnect: {_rpc_text(exc)}"
                    )
                    raise self._error from None
                time.sleep(0.5)
        self.reconnects += 1
        pending = list(self._unacked)
        self._unacked.clear()
        if self._started_message is not None:
            self._enqueue_locked(self._started_message, keep=False)
        for message in pending:
            self._enqueue_locked(message)
        log.info("reconnected to %s; sent %d unconfirmed messages again", self.address, len(pending))

    def install_signal_handlers(self) -> None:
        """Turn SIGTERM and SIGINT into a stop request, so the worker ends cleanly and flushes.

        Call from the main thread.
        """

        def _stop(_signum: int, _frame: Any) -> None:
            self._request_stop()

        signal.signal(signal.SIGTERM, _stop)
        signal.signal(signal.SIGINT, _stop)

    # ------------------------------------------------------------ records

    def started(self, render_kind: str = "none", spaces: dict[str, Any] | None = None) -> None:
        """Tell the daemon the worker is running (the run becomes RUNNING)."""
        message = pb.WorkerMessage(
            lifecycle=pb.Lifecycle(
                phase=Phase.STARTED, render_kind=render_kind, spaces=json.dumps(spaces or {})
            )
        )
        with self._lock:
            self._started_message = message
            self._send_locked(message, keep=False)

    def step(
        self,
        episode: int,
        step: int,
        reward: float,
        terminated: bool,
        truncated: bool,
        action: str,
        observation: Any,
        info: str = "{}",
        render: bytes = b"",
        wall_time: float | None = None,
    ) -> None:
        """Record one step; ``action`` and ``info`` are JSON text (see :mod:`encoding`).

        ``observation`` is JSON text, or the observation itself: a numeric numpy array travels packed
        with the batch's others of its dtype and shape (its bytes are taken now, so the env may
        reuse its buffer; the daemon writes the JSON :func:`encoding.dumps` gives), anything else is
        encoded here by :func:`encoding.dumps`.
        """
        with self._lock:
            # The common case first, in as few operations as a step can take: an env's array of the
            # dtype and shape the batch already packs. Its bytes count as the batch's row count does.
            if (
                type(observation) is np.ndarray
                and observation.dtype is self._b_dtype
                and observation.shape == self._b_shape
            ):
                observation = observation.tobytes()
            else:
                observation = self._observation_locked(observation)
            rows = self._b_rows
            rows.append(
                (
                    episode,
                    step,
                    reward,
                    terminated,
                    truncated,
                    action,
                    observation,
                    info,
                    render,
                    time.time() if wall_time is None else wall_time,
                )
            )
            if render:
                self._batch_bytes += len(render)
            if len(rows) >= self._b_limit or (self._batch_bytes and self._batch_full_locked()):
                self._flush_steps_locked()

    def steps(
        self,
        episode: Sequence[int],
        step: Sequence[int],
        reward: Sequence[float],
        terminated: Sequence[bool],
        truncated: Sequence[bool],
        action: Sequence[str],
        observation: Sequence[Any],
        info: Sequence[str] | None = None,
        render: Sequence[bytes] | None = None,
        wall_time: Sequence[float] | None = None,
    ) -> None:
        """Record many steps at once, column-wise (a vector environment's step, or steps made elsewhere).

        Each column holds one value per step, as :meth:`step` takes them; ``observation`` may also
        be one numeric array whose rows are the steps' observations (a vector env's), packed as
        its bytes in one go. ``info`` defaults to
        ``"{}"``, ``render`` to no payload and ``wall_time`` to now for every step. The steps go
        into batches of at most ``batch_steps`` as :meth:`step`'s do.

        Raises:
            ValueError: when the columns differ in length.
        """
        n = len(step)
        info = ["{}"] * n if info is None else info
        render = [b""] * n if render is None else render
        wall_time = [time.time()] * n if wall_time is None else wall_time
        columns = (episode, reward, terminated, truncated, action, observation, info, render, wall_time)
        if any(len(column) != n for column in columns):
            raise ValueError(f"step columns differ in length: {n} steps but {[len(c) for c in columns]}")
        # A vector env's observations as one numeric array (a row a step): its bytes, cut in rows.
        block = observation if type(observation) is np.ndarray and observation.ndim >= 1 else None
        spec = encoding.pack_spec(block[0]) if block is not None and n else None
        rows: Sequence[Any] = observation
        if spec is not None:
            assert block is not None
            data, size = np.ascontiguousarray(block).tobytes(), block[0].nbytes
            rows = [data[i * size : (i + 1) * size] for i in range(n)]
        start = 0
        with self._lock:
            while start < n:
                end = min(n, start + max(1, self._b_limit - len(self._b_rows)))
                part = slice(start, end)
                if spec is not None and self._pack_locked(spec):
                    observations = rows[part]
                else:
                    observations = [self._observation_locked(o) for o in observation[part]]
                self._b_rows.extend(
                    zip(
                        episode[part],
                        step[part],
                        reward[part],
                        terminated[part],
                        truncated[part],
                        action[part],
                        observations,
                        info[part],
                        render[part],
                        wall_time[part],
                        strict=True,
                    )
                )
                self._batch_bytes += sum(map(len, render[part]))
                if len(self._b_rows) >= self._b_limit or (self._batch_bytes and self._batch_full_locked()):
                    self._flush_steps_locked()
                start = end

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
        """Record the end of an episode; it travels with (and is stored after) its steps."""
        # Kept as the Episode message's fields (typed here, so a wrong value fails this call), made
        # a message when its batch is: one message built, not one built and then copied.
        record = {
            "episode": int(episode),
            "seed": int(seed or 0),
            "has_seed": seed is not None,
            "steps": int(steps),
            "total_reward": float(total_reward),
            "terminated": bool(terminated),
            "truncated": bool(truncated),
            "started_at": float(started_at),
            "ended_at": time.time() if ended_at is None else float(ended_at),
            "info": str(info),
        }
        with self._lock:
            self._b_episodes.append(record)

    def metrics(self, points: list[tuple[str, int, float]], wall_time: float | None = None) -> None:
        """Record scalar metrics as ``(tag, step, value)``; they travel with the next batch."""
        now = time.time() if wall_time is None else float(wall_time)
        records = [
            {"tag": str(tag), "step": int(step), "value": float(value), "wall_time": now}
            for tag, step, value in points
        ]
        with self._lock:
            self._b_metrics.extend(records)
            if len(self._b_metrics) >= self.batch_steps:
                self._flush_steps_locked()

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
        """Block while the daemon has the run paused, reporting PAUSED and then RESUMED.

        A stop request ends the wait without RESUMED: a run cancelled while paused goes from
        PAUSED straight to its end. Heartbeats go on meanwhile, so a paused run is not silent.
        """
        if self._resume.is_set():
            return
        self.lifecycle(Phase.PAUSED)
        while not self._resume.wait(0.2):
            if self.stop_requested.is_set() or self._error is not None:
                return
        if not self.stop_requested.is_set():
            self.lifecycle(Phase.RESUMED)

    def finish(self, phase: Phase = Phase.COMPLETED, message: str = "", timeout: float = 60.0) -> None:
        """Send what is buffered and the final lifecycle, close the stream, and wait until the
        daemon has confirmed storing everything. The stream is closed even when this raises.

        Raises:
            WorkerError: when the daemon broke the stream for good or did not confirm in ``timeout``.
        """
        deadline = time.monotonic() + timeout
        try:
            with self._lock:
                self._flush_steps_locked()
                self._send_locked(pb.WorkerMessage(lifecycle=pb.Lifecycle(phase=phase, message=message)))
                self._closed.set()
            while True:
                with self._lock:
                    if self._broken:
                        self._reconnect_locked()
                    reader = self._reader
                    self._stream.end()
                assert reader is not None
                reader.join(max(0.0, deadline - time.monotonic()))
                if self._error is not None:
                    raise WorkerError(f"stream to the daemon failed: {self._error}")
                if not self._unacked and not self._broken:
                    break
                if not self._broken or time.monotonic() > deadline:
                    raise WorkerError(
                        f"daemon did not confirm {len(self._unacked)} messages within {timeout:.0f}s"
                    )
        finally:
            self.close()  # a failed finish lets go of the daemon too

    def close(self) -> None:
        """Let go of the daemon without finishing: the heartbeat stops and the stream is closed.

        For a session whose run the daemon already ended (its stream failed, or it was told to
        stop and has nothing left to say); :meth:`finish` closes a session that ends normally.
        """
        self._closed.set()
        self._stream.close()

    # ------------------------------------------------------------ internals

    def _clear_steps(self) -> None:
        # Steps as (episode, step, reward, terminated, truncated, action, observation, info, render,
        # wall_time); an observation is JSON text, or the bytes of an array packed under _b_pack.
        self._b_rows: list[tuple[Any, ...]] = []
        self._b_episodes: list[dict[str, Any]] = []  # an Episode message's fields each
        self._b_metrics: list[dict[str, Any]] = []  # a Metric message's fields each
        self._b_text = 0  # observations among the rows that are JSON text (the others are packed)
        self._batch_bytes = 0  # of the render payloads and the text observations
        self._batch_started = time.monotonic()

    def _set_limit_locked(self) -> None:
        nbytes = self._b_nbytes
        self._b_limit = (
            min(self._batch_steps, max(1, _BATCH_BYTES // nbytes)) if nbytes else self._batch_steps
        )

    def _batch_full_locked(self) -> bool:
        """Whether the batch's payloads, packed arrays included, reached the batch's bound in bytes."""
        packed = (len(self._b_rows) - self._b_text) * self._b_nbytes
        return self._batch_bytes + packed >= _BATCH_BYTES

    def _pack_locked(self, spec: tuple[np.dtype[Any], tuple[int, ...]]) -> bool:
        """Whether arrays of ``spec`` travel packed in this batch: those it packs already, or the first
        of a batch that packs none yet (then kept for the batches after it, so the next steps take
        :meth:`step`'s quick path)."""
        if spec == self._b_pack:
            return True
        if len(self._b_rows) > self._b_text:  # the batch packs arrays of another spec
            return False
        self._b_pack = spec
        self._b_dtype, self._b_shape = spec
        self._b_nbytes = spec[0].itemsize * math.prod(spec[1])
        self._set_limit_locked()
        return True

    def _observation_locked(self, observation: Any) -> str | bytes:
        """A step's observation as it waits in the batch: packed bytes, or JSON text.

        A numeric array travels packed when the batch packs its dtype and shape or none yet (see
        :meth:`_pack_locked`); an array of another dtype or shape, or anything else, is JSON text.
        """
        if type(observation) is not str:
            spec = encoding.pack_spec(observation)
            if spec is not None and self._pack_locked(spec):
                return observation.tobytes()
            observation = encoding.dumps(observation)
        self._b_text += 1
        self._batch_bytes += len(observation)
        return observation

    def _flush_steps_locked(self) -> None:
        rows = self._b_rows
        if not (rows or self._b_episodes or self._b_metrics):
            return
        # Built in place: a batch handed to WorkerMessage(steps=...) would be copied whole.
        message = pb.WorkerMessage()
        batch = message.steps
        if rows:
            episode, step, reward, terminated, truncated, action, observation, info, render, wall_time = zip(
                *rows, strict=True
            )
            batch.episode.extend(episode)
            batch.step.extend(step)
            batch.reward.extend(reward)
            batch.terminated.extend(terminated)
            batch.truncated.extend(truncated)
            batch.action.extend(action)
            batch.info.extend(info)
            batch.render.extend(render)
            batch.wall_time.extend(wall_time)
            text = self._b_text
            if text == len(rows):
                batch.observation.extend(observation)
            elif text == 0:
                assert self._b_pack is not None
                dtype, shape = self._b_pack
                batch.observation_array = b"".join(observation)
                batch.observation_dtype = dtype.str
                batch.observation_shape.extend(shape)
            else:  # packed arrays beside JSON text: all of them as text
                assert self._b_pack is not None
                dtype, shape = self._b_pack
                batch.observation.extend(
                    o if type(o) is str else encoding.unpack_observations(o, dtype.str, shape, 1)[0]
                    for o in observation
                )
        for record in self._b_episodes:
            batch.episodes.add(**record)
        for point in self._b_metrics:
            batch.metrics.add(**point)
        self._clear_steps()
        self._send_locked(message)

    def _send(self, message: pb.WorkerMessage) -> None:
        with self._lock:
            self._send_locked(message)

    def _send_locked(self, message: pb.WorkerMessage, keep: bool = True) -> None:
        if self._error is not None:
            raise WorkerError(f"stream to the daemon failed: {self._error}")
        if self._closed.is_set():
            raise WorkerError("session already finished")
        if self._broken:
            self._reconnect_locked()
        self._enqueue_locked(message, keep)

    def _enqueue_locked(self, message: pb.WorkerMessage, keep: bool = True) -> None:
        # Sequence numbers are given under the lock so the outbox order is the seq order.
        self._seq += 1
        message.seq = self._seq
        if keep and message.WhichOneof("body") != "heartbeat":
            self._unacked.append(message)
        while True:
            try:
                self._stream.send(message, timeout=0.5)
                return
            except queue.Full:
                if self._error is not None:
                    raise WorkerError(f"stream to the daemon failed: {self._error}") from None
                if self._broken:
                    # Everything kept is sent again on the new stream, this message included.
                    self._reconnect_locked()
                    return

    def _read_control(self, responses: Iterator[pb.ControlMessage]) -> None:
        Command = pb.ControlMessage.Command
        try:
            for control in responses:
                if control.command == Command.ACK:
                    self._acknowledge(control.seq)
                elif control.command == Command.STOP:
                    self._request_stop()
                elif control.command == Command.PAUSE:
                    self._resume.clear()
                    self.held = True
                elif control.command == Command.RESUME:
                    self._resume.set()
                    self.held = self.stop_requested.is_set()
                elif control.command == Command.SET_RENDER_RATE:
                    self.render_fps = control.render_fps
                elif control.command == Command.CHECKPOINT_NOW:
                    self.checkpoint_requested.set()
        except grpc.RpcError as exc:
            if exc.code() in _RETRYABLE and self.reconnect_seconds > 0:
                self._broken = _rpc_text(exc)
                return
            self._error = WorkerError(_rpc_text(exc))
            self._request_stop()
            log.error("daemon ended the stream: %s", _rpc_text(exc))

    def _request_stop(self) -> None:
        self.stop_requested.set()
        self._resume.set()
        self.held = True

    def _acknowledge(self, seq: int) -> None:
        self.acked_seq = max(self.acked_seq, seq)
        unacked = self._unacked
        while unacked and unacked[0].seq <= seq:
            unacked.popleft()

    def _tick(self) -> None:
        # Heartbeats, and the time bound of a step batch that fills slowly.
        next_beat = time.monotonic()
        while not self._closed.is_set() and self._error is None:
            now = time.monotonic()
            with self._lock:
                if self._closed.is_set():
                    return
                try:
                    pending = self._b_rows or self._b_episodes or self._b_metrics
                    if pending and now - self._batch_started >= self.batch_seconds:
                        self._flush_steps_locked()
                    if now >= next_beat:
                        self._send_locked(pb.WorkerMessage(heartbeat=pb.Heartbeat(wall_time=time.time())))
                        next_beat = now + self.heartbeat_seconds
                except WorkerError:
                    return
            self._closed.wait(min(self.batch_seconds, self.heartbeat_seconds) / 2)


def run_worker(
    name: str,
    body: Callable[[WorkerSession, Registration], str],
    known_errors: tuple[type[BaseException], ...] = (),
    known_exit_code: int = 1,
) -> int:
    """The life of a worker process: register with the daemon, take the run's telemetry batching,
    run ``body`` and report how it ended; returns the process's exit status.

    ``body`` returns ``"stopped"`` (the run ends CANCELLED) or anything else (COMPLETED). An
    exception of a ``known_errors`` type fails the run with its message, one line the user reads,
    and the process exits with ``known_exit_code``: the run's reason reads ``exit code 1: MESSAGE``
    by default, the message alone with 0. Any other exception fails the run with its type and is
    raised again (its traceback goes to the worker's log).
    """
    session = WorkerSession.from_env()
    session.install_signal_handlers()
    registration = session.start()
    telemetry = registration.config.get("telemetry") or {}
    session.batch_steps = int(telemetry.get("batch_steps", session.batch_steps))
    session.batch_seconds = float(telemetry.get("batch_seconds", session.batch_seconds))
    try:
        outcome = body(session, registration)
    except WorkerError as exc:
        print(f"{name}: {exc}", file=sys.stderr)
        return 1
    except known_errors as exc:
        print(f"{name}: {exc}", file=sys.stderr)
        session.finish(Phase.FAILED, str(exc))
        return known_exit_code
    except Exception as exc:
        session.finish(Phase.FAILED, f"{type(exc).__name__}: {exc}")
        raise
    if outcome == "stopped":
        session.finish(Phase.CANCELLED, "stopped on request")
    else:
        session.finish(Phase.COMPLETED, "budget reached")
    return 0


def exit_now(code: int) -> None:
    """End the worker process with ``code`` after :func:`run_worker`, skipping Python's teardown.

    The daemon ends a run when its process is gone; once ``run_worker`` returned, the session has
    finished (every message acknowledged) and nothing of the run is left to write, but unloading
    the worker's libraries still takes tens of milliseconds (the random worker) to a quarter of a
    second (SPADE, its server, SQLAlchemy). Only for workers whose own files are closed by then:
    atexit handlers do not run (a library that writes at exit, like a TensorBoard writer or W&B,
    needs the normal ``sys.exit``).
    """
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


_RETRYABLE = frozenset(
    {
        grpc.StatusCode.UNAVAILABLE,
        grpc.StatusCode.CANCELLED,
        grpc.StatusCode.UNKNOWN,
        grpc.StatusCode.INTERNAL,
        grpc.StatusCode.DEADLINE_EXCEEDED,
    }
)


def _rpc_text(exc: grpc.RpcError) -> str:
    code, details = rpc_status(exc)
    return f"{code.name}: {details}"
