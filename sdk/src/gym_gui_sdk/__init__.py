"""Worker SDK of gym_gui: wire protocol stubs and the worker-side session client."""

from __future__ import annotations

__version__ = "0.1.0"

# Environment variables the daemon sets for every worker it spawns.
ENV_DAEMON_ADDRESS = "GYM_GUI_DAEMON_ADDRESS"
ENV_RUN_ID = "GYM_GUI_RUN_ID"
ENV_RUN_TOKEN = "GYM_GUI_RUN_TOKEN"
ENV_RUN_DIR = "GYM_GUI_RUN_DIR"
# The module of the run env's family (``minigrid``, ``ale_py``, ``nle``): its import registers the
# family's ids with gymnasium, so a worker making the env imports it first. Unset for an id of no family.
ENV_FAMILY_MODULE = "GYM_GUI_FAMILY_MODULE"
# What a family's module that makes multi-agent envs (PettingZoo's) defines: MULTI_AGENT_MAKER, a
# function ``(env_id, render_mode=None, **kwargs)`` returning the env (a PettingZoo AECEnv or
# ParallelEnv); MULTI_AGENT_CREATOR, ``(env_id)`` -> the class whose signature and metadata say what
# the env takes and how it draws.
MULTI_AGENT_MAKER = "make_multi_agent_env"
MULTI_AGENT_CREATOR = "multi_agent_creator"
# Set when the daemon speaks TLS: its CA certificate (a path, or the PEM text itself), the one trusted.
ENV_TLS_CA = "GYM_GUI_TLS_CA"
# Where the daemon publishes its address (daemon.json): a worker finds a restarted daemon there.
ENV_HOME = "GYM_GUI_HOME"
# Set for the launcher of a worker started on another machine (a Ray job): its one-time claim token.
ENV_LAUNCH_CLAIM = "GYM_GUI_LAUNCH_CLAIM"
# The variables that size a worker's numeric thread pools (torch's and NumPy's OpenMP, MKL, OpenBLAS):
# the daemon sets them per worker, CleanRL's zygote holds them at one while it imports.
THREAD_ENV = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")
