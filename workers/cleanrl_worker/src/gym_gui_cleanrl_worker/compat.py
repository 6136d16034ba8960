"""Runtime patches that let the PyPI CleanRL scripts run against the bundle's newer libraries."""

from __future__ import annotations

import contextlib
import functools
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import sys
import types
from collections.abc import Callable
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
        if kwargs.get("optimize_memory_usage") and kwargs.get("handle_timeout_termination", True):
            # c51_atari.py asks for both, which SB3 1.2 took and handled wrongly (a timeout's next
            # observation was the next episode's first) and SB3 >= 1.6 refuses (DLR-RM/stable-baselines3#934).
            # The memory the script asks to save is kept; its Atari ids have no time limit to handle.
            kwargs["handle_timeout_termination"] = False
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


# RecordVideo (old gym's and gymnasium 0.29's) writes videos/<run>/rl-video-episode-<n>.mp4 but says nothing of
# the episode it filmed. Wrapping its recorder's start/close and its step tells the worker, when a video is
# finished, which episode it shows, its return and its length: one marker line on stdout per video.
_VIDEO_MODULES = ("gym.wrappers.record_video", "gymnasium.wrappers.record_video")
_VIDEO_STATE = "_gym_gui_video"
_IN_STEP = "_gym_gui_in_step"


def _first(value: Any) -> Any:
    """Env 0's entry of a vectorised value (RecordVideo films env 0), or the value itself."""
    try:
        return value[0] if hasattr(value, "__len__") and not isinstance(value, str | bytes) else value
    except (IndexError, KeyError, TypeError):
        return value


def _episode_over(result: tuple[Any, ...]) -> bool:
    # Old gym: (obs, reward, done, info); gymnasium: (obs, reward, terminated, truncated, info).
    flags = result[2:4] if len(result) == 5 else result[2:3]
    return any(bool(_first(flag)) for flag in flags)


def _announce_video(wrapper: Any, state: dict[str, Any]) -> None:
    recorder = getattr(wrapper, "video_recorder", None)
    path = getattr(recorder, "path", None)
    if not isinstance(path, str) or not os.path.isfile(path):
        return  # nothing was written (a broken recorder disables itself)
    from gym_gui_cleanrl_worker import MARKER

    video = {
        "video": os.path.relpath(path),
        "episode": state["episode"],
        "return": state["return"],
        "length": state["length"],
        "complete": state["complete"],
    }
    # stdout may already be closed: a recorder closed by __del__ at shutdown.
    with contextlib.suppress(OSError, ValueError):
        print(MARKER + json.dumps(video), flush=True)


def patch_record_video(module: types.ModuleType) -> None:
    """Make `module.RecordVideo` announce each finished video with its episode, return and length; idempotent."""
    cls = getattr(module, "RecordVideo", None)
    if not isinstance(cls, type) or getattr(cls, _PATCHED_ATTR, False):
        return
    start = getattr(cls, "start_video_recorder", None)
    close = getattr(cls, "close_video_recorder", None)
    step = getattr(cls, "step", None)
    if not (callable(start) and callable(close) and callable(step)):
        return  # another RecordVideo design: its videos are still found on disk, without returns

    def start_video_recorder(self: Any) -> None:
        start(self)
        episode = getattr(self, "episode_id", None)
        self.__dict__[_VIDEO_STATE] = {
            "episode": int(episode) if isinstance(episode, int) else None,
            "return": 0.0,
            "length": 0,
            "complete": False,
        }

    def close_video_recorder(self: Any) -> None:
        state = self.__dict__.get(_VIDEO_STATE) if getattr(self, "recording", False) else None
        close(self)
        if state is None:
            return
        if self.__dict__.get(_IN_STEP):
            state["closed"] = True  # the step that closed it has not counted its own reward yet
            return
        self.__dict__.pop(_VIDEO_STATE, None)
        _announce_video(self, state)

    def wrapped_step(self: Any, action: Any) -> Any:
        state = self.__dict__.get(_VIDEO_STATE)
        self.__dict__[_IN_STEP] = True
        try:
            result = step(self, action)
        finally:
            self.__dict__[_IN_STEP] = False
        if state is not None and isinstance(result, tuple) and len(result) in (4, 5):
            with contextlib.suppress(TypeError, ValueError):
                state["return"] += float(_first(result[1]))
            state["length"] += 1
            state["complete"] = state["complete"] or _episode_over(result)
            if state.pop("closed", False):
                self.__dict__.pop(_VIDEO_STATE, None)
                _announce_video(self, state)
        return result

    for name, value in (
        ("start_video_recorder", start_video_recorder),
        ("close_video_recorder", close_video_recorder),
        ("step", wrapped_step),
        (_PATCHED_ATTR, True),
    ):
        setattr(cls, name, value)


# CleanRL 1.2.0's sac_continuous_action.py and td3_continuous_action.py make their envs with old `gym`
# 0.23, whose MuJoCo ids stop at -v3 (the mujoco-py bindings), while their defaults are Hopper-v4. The
# -v4 ids exist in the bundle's gymnasium 0.29 on the maintained `mujoco` bindings. Likewise ppo_atari.py,
# c51_atari.py, sac_atari.py … make BreakoutNoFrameskip-v4 with old gym, while ale-py (the atari extra)
# registers its ids with gymnasium only. So old gym learns each MuJoCo and ALE id it lacks from
# gymnasium's registry, made as a gymnasium env seen through the old API.
_OLD_GYM_ENVS = "gym.envs"
# Entry points of the gymnasium ids old gym is lent.
_LENT_ENTRY_POINTS = ("gymnasium.envs.mujoco", "ale_py")
# What old gym makes a lent id with (_old_api_env below).
LENT_ENTRY_POINT = f"{__name__}:_old_api_env"
# The gymnasium env behind a lent old-API env, so a gymnasium wrapper's `unwrapped` reaches it (ale.lives()).
_LENT_ATTR = "_gym_gui_gymnasium_env"


def to_gym_space(space: Any) -> Any:
    """The old `gym` equivalent of a gymnasium Box or Discrete space (the MuJoCo envs' kinds)."""
    import gym

    if type(space).__name__ == "Box":
        return gym.spaces.Box(low=space.low, high=space.high, shape=space.shape, dtype=space.dtype)
    if type(space).__name__ == "Discrete":
        return gym.spaces.Discrete(int(space.n))
    raise TypeError(f"no old gym equivalent of the space {space!r}")


def _old_api_env(gymnasium_id: str, **kwargs: Any) -> Any:
    """A gymnasium env behind old gym 0.23's Env API (reset → obs, step → 4-tuple, seed())."""
    import gym
    import gymnasium

    class GymnasiumEnv(gym.Env):
        def __init__(self) -> None:
            self.env = gymnasium.make(gymnasium_id, render_mode="rgb_array", **kwargs)
            self.__dict__[_LENT_ATTR] = self.env
            self.observation_space = to_gym_space(self.env.observation_space)
            self.action_space = to_gym_space(self.env.action_space)
            fps = self.env.metadata.get("render_fps", 30)
            self.metadata = {"render_modes": ["rgb_array"], "render_fps": fps}
            self._seed: int | None = None
            self.spec = None

        def seed(self, seed: int | None = None) -> list[int | None]:
            self._seed = seed  # taken by the next reset, as old gym's seed() promised
            return [seed]

        def reset(self, *, seed: int | None = None, return_info: bool = False, options: Any = None) -> Any:
            seed, self._seed = (seed if seed is not None else self._seed), None
            obs, info = self.env.reset(seed=seed, options=options)
            return (obs, info) if return_info else obs

        def step(self, action: Any) -> tuple[Any, float, bool, dict[str, Any]]:
            obs, reward, terminated, truncated, info = self.env.step(action)
            if truncated and not terminated:
                info["TimeLimit.truncated"] = True  # old gym's word for a time-limit end
            return obs, float(reward), bool(terminated or truncated), info

        def render(self, mode: str = "rgb_array") -> Any:
            return self.env.render()

        def close(self) -> None:
            self.env.close()

    return GymnasiumEnv()


def patch_old_gym_registry(envs: types.ModuleType) -> None:
    """Register with old gym every gymnasium MuJoCo and ALE id it lacks; idempotent."""
    registry = getattr(envs, "registry", None)
    register = getattr(envs, "register", None)
    if registry is None or not callable(register) or getattr(envs, _PATCHED_ATTR, False):
        return
    try:
        import gymnasium
    except ImportError:
        return
    register_ale(gymnasium)
    known = set(getattr(registry, "env_specs", registry))
    for env_id, spec in gymnasium.envs.registry.items():
        entry = spec.entry_point if isinstance(spec.entry_point, str) else ""
        if entry.startswith(_LENT_ENTRY_POINTS) and env_id not in known:
            register(
                id=env_id,
                entry_point=LENT_ENTRY_POINT,
                kwargs={"gymnasium_id": env_id},
            )
    setattr(envs, _PATCHED_ATTR, True)


# ale-py (the bundle's atari extra) registers its ids with gymnasium when it is imported: gymnasium 0.29
# finds no plugin of it by itself. A bundle without it has no ALE ids, and the scripts' refusal says why.
_GYMNASIUM = "gymnasium"
_ALE = "ale_py"


def register_ale(gymnasium: types.ModuleType) -> None:
    """Import ale_py when it is installed, registering the ALE ids with ``gymnasium``; idempotent."""
    if _ALE in sys.modules or importlib.util.find_spec(_ALE) is None:
        return
    with contextlib.suppress(ImportError):
        importlib.import_module(_ALE)


# stable-baselines3 2.x's Atari wrappers (NoopResetEnv, FireResetEnv, EpisodicLifeEnv, MaxAndSkipEnv,
# ClipRewardEnv, …) are gymnasium wrappers: they refuse an old gym env and speak gymnasium's API. CleanRL
# 1.2.0's ppo_atari.py, c51_atari.py and sac_atari.py wrap an old gym 0.23 env in them, between old gym's
# own wrappers. Each one, given an old gym env, wraps a gymnasium view of it and is seen through the old
# API in turn; views of views cancel out, so a stack of them is the plain gymnasium stack.
_ATARI_WRAPPERS = "stable_baselines3.common.atari_wrappers"
_ATARI_WRAPPER_NAMES = (
    "StickyActionEnv",
    "NoopResetEnv",
    "FireResetEnv",
    "EpisodicLifeEnv",
    "MaxAndSkipEnv",
    "ClipRewardEnv",
    "WarpFrame",
    "AtariWrapper",
)


def _is_old_gym_env(env: Any) -> bool:
    gym = sys.modules.get("gym")
    return gym is not None and isinstance(env, gym.Env)


@functools.cache
def _view_classes() -> tuple[Any, Any]:
    """The gymnasium view of an old gym env and the old gym view of a gymnasium env (made once, on first use)."""
    import gym
    import gymnasium

    class GymnasiumView(gymnasium.Env):
        """An old gym 0.23 env seen through gymnasium's API (reset → (obs, info), step → 5-tuple)."""

        def __init__(self, env: Any) -> None:
            self.env = env
            self.observation_space = to_gymnasium_space(env.observation_space)
            self.action_space = to_gymnasium_space(env.action_space)
            self.metadata = dict(getattr(env, "metadata", None) or {})
            self.render_mode = "rgb_array"

        @property
        def unwrapped(self) -> Any:
            inner = self.env.unwrapped
            lent = inner.__dict__.get(_LENT_ATTR)
            return lent.unwrapped if lent is not None else inner

        def reset(self, *, seed: int | None = None, options: Any = None) -> Any:
            obs, info = self.env.reset(seed=seed, return_info=True, options=options)
            return obs, info

        def step(self, action: Any) -> Any:
            obs, reward, done, info = self.env.step(action)
            truncated = bool(info.get("TimeLimit.truncated", False))
            return obs, reward, bool(done) and not truncated, truncated, info

        def render(self) -> Any:
            return self.env.render(mode="rgb_array")

        def close(self) -> None:
            self.env.close()

    class OldGymView(gym.Wrapper):
        """A gymnasium env seen through old gym 0.23's API (reset → obs, step → 4-tuple, seed())."""

        def __init__(self, env: Any) -> None:
            super().__init__(env)
            self.observation_space = to_gym_space(env.observation_space)
            self.action_space = to_gym_space(env.action_space)
            self._seed: int | None = None

        def seed(self, seed: int | None = None) -> list[int | None]:
            self._seed = seed  # taken by the next reset, as old gym's seed() promised
            return [seed]

        def reset(self, **kwargs: Any) -> Any:
            seed = kwargs.get("seed")
            seed, self._seed = (seed if seed is not None else self._seed), None
            obs, info = self.env.reset(seed=seed, options=kwargs.get("options"))
            return (obs, info) if kwargs.get("return_info") else obs

        def step(self, action: Any) -> Any:
            obs, reward, terminated, truncated, info = self.env.step(action)
            if truncated and not terminated:
                info["TimeLimit.truncated"] = True  # old gym's word for a time-limit end
            return obs, reward, bool(terminated or truncated), info

        def render(self, mode: str = "rgb_array", **kwargs: Any) -> Any:
            return self.env.render()

    return GymnasiumView, OldGymView


def _old_api_aware(wrapper: type) -> Callable[..., Any]:
    """``wrapper`` (a gymnasium wrapper class) made to take an old gym env too, returning an old gym env then."""

    @functools.wraps(wrapper, updated=())
    def make(env: Any, *args: Any, **kwargs: Any) -> Any:
        if not _is_old_gym_env(env):
            return wrapper(env, *args, **kwargs)
        gymnasium_view, old_gym_view = _view_classes()
        inner = env.env if type(env) is old_gym_view else gymnasium_view(env)
        return old_gym_view(wrapper(inner, *args, **kwargs))

    setattr(make, _PATCHED_ATTR, True)
    return make


def patch_atari_wrappers(module: types.ModuleType) -> None:
    """Make stable-baselines3's Atari wrappers take old gym envs as well; idempotent."""
    for name in _ATARI_WRAPPER_NAMES:
        wrapper = getattr(module, name, None)
        if isinstance(wrapper, type):
            setattr(module, name, _old_api_aware(wrapper))


# wandb.init tells nobody where the run went, save on the console. Wrapped, it tells the worker: the run's
# local directory, its mode and (online) the URL W&B gave it, or, when it raises, why it could not start.
_WANDB = "wandb"


def _announce(data: dict[str, Any] | str) -> None:
    """A marker line for the worker: JSON on stdout, or a note (``str``) on stderr."""
    from gym_gui_cleanrl_worker import MARKER

    with contextlib.suppress(OSError, ValueError):
        if isinstance(data, str):
            print(MARKER + data, file=sys.stderr, flush=True)
        else:
            print(MARKER + json.dumps(data), flush=True)


def _wandb_run(run: Any) -> dict[str, Any]:
    offline = bool(run.offline)
    return {
        "path": os.path.relpath(run.sync_dir),
        "id": run.id,
        "mode": "offline" if offline else "online",
        "url": None if offline else run.url,  # run.url warns on an offline run
        "project": run.project,
        "entity": run.entity or None,
    }


def patch_wandb(module: types.ModuleType) -> None:
    """Make `module.init` (wandb.init) announce the run it started, or why it failed; idempotent."""
    init = getattr(module, "init", None)
    if not callable(init) or getattr(init, _PATCHED_ATTR, False):
        return

    @functools.wraps(init)
    def wrapped_init(*args: Any, **kwargs: Any) -> Any:
        try:
            run = init(*args, **kwargs)
        except Exception as exc:
            _announce({"wandb_error": f"{type(exc).__name__}: {exc}"})
            raise
        try:
            _announce({"wandb": _wandb_run(run)})
        except Exception as exc:  # a run W&B started must go on, announced or not
            _announce(f"the W&B run could not be announced: {exc!r}")
        return run

    setattr(wrapped_init, _PATCHED_ATTR, True)
    module.init = wrapped_init  # type: ignore[attr-defined]


# Module -> the patch applied to it when it is (or once it is) imported.
_PATCHES: dict[str, Callable[[types.ModuleType], None]] = {
    _BUFFERS: patch_buffers,
    **dict.fromkeys(_VIDEO_MODULES, patch_record_video),
    _OLD_GYM_ENVS: patch_old_gym_registry,
    _GYMNASIUM: register_ale,
    _ATARI_WRAPPERS: patch_atari_wrappers,
    _WANDB: patch_wandb,
}


class _PatchOnImport(importlib.abc.MetaPathFinder):
    """Patches a module of :data:`_PATCHES` when a script first imports it, so unused ones never load."""

    def find_spec(
        self, fullname: str, path: Any, target: Any = None
    ) -> importlib.machinery.ModuleSpec | None:
        patch = _PATCHES.get(fullname)
        if patch is None:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None and spec.loader is not None and hasattr(spec.loader, "exec_module"):
                spec.loader = _PatchingLoader(spec.loader, patch)
                return spec
            if spec is not None:
                return spec
        return None


class _PatchingLoader(importlib.abc.Loader):
    def __init__(self, loader: Any, patch: Callable[[types.ModuleType], None]) -> None:
        self._loader = loader
        self._patch = patch

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType | None:
        return self._loader.create_module(spec)

    def exec_module(self, module: types.ModuleType) -> None:
        self._loader.exec_module(module)
        self._patch(module)


def install() -> None:
    """Patch what the scripts need; idempotent, and cheap for modules a script never imports.

    stable-baselines3's buffers accept old gym spaces; RecordVideo announces each finished video; gymnasium
    knows ale-py's ids when it is installed; old gym makes gymnasium's MuJoCo -v4 and ALE envs;
    stable-baselines3's Atari wrappers take old gym envs; wandb.init announces its run. Modules already imported are patched
    now, the others when they first are.
    """
    for name, patch in _PATCHES.items():
        module = sys.modules.get(name)
        if module is not None:
            patch(module)
    if not any(isinstance(finder, _PatchOnImport) for finder in sys.meta_path):
        sys.meta_path.insert(0, _PatchOnImport())
