"""Processes by pid: whether one is still there, and waiting for one to end (the daemon's workers,
a daemon a client stops)."""

from __future__ import annotations

import os
import select


def process_alive(pid: int) -> bool:
    """Whether a process with ``pid`` exists (and is not a zombie)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            return stat.read().split(") ", 1)[1][:1] != "Z"
    except (OSError, IndexError):
        return True


def wait_exit(pid: int, timeout: float) -> bool:
    """Block until the local process ``pid`` has ended (a zombie has) or ``timeout`` passes; returns
    whether it ended. Without pidfds (not Linux) it returns False at once and the supervisor's tick
    notices the end instead. It reaps nothing: the exit status stays its parent's to read."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    except (AttributeError, OSError):
        return False
    try:
        return bool(select.select([fd], [], [], timeout)[0])
    finally:
        os.close(fd)
