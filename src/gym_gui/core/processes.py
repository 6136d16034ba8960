"""Processes by pid: whether one is still there (the daemon's workers, a daemon a client stops)."""

from __future__ import annotations

import os


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
