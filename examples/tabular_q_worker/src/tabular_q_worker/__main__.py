"""`python -m tabular_q_worker`: learn a run's environment with tabular Q-learning, every step reported.

The daemon starts this process with the run's address, id and token in its environment; everything
else (the validated run config) comes from registering. It speaks to gym_gui through the SDK only.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from gym_gui_sdk import encoding, render
from gym_gui_sdk.worker import WorkerSession, run_worker

from tabular_q_worker.agent import QLearner
from tabular_q_worker.params import resolve

# Where the Q-table is saved, relative to the run directory (the worker's working directory).
FINAL_MODEL = "checkpoints/q_table.npy"


def checkpoint_path(total_steps: int) -> str:
    return f"checkpoints/q_table_step{total_steps}.npy"


def make_learner(env: gym.Env[Any, Any], config: dict[str, Any]) -> QLearner:
    """A learner for ``env`` with the run's parameters (checked by the plugin before the run was stored)."""
    observations, actions = env.observation_space, env.action_space
    if not isinstance(observations, gym.spaces.Discrete) or not isinstance(actions, gym.spaces.Discrete):
        raise ValueError(f"needs discrete observations and actions, got {observations} and {actions}")
    values = resolve(config.get("params") or {})
    return QLearner(
        int(observations.n),
        int(actions.n),
        alpha=values["alpha"],
        gamma=values["gamma"],
        epsilon=values["epsilon"],
        epsilon_decay=values["epsilon_decay"],
        epsilon_min=values["epsilon_min"],
        rng=np.random.default_rng(config.get("seed")),
    )


def train(session: WorkerSession, config: dict[str, Any], run_dir: Path) -> str:
    """Learn until the budget is spent or a stop is asked, then save the Q-table; returns how it ended."""
    env = gym.make(config["env_id"], **(config.get("env_kwargs") or {}))
    try:
        learner = make_learner(env, config)
        grid = render.render_kind_of(env) == render.GRID
        session.started(
            render_kind=render.GRID if grid else render.NONE,
            spaces={"observation": str(env.observation_space), "action": str(env.action_space)},
        )
        outcome, total_steps = _learn(session, config, env, learner, grid, run_dir)
    finally:
        env.close()
    # The table learned so far is the run's model, whether the budget was spent or a stop came.
    learner.save(run_dir / FINAL_MODEL)
    session.artifact("model", FINAL_MODEL, total_steps, {"outcome": outcome})
    return outcome


def _learn(
    session: WorkerSession,
    config: dict[str, Any],
    env: gym.Env[Any, Any],
    learner: QLearner,
    grid: bool,
    run_dir: Path,
) -> tuple[str, int]:
    """The episodes of the run; returns how they ended and the steps taken."""
    budget = config["budget"]
    max_episodes = budget.get("episodes")
    max_steps = budget.get("timesteps")
    seed = config.get("seed")
    # The form's "Checkpoint every" (RunConfig.checkpoints, the section the plugin declares).
    every = (config.get("checkpoints") or {}).get("every_steps")
    total_steps = 0
    episode = 0
    while (max_episodes is None or episode < max_episodes) and (max_steps is None or total_steps < max_steps):
        episode_seed = None if seed is None else seed + episode
        state, info = env.reset(seed=episode_seed)
        start_state = int(state)
        started_at = time.time()
        epsilon = learner.epsilon
        total_reward = 0.0
        explored = 0
        step = 0
        terminated = truncated = False
        while not (terminated or truncated):
            # Paused here, between two steps; a stop while paused ends the run without a step more.
            session.wait_if_paused()
            if session.stop_requested.is_set():
                return "stopped", total_steps
            if session.checkpoint_requested.is_set():
                session.checkpoint_requested.clear()
                saved = checkpoint_path(total_steps)
                learner.save(run_dir / saved)
                # "requested" tells `gym-gui checkpoint` (and the window) this is the file it asked for.
                session.artifact("checkpoint", saved, total_steps, {"requested": True})
            elif every and total_steps and total_steps % every == 0:
                saved = checkpoint_path(total_steps)
                learner.save(run_dir / saved)
                session.artifact("checkpoint", saved, total_steps, {"requested": False})
            action, random_action = learner.act(int(state))
            next_state, reward, terminated, truncated, info = env.step(action)
            td_error = learner.update(int(state), action, float(reward), int(next_state), bool(terminated))
            total_reward += float(reward)
            explored += random_action
            session.step(
                episode,
                step,
                float(reward),
                bool(terminated),
                bool(truncated),
                encoding.dumps(action),
                encoding.dumps(next_state),
                encoding.dumps({**info, "explored": random_action, "epsilon": epsilon, "td_error": td_error}),
                render.grid_payload(env) if grid else b"",
            )
            state = next_state
            step += 1
            total_steps += 1
            if max_steps is not None and total_steps >= max_steps:
                truncated = truncated or not terminated
                break
        learner.end_episode()
        session.episode(
            episode,
            steps=step,
            total_reward=total_reward,
            terminated=bool(terminated),
            truncated=bool(truncated),
            started_at=started_at,
            seed=episode_seed,
            info=encoding.dumps({"epsilon": epsilon, "explored": explored}),
        )
        session.metrics(
            [
                ("episode/return", total_steps, total_reward),
                ("episode/length", total_steps, float(step)),
                ("train/epsilon", total_steps, epsilon),
                # What the agent now expects to earn from where this episode started: it rises as it learns.
                ("train/start_value", total_steps, float(learner.q[start_state].max())),
            ]
        )
        episode += 1
    return "completed", total_steps


def main() -> int:
    # Registers, runs train with the run's config, and reports how it ended (the SDK's run_worker).
    return run_worker(
        "tabular_q worker",
        lambda session, registration: train(session, registration.config, Path(registration.run_dir)),
    )


if __name__ == "__main__":
    sys.exit(main())
