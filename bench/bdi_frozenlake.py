"""Spade BDI worker on FrozenLake 8x8 (slippery): 5,000 episodes, every step stored, fast mode, through the daemon.

Reference, in the same run: the tabular Q-learning loop a user writes by hand over gymnasium's
FrozenLake (numpy table, epsilon-greedy, the same hyperparameters), storing nothing.

Ours: a fresh daemon (temporary GYM_GUI_HOME, the user's bundles) runs a ``spade_bdi`` run: a SPADE
BDI agent logged in to its embedded XMPP server, its plans deciding at every episode boundary,
every step stored with its Q-values and grid. Its time is the run's RUNNING span from the registry
history (from the agent's login to the run's end, after every step is committed to SQLite); the
whole wall time from submit (process start, imports, XMPP server, login) is printed too. The run
must store exactly the steps its episodes took (lossless).

Also: deliberate mode (every step through the reasoning cycle) on the same lake for fewer
episodes, its steps/s and its ratio to fast mode's. The earlier system this replaces reported
5,000 episodes in 0.87 s (about 5.7k episodes/s) with telemetry stored; ours is printed beside it.

Usage::

    .venv/bin/python bench/bdi_frozenlake.py [--episodes 5000] [--deliberate-episodes 500] [--keep]
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from dataclasses import dataclass

import gymnasium as gym
import numpy as np
from _daemon import (  # bench/ is on sys.path when a bench runs as a script
    fresh_home,
    release,
    running_seconds,
)

from gym_gui.core.config import parse_run_config
from gym_gui.core.states import RunState
from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.run_dir import RunDir
from gym_gui.storage.telemetry import TelemetryReader

ENV = "FrozenLake-v1"
MAP = "8x8"
ALPHA, GAMMA, EPSILON, EPSILON_END, DECAY, SEED = 0.1, 0.99, 1.0, 0.01, 0.999, 0
EARLIER_SECONDS, EARLIER_EPISODES = 0.87, 5000


class BenchError(RuntimeError):
    pass


@dataclass(frozen=True)
class Measured:
    episodes: int
    steps: int
    seconds: float
    wall: float = 0.0

    @property
    def episodes_per_s(self) -> float:
        return self.episodes / self.seconds

    @property
    def steps_per_s(self) -> float:
        return self.steps / self.seconds


def by_hand(episodes: int) -> Measured:
    """Tabular Q-learning as a user writes it: gymnasium's env, a numpy table, nothing stored."""
    env = gym.make(ENV, map_name=MAP, is_slippery=True)
    q = np.zeros((env.observation_space.n, env.action_space.n))  # type: ignore[attr-defined]
    rng = random.Random(SEED)
    epsilon, steps = EPSILON, 0
    started = time.perf_counter()
    for episode in range(episodes):
        state, _ = env.reset(seed=SEED + episode)
        done = False
        while not done:
            action = rng.randrange(4) if rng.random() < epsilon else int(np.argmax(q[state]))
            next_state, reward, terminated, truncated, _ = env.step(action)
            future = 0.0 if terminated else GAMMA * q[next_state].max()
            q[state, action] += ALPHA * (float(reward) + future - q[state, action])
            state, done = next_state, terminated or truncated
            steps += 1
        epsilon = max(EPSILON_END, epsilon * DECAY)
    seconds = time.perf_counter() - started
    env.close()
    return Measured(episodes, steps, seconds, seconds)


def through_gym_gui(client: DaemonClient, episodes: int, mode: str) -> Measured:
    config = parse_run_config(
        {
            "worker": "spade_bdi",
            "env_id": ENV,
            "seed": SEED,
            "budget": {"episodes": episodes},
            "params": {"map": MAP, "mode": mode, "alpha": ALPHA, "epsilon_decay": DECAY},
            "notes": "bench/bdi_frozenlake.py",
        }
    )
    submitted = time.monotonic()
    record, _ = client.submit(config)
    final = client.wait_for_end(record.run_id, 3600)
    wall = time.monotonic() - submitted
    if final.state is not RunState.COMPLETED:
        raise BenchError(f"run {record.run_id} ended {final.state.value}: {final.reason}")
    running = running_seconds(client, record.run_id)
    if running is None:
        raise BenchError(f"run {record.run_id} has no RUNNING transition in its history")
    reader = TelemetryReader(RunDir(client.get_run(record.run_id).record.run_dir).telemetry_path)
    try:
        played = reader.episodes()
        stored = sum(reader.steps_per_episode().values())
    finally:
        reader.close()
    if len(played) != episodes or stored != sum(e.steps for e in played):
        raise BenchError(f"run {record.run_id} stored {stored} steps of {len(played)} episodes: not lossless")
    return Measured(episodes, stored, running, wall)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=5000)
    parser.add_argument("--deliberate-episodes", type=int, default=500)
    parser.add_argument("--keep", action="store_true", help="keep the temporary home")
    args = parser.parse_args()

    root = fresh_home("gym-gui-bench-bdi-")
    client = DaemonClient.connect(root)
    try:
        reference = by_hand(args.episodes)
        fast = through_gym_gui(client, args.episodes, "fast")
        deliberate = through_gym_gui(client, args.deliberate_episodes, "deliberate")
    except BenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    finally:
        release(client, root, args.keep)

    print(
        f"by hand (nothing stored): {reference.episodes} episodes, {reference.steps:,} steps in "
        f"{reference.seconds:.2f} s: {reference.episodes_per_s:,.0f} episodes/s, {reference.steps_per_s:,.0f} steps/s"
    )
    print(
        f"spade_bdi fast, every step stored: {fast.episodes} episodes, {fast.steps:,} steps in "
        f"{fast.seconds:.2f} s RUNNING ({fast.wall:.2f} s from submit): "
        f"{fast.episodes_per_s:,.0f} episodes/s, {fast.steps_per_s:,.0f} steps/s"
    )
    print(
        f"earlier system: {EARLIER_EPISODES} episodes in {EARLIER_SECONDS} s "
        f"({EARLIER_EPISODES / EARLIER_SECONDS:,.0f} episodes/s); ours: {fast.seconds:.2f} s "
        f"({fast.episodes_per_s:,.0f} episodes/s)"
    )
    print(
        f"spade_bdi deliberate: {deliberate.episodes} episodes, {deliberate.steps:,} steps in "
        f"{deliberate.seconds:.2f} s: {deliberate.steps_per_s:,.0f} steps/s, "
        f"{deliberate.steps_per_s / fast.steps_per_s:.2f} of fast mode's steps/s"
    )
    print(f"ratio by hand ÷ ours from submit: {reference.seconds / fast.wall:.2f}")
    print(f"ratio by hand ÷ ours (RUNNING), goal ≥ 1: {reference.seconds / fast.seconds:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
