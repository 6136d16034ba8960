"""What a kind's plugin asks of its bundle's interpreter: a helper module's JSON answer, and those answers
kept until the bundle is installed again."""

from __future__ import annotations

import copy
import json
import subprocess
import threading
from collections.abc import Callable, Hashable
from pathlib import Path
from typing import Any

from gym_gui.core.errors import ConfigError

# A helper sees none of the daemon's environment (no secrets, no GPU: an answer is about the bundle).
_HELPER_ENV = {"PATH": "/usr/bin:/bin", "CUDA_VISIBLE_DEVICES": "", "PYTHONDONTWRITEBYTECODE": "1"}


def run_helper(
    python: Path, module: str, *args: str, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """``python -m module args``, its output captured.

    Raises:
        ConfigError: the interpreter could not be run, or the helper ran past ``timeout``.
    """
    try:
        return subprocess.run(
            [str(python), "-m", module, *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=_HELPER_ENV,
        )
    except (OSError, ValueError, subprocess.TimeoutExpired) as exc:  # ValueError: a NUL in an argument
        raise ConfigError(f"could not run {python}: {exc}") from None


def ask_helper(python: Path, module: str, *args: str, timeout: float = 300) -> Any:
    """The JSON answer of ``python -m module args``.

    Raises:
        ConfigError: its refusal (an answer ``{"error": ...}``, word for word), or why it gave no answer
        (the last lines of its output).
    """
    result = run_helper(python, module, *args, timeout=timeout)
    try:
        answer = json.loads(result.stdout)
    except ValueError:
        tail = (result.stderr or result.stdout).strip().splitlines()[-3:]
        raise ConfigError(f"{module} failed (exit code {result.returncode}): " + " | ".join(tail)) from None
    if isinstance(answer, dict) and "error" in answer:
        raise ConfigError(str(answer["error"]))
    return answer


class KeptAnswers:
    """A bundle's answers, kept by the install they came from and a key of what else they depend on.

    Asking a bundle costs a Python start in it (0.2 s, seconds where the helper imports torch), and a
    form or a sweep asks the same again and again. ``install_id`` changes each time the bundle is
    installed again (``BundleDirectory.install_id``; "" while it is not installed: nothing is kept then).
    Refusals are never kept, and each caller gets its own copy to change.
    """

    def __init__(self, install_id: Callable[[], str], kept: int = 256) -> None:
        self._install_id = install_id
        self._kept = kept
        self._lock = threading.Lock()
        self._answers: dict[tuple[str, Hashable], Any] = {}

    def get(self, key: Hashable, ask: Callable[[], Any]) -> Any:
        """The answer kept under ``key`` for the bundle's current install, else ``ask()``'s, then kept."""
        install = self._install_id()
        if not install:
            return ask()
        whole = (install, key)
        with self._lock:
            if whole in self._answers:
                return copy.deepcopy(self._answers[whole])
        answer = ask()
        with self._lock:
            self._answers[whole] = copy.deepcopy(answer)
            while len(self._answers) > self._kept:
                self._answers.pop(next(iter(self._answers)))
        return answer
