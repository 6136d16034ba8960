"""What every process gym_gui starts for a worker kind gets of its starter's environment (an allow-list)."""

from __future__ import annotations

import os

# Variables a worker inherits from the daemon's environment; everything else is set explicitly.
_INHERITED_ENV = (
    "PATH",
    "HOME",
    "LANG",
    "LC_ALL",
    "TMPDIR",
    "USER",
    "OPENBLAS_CORETYPE",
    "OPENBLAS_L2_SIZE",
    "CUDA_VISIBLE_DEVICES",
)


def worker_base_env(thread_env: dict[str, str]) -> dict[str, str]:
    """What every worker's environment starts from, before its run's own variables: the allow-listed
    variables of the daemon's environment, the thread pool sizes (``SupervisorSettings.thread_env``),
    unbuffered output and SDL's dummy drivers (a worker has no screen or sound)."""
    env = {k: os.environ[k] for k in _INHERITED_ENV if k in os.environ}
    env.update(thread_env)
    env.update({"PYTHONUNBUFFERED": "1", "SDL_VIDEODRIVER": "dummy", "SDL_AUDIODRIVER": "dummy"})
    return env
