"""Executors: how the supervisor starts a worker process (a local subprocess here; a Ray job in ``ray_jobs``)."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from gym_gui.core.states import RunState

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class LaunchSpec:
    """Everything needed to start one worker: an argument list (never a shell string)."""

    run_id: str
    argv: list[str]
    cwd: Path
    env: dict[str, str]
    stdout_path: Path
    stderr_path: Path
    secret_keys: frozenset[str] = field(default_factory=frozenset)
    claim: str = ""  # a remote executor's launcher claims the rest with this one-time token
    cpus: float = 1.0  # what a remote executor's job reserves (a local process takes what it gets)
    gpus: float = 0.0


class WorkerProcess(Protocol):
    """A started worker, as the supervisor sees it."""

    @property
    def pid(self) -> int | None:
        """Its local process id (None: it runs elsewhere, e.g. a Ray job)."""

    @property
    def handle(self) -> dict[str, str]:
        """What the manifest keeps to find it again after a daemon restart."""

    def outcome(self) -> tuple[RunState, str] | None:
        """An end its exit code does not tell (a lost or externally stopped job), else None."""

    def poll(self) -> int | None:
        """The exit code, or None while it runs."""

    def terminate(self) -> None:
        """Ask the whole process group to stop (SIGTERM)."""

    def kill(self) -> None:
        """Stop the whole process group now (SIGKILL)."""


class Executor(Protocol):
    """Starts workers. A remote one (``remote``) starts them on other machines: there a fixed
    launcher claims the worker's command from the daemon with ``LaunchSpec.claim``, so nothing of
    the run (its secrets least of all) passes through the executor, and the daemon's CA travels as
    text (the path is this machine's)."""

    remote: bool

    def launch(self, spec: LaunchSpec) -> WorkerProcess: ...


class LocalProcess:
    """A worker in its own session and process group, so signals reach its whole tree."""

    def __init__(self, popen: subprocess.Popen[bytes]) -> None:
        self._popen = popen

    @property
    def pid(self) -> int:
        return self._popen.pid

    @property
    def handle(self) -> dict[str, str]:
        return {"kind": "local", "pid": str(self._popen.pid)}

    def outcome(self) -> tuple[RunState, str] | None:
        return None

    def poll(self) -> int | None:
        return self._popen.poll()

    def _signal_group(self, sig: int) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self._popen.pid, sig)

    def terminate(self) -> None:
        self._signal_group(signal.SIGTERM)

    def kill(self) -> None:
        self._signal_group(signal.SIGKILL)


class LocalExecutor:
    """Starts workers as local subprocesses.

    ``start_new_session`` (not ``preexec_fn``) keeps the fork safe beside gRPC's threads and
    makes the worker the leader of its own process group.
    """

    remote = False

    def launch(self, spec: LaunchSpec) -> LocalProcess:
        spec.stdout_path.parent.mkdir(parents=True, exist_ok=True)
        with open(spec.stdout_path, "ab") as out, open(spec.stderr_path, "ab") as err:
            popen = subprocess.Popen(
                spec.argv,
                cwd=spec.cwd,
                env=spec.env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                start_new_session=True,
                close_fds=True,
            )
        log.info("run %s: started pid %d: %s", spec.run_id, popen.pid, " ".join(spec.argv))
        return LocalProcess(popen)


def signal_group(pid: int, sig: int) -> None:
    """Send ``sig`` to the process group ``pid`` leads (or, failing that, to the process alone)."""
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)


def tail(path: Path, max_bytes: int = 2000) -> str:
    """The last ``max_bytes`` of a log file as text (empty when missing)."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - max_bytes))
            return f.read().decode("utf-8", errors="replace").strip()
    except OSError:
        return ""
