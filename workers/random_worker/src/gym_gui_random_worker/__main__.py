"""`python -m gym_gui_random_worker`: play a run's environment with seeded random actions."""

from __future__ import annotations

import importlib
import os
import time
from typing import Any

import gymnasium as gym
from gym_gui_sdk import ENV_FAMILY_MODULE, encoding, render
from gym_gui_sdk.worker import WorkerSession, exit_now, run_worker


def make_env(env_id: str, kwargs: dict[str, Any]) -> gym.Env[Any, Any]:
    # The env's family registers its ids when its module is imported (MiniGrid, ALE, NLE); the daemon
    # names that module.
    module = os.environ.get(ENV_FAMILY_MODULE)
    if module:
        importlib.import_module(module)
    creator = gym.envs.registration.load_env_creator(gym.spec(env_id).entry_point)  # type: ignore[arg-type]
    # Frames are drawn only at the render rate asked for; rgb_array mode costs nothing until then.
    mode = "rgb_array" if "rgb_array" in getattr(creator, "metadata", {}).get("render_modes", []) else None
    return gym.make(env_id, render_mode=mode, **kwargs)


def play(session: WorkerSession, config: dict[str, Any]) -> str:
    """Play episodes until the budget is spent or a stop is asked; returns how it ended."""
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
    total_steps = 0
    episode = 0
    last_frame = 0.0
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
                payload = b""
                if grid:
                    payload = render.grid_payload(env)
                elif pixels and session.render_fps > 0:
                    now = time.monotonic()
                    if now - last_frame >= 1.0 / session.render_fps:
                        last_frame = now
                        payload = render.frame_payload(env.render())  # type: ignore[arg-type]
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
                total_steps += 1
                if max_steps is not None and total_steps >= max_steps:
                    truncated = truncated or not terminated
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


def main() -> int:
    return run_worker("random worker", lambda session, registration: play(session, registration.config))


if __name__ == "__main__":
    exit_now(main())
