"""Making gym_gui's PettingZoo environments by id: the family's module (importing it imports pettingzoo).

A worker that seats every agent (the random worker) imports it, as the daemon names it, and calls
:func:`make_multi_agent_env`; gym_gui's checks read :func:`multi_agent_creator`'s signature and metadata.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

import pettingzoo

# Each id's module; those of parallel games are made as ParallelEnvs (every agent acts at each step),
# the others as AECEnvs (turn-based).
MODULES = {
    "tictactoe_v3": "pettingzoo.classic.tictactoe_v3",
    "connect_four_v3": "pettingzoo.classic.connect_four_v3",
    "rps_v2": "pettingzoo.classic.rps_v2",
    "chess_v6": "pettingzoo.classic.chess_v6",
    "go_v5": "pettingzoo.classic.go_v5",
    "texas_holdem_v4": "pettingzoo.classic.texas_holdem_v4",
    "pistonball_v6": "pettingzoo.butterfly.pistonball_v6",
    "cooperative_pong_v6": "pettingzoo.butterfly.cooperative_pong_v6",
}
PARALLEL = frozenset({"pistonball_v6", "cooperative_pong_v6"})


def _module(env_id: str) -> ModuleType:
    """Raises KeyError naming the id when it is not one of :data:`MODULES`."""
    if env_id not in MODULES:
        raise KeyError(f"{env_id!r} is not one of gym_gui's PettingZoo envs: {', '.join(MODULES)}")
    return importlib.import_module(MODULES[env_id])


def multi_agent_creator(env_id: str) -> Any:
    """The class that makes ``env_id``: its ``__init__`` takes the env's arguments, its ``metadata``
    says how it draws."""
    return _module(env_id).raw_env


def make_multi_agent_env(
    env_id: str, render_mode: str | None = None, **kwargs: Any
) -> pettingzoo.AECEnv[Any, Any, Any] | pettingzoo.ParallelEnv[Any, Any, Any]:
    """``env_id`` made with PettingZoo's own wrappers (the action mask checks of Classic games): a
    ParallelEnv for a parallel game, an AECEnv otherwise."""
    module = _module(env_id)
    if env_id in PARALLEL:
        return module.parallel_env(render_mode=render_mode, **kwargs)  # type: ignore[no-any-return,unused-ignore]
    return module.env(render_mode=render_mode, **kwargs)  # type: ignore[no-any-return,unused-ignore]
