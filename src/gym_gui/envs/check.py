"""Resolving an env id against gymnasium's registry and the installed families, and making the env."""

from __future__ import annotations

import difflib
import functools
import importlib
import inspect
import logging
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import gymnasium
from gym_gui_sdk import MULTI_AGENT_CREATOR, MULTI_AGENT_MAKER

from gym_gui.core.envs import EnvEntry
from gym_gui.core.errors import ConfigError, UnknownEnv
from gym_gui.envs.catalog import catalog, env_entry, env_families, env_family, family_of, import_failure

log = logging.getLogger(__name__)

# What gymnasium.make takes itself, besides the env's own arguments (its id aside).
_MAKE_KEYWORDS = tuple(
    name for name in inspect.signature(gymnasium.make).parameters if name not in ("id", "kwargs")
)
_BY_KEYWORD = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)

# Steps per second of real-time play and 1× replay for an env that declares no render_fps.
DEFAULT_RENDER_FPS = 30.0
# Pictures a second a view draws, or a play clock steps, at most: a screen's refresh, whatever the env's rate.
MAX_DRAW_FPS = 60.0


@dataclass(frozen=True)
class EnvStatus:
    """Whether an env id can be made here.

    Attributes:
        env_id: the id asked about.
        family: its family, from the catalog, its prefix or its registered entry point; None if unknown.
        installed: True when the family's module imports and the id is registered in gymnasium (or,
            a multi-agent entry, which its family's module makes, when the module imports).
        entry: its catalog entry, or None for ids outside the catalog.
        problem: empty when installed; otherwise the message a user should see (with the install
            hint, or close matches for an id nobody registered).
    """

    env_id: str
    family: str | None
    installed: bool
    entry: EnvEntry | None
    problem: str = ""


def _registered(env_id: str) -> bool:
    return env_id in gymnasium.registry


def _family_from_registry(env_id: str) -> str | None:
    """The family whose gymnasium entry points make ``env_id`` (an id outside the catalog)."""
    spec = gymnasium.registry.get(env_id)
    entry_point = getattr(spec, "entry_point", None)
    if not isinstance(entry_point, str):
        return None
    for family in env_families().values():
        if any(entry_point.startswith(prefix) for prefix in family.entry_points):
            return family.name
    return None


def close_matches(env_id: str, limit: int = 3) -> list[str]:
    """Return up to ``limit`` catalog or registered ids that look like ``env_id`` (case-insensitive).

    Imports every installed family first so their ids are candidates too.
    """
    for family in env_families():
        import_failure(family)
    candidates: dict[str, str] = {}
    # Registry first, catalog last, so a catalog id wins when both spell the same lowercase id.
    for known in [*gymnasium.registry, *catalog()]:
        candidates[known.lower()] = known
    found = difflib.get_close_matches(env_id.lower(), list(candidates), n=limit, cutoff=0.6)
    return [candidates[match] for match in found]


def env_status(env_id: str) -> EnvStatus:
    """Report whether ``env_id`` can be made here, without raising.

    The id's family module is imported first (cached), since some families register their ids
    with gymnasium only on import.
    """
    entry = env_entry(env_id)
    family = family_of(env_id)
    if family is not None:
        failure = import_failure(family)
        if failure:
            info = env_family(family)
            problem = (
                f"environment {env_id!r} needs the {info.title} family, which is not installed here "
                f"({failure}); {info.install_hint}"
            )
            return EnvStatus(env_id, family, False, entry, problem)
    if _registered(env_id) or (entry is not None and entry.agents and family is not None):
        return EnvStatus(env_id, family or _family_from_registry(env_id), True, entry)
    problem = f"environment {env_id!r} is not registered in gymnasium {gymnasium.__version__}"
    if family is not None:
        problem += f", although the {env_family(family).title} family is installed"
    matches = close_matches(env_id)
    problem += f"; did you mean {', '.join(matches)}?" if matches else "."
    return EnvStatus(env_id, family, False, entry, problem)


def check_env(env_id: str) -> EnvStatus:
    """Return the status of ``env_id`` when it can be made here.

    Raises:
        UnknownEnv: when its family is not installed (the message names the id and gives the
            family's install hint) or when it is not registered (the message suggests close ids).
    """
    status = env_status(env_id)
    if not status.installed:
        raise UnknownEnv(status.problem)
    return status


def _creator(env_id: str) -> Any:
    """The registered class or function that makes ``env_id`` (its family imported first)."""
    status = env_status(env_id)  # imports the family, which registers its ids (MiniGrid, ALE)
    if status.installed and status.entry is not None and status.entry.agents and status.family:
        module = importlib.import_module(env_family(status.family).import_module)
        return getattr(module, MULTI_AGENT_CREATOR)(env_id)
    entry_point = gymnasium.spec(env_id).entry_point
    if isinstance(entry_point, str):
        return gymnasium.envs.registration.load_env_creator(entry_point)
    return entry_point


def check_env_kwargs(env_id: str, kwargs: Mapping[str, Any]) -> None:
    """Refuse a keyword argument neither ``gymnasium.make`` nor ``env_id``'s constructor takes, by its
    signature, without making the env. A constructor taking ``**kwargs`` passes them on to code whose
    names cannot be told here: those are left to the worker. ``render_mode`` is gym_gui's own: its
    workers and play views set it from the run's render rate.

    Raises:
        ConfigError: ``field 'env_kwargs': …`` naming the argument and those the env takes.
    """
    if "render_mode" in kwargs:
        raise ConfigError(
            f"field 'env_kwargs': {env_id} is made by gym_gui, and render_mode is gym_gui's to set "
            "(from the run's render rate): leave it out"
        )
    if not kwargs:
        return
    try:
        parameters = inspect.signature(_creator(env_id)).parameters.values()
    except (TypeError, ValueError, ImportError, AttributeError, gymnasium.error.Error):
        return  # a constructor with no signature to read: the worker making it says what it refuses
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        return
    taken = [p.name for p in parameters if p.kind in _BY_KEYWORD and p.name != "render_mode"]
    entry = env_entry(env_id)
    if entry is None or not entry.agents:  # a multi-agent env is made by its family, not gymnasium.make
        taken += [name for name in _MAKE_KEYWORDS if name not in taken]
    unknown = [name for name in kwargs if name not in taken]
    if unknown:
        raise ConfigError(
            f"field 'env_kwargs': {env_id} takes no argument {unknown[0]!r}; it takes {', '.join(taken)}"
        )


def make_env(env_id: str, *, render_mode: str | None = None, **kwargs: Any) -> gymnasium.Env[Any, Any]:
    """Check ``env_id`` and return ``gymnasium.make(env_id, render_mode=render_mode, **kwargs)``.

    Raises:
        UnknownEnv: as :func:`check_env`; when gymnasium reports a missing dependency while making it
            (e.g. pygame for a render mode), with its family's install hint; when making it fails
            otherwise (an ALE id whose ROM ale-py lacks), in one line naming the env and the cause: a
            warning the env's code gave while failing (ALE's "Rom … not supported") before the error.
    """
    status = check_env(env_id)
    if status.entry is not None and status.entry.agents:
        raise UnknownEnv(
            f"environment {env_id!r} has {len(status.entry.agents)} agents ({', '.join(status.entry.agents[:4])}"
            f"{', …' if len(status.entry.agents) > 4 else ''}): it is played by a worker that seats every "
            "agent (the random worker), not as a single-agent gymnasium env"
        )
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        try:
            return gymnasium.make(env_id, render_mode=render_mode, **kwargs)
        except gymnasium.error.DependencyNotInstalled as exc:
            hint = f"; {env_family(status.family).install_hint}" if status.family else ""
            raise UnknownEnv(f"environment {env_id!r} cannot be made: {exc}{hint}") from exc
        except Exception as exc:  # the env's own code: whatever it raises, the user gets one line
            error = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"
            cause = f"{str(said[-1].message).strip()} ({error})" if said else error
            raise UnknownEnv(f"environment {env_id!r} cannot be made: {cause}") from exc


def make_multi_agent_env(env_id: str, *, render_mode: str | None = None, **kwargs: Any) -> Any:
    """Check ``env_id`` is a multi-agent env and make it with its family's module (a PettingZoo
    AECEnv for a turn-based game, a ParallelEnv for a parallel one).

    Raises:
        UnknownEnv: as :func:`check_env`, or ``env_id`` has one agent (:func:`make_env` makes it).
    """
    status = check_env(env_id)
    if status.entry is None or not status.entry.agents or status.family is None:
        raise UnknownEnv(f"environment {env_id!r} has one agent: it has no seats")
    module = importlib.import_module(env_family(status.family).import_module)
    return getattr(module, MULTI_AGENT_MAKER)(env_id, render_mode=render_mode, **kwargs)


@functools.cache
def draw_rate(fps: float) -> float:
    """Pictures a second to draw (or steps to play) an env of ``fps`` frames a second at: its own rate,
    at most :data:`MAX_DRAW_FPS`; :data:`DEFAULT_RENDER_FPS` when ``fps`` is not positive (not known)."""
    return min(fps, MAX_DRAW_FPS) if fps > 0 else DEFAULT_RENDER_FPS


def render_fps(env_id: str) -> float:
    """The env's own frame rate, ``metadata["render_fps"]`` (4 for toy text, 50 for CartPole), read from
    its registered class without making it; :data:`DEFAULT_RENDER_FPS` when it declares none or cannot
    be loaded here."""
    try:
        fps = getattr(_creator(env_id), "metadata", {}).get("render_fps")
    except Exception as exc:  # an env this interpreter cannot load still plays, at the default pace
        log.info("no render_fps for %s (%s): %s steps/s", env_id, exc, DEFAULT_RENDER_FPS)
        return DEFAULT_RENDER_FPS
    return float(fps) if isinstance(fps, int | float) and fps > 0 else DEFAULT_RENDER_FPS
