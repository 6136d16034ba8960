"""A d3rlpy run's model played in its environment (in the bundle), every step streamed: the telemetry lane's
evaluation run, as CleanRL's is (episode i reset with seed + i, frames at the render rate, ε-greedy
noise drawn from the episode's seed)."""

from __future__ import annotations

import random
import time
from pathlib import Path
from typing import Any

from gym_gui_sdk import encoding, render
from gym_gui_sdk.worker import Registration, WorkerSession

from gym_gui_d3rlpy_worker.policy import load_policy, make_env

RETURN_METRIC = "eval/episodic_return"


def _env_fps(env: Any, default: float = 30.0) -> float:
    fps = (getattr(env, "metadata", None) or {}).get("render_fps")
    return float(fps) if isinstance(fps, int | float) and not isinstance(fps, bool) and fps > 0 else default


def _frame(env: Any) -> Any:
    try:
        frame = env.render()
    except Exception:  # an env that cannot draw: its steps go without frames
        return None
    return frame if getattr(frame, "ndim", 0) == 3 else None


def evaluate(
    session: WorkerSession,
    registration: Registration,
    model: Path,
    episodes: int,
    seed: int | None,
    real_time: bool = False,
    epsilon: float = 0.0,
) -> str:
    """Play ``episodes`` episodes; returns ``"stopped"`` when a stop ended play early."""
    config = registration.config
    env = make_env(str(config["env_id"]), dict(config.get("env_kwargs") or {}), render_mode="rgb_array")
    policy = load_policy(model, env.observation_space, env.action_space)
    session.started(
        render_kind="pixels",
        spaces={"observation": str(env.observation_space), "action": str(env.action_space)},
    )
    period = 1.0 / _env_fps(env) if real_time else 0.0
    due = time.monotonic()
    frames = render.FramePacer()  # at the render rate, at most a tenth of the time
    try:
        for episode in range(episodes):
            episode_seed = None if seed is None else seed + episode
            observation, _ = env.reset(seed=episode_seed)
            explore = random.Random(episode_seed)
            if epsilon:
                env.action_space.seed(explore.getrandbits(32))
            started_at, total, step, done = time.time(), 0.0, 0, False
            while not done:
                if session.stop_requested.is_set():
                    return "stopped"
                if period:
                    due = max(due + period, time.monotonic())
                    while (left := due - time.monotonic()) > 0 and not session.stop_requested.is_set():
                        time.sleep(min(left, 0.05))
                if epsilon and explore.random() < epsilon:
                    action = env.action_space.sample()
                else:
                    action = policy.act(observation)
                observation, reward, terminated, truncated, info = env.step(action)
                total += float(reward)
                done = bool(terminated or truncated)
                frame = frames.frame(lambda: _frame(env), session.render_fps)
                session.step(
                    episode,
                    step,
                    float(reward),
                    bool(terminated),
                    bool(truncated),
                    encoding.dumps(action),
                    observation,  # numeric arrays travel packed; the daemon stores a screen compact
                    encoding.dumps(info if isinstance(info, dict) else {}),
                    render.frame_payload(frame) if frame is not None else b"",
                )
                step += 1
                if done:
                    session.episode(
                        episode,
                        steps=step,
                        total_reward=total,
                        terminated=bool(terminated),
                        truncated=bool(truncated),
                        started_at=started_at,
                        seed=episode_seed,
                    )
                    session.metrics([(RETURN_METRIC, episode, total)])
                session.wait_if_paused()
    finally:
        env.close()
    return "completed"
