"""The environment of a run: its id, its keyword arguments (a FrozenLake map the user typed), and
the check that a Q-table can hold it (finite observations and actions).

gymnasium only, so the plugin (gym_gui's venv) refuses a run with the same code the worker
(the spade_bdi bundle) makes its environment with.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import gymnasium

FROZEN_LAKE = "FrozenLake"
_MAP_ROW = re.compile(r"^[SFHG]+$")


class EnvRefused(ValueError):
    """The run's environment cannot be learned with a table; the message names the field and why."""


def is_frozen_lake(env_id: str) -> bool:
    return env_id.startswith(FROZEN_LAKE)


def env_kwargs(env_id: str, kwargs: Mapping[str, Any], params: Mapping[str, Any]) -> dict[str, Any]:
    """``gymnasium.make`` keyword arguments: the config's own, with ``map``, ``slippery`` and
    ``max_steps`` from the parameters.

    Raises:
        EnvRefused: a FrozenLake-only parameter for another environment, or a map that is not one.
    """
    made = dict(kwargs)
    lake = is_frozen_lake(env_id)
    for name in ("map", "slippery"):
        if name in params and not lake:
            raise EnvRefused(f"field 'params.{name}': only FrozenLake has it, not {env_id}")
    text = str(params.get("map") or "").strip()
    if text in ("4x4", "8x8"):
        made["map_name"] = text
    elif text:
        rows = [row for row in re.split(r"[/\s,]+", text.upper()) if row]
        if len({len(row) for row in rows}) != 1 or not all(_MAP_ROW.match(row) for row in rows):
            raise EnvRefused(
                f"field 'params.map': expected 4x4, 8x8 or rows of equal length of S, F, H and G "
                f"separated by /, got {text!r}"
            )
        if sum(row.count("S") for row in rows) != 1 or not any("G" in row for row in rows):
            raise EnvRefused(f"field 'params.map': a map needs one start S and a goal G, got {text!r}")
        made["desc"] = rows
    if "slippery" in params:
        made["is_slippery"] = bool(params["slippery"])
    if int(params.get("max_steps") or 0) > 0:
        made["max_episode_steps"] = int(params["max_steps"])
    return made


def make_env(env_id: str, kwargs: Mapping[str, Any]) -> gymnasium.Env[Any, Any]:
    """The environment, checked to have finite observations and actions.

    Raises:
        EnvRefused: an unknown id, arguments it does not take, or spaces no table can hold.
    """
    try:
        env = gymnasium.make(env_id, **kwargs)
    except gymnasium.error.Error as exc:  # unregistered, deprecated, a missing dependency
        raise EnvRefused(f"field 'env_id': {exc}") from None
    except TypeError as exc:  # a keyword the environment does not take
        raise EnvRefused(f"field 'env_kwargs': {env_id} refused them: {exc}") from None
    for what, space in (("observations", env.observation_space), ("actions", env.action_space)):
        if not isinstance(space, gymnasium.spaces.Discrete):
            env.close()
            raise EnvRefused(
                f"field 'env_id': Q-learning needs a table of discrete observations and actions; "
                f"{env_id} has {what} {space}"
            )
    return env


def table_shape(env: gymnasium.Env[Any, Any]) -> tuple[int, int]:
    """(states, actions) of an environment :func:`make_env` made."""
    observations, actions = env.observation_space, env.action_space
    assert isinstance(observations, gymnasium.spaces.Discrete)
    assert isinstance(actions, gymnasium.spaces.Discrete)
    return int(observations.n), int(actions.n)


def grid_map(env: gymnasium.Env[Any, Any]) -> list[str] | None:
    """The map of a FrozenLake (its rows of S, F, H and G); None for other environments."""
    desc = getattr(env.unwrapped, "desc", None)
    if desc is None or not hasattr(env.unwrapped, "nrow") or hasattr(env.unwrapped, "locs"):
        return None
    return [bytes(row.tobytes()).decode("ascii") for row in desc]


def run_env_kwargs(config: Mapping[str, Any], table: Any = None) -> dict[str, Any]:
    """The ``gymnasium.make`` keyword arguments of a run (a ``RunConfig`` as plain data).

    An evaluation plays the environment its table was learned on: the table's arguments (its map,
    its ice), under whatever the evaluation's own config sets.

    Raises:
        EnvRefused: as :func:`env_kwargs`.
    """
    params = config.get("params") or {}
    made = env_kwargs(config["env_id"], config.get("env_kwargs") or {}, params)
    if config.get("mode") == "evaluate" and table is not None:
        made = {**table.env_kwargs, **made}
    return made
