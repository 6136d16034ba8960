"""Run ids: CleanRL's `{env_id}__{algo_or_worker}__{seed}__{unix_time}`, made filesystem-safe and validated."""

from __future__ import annotations

import re
import time
from collections.abc import Callable

from gym_gui_sdk.contract import shown

from gym_gui.core.errors import ConfigError, InvalidRunId

RUN_ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$")
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
# Gymnasium's own grammar of env ids, ``[namespace/]name[-vN]`` (gymnasium.envs.registration.ENV_ID_RE),
# with a name that is not only dots: at most one "/", and neither part can be "." or "..". Workers
# build paths from env ids (CleanRL's scripts write to runs/{env_id}__{exp_name}__{seed}__{time}),
# so an id that passes stays inside the run directory.
# A dataset's id is Minari's, with its version: `[namespace/]name-vN` (namespaces may nest). No
# component can be `.` or `..`, so an id is always a path inside the datasets directory.
DATASET_ID_PATTERN = r"^(?:[A-Za-z0-9_-]+/){0,4}[A-Za-z0-9_-]{1,100}-v[0-9]{1,6}$"
ENV_ID_PATTERN = re.compile(r"^(?:[\w:-]+/)?[\w:.-]*\w[\w:.-]*$")


def _checked_id(text: str, what: str) -> str:
    if not isinstance(text, str) or not RUN_ID_PATTERN.fullmatch(text):
        raise InvalidRunId(
            f"invalid {what} id {shown(text)}: use 1-200 characters of [A-Za-z0-9._-], "
            "starting with a letter or digit"
        )
    return text


def validate_run_id(run_id: str) -> str:
    """Return ``run_id`` unchanged if it is safe to use as a directory name, else raise.

    A run id may hold only ``[A-Za-z0-9._-]``, must start with a letter or digit
    (so ``.`` and ``..`` are refused) and is at most 200 characters long.

    Raises:
        InvalidRunId: naming the offending id.
    """
    return _checked_id(run_id, "run")


def validate_env_id(env_id: str) -> str:
    """Return ``env_id`` unchanged if it has the form of an environment id, else raise.

    Raises:
        ConfigError: naming the id and the form ids take.
    """
    if not ENV_ID_PATTERN.fullmatch(env_id):
        raise ConfigError(
            f"{shown(env_id)} is not an environment id: ids look like CartPole-v1 or ALE/Pong-v5 "
            "(letters, digits, '_', ':', '.', '-' and at most one '/' after a namespace)"
        )
    return env_id


def path_component(text: str) -> str:
    """``text`` made safe as one file name: runs of other characters than [A-Za-z0-9._-] become "-"."""
    cleaned = _UNSAFE.sub("-", text).strip("-.")
    return cleaned or "x"


def _free(base: str, exists: Callable[[str], bool]) -> str:
    """``base``, or ``base-2``, ``base-3`` … the first that ``exists`` says is not taken."""
    candidate, n = base, 1
    while exists(candidate):
        n += 1
        candidate = f"{base}-{n}"
    return candidate


def make_run_id(
    env_id: str,
    worker_or_algo: str,
    seed: int | None,
    unix_time: int | None = None,
    exists: Callable[[str], bool] = lambda _run_id: False,
) -> str:
    """Build a fresh run id in CleanRL's naming convention.

    ``ALE/Pong-v5`` becomes ``ALE-Pong-v5``; when ``exists`` says the id is taken,
    ``-2``, ``-3`` … is appended until it is free.
    """
    stamp = int(time.time()) if unix_time is None else unix_time
    seed_part = "none" if seed is None else str(seed)
    base = "__".join(
        [
            path_component(env_id)[:80],
            path_component(worker_or_algo)[:60],
            path_component(seed_part),
            str(stamp),
        ]
    )
    return validate_run_id(_free(base, exists))


def validate_sweep_id(sweep_id: str) -> str:
    """Return ``sweep_id`` unchanged if it is safe to use as a directory name (a run id's rules), else raise.

    Raises:
        InvalidRunId: naming the offending id.
    """
    return _checked_id(sweep_id, "sweep")


def make_sweep_id(
    name: str, unix_time: int | None = None, exists: Callable[[str], bool] = lambda _sweep_id: False
) -> str:
    """A fresh sweep id, ``{name}__{unix_time}`` (``-2``, ``-3`` … appended while taken)."""
    stamp = int(time.time()) if unix_time is None else unix_time
    return validate_sweep_id(_free(f"{path_component(name)[:120]}__{stamp}", exists))


def validate_dataset_id(name: str) -> str:
    """Return ``name`` unchanged if it is a dataset id gym_gui keeps (Minari's, with a version), else raise.

    Raises:
        ConfigError: naming the field and the id (cut when long).
    """
    if not re.fullmatch(DATASET_ID_PATTERN, name):
        shown = name if len(name) <= 80 else f"{name[:77]}..."
        raise ConfigError(
            f"field 'dataset': {shown!r} is not a dataset id: Minari's form, [namespace/]name-vN "
            "(letters, digits, '_' and '-'), e.g. cartpole/random-v0"
        )
    return name
