"""A worker session's link to the daemon: registering, the Publish stream (sequence numbers,
acknowledgements, sending again after a reconnect) and the daemon's control messages."""

from __future__ import annotations

import json
import logging
import os
import queue
import signal
import threading
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import grpc

from gym_gui_sdk import ENV_TLS_CA, __version__
from gym_gui_sdk import trainer_pb2 as pb
from gym_gui_sdk import trainer_pb2_grpc as pb_grpc
from gym_gui_sdk.channel import WorkerError, open_channel, rpc_status
from gym_gui_sdk.courier import CourierStream, LocalStream
from gym_gui_sdk.json_object import json_object

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Registration:
    """What the daemon tells a worker when it registers."""

    run_id: str
    config: dict[str, Any]
    run_dir: str
    render_fps: float


class SessionLink:
    """The connection under a :class:`~gym_gui_sdk.worker.WorkerSession`, and the state the daemon's
    control messages set (:attr:`stop_requested`, :attr:`paused`, :attr:`held`, :attr:`render_fps`,
    :attr:`checkpoint_requested`).

    Every message sent gets the next sequence number and is kept until the daemon acknowledges it;
    a stream broken by a restarting daemon is opened again at the daemon's new address and what it
    has not confirmed is sent again. ``_lock`` guards the stream and the numbering.
    """

    def __init__(
        self,
        address: str,
        run_id: str,
        run_token: str,
        *,
        outbox_size: int,
        reconnect_seconds: float,
        home: str | None,
        tls_ca: str | None,
        courier: bool,
    ) -> None:
        self.address = address
        self.run_id = run_id
        self._run_token = run_token
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
        self._closed = threading.Event()
        self._registration: Registration | None = None

    def _register(self) -> Registration:
        """Register with the daemon and open the Publish stream.

        Raises:
            WorkerError: when the daemon is unreachable or refuses the run token.
        """
        self._stream.start()  # a courier's start-up overlaps the registration
        try:
            return self._open(self.address)
        except grpc.RpcError as exc:
            raise WorkerError(f"daemon at {self.address} refused registration: {_rpc_text(exc)}") from None

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

    @property
    def paused(self) -> bool:
        return not self._resume.is_set()

    def _await_acknowledged(self, deadline: float, timeout: float) -> None:
        """End the stream once everything is sent, and wait until the daemon confirmed storing it all.

        Raises:
            WorkerError: when the daemon broke the stream for good or did not confirm by ``deadline``.
        """
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

    def close(self) -> None:
        """Let go of the daemon without finishing: the heartbeat stops and the stream is closed.

        For a session whose run the daemon already ended (its stream failed, or it was told to
        stop and has nothing left to say); :meth:`finish` closes a session that ends normally.
        """
        self._closed.set()
        self._stream.close()

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
