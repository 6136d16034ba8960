"""Loads a saved CleanRL model into its script's own classes and plays episodes with it (CLI and library)."""

from __future__ import annotations

import argparse
import contextlib
import inspect
import json
import os
import random
import sys
import time
import types
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from gym_gui_sdk import render

from gym_gui_cleanrl_worker.model_file import ModelError, load_model_file

# on_step(episode, step, observation, action, reward, terminated, truncated, info, frame_or_None)
StepCallback = Callable[[int, int, Any, Any, float, bool, bool, Any, Any], None]
# Constructor parameters that take the (vector) env the script would pass.
_ENV_PARAMS = ("env", "envs")
# Outer wrappers of ppo_continuous_action that rescale rewards: an evaluation reports the env's own reward.
_REWARD_WRAPPERS = ("NormalizeReward", "TransformReward", "ClipRewardEnv")


class _RenderingGymnasium:
    """Stands in for `gymnasium` in a script's namespace so its make_env creates rgb_array-renderable envs."""

    def __init__(self, real: types.ModuleType) -> None:
        self._real = real

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)

    def make(self, *args: Any, **kwargs: Any) -> Any:
        kwargs.setdefault("render_mode", "rgb_array")
        return self._real.make(*args, **kwargs)


class Policy:
    """A trained CleanRL network bound to one env built the script's way; `act` is deterministic."""

    def __init__(
        self,
        *,
        algo: str,
        script: Path,
        env_id: str,
        step: int,
        args: dict[str, Any],
        modules: dict[str, Any],
        envs: Any,
        env: Any,
        gymnasium_api: bool,
    ) -> None:
        self.algo = algo
        self.script = script
        self.env_id = env_id
        self.step = step
        self.args = args
        self.modules = modules
        self.envs = envs
        self.env = env
        self.gymnasium_api = gymnasium_api
        self._act = _action_function(modules)
        self._discrete = hasattr(env.action_space, "n")

    def act(self, obs: Any) -> Any:
        """The deterministic action for one (unbatched) observation: an int (discrete) or a numpy array."""
        return self.act_batch([obs])[0]

    def act_batch(self, observations: Iterable[Any]) -> list[Any]:
        """The deterministic actions for several observations (each as the env gives it, unbatched), in
        one forward pass: ints (discrete) or numpy arrays of the action space's shape."""
        import numpy as np
        import torch

        # Stacked one by one: an observation may be an array-like (a frame stack's LazyFrames).
        batch = np.stack([np.asarray(obs, dtype=np.float32) for obs in observations])
        with torch.no_grad():
            actions = self._act(torch.as_tensor(batch)).cpu().numpy()
        if self._discrete:
            if actions.ndim > 1:  # a score per action (sac_atari's probabilities): the most likely one
                actions = actions.argmax(axis=-1)
            return [int(action) for action in actions]
        shape = self.env.action_space.shape
        return [action.astype(np.float32).reshape(shape) for action in actions]

    def reset(self, seed: int | None = None) -> Any:
        """Reset the env (seeded when `seed` is given) and return the first observation, for either gym API."""
        if self.gymnasium_api:
            obs, _info = self.env.reset(seed=seed)
            if seed is not None:
                self.env.action_space.seed(seed)
            return obs
        if seed is not None:
            try:
                return self.env.reset(seed=seed)
            except TypeError:  # an old-API env (or wrapper) without reset(seed=...)
                self.env.seed(seed)
        return self.env.reset()

    def step_env(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        """Step the env; returns (obs, reward, terminated, truncated, info) for either gym API."""
        result = self.env.step(action)
        if len(result) == 5:
            obs, reward, terminated, truncated, info = result
            return obs, float(reward), bool(terminated), bool(truncated), dict(info)
        obs, reward, done, info = result
        # Old gym's TimeLimit marks a cut-off episode this way; it is not a real termination.
        truncated = bool(info.get("TimeLimit.truncated", False))
        return obs, float(reward), bool(done) and not truncated, truncated, dict(info)

    def render(self) -> Any:
        """An rgb frame (H, W, 3 uint8 array) of the current state, or None when the env cannot render one."""
        try:
            frame = self.env.render() if self.gymnasium_api else self.env.render(mode="rgb_array")
        except Exception:
            return None
        return frame if getattr(frame, "ndim", 0) == 3 else None

    def close(self) -> None:
        """Close the env (and its vector wrapper)."""
        for closable in (self.env, self.envs):
            with contextlib.suppress(Exception):
                closable.close()


def _action_function(modules: dict[str, Any]) -> Callable[[Any], Any]:
    """The algorithm's own deterministic action, chosen by the networks its script defines."""
    import torch

    actor = modules.get("actor")
    if actor is not None:
        if hasattr(
            actor, "get_action"
        ):  # sac: (sampled action, log prob, squashed mean or, on Atari, probabilities)
            return lambda x: actor.get_action(x)[2]
        return actor  # td3 / ddpg: the deterministic actor itself
    q_network = modules.get("q_network")
    if q_network is not None:
        if hasattr(q_network, "get_action"):  # c51: argmax of the distribution's expected value
            return lambda x: q_network.get_action(x)[0]
        return lambda x: torch.argmax(q_network(x), dim=1)
    agent = modules.get("agent")
    if agent is not None:
        if hasattr(agent, "actor_mean"):  # ppo/rpo continuous: the Gaussian's mean
            return agent.actor_mean
        if hasattr(agent, "actor") and hasattr(agent, "network"):  # ppo_atari: shared torso on pixels
            return lambda x: torch.argmax(agent.actor(agent.network(x / 255.0)), dim=1)
        if hasattr(agent, "actor"):  # ppo: the most likely action of the categorical policy
            return lambda x: torch.argmax(agent.actor(x), dim=1)
        return lambda x: agent.get_action_and_value(x)[0]
    raise ModelError(f"no network to act with among {sorted(modules)} (expected actor, q_network or agent)")


def _script_path(algorithm: str, scripts_dir: str | None) -> Path:
    """The script of ``algorithm`` among the known ones (the installed cleanrl package's, or the
    checkout ``scripts_dir`` a run trained from): never a path a model file names."""
    from gym_gui_cleanrl_worker.scripts import find_algorithm

    try:
        return find_algorithm(algorithm, scripts_dir)
    except (KeyError, FileNotFoundError) as exc:
        raise ModelError(str(exc).strip("'\"")) from None


def _load_script(script: Path, args: dict[str, Any]) -> dict[str, Any]:
    """Execute the script as a library module: its `if __name__ == "__main__"` training block does not run."""
    import torch

    from gym_gui_cleanrl_worker import compat

    compat.install()  # as for training: old gym's scripts reach gymnasium's MuJoCo -v4 envs

    name = f"gym_gui_cleanrl_script_{script.stem}"
    module = types.ModuleType(name)
    module.__file__ = str(script)
    sys.modules[name] = module
    if str(script.parent) not in sys.path:
        sys.path.append(str(script.parent))
    exec(compile(script.read_bytes(), str(script), "exec"), module.__dict__)
    # Methods of some scripts read these globals, which only the training block would have set.
    module.__dict__.setdefault("device", torch.device("cpu"))
    module.__dict__.setdefault("args", argparse.Namespace(**args))
    return module.__dict__


def _call_with(func: Callable[..., Any], known: dict[str, Any], what: str) -> Any:
    kwargs: dict[str, Any] = {}
    for param in inspect.signature(func).parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        if param.name in known:
            kwargs[param.name] = known[param.name]
        elif param.default is param.empty:
            raise ModelError(f"cannot tell what to pass as {param.name!r} to {what}")
    return func(**kwargs)


def _make_envs(namespace: dict[str, Any], env_id: str, args: dict[str, Any]) -> tuple[Any, bool]:
    """A 1-env SyncVectorEnv built with the script's make_env (rgb_array rendering where gymnasium allows)."""
    gym_module = namespace.get("gym")
    if not isinstance(gym_module, types.ModuleType):
        raise ModelError("the script does not import gym or gymnasium as `gym`")
    gymnasium_api = gym_module.__name__ == "gymnasium"
    if gymnasium_api:
        namespace["gym"] = _RenderingGymnasium(gym_module)
    try:
        make_env = namespace.get("make_env")
        if callable(make_env):
            known = {
                **args,
                "env_id": env_id,
                "seed": int(args.get("seed", 1) or 1),
                "idx": 0,
                "capture_video": False,
                "run_name": "eval",
            }
            thunk = _call_with(make_env, known, "make_env")
        else:

            def thunk() -> Any:
                kwargs = {"render_mode": "rgb_array"} if gymnasium_api else {}
                return gym_module.wrappers.RecordEpisodeStatistics(gym_module.make(env_id, **kwargs))

        envs = gym_module.vector.SyncVectorEnv([thunk])
    finally:
        namespace["gym"] = gym_module
    return envs, gymnasium_api


def _restore_env_state(env: Any, state: dict[str, Any]) -> None:
    rms_state = state.get("obs_rms")
    if not rms_state:
        return
    import numpy as np

    for _ in range(64):
        rms = env.__dict__.get("obs_rms")
        if rms is not None:
            shape = tuple(rms_state.get("shape") or rms.mean.shape)
            rms.mean = np.asarray(rms_state["mean"], dtype=np.float64).reshape(shape)
            rms.var = np.asarray(rms_state["var"], dtype=np.float64).reshape(shape)
            rms.count = float(rms_state["count"])
            return
        inner = getattr(env, "env", None)
        if inner is None or inner is env:
            return
        env = inner


def _outer_env(envs: Any) -> Any:
    env = envs.envs[0]
    while type(env).__name__ in _REWARD_WRAPPERS and getattr(env, "env", None) is not None:
        env = env.env
    return env


def load_policy(
    model_path: str | os.PathLike[str], env_id: str, algorithm: str, scripts_dir: str | None = None
) -> Policy:
    """Load a model file of ``algorithm`` into that script's own network classes, on CPU, in eval mode.

    The script is the one of ``algorithm`` among the known scripts (the installed cleanrl package's,
    or the checkout ``scripts_dir``): what the caller was told (an import's algorithm, a trained run's
    own config), never what the file says, since nothing in a model file may choose code to run. The
    file's own ``algo`` must be that algorithm. The script is imported as a library (its training
    block does not run), the env ``env_id`` is built with its make_env in a 1-env SyncVectorEnv, each
    saved module is constructed from its __init__ signature (env/envs -> that vector env, other names
    -> the saved args) and its state dict loaded. Raises ModelError when any of that is impossible.
    """
    import torch

    os.environ.setdefault("SDL_VIDEODRIVER", "dummy")  # old gym renders rgb_array through a pygame window
    model = load_model_file(model_path)
    if model.get("algo") != algorithm:
        raise ModelError(f"the file holds a {model.get('algo')} model, not {algorithm}")
    args = dict(model.get("args") or {})
    script = _script_path(algorithm, scripts_dir)
    namespace = _load_script(script, args)
    envs, gymnasium_api = _make_envs(namespace, env_id, args)
    env = _outer_env(envs)
    _restore_env_state(env, model.get("env") or {})
    modules: dict[str, Any] = {}
    for name, saved in model["modules"].items():
        cls = namespace.get(saved["class"])
        # A name in the file picks among the script's own networks, nothing else of it.
        if not (isinstance(cls, type) and issubclass(cls, torch.nn.Module)):
            raise ModelError(f"{script.name} defines no network {saved['class']!r} (module {name!r})")
        known = {**args, **{param: envs for param in _ENV_PARAMS}}
        module = _call_with(cls, known, f"{saved['class']}()")
        module.load_state_dict(saved["state_dict"])
        module.eval()
        modules[name] = module
    return Policy(
        algo=algorithm,
        script=script,
        env_id=env_id,
        step=int(model.get("global_step", 0)),
        args=args,
        modules=modules,
        envs=envs,
        env=env,
        gymnasium_api=gymnasium_api,
    )


def play_episodes(
    policy: Policy,
    episodes: int,
    seed: int | None,
    on_step: StepCallback | None = None,
    *,
    render_fps: float | Callable[[], float] | None = None,
    should_stop: Callable[[], bool] | None = None,
    steps_per_second: float | None = None,
    epsilon: float = 0.0,
) -> list[float]:
    """Play `episodes` episodes (episode i reset with seed + i) and return each one's undiscounted return.

    on_step gets (episode, step, obs after the step, action, reward, terminated, truncated, info, frame);
    frame is an rgb array at most `render_fps` times per second of wall time (a number, or a callable read
    at every step so the rate can change mid-run) and never for more than a tenth of the time (the
    SDK's `render.FramePacer`), else None. `should_stop` returning True ends play early
    (the returns of the finished episodes only). `steps_per_second` paces play for a person to watch (each
    step waits for its due time; a late step does not make the next ones hurry); None plays flat out.
    `epsilon`: the share of steps played with a random action of the env's action space instead of
    the model's (ε-greedy, for datasets of mixed quality); which steps, and their actions, follow from
    the episode's seed, so a seeded evaluation plays the same episodes again.
    """
    returns: list[float] = []
    frames = render.FramePacer()
    period = 1.0 / steps_per_second if steps_per_second else 0.0
    due = time.monotonic()
    for episode in range(episodes):
        episode_seed = None if seed is None else seed + episode
        obs = policy.reset(episode_seed)
        if epsilon:
            explore = random.Random(episode_seed)
            policy.env.action_space.seed(explore.getrandbits(32))
        total = 0.0
        step = 0
        done = False
        while not done:
            if should_stop is not None and should_stop():
                return returns
            if period:
                due = max(due + period, time.monotonic())
                _sleep_until(due, should_stop)
            if epsilon and explore.random() < epsilon:
                action = policy.env.action_space.sample()
            else:
                action = policy.act(obs)
            obs, reward, terminated, truncated, info = policy.step_env(action)
            total += reward
            done = terminated or truncated
            fps = render_fps() if callable(render_fps) else render_fps
            frame = frames.frame(policy.render, fps) if fps else None
            if on_step is not None:
                on_step(episode, step, obs, action, reward, terminated, truncated, info, frame)
            step += 1
        returns.append(total)
    return returns


def _sleep_until(due: float, should_stop: Callable[[], bool] | None) -> None:
    # Short sleeps so a stop request is seen within 50 ms even at slow rates.
    while (left := due - time.monotonic()) > 0:
        if should_stop is not None and should_stop():
            return
        time.sleep(min(left, 0.05))


def env_fps(policy: Policy, default: float = 30.0) -> float:
    """The played env's own frame rate (``metadata["render_fps"]``: 50 for CartPole), else ``default``."""
    fps = (getattr(policy.env, "metadata", None) or {}).get("render_fps")
    return float(fps) if isinstance(fps, int | float) and not isinstance(fps, bool) and fps > 0 else default


def add_source_arguments(parser: argparse.ArgumentParser) -> None:
    """The options that say which script a model is loaded into and which env it plays: given by
    whoever starts the process (gym_gui, from a run's config), never read from the model file."""
    parser.add_argument(
        "--algo", required=True, help="the CleanRL script the model was trained with, e.g. ppo"
    )
    parser.add_argument("--scripts-dir", default=None, help="the CleanRL checkout it was trained from")
    parser.add_argument("--env-id", required=True, help="the environment to play, e.g. CartPole-v1")


def main(argv: list[str] | None = None) -> int:
    """CLI: print a JSON line as each episode ends ({"episode", "return", "length"[, "frames"]}), then a summary."""
    parser = argparse.ArgumentParser(
        prog="python -m gym_gui_cleanrl_worker.evaluate",
        description="Play episodes with a saved gym_gui CleanRL model.",
    )
    parser.add_argument("--model", required=True, help="a .cleanrl_model file written by the launcher")
    add_source_arguments(parser)
    parser.add_argument("--episodes", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--render-fps", type=float, default=0.0, help="render frames at most this often (0: none)"
    )
    options = parser.parse_args(argv)
    try:
        policy = load_policy(options.model, options.env_id, options.algo, options.scripts_dir)
    except ModelError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    running = {"return": 0.0, "frames": 0}

    def on_step(
        episode: int,
        step: int,
        obs: Any,
        action: Any,
        reward: float,
        terminated: bool,
        truncated: bool,
        *rest: Any,
    ) -> None:
        running["return"] += reward
        running["frames"] += rest[-1] is not None
        if terminated or truncated:
            # One line as each episode ends, so a long evaluation reports as it goes.
            line: dict[str, Any] = {"episode": episode, "return": running["return"], "length": step + 1}
            if options.render_fps:
                line["frames"] = int(running["frames"])
            print(json.dumps(line), flush=True)
            running.update({"return": 0.0, "frames": 0})

    try:
        returns = play_episodes(
            policy, options.episodes, options.seed, on_step, render_fps=options.render_fps
        )
    finally:
        policy.close()
    mean = sum(returns) / len(returns) if returns else float("nan")
    print(
        json.dumps({"episodes": len(returns), "mean_return": mean, "algo": policy.algo, "step": policy.step})
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
