"""`python -m gym_gui_random_worker`: play a run's environment with seeded random actions."""

from __future__ import annotations

import importlib
import os
import time
from types import ModuleType
from typing import Any

import gymnasium as gym
from gym_gui_sdk import ENV_FAMILY_MODULE, MULTI_AGENT_CREATOR, MULTI_AGENT_MAKER, encoding, render
from gym_gui_sdk.worker import WorkerSession, exit_now, run_worker

from gym_gui_random_worker.agents import AgentsPlay


def family_module() -> ModuleType | None:
    """The env's family's module, imported: it registers the family's ids (MiniGrid, ALE, NLE), or makes
    its multi-agent envs (PettingZoo). The daemon names it; None for an id of no family."""
    module = os.environ.get(ENV_FAMILY_MODULE)
    return importlib.import_module(module) if module else None


def make_env(env_id: str, kwargs: dict[str, Any]) -> gym.Env[Any, Any]:
    family_module()  # registers the family's ids
    entry_point = gym.spec(env_id).entry_point
    creator = entry_point if callable(entry_point) else gym.envs.registration.load_env_creator(entry_point)  # type: ignore[arg-type]
    modes = getattr(creator, "metadata", {}).get("render_modes")
    if modes is None:
        # Made by a function (shimmy's dm_control ids): the env it makes says what it draws.
        env = gym.make(env_id, **kwargs)
        if "rgb_array" not in env.metadata.get("render_modes", []):
            return env
        env.close()
        modes = ["rgb_array"]
    # Frames are drawn only at the render rate asked for; rgb_array mode costs nothing until then.
    return gym.make(env_id, render_mode="rgb_array" if "rgb_array" in modes else None, **kwargs)


def play(session: WorkerSession, config: dict[str, Any]) -> str:
    """Play episodes until the budget is spent or a stop is asked; returns how it ended."""
    module = family_module()
    if module is not None and hasattr(module, MULTI_AGENT_MAKER):
        return play_agents(session, config, module)
    budget = config["budget"]
    max_episodes = budget.get("episodes")
    max_steps = budget.get("timesteps")
    seed = config.get("seed")
    env = make_env(config["env_id"], config.get("env_kwargs") or {})
    kind = render.render_kind_of(env)
    session.started(
        render_kind=kind,
        spaces={"observation": str(env.observation_space), "action": str(env.action_space)},
    )
    # Per-step work is kept to what the step needs: the render kind is tested once, and a
    # Discrete action's JSON is looked up, not written (this loop is the telemetry bench's).
    grid = kind == render.GRID
    pixels = kind == render.PIXELS
    space = env.action_space
    if isinstance(space, gym.spaces.Discrete) and int(space.start) == 0:
        action_text: Any = [encoding.dumps(i) for i in range(int(space.n))].__getitem__
    else:
        action_text = encoding.dumps
    # Frames at the run's render rate, and never more than a tenth of the worker's time.
    pacer = render.FramePacer()

    def draw() -> bytes:
        frame = env.render()
        return b"" if frame is None else render.frame_payload(frame)  # type: ignore[arg-type]

    total_steps = 0
    episode = 0
    try:
        while (max_episodes is None or episode < max_episodes) and (
            max_steps is None or total_steps < max_steps
        ):
            episode_seed = None if seed is None else seed + episode
            observation, info = env.reset(seed=episode_seed)
            space.seed(episode_seed)
            started_at = time.time()
            total_reward = 0.0
            step = 0
            terminated = truncated = False
            while not (terminated or truncated):
                if session.held:
                    # Paused here, between two steps; a stop while paused ends the run without a step more.
                    session.wait_if_paused()
                    if session.stop_requested.is_set():
                        return "stopped"
                action = space.sample()
                observation, reward, terminated, truncated, info = env.step(action)
                reward = float(reward)
                total_reward += reward
                total_steps += 1
                # The budget's last step ends its episode: the step is stored truncated, as the episode is.
                spent = max_steps is not None and total_steps >= max_steps
                truncated = truncated or (spent and not terminated)
                payload = b""
                if grid:
                    payload = render.grid_payload(env)
                elif pixels:
                    payload = pacer.frame(draw, session.render_fps) or b""
                session.step(
                    episode,
                    step,
                    reward,
                    bool(terminated),
                    bool(truncated),
                    action_text(action),
                    observation,  # numeric arrays travel packed; the daemon writes their JSON
                    encoding.dumps(info) if info else "{}",
                    payload,
                )
                step += 1
                if spent:
                    break
            session.episode(
                episode,
                steps=step,
                total_reward=total_reward,
                terminated=bool(terminated),
                truncated=bool(truncated),
                started_at=started_at,
                seed=episode_seed,
            )
            session.metrics(
                [("episode/return", total_steps, total_reward), ("episode/length", total_steps, float(step))]
            )
            episode += 1
    finally:
        env.close()
    return "completed"


def play_agents(session: WorkerSession, config: dict[str, Any], module: ModuleType) -> str:
    """Play a multi-agent env of ``module``'s family with a random seat for every agent."""
    env_id = config["env_id"]
    modes = getattr(getattr(module, MULTI_AGENT_CREATOR)(env_id), "metadata", {}).get("render_modes", [])
    make = getattr(module, MULTI_AGENT_MAKER)
    env = make(
        env_id, render_mode="rgb_array" if "rgb_array" in modes else None, **(config.get("env_kwargs") or {})
    )
    try:
        # A PettingZoo AECEnv takes turns (agent_iter); a ParallelEnv steps every agent at once.
        return AgentsPlay(session, config, env, parallel=not hasattr(env, "agent_iter")).play()
    finally:
        env.close()


def main() -> int:
    return run_worker("random worker", lambda session, registration: play(session, registration.config))


if __name__ == "__main__":
    exit_now(main())
