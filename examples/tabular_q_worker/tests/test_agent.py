"""The learner on its own: the Q-learning update, and a greedy policy that reaches FrozenLake's goal."""

from __future__ import annotations

from pathlib import Path

import gymnasium
import numpy as np
import pytest
from tabular_q_worker.agent import QLearner


def learner(n_states: int, n_actions: int, *, alpha: float = 0.5, seed: int = 0) -> QLearner:
    return QLearner(
        n_states,
        n_actions,
        alpha=alpha,
        gamma=0.95,
        epsilon=1.0,
        epsilon_decay=0.98,
        epsilon_min=0.01,
        rng=np.random.default_rng(seed),
    )


def test_the_update_moves_q_toward_its_target() -> None:
    agent = learner(3, 2, alpha=0.5)
    agent.q[1] = [0.0, 2.0]
    error = agent.update(0, 1, 1.0, 1, terminated=False)
    assert error == pytest.approx(1.0 + 0.95 * 2.0)
    assert agent.q[0, 1] == pytest.approx(0.5 * (1.0 + 0.95 * 2.0))
    # A terminal next state has no future value.
    assert agent.update(2, 0, 1.0, 1, terminated=True) == pytest.approx(1.0)


def test_epsilon_decays_to_its_floor() -> None:
    agent = learner(1, 2)
    for _ in range(1000):
        agent.end_episode()
    assert agent.epsilon == 0.01


def test_it_learns_the_way_across_the_lake(tmp_path: Path) -> None:
    env = gymnasium.make("FrozenLake-v1", is_slippery=False)
    agent = learner(16, 4)
    returns = []
    for episode in range(300):
        state, _ = env.reset(seed=episode)
        done, total = False, 0.0
        while not done:
            action, _ = agent.act(int(state))
            next_state, reward, terminated, truncated, _ = env.step(action)
            agent.update(int(state), action, float(reward), int(next_state), terminated)
            state, total, done = next_state, total + float(reward), terminated or truncated
        agent.end_episode()
        returns.append(total)
    assert sum(returns[-50:]) > sum(returns[:50])

    # Acting greedily, the learned table walks from the start to the goal.
    state, _ = env.reset(seed=0)
    done, reward = False, 0.0
    while not done:
        state, reward, terminated, truncated, _ = env.step(agent.greedy(int(state)))
        done = bool(terminated or truncated)
    assert reward == 1.0

    agent.save(tmp_path / "q.npy")
    assert np.array_equal(np.load(tmp_path / "q.npy"), agent.q)
