"""A launch plan as the daemon shows it: the environment redacted, the command as a user would type it.

One shape serves the PreviewRun call (a form's command preview), a dry run's SubmitRun reply and
its ``dry-run`` event, so what a user is shown before submitting is what a dry run records.
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

from gym_gui.core.config import REDACTED, redact
from gym_gui.core.records import LaunchPreview
from gym_gui.workers import LaunchPlan

# What gym_gui's own interpreter is called in a displayed command: the `python` of its activated venv.
APP_PYTHON = "python"


def shown_env(env: Mapping[str, str], secret_keys: Iterable[str]) -> dict[str, str]:
    """``env`` with the run's secrets and every secret-looking variable (tokens, keys) as ``***``."""
    secrets = frozenset(secret_keys)
    return redact({key: (REDACTED if key in secrets else value) for key, value in env.items()})


def display_argument(argument: str, bundle_dirs: Mapping[str, Path]) -> str:
    """One argument as shown: a path inside a bundle as ``<NAME bundle>/…``, gym_gui's own
    interpreter as ``python``, anything else shell-quoted."""
    if argument == sys.executable:
        return APP_PYTHON
    for name, directory in bundle_dirs.items():
        prefix = f"{directory}/"
        if argument.startswith(prefix):
            return f"<{name} bundle>/{shlex.quote(argument[len(prefix) :])}"
    return shlex.quote(argument)


def display_command(argv: list[str], variables: Mapping[str, str], bundle_dirs: Mapping[str, Path]) -> str:
    """The command as a user would type it: ``variables`` (already redacted) as ``NAME=value`` in
    front, then ``argv`` with bundle paths and gym_gui's interpreter named as :func:`display_argument` says.

    It is for reading, not for pasting: ``<cleanrl bundle>`` stands for the bundle's directory
    (`gym-gui bundles list` shows where it is).
    """
    prefix = [
        f"{key}={value if value == REDACTED else shlex.quote(value)}" for key, value in variables.items()
    ]
    return " ".join([*prefix, *(display_argument(arg, bundle_dirs) for arg in argv)])


def launch_preview(
    run_id: str,
    plan: LaunchPlan,
    cwd: Path,
    env: Mapping[str, str],
    worker_secrets: Mapping[str, str],
    bundle_dirs: Mapping[str, Path],
) -> LaunchPreview:
    """The preview of ``plan``: ``env`` is the worker's whole environment, ``worker_secrets`` the
    run's secrets that reach it (shown as ``***``, like every secret-looking variable)."""
    shown = shown_env(env, worker_secrets)
    # The variables the worker kind sets, and the secrets it gets, are the ones a user would type.
    typed = {key: shown[key] for key in [*plan.env, *worker_secrets] if key in shown}
    return LaunchPreview(
        run_id=run_id,
        argv=list(plan.argv),
        cwd=str(cwd),
        env=shown,
        display=display_command(plan.argv, typed, bundle_dirs),
        script_argv=list(plan.script_argv),
        warnings=list(plan.warnings),
    )
