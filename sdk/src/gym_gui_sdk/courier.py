"""The sending side of a worker's ``Publish`` stream: in the worker's process, or in a courier process.

A :class:`~gym_gui_sdk.worker.WorkerSession` numbers its messages, keeps those not yet confirmed and
reconnects; what carries them to the daemon is one of two streams here, with the same three calls
(``open``, ``send``, ``end``) and the daemon's control messages read back as an iterator:

- :class:`LocalStream`: gRPC in the worker's own process. A session of a process that runs many
  (gym_gui's window playing by hand, a bench's simulated workers) uses it.
- :class:`CourierStream`: gRPC in a child process, ``python -m gym_gui_sdk.courier``, fed through a
  pipe. A worker process the daemon started uses it: gRPC's threads then never take the GIL from the
  stepping loop (each batch sent and each acknowledgement read is several wake-ups of Python code
  on gRPC's threads, and on a loop of microsecond steps each wake-up stalls it). The worker
  serialises a message and writes it to the pipe; the courier hands the bytes to gRPC as they are.

Frames on the courier's pipes are a little-endian ``uint32`` length, one kind byte, the payload.
Worker to courier: ``O`` open a stream (JSON: address, CA, metadata, outbox size), ``M`` a serialised
``WorkerMessage``, ``E`` the end of the stream's messages. Courier to worker: ``C`` a serialised
``ControlMessage``, ``D`` the stream ended, ``F`` it failed (JSON: the gRPC status code's name and
the details). Nothing is lost on the way: a full outbox stops the courier reading the pipe, and a
full pipe blocks the worker's write, as gRPC's flow control blocks a local stream.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import queue
import signal
import struct
import subprocess
import sys
import threading
from collections.abc import Iterator
from typing import IO, Any

import grpc

from gym_gui_sdk import trainer_pb2 as pb
from gym_gui_sdk.channel import WorkerError, open_channel, rpc_status

# The Publish method's path, from the protocol's own description.
_METHOD = pb.DESCRIPTOR.services_by_name["WorkerService"].methods_by_name["Publish"]
_PUBLISH = f"/{_METHOD.containing_service.full_name}/{_METHOD.name}"
_FRAME = struct.Struct("<IB")
_OPEN, _MESSAGE, _END_STREAM = ord("O"), ord("M"), ord("E")
_CONTROL, _ENDED, _FAILED = ord("C"), ord("D"), ord("F")
# The worker-to-courier pipe's size: a few batches, so a write rarely waits for the courier to read.
_PIPE_BYTES = 4 * 1024 * 1024
_F_SETPIPE_SZ = getattr(fcntl, "F_SETPIPE_SZ", 1031)
_END = object()
_STOPS = {signal.SIGTERM, signal.SIGINT}


class StreamBroken(grpc.RpcError):
    """The courier's stream ended with a gRPC status (or the courier itself is gone)."""

    def __init__(self, code: grpc.StatusCode, details: str) -> None:
        super().__init__(f"{code.name}: {details}")
        self._code = code
        self._details = details

    def code(self) -> grpc.StatusCode:
        return self._code

    def details(self) -> str:
        return self._details


class _Outbox:
    """The messages on their way to gRPC's sending thread, at most ``size`` of them.

    A ``queue.Queue`` would do, but its put takes the mutex the sending thread holds while it waits
    for the GIL to return from its get: the stepping thread then stalls once a batch (about a
    microsecond a step at 512-step batches). Here a put is a ``SimpleQueue``'s (no mutex), and only
    a full outbox waits, on an event the getter sets.
    """

    def __init__(self, size: int) -> None:
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._size = size
        self._room = threading.Event()
        self._room.set()

    def put(self, item: Any, timeout: float | None = None) -> None:
        """Add ``item``, waiting while the outbox is full.

        Raises:
            queue.Full: still full after ``timeout`` seconds.
        """
        if self._queue.qsize() >= self._size:
            self._room.clear()
            # Looked at again after the clear: a get in between has set it, or left room.
            if self._queue.qsize() >= self._size and not self._room.wait(timeout):
                raise queue.Full
        self._queue.put(item)

    def put_end(self) -> None:
        """End the outbox's stream after what it holds, full or not (the stream is over or cancelled)."""
        self._queue.put(_END)

    def get(self) -> Any:
        item = self._queue.get()
        if not self._room.is_set():
            self._room.set()
        return item


def _drain(outbox: _Outbox) -> Iterator[Any]:
    while True:
        item = outbox.get()
        if item is _END:
            return
        yield item


# A batch's packed observations of at least this many bytes are written apart from the rest of its message.
_APART_BYTES = 64 * 1024
# The keys of the two length-delimited fields a batch's packed observations are written under.
_STEPS_KEY = bytes([pb.WorkerMessage.DESCRIPTOR.fields_by_name["steps"].number << 3 | 2])
_ARRAY_KEY = bytes([pb.StepBatch.DESCRIPTOR.fields_by_name["observation_array"].number << 3 | 2])


def _varint(value: int) -> bytes:
    out = bytearray()
    while value > 0x7F:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def serialize(message: pb.WorkerMessage) -> bytes:
    """The wire bytes of ``message``: what ``SerializeToString`` gives, or, for a step batch with large
    packed observations, bytes that parse to the same message, made ten times faster.

    protobuf's C serialiser (upb) writes a large bytes field at about half a gigabyte a second, ten
    times slower than copying it: a batch of 20 Atari screens (2 MB) took 4-5 ms, as long as eight
    of the env's steps. Such a batch is written as the message without its packed observations,
    then a second ``steps`` field holding only them, which a parser merges into the first
    (protobuf's rule for a message field seen twice). ``message`` itself is left as it is: it is
    kept to be sent again after a reconnect, and gRPC may serialise it on another thread.
    """
    if message.WhichOneof("body") != "steps" or not message.steps.observation_dtype:
        return message.SerializeToString()
    packed = message.steps.observation_array
    if len(packed) < _APART_BYTES:
        return message.SerializeToString()
    rest = pb.WorkerMessage()
    rest.CopyFrom(message)  # cheap: upb shares the copied bytes
    rest.steps.ClearField("observation_array")
    array_field = _ARRAY_KEY + _varint(len(packed))
    steps_field = _STEPS_KEY + _varint(len(array_field) + len(packed))
    return b"".join((rest.SerializeToString(), steps_field, array_field, packed))


class LocalStream:
    """The Publish stream sent by gRPC in this process, on a channel of its own.

    With ``raw`` it takes and gives bytes, serialised messages passed through as they are: the
    courier process's stream.
    """

    def __init__(self, raw: bool = False) -> None:
        self._channel: grpc.Channel | None = None
        self._outbox = _Outbox(1)
        self._serialize = None if raw else serialize
        self._deserialize = None if raw else pb.ControlMessage.FromString

    def start(self) -> None:
        """Nothing to start ahead of the first :meth:`open`."""

    def open(
        self, address: str, tls_ca: str | None, metadata: list[tuple[str, str]], size: int
    ) -> Iterator[Any]:
        """Open a stream to ``address`` (the one before, if any, is closed); returns the daemon's
        control messages, raising ``grpc.RpcError`` when the stream breaks.

        Raises:
            WorkerError: the CA certificate cannot be read.
        """
        self.close()
        self._channel = open_channel(address, tls_ca)
        self._outbox = outbox = _Outbox(size)
        publish = self._channel.stream_stream(
            _PUBLISH, request_serializer=self._serialize, response_deserializer=self._deserialize
        )
        return iter(publish(_drain(outbox), metadata=tuple(metadata)))

    def send(self, message: Any, timeout: float) -> None:
        """Hand ``message`` to gRPC.

        Raises:
            queue.Full: the outbox stayed full for ``timeout`` seconds (the daemon is behind).
        """
        self._outbox.put(message, timeout=timeout)

    def end(self) -> None:
        """No more messages on this stream: gRPC half-closes it once the outbox is sent."""
        self._outbox.put_end()

    def close(self) -> None:
        """Cancel the stream if it is still open, and let gRPC's thread that sends it go."""
        if self._channel is not None:
            self._channel.close()
            self._channel = None
        self._outbox.put_end()


class CourierStream:
    """The Publish stream sent by a courier process (``python -m gym_gui_sdk.courier``).

    The courier is started by :meth:`start` (before registering, so its start-up overlaps the
    worker's), again by :meth:`open` if it is gone, and ends when :meth:`close` closes its pipe. It
    is in the worker's process group and ignores SIGTERM and SIGINT: a stop reaches the worker,
    which ends its stream; a kill of the group ends both.
    """

    def __init__(self) -> None:
        self._process: subprocess.Popen[bytes] | None = None
        self._to: IO[bytes] | None = None
        self._from: IO[bytes] | None = None

    @property
    def pid(self) -> int | None:
        """The courier's process id (None before :meth:`start` and after :meth:`close`)."""
        return self._process.pid if self._process is not None else None

    def start(self) -> None:
        if self._process is not None and self._process.poll() is None:
            return
        self.close()
        to_read, to_write = os.pipe()
        from_read, from_write = os.pipe()
        with contextlib.suppress(OSError):  # a larger pipe where the system allows it
            fcntl.fcntl(to_write, _F_SETPIPE_SZ, _PIPE_BYTES)
        # Born with SIGTERM and SIGINT blocked (a child keeps its parent's signal mask), so one sent
        # while it starts waits until main() ignores them.
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, _STOPS)
        try:
            self._process = subprocess.Popen(
                [sys.executable, "-m", "gym_gui_sdk.courier", str(to_read), str(from_write)],
                pass_fds=(to_read, from_write),
                stdin=subprocess.DEVNULL,
            )
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
            os.close(to_read)
            os.close(from_write)
        self._to = open(to_write, "wb")  # noqa: SIM115 - held until close()
        self._from = open(from_read, "rb")  # noqa: SIM115 - held until close()

    def open(
        self, address: str, tls_ca: str | None, metadata: list[tuple[str, str]], size: int
    ) -> Iterator[Any]:
        """Have the courier open a stream to ``address``; returns the daemon's control messages,
        raising :class:`StreamBroken` when the stream breaks or the courier is gone."""
        self.start()
        self._write(
            _OPEN,
            json.dumps({"address": address, "tls_ca": tls_ca, "metadata": metadata, "size": size}).encode(),
        )
        return self._responses()

    def send(self, message: pb.WorkerMessage, timeout: float) -> None:
        """Hand ``message`` to the courier (waiting while its pipe is full: the courier reads on
        whatever becomes of the stream, so the wait ends)."""
        del timeout
        self._write(_MESSAGE, serialize(message))

    def end(self) -> None:
        self._write(_END_STREAM)

    def close(self) -> None:
        """Close the courier's pipes; it ends its stream, if one is open, and exits."""
        for pipe in (self._to, self._from):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()
        self._to = self._from = None
        # Not waited for: it ends by itself once its stream has (the worker's exit need not wait).
        self._process = None

    def _write(self, kind: int, payload: bytes = b"") -> None:
        # A courier that is gone shows on the reading side (its pipe ends): the session reconnects
        # and sends again what was not confirmed, so a write to a closed pipe is dropped.
        if self._to is not None:
            _write_frame(self._to, kind, payload)

    def _responses(self) -> Iterator[pb.ControlMessage]:
        source = self._from
        while True:
            frame = _read_frame(source) if source is not None else None
            if frame is None:
                raise StreamBroken(grpc.StatusCode.UNAVAILABLE, "the courier process ended")
            kind, payload = frame
            if kind == _CONTROL:
                yield pb.ControlMessage.FromString(payload)
            elif kind == _ENDED:
                return
            elif kind == _FAILED:
                failure = json.loads(payload)
                raise StreamBroken(grpc.StatusCode[failure["code"]], failure["details"])


def _write_frame(sink: IO[bytes], kind: int, payload: bytes = b"") -> None:
    """Write one frame to ``sink``; dropped when the other side has closed it."""
    with contextlib.suppress(BrokenPipeError, ValueError):
        sink.write(_FRAME.pack(len(payload), kind))
        sink.write(payload)
        sink.flush()


def _read_frame(source: IO[bytes]) -> tuple[int, bytes] | None:
    """The next frame of ``source``; None at its end (a frame cut short counts as the end)."""
    try:
        header = source.read(_FRAME.size)
        if len(header) < _FRAME.size:
            return None
        length, kind = _FRAME.unpack(header)
        payload = source.read(length) if length else b""
    except (OSError, ValueError):
        return None
    return (kind, payload) if len(payload) == length else None


# ---------------------------------------------------------------- the courier process


class _Courier:
    """The courier's side: a raw :class:`LocalStream` opened, fed and ended as the worker's frames say."""

    def __init__(self, source: IO[bytes], sink: IO[bytes]) -> None:
        self._source = source
        self._sink = sink
        self._sink_lock = threading.Lock()
        self._stream = LocalStream(raw=True)
        self._failed = threading.Event()
        self._reader: threading.Thread | None = None

    def serve(self) -> None:
        """Until the worker closes the pipe: after an ``E`` the stream ends cleanly, without one it
        is cancelled (the worker is gone, as a worker sending by itself would be)."""
        ended = True
        while (frame := _read_frame(self._source)) is not None:
            kind, payload = frame
            if kind == _MESSAGE:
                self._send(payload)
            elif kind == _OPEN:
                self._open(json.loads(payload))
                ended = False
            elif kind == _END_STREAM:
                self._stream.end()
                ended = True
        if not ended:
            self._stream.close()
        self._join_reader()
        self._stream.close()

    def _open(self, request: dict[str, Any]) -> None:
        self._stream.close()  # the stream before, broken: the worker opens a new one
        self._join_reader()
        self._failed = failed = threading.Event()
        try:
            responses = self._stream.open(
                request["address"],
                request["tls_ca"],
                [tuple(pair) for pair in request["metadata"]],
                int(request["size"]),
            )
        except WorkerError as exc:  # an unreadable CA certificate: the stream fails with why
            failed.set()
            self._write(_FAILED, _failure(grpc.StatusCode.UNAVAILABLE, str(exc)))
            return
        self._reader = threading.Thread(target=self._read, args=(responses, failed), daemon=True)
        self._reader.start()

    def _join_reader(self) -> None:
        if self._reader is not None:
            self._reader.join(30)
            self._reader = None

    def _send(self, message: bytes) -> None:
        failed = self._failed
        while not failed.is_set():  # a failed stream's messages are dropped: the worker sends them again
            try:
                self._stream.send(message, timeout=0.5)
                return
            except queue.Full:
                continue

    def _read(self, responses: Iterator[bytes], failed: threading.Event) -> None:
        try:
            for control in responses:
                self._write(_CONTROL, control)
        except grpc.RpcError as exc:
            failed.set()
            self._write(_FAILED, _failure(*rpc_status(exc)))
            return
        failed.set()
        self._write(_ENDED)

    def _write(self, kind: int, payload: bytes = b"") -> None:
        with self._sink_lock:  # the reader's control messages and the serving loop's failures
            _write_frame(self._sink, kind, payload)


def _failure(code: grpc.StatusCode, details: str) -> bytes:
    return json.dumps({"code": code.name, "details": details}).encode()


def main(argv: list[str]) -> int:
    """``python -m gym_gui_sdk.courier IN_FD OUT_FD``, started by :class:`CourierStream`."""
    for stop in _STOPS:
        signal.signal(stop, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOPS)
    source_fd, sink_fd = (int(fd) for fd in argv)
    with open(source_fd, "rb") as source, open(sink_fd, "wb") as sink:
        _Courier(source, sink).serve()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
