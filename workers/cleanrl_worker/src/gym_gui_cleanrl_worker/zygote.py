"""The CleanRL fork server ("zygote"): scripts start from an interpreter that has imported torch already.

`python -m gym_gui_cleanrl_worker.zygote --socket PATH` (started by the daemon, one per bundle
interpreter) imports what every CleanRL script imports (numpy, torch, TensorBoard's writer, gym,
gymnasium, tyro, the launcher) with every numeric thread pool at one thread, checks that it holds
one thread only, and listens on a Unix socket. Each connection is one run:

    worker → zygote   {"argv": launcher arguments, "cwd": …, "env": {…}} + its stdout and stderr
                      pipe ends (SCM_RIGHTS)
    zygote → worker   {"pid": N} once the script is forked, {"returncode": R} once it has ended
                      (R as ``Popen.returncode``: the exit code, or minus the signal that ended it)
    worker closes     the script's pid is released (reaped); a connection closed before the
                      script ended kills the script's process group (a worker that dies takes
                      its script with it); a keeper that dies takes its script with it too
                      (PR_SET_PDEATHSIG)

The zygote forks a *keeper* per connection (reaped by the zygote between connections; a keeper
outlives a zygote the daemon stops, as the run's worker does); the keeper forks the script,
which becomes a session leader, sets its environment, working directory, fds and signal mask as a
``subprocess.Popen`` child of the worker would have them, and runs ``launch.main(argv)``.

Security: the socket lives in a directory of mode 0700 and is itself 0600, and the keeper refuses a
peer of another user (SO_PEERCRED): only the user running the daemon can start a script through it.

The worker side is :class:`ForkedScript`, whose interface is the part of ``subprocess.Popen`` the
worker uses (``pid``, ``stdout``, ``stderr``, ``send_signal``, ``kill``, ``wait``, ``returncode``).
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import hashlib
import io
import json
import os
import select
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from gym_gui_sdk import THREAD_ENV
from gym_gui_sdk.json_object import json_object

# What every CleanRL script imports, in import order; the first three are required.
PRELOADED = (
    "numpy",
    "torch",
    "gymnasium",
    "torch.nn",
    "torch.optim",
    "torch.distributions.categorical",
    "torch.distributions.normal",
    "torch.utils.tensorboard",
    "gym",
    "tyro",
    "stable_baselines3.common.buffers",
    "cleanrl_utils",
    "gym_gui_cleanrl_worker.launch",
)
_REQUIRED = 3
# "0" in the daemon's environment turns warm starts off; in a worker's, starts its script cold.
WARM_SWITCH = "GYM_GUI_CLEANRL_WARM"
_LENGTH = struct.Struct("!I")
_MAX_REQUEST = 1 << 22
# How often an idle zygote looks whether its daemon is still there.
_PARENT_CHECK_SECONDS = 5.0
# prctl's option: the signal a process gets when its parent ends (<linux/prctl.h>).
_PR_SET_PDEATHSIG = 1


class ZygoteError(Exception):
    """The zygote could not start the script (the worker starts it itself instead)."""


def socket_path(home: Path, python: str) -> Path:
    """Where the zygote of interpreter ``python`` listens for the daemon of ``home``: the daemon
    starts it there, the worker (whose own interpreter it is) looks there."""
    key = hashlib.sha256(os.path.abspath(python).encode()).hexdigest()[:12]
    return home / "zygotes" / f"{key}.sock"


# Bytes an AF_UNIX address holds (sun_path, its terminating zero included).
_ADDRESS_BYTES = 108


@contextlib.contextmanager
def unix_address(path: Path) -> Iterator[str]:
    """``path`` as an AF_UNIX address to bind or connect to. A deep GYM_GUI_HOME makes a socket's path
    longer than an address holds ("AF_UNIX path too long"): then it is reached through an open
    descriptor of its directory, ``/proc/self/fd/N/<name>``, for as long as the block lasts."""
    if len(os.fsencode(path)) < _ADDRESS_BYTES:
        yield str(path)
        return
    directory = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        yield f"/proc/self/fd/{directory}/{path.name}"
    finally:
        os.close(directory)


def single_threaded() -> bool:
    """Whether this process has one thread, to Python and to the kernel (a fork copies only the caller)."""
    return threading.active_count() == 1 and len(os.listdir("/proc/self/task")) == 1


# ------------------------------------------------------------------ the server


@dataclass
class _Job:
    argv: list[str]


def preload() -> list[str]:
    """Import :data:`PRELOADED` (thread pools at one thread); returns the optional modules missing.

    The pools are held at one thread so none is started: OpenBLAS starts its pool when numpy loads
    it, and a forked child would inherit its state without its threads."""
    for name in THREAD_ENV:
        os.environ[name] = "1"
    missing = []
    for index, module in enumerate(PRELOADED):
        try:
            __import__(module)
        except ImportError:
            if index < _REQUIRED:
                raise
            missing.append(module)
    return missing


def serve(path: Path) -> _Job:
    """Listen on ``path`` and fork a keeper per connection; returns only in a forked script."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
    with contextlib.suppress(FileNotFoundError):
        tmp.unlink()
    old_umask = os.umask(0o177)
    try:
        with unix_address(tmp) as address:
            listener.bind(address)
    finally:
        os.umask(old_umask)
    listener.listen(16)
    os.replace(tmp, path)  # connectable at its name only once listening
    print(f"zygote {os.getpid()} ready on {path}", flush=True)
    parent = os.getppid()
    while True:
        _reap()
        # A zygote whose daemon is gone (killed: it never stopped it) ends too.
        if not select.select([listener], [], [], _PARENT_CHECK_SECONDS)[0]:
            if os.getppid() != parent:
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()
                raise SystemExit(0)
            continue
        conn, _ = listener.accept()
        try:
            if not single_threaded():
                _reply(conn, {"error": f"the zygote holds {threading.active_count()} threads"})
                continue
            sys.stdout.flush()
            sys.stderr.flush()
            if os.fork() == 0:
                listener.close()
                return _keep(conn)  # the keeper returns only in the script
        except OSError as exc:
            print(f"zygote: a connection failed: {exc}", file=sys.stderr, flush=True)
        finally:
            conn.close()


def _reap() -> None:
    """Collect the keepers that have ended (each ends once its run's worker has let go)."""
    while True:
        try:
            pid, _status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _reply(conn: socket.socket, message: dict[str, Any]) -> None:
    conn.sendall(json.dumps(message).encode() + b"\n")


def _receive(conn: socket.socket) -> tuple[dict[str, Any], list[int]]:
    data, fds, _flags, _addr = socket.recv_fds(conn, 1 << 16, 4)
    while len(data) < _LENGTH.size:
        more = conn.recv(1 << 16)
        if not more:
            raise ZygoteError("the request ended early")
        data += more
    (length,) = _LENGTH.unpack_from(data)
    if length > _MAX_REQUEST:
        raise ZygoteError("the request is too large")
    body = data[_LENGTH.size :]
    while len(body) < length:
        more = conn.recv(1 << 16)
        if not more:
            raise ZygoteError("the request ended early")
        body += more
    return json.loads(body), fds


def _keep(conn: socket.socket) -> _Job:
    """The keeper: fork the run's script, tell its pid, then its end (or kill it if the worker goes)."""
    fds: list[int] = []
    try:
        uid = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))[1]
        if uid != os.getuid():
            raise ZygoteError(f"refused a peer of uid {uid}")
        request, fds = _receive(conn)
        if len(fds) != 2:
            raise ZygoteError(f"expected the script's stdout and stderr, got {len(fds)} fds")
        # The script starts with SIGUSR1 blocked (launch.py unblocks it once its handler is in):
        # blocked here before the fork, so no request can reach it before.
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1})
        if not single_threaded():
            raise ZygoteError("the keeper holds more than one thread")
        keeper = os.getpid()
        pid = os.fork()
    except Exception as exc:
        with contextlib.suppress(OSError):
            _reply(conn, {"error": str(exc) or type(exc).__name__})
        os._exit(1)
    if pid == 0:
        try:
            _die_with(keeper)
            return _script(conn, request, fds)
        except BaseException as exc:  # never back into the zygote's loop: this process is the script's
            print(f"gym_gui: the forked script could not start: {exc!r}", file=sys.stderr, flush=True)
            os._exit(1)
    for fd in fds:
        os.close(fd)
    code = 0
    try:
        _reply(conn, {"pid": pid})
        _watch(conn, pid)
    except OSError:
        code = 1
        with contextlib.suppress(OSError):
            os.killpg(pid, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, 0)
    os._exit(code)


def _watch(conn: socket.socket, pid: int) -> None:
    """Until the worker closes: tell it the script's end; kill the script if the worker goes first."""
    pidfd = os.pidfd_open(pid)
    poller = select.poll()
    poller.register(conn, select.POLLIN)
    poller.register(pidfd, select.POLLIN)
    ended = False
    while True:
        for fd, _event in poller.poll():
            if fd == pidfd and not ended:
                ended = True
                poller.unregister(pidfd)
                # Not reaped yet (WNOWAIT): the pid stays the script's until the worker has let go,
                # so a signal it sends meanwhile cannot reach another process.
                info = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)
                assert info is not None
                code = info.si_status if info.si_code == os.CLD_EXITED else -info.si_status
                _reply(conn, {"returncode": code})
            elif fd == conn.fileno():
                if conn.recv(4096):
                    continue  # the worker says nothing else; ignored
                if not ended:  # the worker is gone (killed, cancelled): its script goes too
                    with contextlib.suppress(OSError):
                        os.killpg(pid, signal.SIGKILL)
                os.close(pidfd)
                return


def _die_with(keeper: int) -> None:
    """Have the kernel kill this script the moment its keeper ends, however it ends: a keeper killed
    cannot kill its script, which went on for seconds after its run had ended."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")
    if os.getppid() != keeper:  # it ended before the signal was armed
        os._exit(1)


def _script(conn: socket.socket, request: dict[str, Any], fds: list[int]) -> _Job:
    """In the forked script: become what ``Popen(argv, cwd=…, env=…, stdin=DEVNULL, stdout=…, stderr=…)``
    would have started, then hand the launcher's arguments back to :func:`main`."""
    os.setsid()  # its own process group: the keeper kills all of it when the worker dies
    conn.close()
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(fds[0], 1)
    os.dup2(fds[1], 2)
    for fd in {devnull, *fds} - {0, 1, 2}:
        os.close(fd)
    env = {str(k): str(v) for k, v in dict(request["env"]).items()}
    os.environ.clear()
    os.environ.update(env)
    os.chdir(str(request["cwd"]))
    unbuffered = bool(env.get("PYTHONUNBUFFERED"))
    sys.stdin = io.TextIOWrapper(io.FileIO(0, "r", closefd=False), encoding="utf-8")
    sys.stdout = io.TextIOWrapper(
        io.FileIO(1, "w", closefd=False), encoding="utf-8", write_through=unbuffered
    )
    sys.stderr = io.TextIOWrapper(
        io.FileIO(2, "w", closefd=False),
        encoding="utf-8",
        errors="backslashreplace",
        line_buffering=True,
        write_through=unbuffered,
    )
    _fresh_state(env)
    return _Job(argv=[str(arg) for arg in request["argv"]])


def _fresh_state(env: dict[str, str]) -> None:
    """What a fresh interpreter would differ in: the run's thread pool size, unseeded generators."""
    import random

    import numpy
    import torch

    threads = env.get("OMP_NUM_THREADS", "")
    if threads.isdigit() and int(threads) > 0:
        torch.set_num_threads(int(threads))
    random.seed()
    numpy.random.seed()
    torch.seed()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m gym_gui_cleanrl_worker.zygote",
        description="Fork server: start CleanRL scripts from an interpreter that has imported them.",
    )
    parser.add_argument("--socket", required=True, help="the Unix socket to listen on (its directory 0700)")
    options = parser.parse_args(argv)
    missing = preload()
    if missing:
        print(f"zygote: not preloaded (not installed): {', '.join(missing)}", flush=True)
    if not single_threaded():
        print(f"zygote: {threading.active_count()} threads after the imports; refusing to fork", flush=True)
        return 1
    job = serve(Path(options.socket))
    from gym_gui_cleanrl_worker import launch

    sys.argv = [str(launch.__file__), *job.argv]
    return launch.main(job.argv)


# ------------------------------------------------------------------ the worker's side


class ForkedScript:
    """A script the zygote forked, driven as the worker drives a ``subprocess.Popen``."""

    def __init__(self, conn: socket.socket, pid: int, stdout: IO[bytes], stderr: IO[bytes]) -> None:
        self._conn = conn
        self.pid = pid
        self.stdout = stdout
        self.stderr = stderr
        self.returncode: int | None = None
        self._buffer = b""

    @classmethod
    def start(cls, path: str, argv: list[str], cwd: Path, env: dict[str, str]) -> ForkedScript:
        """Ask the zygote at ``path`` to fork the launcher with ``argv`` in ``cwd`` with ``env``.

        Raises:
            ZygoteError: it cannot (no zygote there, it refused, it went away).
        """
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        out_read, out_write = os.pipe()
        err_read, err_write = os.pipe()
        try:
            with unix_address(Path(path)) as address:
                conn.connect(address)
            body = json.dumps({"argv": argv, "cwd": str(cwd), "env": env}).encode()
            socket.send_fds(conn, [_LENGTH.pack(len(body)) + body], [out_write, err_write])
            os.close(out_write)
            os.close(err_write)
            out_write = err_write = -1
            script = cls(conn, 0, io.FileIO(out_read, "r"), io.FileIO(err_read, "r"))
            reply = script._message()
            if "pid" not in reply:
                raise ZygoteError(str(reply.get("error", "no pid in its answer")))
            script.pid = int(reply["pid"])
            return script
        except (OSError, ValueError, ZygoteError) as exc:
            conn.close()
            for fd in (out_read, err_read, out_write, err_write):
                with contextlib.suppress(OSError):
                    os.close(fd)
            raise ZygoteError(str(exc)) from None

    def _message(self) -> dict[str, Any]:
        while b"\n" not in self._buffer:
            chunk = self._conn.recv(4096)
            if not chunk:
                raise ZygoteError("the zygote closed the connection")
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return json_object(
            line,
            lambda why: ZygoteError(f"unexpected answer {line!r}: {why}"),
            lambda message: ZygoteError(f"unexpected answer {message!r}"),
        )

    def wait(self) -> int:
        """The script's end (``Popen.returncode``); its pid is released after this."""
        if self.returncode is None:
            try:
                code = int(self._message()["returncode"])
            except (OSError, ValueError, KeyError, ZygoteError):
                code = -int(signal.SIGKILL)  # its keeper was killed: so was the script
            self.returncode = code
            self._conn.close()
        return self.returncode

    def send_signal(self, signum: int) -> None:
        if self.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signum)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


# ------------------------------------------------------------------ the daemon's side

# How long a zygote may take to import everything (a cold disk, a busy machine) before runs start cold.
_START_TIMEOUT = 180.0
# Variables of the daemon's environment a zygote keeps (what the imports may read; the rest is the run's).
_INHERITED_ENV = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "USER", "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")


@dataclass
class _Started:
    process: subprocess.Popen[bytes]
    socket: Path
    stamp: str


class Zygotes:
    """The daemon's zygotes, one per interpreter: started on the first run that asks, started again
    when one has died or its bundle was reinstalled (``stamp`` changed), stopped by :meth:`close`.

    ``<home>/zygotes`` (made 0700) holds each zygote's socket and log (``<key>.sock``, ``<key>.log``).
    """

    def __init__(self, home: Path) -> None:
        self.home = home
        self.directory = home / "zygotes"
        self._lock = threading.Lock()
        self._started: dict[Path, _Started] = {}

    def ensure(self, python: Path, stamp: str = "") -> str:
        """The socket of ``python``'s zygote, starting it first when needed (seconds: it imports torch).

        Raises:
            ZygoteError: it could not start, with its last line of output.
        """
        with self._lock:
            started = self._started.get(python)
            if started is not None:
                if started.process.poll() is None and started.stamp == stamp and started.socket.exists():
                    return str(started.socket)
                self._stop(started)
                del self._started[python]
            started = self._start(python, stamp)
            self._started[python] = started
            return str(started.socket)

    def _start(self, python: Path, stamp: str) -> _Started:
        self.directory.mkdir(parents=True, exist_ok=True)
        os.chmod(self.directory, 0o700)
        path = socket_path(self.home, str(python))
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        log_path = path.with_suffix(".log")
        env = {name: os.environ[name] for name in _INHERITED_ENV if name in os.environ}
        with open(log_path, "ab") as log:
            try:
                process = subprocess.Popen(
                    [str(python), "-m", "gym_gui_cleanrl_worker.zygote", "--socket", str(path)],
                    cwd=self.directory,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    env=env,
                    start_new_session=True,
                )
            except OSError as exc:
                raise ZygoteError(f"could not start {python}: {exc}") from None
        deadline = time.monotonic() + _START_TIMEOUT
        while not path.exists():
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                process.wait()
                lines = log_path.read_text(errors="replace").strip().splitlines()
                raise ZygoteError(f"it did not start: {lines[-1] if lines else 'no output'}")
            time.sleep(0.05)
        return _Started(process, path, stamp)

    @staticmethod
    def _stop(started: _Started) -> None:
        # Scripts it forked are their keepers' (and their workers'): they go on.
        if started.process.poll() is None:
            started.process.terminate()
            try:
                started.process.wait(10)
            except subprocess.TimeoutExpired:
                started.process.kill()
                started.process.wait()
        with contextlib.suppress(FileNotFoundError):
            started.socket.unlink()

    def close(self) -> None:
        """Stop every zygote (the daemon is stopping)."""
        with self._lock:
            for started in self._started.values():
                self._stop(started)
            self._started.clear()


if __name__ == "__main__":
    sys.exit(main())
