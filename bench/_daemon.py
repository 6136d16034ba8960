"""What every bench shares: stopping the daemon it started and waiting until the process is gone."""

from __future__ import annotations

import contextlib
import os
import sys
import time

from gym_gui.core.errors import GymGuiError
from gym_gui.protocol.client import DaemonClient


def stop_daemon(client: DaemonClient, timeout: float = 10.0) -> None:
    """Ask the daemon to shut down and wait until its process is gone, so its files can be removed."""
    pid = client.info.pid
    with contextlib.suppress(GymGuiError):
        client.shutdown()
    client.close()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            # DaemonClient.connect started it, so it is our child: reap it (a zombie still "exists").
            if os.waitpid(pid, os.WNOHANG)[0] == pid:
                return
        except ChildProcessError:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return
        time.sleep(0.05)
    print(f"warning: daemon pid {pid} still running {timeout:.0f}s after shutdown", file=sys.stderr)
