"""Uploading a run's offline W&B data: the one implementation behind `gym-gui wandb sync` and the
W&B tab's Sync button (no Qt; blocking, so the window calls it off the GUI thread).

gym_gui's own environment has no wandb: the wandb of the bundle the run's worker kind runs in
does the upload, to the run's W&B server (``tracking.wandb_base_url``; default: W&B's cloud).
The API key is the one W&B's own tools would use (:mod:`gym_gui.core.wandb_auth`: WANDB_API_KEY,
else a `wandb login`); it is handed to wandb in memory and never written anywhere.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

from gym_gui.core import wandb_auth
from gym_gui.core.errors import GymGuiError
from gym_gui.storage.run_dir import RunDir
from gym_gui.workers.bundles import BundleError
from gym_gui.workers.registry import worker_catalog

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


def key_sources(base_url: str | None) -> str:
    """Where the key for a sync to ``base_url`` (None: the server WANDB_BASE_URL names, else W&B's
    cloud) is looked for, for messages."""
    return wandb_auth.key_sources(base_url or os.environ.get(wandb_auth.BASE_URL_VAR))


# progress(step, total, directory name): called before each upload.
SyncProgress = Callable[[int, int, str], None]


def sync_offline_runs(
    run_dir: Path, worker: str, bundles_dir: Path, progress: SyncProgress | None = None
) -> str:
    """``wandb sync`` each offline W&B run of the run in ``run_dir`` (whose worker kind is ``worker``)
    to the run's W&B server, with the key :func:`wandb_auth.api_key` finds for that server.

    ``progress(step, total, directory name)`` is called before each upload. Returns what was done,
    in a sentence.

    Raises:
        GymGuiError: the run has no offline W&B data, its config cannot be read, no API key was found,
            the worker's bundle has no wandb, or a sync failed (naming the directory, with the end of
            wandb's output).
    """
    directories = offline_runs(run_dir)
    if not directories:
        raise GymGuiError(f"run {run_dir.name} has no offline W&B data to sync")
    # The server the run logged for: syncing elsewhere would hand its data to another server.
    base_url = RunDir(run_dir).read_config().tracking.wandb_base_url
    env = wandb_auth.wandb_environment(base_url, bundle_environment())
    if env is None:
        raise GymGuiError(f"sync needs a W&B API key: {key_sources(base_url)} (gym_gui never stores it)")
    python = wandb_python(worker, bundles_dir)
    # wandb sync keeps its logs in WANDB_DIR/wandb: the run's, not the caller's working directory.
    env["WANDB_DIR"] = str(run_dir)
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
                # From the W&B run's own directory: were the run directory its working directory,
                # wandb sync would find the script's TensorBoard files again (their path is relative)
                # and, as wandb 0.31 does, fail on them; the offline log already holds them.
                cwd=directory,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise GymGuiError(f"wandb sync of {directory.name} failed: {exc}") from None
        if result.returncode != 0:
            tail = "\n".join((result.stdout + result.stderr).strip().splitlines()[-5:])
            raise GymGuiError(
                f"wandb sync of {directory.name} failed (exit code {result.returncode}):\n{tail}"
            )
    server = env.get(wandb_auth.BASE_URL_VAR)
    where = f"the W&B server at {server}" if server else "W&B"
    return f"Synced {len(directories)} W&B run(s) of {run_dir.name} to {where}."
