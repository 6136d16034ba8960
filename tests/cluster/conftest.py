"""A real local Ray head for the suite's Ray tests: started once, on loopback, and stopped after.

``ray start --head`` is run from the app's venv in a session of its own, with a short temp dir
(Ray's socket paths must stay short); it is stopped by ending the processes of that session only,
so no other Ray on the machine is touched (``ray stop`` would end every Ray of the user).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from ray.job_submission import JobSubmissionClient

from gym_gui.core.processes import process_alive
from tests.support import wait_until


@dataclass(frozen=True)
class RayHead:
    address: str  # the dashboard's URL: what --ray-address takes
    temp_dir: Path  # Ray's logs and session files
    session: int  # the session id its processes share
    client: JobSubmissionClient


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _job_api(address: str) -> JobSubmissionClient | None:
    try:
        client = JobSubmissionClient(address)
        client.list_jobs()
    except Exception:
        return None
    return client


def _session_pids(session: int) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError, ProcessLookupError):
                if os.getsid(int(entry.name)) == session:
                    pids.append(int(entry.name))
    return pids


def _stop(session: int) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in _session_pids(session):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, sig)
        with contextlib.suppress(AssertionError):
            wait_until(
                lambda: not any(process_alive(pid) for pid in _session_pids(session)), 15, "Ray to stop"
            )


@pytest.fixture(scope="session")
def ray_head() -> Iterator[RayHead]:
    temp_dir = Path(tempfile.mkdtemp(prefix="ray", dir="/tmp"))
    dashboard = _free_port()
    ray = Path(sys.executable).parent / "ray"
    argv = [
        str(ray), "start", "--head", "--node-ip-address", "127.0.0.1", "--port", str(_free_port()),
        "--dashboard-host", "127.0.0.1", "--dashboard-port", str(dashboard), "--num-cpus", "2",
        "--include-dashboard", "true", "--temp-dir", str(temp_dir), "--disable-usage-stats",
        # Every port Ray would otherwise take at its fixed default: another Ray on the machine (a
        # user's, a head a killed test run left) must not take the job agent's and fail every submit.
        "--ray-client-server-port", str(_free_port()),
        "--dashboard-agent-listen-port", str(_free_port()),
        "--dashboard-agent-grpc-port", str(_free_port()),
        "--runtime-env-agent-port", str(_free_port()),
        "--metrics-export-port", str(_free_port()),
    ]  # fmt: skip
    starter = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True, text=True
    )
    session = starter.pid
    try:
        output, _ = starter.communicate(timeout=180)
        assert starter.returncode == 0, output
        address = f"http://127.0.0.1:{dashboard}"
        client = wait_until(lambda: _job_api(address), 90, "the Ray head's job API")
        yield RayHead(address, temp_dir, session, client)
    finally:
        _stop(session)
        shutil.rmtree(temp_dir, ignore_errors=True)
