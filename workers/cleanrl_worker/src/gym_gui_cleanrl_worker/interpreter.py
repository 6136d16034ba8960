"""What the plugin asks of a script interpreter by running it: the worker's helpers' JSON answers, its
package set, and the first line of a failed load's error (whether its torch sees a GPU:
``gym_gui.workers.run_env``)."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any


class InterpreterError(RuntimeError):
    """A helper could not be run in the interpreter, or answered with an error (the message says which)."""


class BundleCall:
    """Runs the CleanRL worker's helper entry points in a bundle interpreter and parses their JSON."""

    def __init__(self, python: Path) -> None:
        self.python = python

    def run(self, module: str, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        """``python -m module args`` in the bundle, its output captured."""
        try:
            return subprocess.run(
                [str(self.python), "-m", module, *args],
                capture_output=True,
                text=True,
                timeout=timeout,
                env={"PATH": "/usr/bin:/bin", "CUDA_VISIBLE_DEVICES": "", "PYTHONDONTWRITEBYTECODE": "1"},
            )
        except (OSError, ValueError, subprocess.TimeoutExpired) as exc:  # ValueError: a NUL in an argument
            raise InterpreterError(f"could not run {self.python}: {exc}") from None

    def __call__(self, module: str, *args: str, timeout: float = 300) -> Any:
        result = self.run(module, *args, timeout=timeout)
        try:
            data = json.loads(result.stdout)
        except ValueError:
            tail = (result.stderr or result.stdout).strip().splitlines()[-3:]
            raise InterpreterError(
                f"{module} failed (exit code {result.returncode}): " + " | ".join(tail)
            ) from None
        if isinstance(data, dict) and "error" in data:
            raise InterpreterError(str(data["error"]))
        return data


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
