"""Tabular Q-learning: the table, the epsilon-greedy choice and the TD update (plain Python, no SPADE).

The table is a list of rows of floats rather than a numpy array: a FrozenLake row has four
values, and indexing Python lists is several times faster than numpy's scalar access at that
size, which is most of the cost of a step.
"""

from __future__ import annotations

import random

import numpy as np


def greedy_action(row: list[float], rng: random.Random) -> int:
    """The action of the largest value in ``row``; when several tie, one of them drawn from ``rng``
    (a draw is made only on a tie, so a table without ties never moves the generator)."""
    best = max(row)
    ties = [action for action, value in enumerate(row) if value == best]
    return ties[0] if len(ties) == 1 else ties[rng.randrange(len(ties))]


class QLearner:
    """A Q-table, its epsilon-greedy policy and the Q-learning update.

    Every random choice (exploring, breaking ties between equal values) comes from ``rng``, so a
    seeded learner on a seeded environment learns the same table every time, whichever mode
    (fast or deliberate) calls it.
    """

    def __init__(self, q: np.ndarray, *, alpha: float, gamma: float, rng: random.Random) -> None:
        self.q: list[list[float]] = [[float(v) for v in row] for row in np.asarray(q, dtype=np.float64)]
        self.n_actions = len(self.q[0])
        self.alpha = alpha
        self.gamma = gamma
        self.rng = rng

    def greedy(self, state: int) -> int:
        """The best known action in ``state`` (a random one of the best when several tie)."""
        return greedy_action(self.q[state], self.rng)

    def choose(self, state: int, epsilon: float) -> tuple[int, bool]:
        """The action to take in ``state`` and whether it was a random (exploring) one."""
        if self.rng.random() < epsilon:
            return self.rng.randrange(self.n_actions), True
        return self.greedy(state), False

    def learn(self, state: int, action: int, reward: float, next_state: int, terminated: bool) -> float:
        """Move Q(state, action) toward ``reward + gamma * max Q(next_state)``; returns the TD error.

        A terminal next state has no future; a truncated episode's next state still has one.
        """
        future = 0.0 if terminated else self.gamma * max(self.q[next_state])
        row = self.q[state]
        error = reward + future - row[action]
        row[action] += self.alpha * error
        return error

    def table(self) -> np.ndarray:
        return np.array(self.q, dtype=np.float64)
