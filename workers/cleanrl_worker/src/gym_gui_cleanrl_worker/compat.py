"""Runtime patches that let the PyPI CleanRL scripts run against the bundle's newer libraries."""

from __future__ import annotations

import functools
import importlib.abc
import importlib.machinery
import sys
import types
from typing import Any

# CleanRL 1.2.0's c51.py, sac_continuous_action.py and td3_continuous_action.py build their envs with old
# `gym` (0.23) and hand `envs.single_observation_space` / `single_action_space` to stable-baselines3 2.x's
# ReplayBuffer, which only knows gymnasium spaces. Its BaseBuffer.__init__ -> get_obs_shape() then raises
#   NotImplementedError: Box([-4.8 ...], (4,), float32) observation space is not supported
# before the first step. Converting the spaces at the buffer constructor boundary fixes that without
# editing the installed package; the rest of the buffer (add/sample) only sees numpy arrays.

_BUFFERS = "stable_baselines3.common.buffers"
_PATCHED_ATTR = "__gym_gui_compat__"
_SPACE_ARGS = ("observation_space", "action_space")
# Positions of observation_space/action_space in every SB3 buffer constructor, after `self, buffer_size`.
_SPACE_POSITIONS = (1, 2)


def _gym_space_kind(space: Any) -> str | None:
    """The gym.spaces class name `space` is (or derives from), or None when it is not an old gym space."""
    for cls in type(space).__mro__:
        module = getattr(cls, "__module__", "") or ""
        is_gym = module == "gym.spaces" or module.startswith("gym.spaces.")
        if is_gym and cls.__name__ in ("Box", "Discrete", "MultiDiscrete", "MultiBinary", "Dict", "Tuple"):
            return cls.__name__
    return None


def to_gymnasium_space(space: Any) -> Any:
    """Return a gymnasium equivalent of an old `gym` space (recursing into Dict/Tuple); other values unchanged."""
    kind = _gym_space_kind(space)
    if kind is None:
        return space
    from gymnasium import spaces as gs

    if kind == "Box":
        return gs.Box(low=space.low, high=space.high, shape=space.shape, dtype=space.dtype)
    if kind == "Discrete":
        return gs.Discrete(int(space.n), start=int(getattr(space, "start", 0)))
    if kind == "MultiDiscrete":
        return gs.MultiDiscrete(space.nvec, dtype=space.dtype)
    if kind == "MultiBinary":
        return gs.MultiBinary(space.n)
    if kind == "Dict":
        return gs.Dict({key: to_gymnasium_space(sub) for key, sub in space.spaces.items()})
    return gs.Tuple(tuple(to_gymnasium_space(sub) for sub in space.spaces))


def _wrap_init(init: Any) -> Any:
    @functools.wraps(init)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        if args:
            args = tuple(
                to_gymnasium_space(value) if index in _SPACE_POSITIONS else value
                for index, value in enumerate(args)
            )
        for name in _SPACE_ARGS:
            if name in kwargs:
                kwargs[name] = to_gymnasium_space(kwargs[name])
        init(self, *args, **kwargs)

    setattr(__init__, _PATCHED_ATTR, True)
    return __init__


def patch_buffers(buffers: types.ModuleType) -> None:
    """Wrap the constructor of every buffer class of `stable_baselines3.common.buffers`; idempotent."""
    base = getattr(buffers, "BaseBuffer", None)
    if not isinstance(base, type):
        return
    for value in list(vars(buffers).values()):
        if not (isinstance(value, type) and issubclass(value, base)):
            continue
        # Only constructors the class defines itself: wrapping an inherited one would convert twice.
        init = value.__dict__.get("__init__")
        if init is None or getattr(init, _PATCHED_ATTR, False):
            continue
        value.__init__ = _wrap_init(init)  # type: ignore[method-assign]


class _PatchOnImport(importlib.abc.MetaPathFinder):
    """Patches the buffers module when a script first imports it, so scripts without SB3 never load it."""

    def find_spec(
        self, fullname: str, path: Any, target: Any = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != _BUFFERS:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None and spec.loader is not None and hasattr(spec.loader, "exec_module"):
                spec.loader = _PatchingLoader(spec.loader)
                return spec
            if spec is not None:
                return spec
        return None


class _PatchingLoader(importlib.abc.Loader):
    def __init__(self, loader: Any) -> None:
        self._loader = loader

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType | None:
        return self._loader.create_module(spec)

    def exec_module(self, module: types.ModuleType) -> None:
        self._loader.exec_module(module)
        patch_buffers(module)


def install() -> None:
    """Make stable-baselines3's buffers accept old gym spaces; idempotent, and cheap when SB3 is never used.

    Patches now when `stable_baselines3.common.buffers` is already imported, else when it first is.
    """
    buffers = sys.modules.get(_BUFFERS)
    if buffers is not None:
        patch_buffers(buffers)
        return
    if not any(isinstance(finder, _PatchOnImport) for finder in sys.meta_path):
        sys.meta_path.insert(0, _PatchOnImport())
