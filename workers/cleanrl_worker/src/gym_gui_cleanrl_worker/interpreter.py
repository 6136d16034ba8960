"""What the plugin asks of a script interpreter by running it: whether its torch sees a GPU, and the
first line of a failed load's error."""

from __future__ import annotations

import functools
import os
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


# The device nodes a GPU driver makes (NVIDIA's, ROCm's, WSL's): where none exists no torch build
# sees a GPU, and asking torch would cost its import (~2 s) on every machine without one.
_GPU_DEVICES = ("/dev/nvidiactl", "/dev/nvidia0", "/dev/kfd", "/dev/dxg")


@functools.lru_cache(maxsize=16)
def cuda_available(python: Path) -> bool:
    if not any(os.path.exists(device) for device in _GPU_DEVICES):
        return False
    try:
        result = subprocess.run(
            [str(python), "-c", "import torch; print(torch.cuda.is_available())"],
            capture_output=True,
            text=True,
            timeout=120,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return result.stdout.strip() == "True"
