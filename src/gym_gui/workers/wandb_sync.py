"""``wandb sync`` of a run's offline W&B runs, with its worker bundle's wandb: the one way the CLI and the
W&B tab upload them."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from gym_gui.core import wandb_auth
from gym_gui.core.errors import GymGuiError

SYNC_TIMEOUT = 3600.0


def sync_offline_runs(
    python: Path, directories: list[Path], base_url: str | None, *, show_output: bool = False
) -> None:
    """``wandb sync`` each offline run directory (``RUN/wandb/offline-run-…``) with the interpreter
    ``python`` (blocking), to the W&B server at ``base_url`` (None: the one WANDB_BASE_URL names,
    else W&B's cloud), with the key :func:`wandb_auth.api_key` finds for it; the key is never written.

    wandb's own output goes to this process's terminal with ``show_output``, and is kept for the
    error otherwise.

    Raises:
        GymGuiError: no key was found, or naming the directory whose sync failed (with the end of
            wandb's output when it was kept).
    """
    env = wandb_auth.wandb_environment(base_url)
    if env is None:
        raise GymGuiError(f"sync needs a W&B API key: {key_sources(base_url)} (gym_gui never stores it)")
    for directory in directories:
        run_dir = directory.parent.parent
        result = subprocess.run(
            [str(python), "-m", "wandb", "sync", str(directory)],
            capture_output=not show_output,
            text=True,
            timeout=SYNC_TIMEOUT,
            # wandb sync keeps its logs in WANDB_DIR/wandb: the run's, not the caller's working
            # directory. And it runs from the W&B run's own directory: were the run directory its
            # working directory, it would find the script's TensorBoard files again (their path is
            # relative) and, as wandb 0.31 does, fail on them; the offline log already holds them.
            env={**env, "WANDB_DIR": str(run_dir)},
            cwd=directory,
            check=False,
        )
        if result.returncode != 0:
            message = f"wandb sync of {directory.name} failed (exit code {result.returncode})"
            if not show_output:
                message += ":\n" + "\n".join((result.stdout + result.stderr).strip().splitlines()[-5:])
            raise GymGuiError(message)


def key_sources(base_url: str | None) -> str:
    """Where the key for a sync to ``base_url`` is looked for, for messages."""
    return wandb_auth.key_sources(base_url or os.environ.get(wandb_auth.BASE_URL_VAR))
