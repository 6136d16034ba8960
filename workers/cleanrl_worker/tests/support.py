"""What the CleanRL tests share: a run config of a script, and the processes of a run's script."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from gym_gui.core.config import RunConfig, parse_run_config
from tests.support import process_alive

SECRET = "gymgui-test-secret-7f3a9c"


def cleanrl_config(algo: str, env_id: str, timesteps: int, **extra: Any) -> RunConfig:
    return parse_run_config(
        {
            "worker": "cleanrl",
            "algorithm": algo,
            "env_id": env_id,
            "seed": 1,
            "budget": {"timesteps": timesteps},
            **extra,
        }
    )


def _processes_mentioning(text: str) -> list[int]:
    """The live processes with ``text`` in their argv or working in the directory ``text`` (a script
    the zygote forked has the zygote's argv; it works in its run directory)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                cwd = os.readlink(entry / "cwd")
            except OSError:
                continue
            if (text in cmdline or cwd == text) and process_alive(int(entry.name)):
                found.append(int(entry.name))
    return found


def _process_state(pid: int) -> str:
    """The one-letter state /proc gives a process (T: stopped, by SIGSTOP)."""
    with open(f"/proc/{pid}/stat") as stat:
        return stat.read().split(") ", 1)[1][:1]


def script_pid(run_dir: Path) -> int:
    """The process running the run's CleanRL script: the launcher, working in the run directory, not
    its worker (``… gym_gui_cleanrl_worker train …``) nor the worker's courier (``… gym_gui_sdk.courier …``)."""
    found = [
        pid
        for pid in _processes_mentioning(str(run_dir))
        if os.readlink(f"/proc/{pid}/cwd") == str(run_dir)
        and not any(
            name in Path(f"/proc/{pid}/cmdline").read_bytes()
            for name in (b"gym_gui_cleanrl_worker\0train", b"gym_gui_sdk.courier")
        )
    ]
    assert len(found) == 1, f"expected one script process for {run_dir}, found {found}"
    return found[0]
