"""Helpers shared by the suite: waiting on conditions, daemon processes, small run configs."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from gym_gui.core.config import RunConfig, parse_run_config
from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.home import Home
from gym_gui.storage.registry import RunRegistry


def wait_until(predicate: Callable[[], Any], timeout: float = 30.0, what: str = "condition") -> Any:
    """Poll ``predicate`` until it returns something truthy; fail the test after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(0.02)


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(") ", 1)[1][:1] != "Z"
    except OSError:
        return False


def random_config(env_id: str = "FrozenLake-v1", **budget: int) -> RunConfig:
    return parse_run_config(
        {"worker": "random", "env_id": env_id, "seed": 0, "budget": budget or {"episodes": 5}}
    )


def stop_daemon(client: DaemonClient) -> None:
    pid = client.info.pid
    try:
        client.shutdown()
    except Exception:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    client.close()
    wait_until(lambda: not pid_alive(pid), 20, "the daemon to exit")


def kill_run_workers(home: Home) -> None:
    # Workers live in their own sessions: a test must not leave any behind.
    registry = RunRegistry(home.registry_path)
    for record in registry.list(include_archived=True):
        if record.pid and pid_alive(record.pid):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(record.pid, signal.SIGKILL)
    registry.close()


@contextlib.contextmanager
def module_daemon(root: Path, bundles: str, daemon_args: list[str]) -> Iterator[tuple[DaemonClient, Home]]:
    """A daemon on a fresh home at ``root`` for a whole test module (CleanRL runs are the slow part,
    so a module's tests share them); its run workers are killed and it is stopped at the end."""
    with pytest.MonkeyPatch.context() as env:
        env.setenv("GYM_GUI_HOME", str(root))
        env.setenv("GYM_GUI_BUNDLES", bundles)
        env.setenv("OMP_NUM_THREADS", "1")
        home = Home(root).ensure()
        client = DaemonClient.connect(home.root, daemon_args=daemon_args)
        try:
            yield client, home
        finally:
            kill_run_workers(home)
            stop_daemon(client)
