"""Uploading a run's offline W&B data: the one implementation behind `gym-gui wandb sync` and the
W&B tab's Sync button (no Qt; blocking, so the window calls it off the GUI thread).

gym_gui's own environment has no wandb: the wandb of the bundle the run's worker kind runs in
does the upload. The API key comes from this process's environment only and is never written
anywhere.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

from gym_gui.core.errors import GymGuiError
from gym_gui.storage.run_dir import RunDir
from gym_gui.workers.bundles import BundleError
from gym_gui.workers.registry import worker_catalog

API_KEY = "WANDB_API_KEY"
SYNC_TIMEOUT = 3600.0
# What wandb names the directory of a run it recorded offline (an online run's is `run-…`).
OFFLINE_PREFIX = "offline-run-"


def offline_runs(run_dir: Path) -> list[Path]:
    """The run's offline W&B runs, oldest first: what a sync uploads."""
    return [p for p in RunDir(run_dir).wandb_runs() if p.name.startswith(OFFLINE_PREFIX)]


def wandb_python(worker: str, bundles_dir: Path) -> Path:
    """The interpreter whose wandb reads and syncs the W&B runs of ``worker``'s runs: its bundle's.

    Raises:
        GymGuiError: the worker kind is unknown, or runs in gym_gui's own environment (no wandb).
        BundleError: its bundle is not installed (the message says how to install it).
    """
    status = worker_catalog().bundle_status(worker, bundles_dir)
    if status is None:
        raise GymGuiError(f"worker {worker!r} runs in gym_gui's own environment, which has no wandb")
    if not status.installed:
        raise BundleError(status.reason)
    return status.python


def bundle_environment() -> dict[str, str]:
    """This process's environment for a bundle's interpreter: without what would load our packages."""
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}


# progress(step, total, directory name): called before each upload.
SyncProgress = Callable[[int, int, str], None]


def sync_offline_runs(
    run_dir: Path, worker: str, bundles_dir: Path, progress: SyncProgress | None = None
) -> str:
    """``wandb sync`` each offline W&B run of the run in ``run_dir`` (whose worker kind is ``worker``).

    ``progress(step, total, directory name)`` is called before each upload. Returns what was done,
    in a sentence.

    Raises:
        GymGuiError: the run has no offline W&B data, the API key is not in the environment, the
            worker's bundle has no wandb, or a sync failed (naming the directory, with the end of
            wandb's output).
    """
    directories = offline_runs(run_dir)
    if not directories:
        raise GymGuiError(f"run {run_dir.name} has no offline W&B data to sync")
    if not os.environ.get(API_KEY):
        raise GymGuiError(
            f"set {API_KEY} in the environment gym_gui was started from to sync (it is never stored)"
        )
    python = wandb_python(worker, bundles_dir)
    env = bundle_environment()
    for step, directory in enumerate(directories, 1):
        if progress is not None:
            progress(step, len(directories), directory.name)
        try:
            result = subprocess.run(
                [str(python), "-m", "wandb", "sync", str(directory)],
                capture_output=True,
                text=True,
                timeout=SYNC_TIMEOUT,
                env=env,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise GymGuiError(f"wandb sync of {directory.name} failed: {exc}") from None
        if result.returncode != 0:
            tail = "\n".join((result.stdout + result.stderr).strip().splitlines()[-5:])
            raise GymGuiError(
                f"wandb sync of {directory.name} failed (exit code {result.returncode}):\n{tail}"
            )
    return f"Synced {len(directories)} W&B run(s) of {run_dir.name} to W&B."
