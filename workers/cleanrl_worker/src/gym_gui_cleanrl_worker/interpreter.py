"""What the plugin reads of a script interpreter: its package set, and the first line of a failed load's
error (the helpers' JSON answers: ``gym_gui.workers.bundle_answers``; whether its torch sees a GPU:
``gym_gui.workers.run_env``)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path


def loader_line(stderr: str) -> str:
    """The loader's own first line in a failed load's stderr: its ``error:`` line (a ModelError), else the
    exception line a traceback ends with (its message's first line), else the last line."""
    lines = [line.rstrip() for line in stderr.splitlines() if line.strip()]
    for line in lines:
        if line.startswith("error:"):
            return line.removeprefix("error:").strip()
    for line in reversed(lines):
        if re.match(r"^[A-Za-z_][\w.]*(Error|Exception)\b.*:", line):
            return line
    return lines[-1].strip() if lines else ""


def pip_freeze(python: Path) -> list[str]:
    """The interpreter's exact package set (``pip freeze``), or one line saying why it could not be read."""
    try:
        return subprocess.run(
            [str(python), "-m", "pip", "freeze"], capture_output=True, text=True, timeout=120, check=True
        ).stdout.split()
    except (OSError, subprocess.SubprocessError) as exc:
        return [f"(pip freeze failed: {exc})"]
