"""What a training run's worker is told of its tracking and its resources: W&B's variables for the run, and
whether torch in the worker's interpreter sees a GPU. Shared by the kinds whose scripts log to W&B and
train with torch (CleanRL, CORL)."""

from __future__ import annotations

import functools
import os
import subprocess
from pathlib import Path

from gym_gui.core.config import RunConfig
from gym_gui.storage.run_dir import RunDir

# The device nodes a GPU driver makes (NVIDIA's, ROCm's, WSL's): where none exists no torch build
# sees a GPU, and asking torch would cost its import (~2 s) on every machine without one.
_GPU_DEVICES = ("/dev/nvidiactl", "/dev/nvidia0", "/dev/kfd", "/dev/dxg")


@functools.lru_cache(maxsize=16)
def cuda_available(python: Path) -> bool:
    """Whether torch in the interpreter ``python`` sees a GPU (asked once per interpreter)."""
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


def wandb_environment(
    config: RunConfig, run_id: str, run_dir: Path, mode: str, default_project: str
) -> dict[str, str]:
    """W&B's variables for a run's worker in ``mode`` (disabled, offline, online): its directories are the
    run's (nothing of W&B lands in the user's home), its name and project the run's (``default_project``
    when the run names none), its entity and server the run's tracking says."""
    state = RunDir(run_dir).wandb_state_dir
    env = {
        "WANDB_MODE": mode,
        "WANDB_DIR": str(run_dir),
        "WANDB_CONFIG_DIR": str(state / "config"),
        "WANDB_CACHE_DIR": str(state / "cache"),
        "WANDB_DATA_DIR": str(state / "data"),
        "WANDB_INIT_TIMEOUT": "30",
        "WANDB_NAME": config.tracking.wandb_run_name or run_id,
        "WANDB_PROJECT": config.tracking.wandb_project or default_project,
    }
    if config.tracking.wandb_entity:
        env["WANDB_ENTITY"] = config.tracking.wandb_entity
    if config.tracking.wandb_base_url:
        env["WANDB_BASE_URL"] = config.tracking.wandb_base_url
    return env
