"""Tabular Q-learning with epsilon-greedy exploration (numpy only, no gym_gui, no SDK)."""

from __future__ import annotations

from pathlib import Path

import numpy as np


class QLearner:
    """A Q-table for ``n_states`` x ``n_actions``, its epsilon-greedy policy and the Q-learning update.

    Every random choice (exploring, breaking ties between equal values) comes from ``rng``, so a
    seeded learner on a seeded environment learns the same table every time.
    """

    def __init__(
        self,
        n_states: int,
        n_actions: int,
        *,
        alpha: float,
        gamma: float,
        epsilon: float,
        epsilon_decay: float,
        epsilon_min: float,
        rng: np.random.Generator,
    ) -> None:
        self.q = np.zeros((n_states, n_actions))
        self.alpha = alpha
        self.gamma = gamma
        self.epsilon = epsilon
        self.epsilon_decay = epsilon_decay
        self.epsilon_min = epsilon_min
        self.rng = rng

    def greedy(self, state: int) -> int:
        """The best known action in ``state`` (a random one of the best when several tie)."""
        row = self.q[state]
        return int(self.rng.choice(np.flatnonzero(row == row.max())))

    def act(self, state: int) -> tuple[int, bool]:
        """The action to take in ``state`` and whether it was a random (exploring) one."""
        if self.rng.random() < self.epsilon:
            return int(self.rng.integers(self.q.shape[1])), True
        return self.greedy(state), False

    def update(self, state: int, action: int, reward: float, next_state: int, terminated: bool) -> float:
        """Move Q(state, action) toward ``reward + gamma * max Q(next_state)``; returns the TD error.

        A terminal next state has no future; a truncated episode's next state still has one.
        """
        future = 0.0 if terminated else self.gamma * float(self.q[next_state].max())
        error = reward + future - float(self.q[state, action])
        self.q[state, action] += self.alpha * error
        return error

    def end_episode(self) -> None:
        """Explore a little less from the next episode on."""
        self.epsilon = max(self.epsilon_min, self.epsilon * self.epsilon_decay)

    def save(self, path: Path) -> None:
        """Write the Q-table as a ``.npy`` file (``numpy.load`` reads it back)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "wb") as f:
            np.save(f, self.q)
