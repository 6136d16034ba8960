"""The work behind the agent's actions: the environment, the Q-table, and what is reported to gym_gui.

No SPADE here: the BDI agent (``agent``) calls these methods from its actions, in either mode, so
both modes take exactly the same steps with the same random numbers and learn the same table.

Telemetry of one step (``info`` of the step, JSON)::

    {"state": s, "q_before": [Q(s, a) for a], "q_after": [...], "epsilon": e,
     "explored": bool, "td_error": x | null, "mode": "fast" | "deliberate",
     "beliefs": ["epsilon(0.5)", ...], "intention": ["run", "step", ...]}   # deliberate mode only

with the action and the next state as the step's action and observation, and the grid render
payload human play uses (``gym_gui_sdk.render.GridPayloads``: ``grid_payload``'s bytes, the fixed board
encoded once) for FrozenLake, CliffWalking and Taxi.
"""

from __future__ import annotations

import random
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from gym_gui_sdk import encoding, render
from gym_gui_sdk.worker import WorkerSession
from gymnasium.envs.toy_text.cliffwalking import CliffWalkingEnv
from gymnasium.envs.toy_text.frozen_lake import FrozenLakeEnv
from gymnasium.wrappers import OrderEnforcing, PassiveEnvChecker, TimeLimit

from gym_gui_spade_bdi_worker.checkpoint import FINAL, QTableFile, periodic_path
from gym_gui_spade_bdi_worker.environments import grid_map, table_shape
from gym_gui_spade_bdi_worker.learner import QLearner
from gym_gui_spade_bdi_worker.params import scheduled_epsilon


def direct_step(env: gym.Env[Any, Any]) -> tuple[Any, int | None]:
    """The step function under the bookkeeping wrappers ``gymnasium.make`` adds, and the step limit
    its ``TimeLimit`` held (None: no limit).

    ``PassiveEnvChecker`` looks at the first step only and ``OrderEnforcing`` at the reset before it,
    which a run always does; a step through the three costs a FrozenLake step a tenth more. The
    limit is then applied by :meth:`Training.act` exactly as ``TimeLimit`` does. An environment
    with any other wrapper is stepped through all of them, its limit left to its ``TimeLimit``.
    FrozenLake's and CliffWalking's own step is their :class:`TableStep`.
    """
    inner: Any = env
    limit: int | None = None
    while isinstance(inner, gym.Wrapper):
        kind = type(inner)
        if kind is TimeLimit:
            steps = inner.spec.max_episode_steps if inner.spec is not None else None
            if steps is None:
                return env.step, None
            limit = steps if limit is None else min(limit, steps)
        elif kind is not PassiveEnvChecker and kind is not OrderEnforcing:
            return env.step, None
        inner = inner.env
    return TableStep.of(inner) or inner.step, limit


class TableStep:
    """FrozenLake's and CliffWalking's step, the same draw without numpy's per-call cost.

    Their ``step`` draws the next transition of ``P[s][a]`` with ``categorical_sample``: the
    ``np.cumsum`` of the transitions' probabilities, and the first index whose sum passes one
    ``np_random.random()`` (the first index when none does). Here the sums are made once, by
    ``np.cumsum`` (the same floats), and each step draws the same number from the env's own
    generator and sets the env's ``s`` and ``lastaction`` as its step does: the same transitions,
    the same random stream and the same env afterwards (the kind's ``tests/test_learning.py``
    steps both side by side), at a fraction of the cost (two numpy calls on three values were a
    fifth of the worker's time).
    """

    __slots__ = ("_env", "_rows")

    def __init__(self, env: Any) -> None:
        self._env = env
        # Per state and action: the running sums of its transitions' probabilities, and the transitions.
        table = env.P  # {state: {action: [(probability, next state, reward, terminated)]}}
        self._rows = [
            [(np.cumsum([t[0] for t in table[s][a]]).tolist(), table[s][a]) for a in range(len(table[s]))]
            for s in range(len(table))
        ]

    @classmethod
    def of(cls, env: Any) -> TableStep | None:
        """The table step of ``env`` (unwrapped) if its step is FrozenLake's or CliffWalking's own,
        without the human render mode's window; None otherwise."""
        step = getattr(type(env), "step", None)
        if (step is FrozenLakeEnv.step or step is CliffWalkingEnv.step) and env.render_mode != "human":
            return cls(env)
        return None

    def __call__(self, action: int) -> tuple[int, float, bool, bool, dict[str, Any]]:
        env = self._env
        sums, transitions = self._rows[env.s][action]
        x = env.np_random.random()
        chosen = 0
        for index, total in enumerate(sums):
            if total > x:
                chosen = index
                break
        probability, state, reward, terminated = transitions[chosen]
        env.s = state
        env.lastaction = action
        return int(state), reward, terminated, False, {"prob": probability}


@dataclass(slots=True)
class Outcome:
    """What one environment step gave."""

    next_state: int
    reward: float
    terminated: bool
    truncated: bool
    q_before: list[float]
    explored: bool
    epsilon: float


@dataclass
class EpisodeEnd:
    """How the episode that just ended went (its beliefs: goal_reached, gave_up, or neither)."""

    goal_reached: bool
    gave_up: bool
    total_reward: float
    steps: int


@dataclass
class Settings:
    """The run's settings the training reads (resolved parameters and config fields)."""

    env_id: str
    env_kwargs: dict[str, Any]
    episodes: int | None
    timesteps: int | None
    seed: int | None
    alpha: float
    gamma: float
    mode: str
    checkpoint_every: int
    success_window: int
    evaluating: bool = False
    real_time: bool = False
    hyperparameters: dict[str, Any] = field(default_factory=dict)
    # The exploration parameters, resolved (params.PARAMETERS): epsilon_start, epsilon_end,
    # epsilon_decay (None: the schedule fitted to the budget), exploration_fraction.
    exploration: dict[str, Any] = field(default_factory=dict)


class Training:
    """One run's environment, learner and reporting, driven step by step or episode by episode."""

    def __init__(
        self,
        session: WorkerSession,
        env: gym.Env[Any, Any],
        settings: Settings,
        run_dir: Path,
        start_table: np.ndarray | None = None,
    ) -> None:
        self.session = session
        self.env = env
        self.settings = settings
        self.run_dir = run_dir
        self.shape = table_shape(env)
        self.map = grid_map(env)
        self._env_step, self._step_limit = direct_step(env)
        q = start_table if start_table is not None else np.zeros(self.shape)
        self.learner = QLearner(
            q, alpha=settings.alpha, gamma=settings.gamma, rng=random.Random(settings.seed)
        )
        self.grid = render.GridPayloads(env) if render.render_kind_of(env) == render.GRID else None
        fps = float(env.metadata.get("render_fps") or 4)
        self.step_period = 1.0 / fps if settings.real_time else 0.0
        self.episode = 0
        self.total_steps = 0
        self.epsilon = 0.0
        self.explored = False
        self.outcome: Outcome | None = None
        self.deliberation: dict[str, Any] = {}
        self._successes: deque[bool] = deque(maxlen=settings.success_window)
        self._lengths: deque[int] = deque(maxlen=settings.success_window)
        self._state = 0
        self._step = 0
        self._reward = 0.0
        self._explored = 0
        self._started_at = 0.0
        self._terminated = self._truncated = False

    # ------------------------------------------------------------ the budget

    @property
    def episodes_left(self) -> int:
        """Episodes still to play (the steps budget, when there is one, ends the run as well)."""
        settings = self.settings
        left = (settings.episodes - self.episode) if settings.episodes is not None else 1
        if settings.timesteps is not None and self.total_steps >= settings.timesteps:
            left = 0
        return max(0, left)

    def epsilon_decay(self) -> float:
        """What the plans multiply epsilon by after the episode that just ended (the belief
        ``epsilon_decay(D)``): the run's ``epsilon_decay``, else the step that takes epsilon to
        where the schedule fitted to the budget has it for the next episode (by the episodes
        played of an episode budget, else by the steps taken of a step budget)."""
        settings, exploration = self.settings, self.settings.exploration
        if exploration.get("epsilon_decay") is not None:
            return float(exploration["epsilon_decay"])
        if settings.episodes:
            done = self.episode / settings.episodes
        elif settings.timesteps:
            done = self.total_steps / settings.timesteps
        else:
            return 1.0
        # Relative to the epsilon the episode played with (the plans' belief), so the plans land on the schedule.
        return scheduled_epsilon(exploration, done) / self.epsilon if self.epsilon > 0 else 1.0

    @property
    def success_rate(self) -> float:
        return sum(self._successes) / len(self._successes) if self._successes else 0.0

    # ------------------------------------------------------------ one episode

    def reset(self) -> int:
        """Start the next episode; returns its first state."""
        seed = self.settings.seed
        state, _info = self.env.reset(seed=None if seed is None else seed + self.episode)
        self._state = int(state)
        self._step = 0
        self._reward = 0.0
        self._explored = 0
        self._started_at = time.time()
        self._terminated = self._truncated = False
        return self._state

    @property
    def episode_over(self) -> bool:
        return self._terminated or self._truncated

    @property
    def goal_reached(self) -> bool:
        """The episode ended at its goal (the environment ended it with a reward)."""
        return self._terminated and self._reward > 0

    @property
    def gave_up(self) -> bool:
        """The episode ran out of steps before it ended."""
        return self._truncated and not self._terminated

    def choose(self, state: int, epsilon: float) -> int:
        """The epsilon-greedy action in ``state`` (greedy when evaluating)."""
        self.epsilon = epsilon
        action, self.explored = self.learner.choose(state, 0.0 if self.settings.evaluating else epsilon)
        return action

    def act(self, state: int, action: int) -> Outcome:
        """Take ``action`` in the environment (the one :meth:`choose` gave)."""
        q_before = list(self.learner.q[state])
        next_state, reward, terminated, truncated, _info = self._env_step(action)
        self._step += 1
        self.total_steps += 1
        if self._step_limit is not None and self._step >= self._step_limit:
            truncated = True  # as TimeLimit does
        timesteps = self.settings.timesteps
        if timesteps is not None and self.total_steps >= timesteps and not terminated:
            truncated = True
        self._terminated, self._truncated = bool(terminated), bool(truncated)
        self._reward += float(reward)
        self._explored += self.explored
        if self.step_period:
            time.sleep(self.step_period)
        self.outcome = Outcome(
            int(next_state),
            float(reward),
            bool(terminated),
            bool(truncated),
            q_before,
            self.explored,
            self.epsilon,
        )
        return self.outcome

    def learn(self, state: int, action: int, outcome: Outcome) -> None:
        """The TD update (none when evaluating), then the step reported with its Q-values."""
        td_error: float | None = None
        if not self.settings.evaluating:
            td_error = self.learner.learn(
                state, action, outcome.reward, outcome.next_state, outcome.terminated
            )
        info: dict[str, Any] = {
            "state": state,
            "q_before": outcome.q_before,
            "q_after": list(self.learner.q[state]),
            "epsilon": outcome.epsilon,
            "explored": outcome.explored,
            "td_error": td_error,
            "mode": self.settings.mode,
            **self.deliberation,
        }
        self.session.step(
            self.episode,
            self._step - 1,
            outcome.reward,
            outcome.terminated,
            outcome.truncated,
            str(action),
            str(outcome.next_state),
            encoding.dumps(info),
            self.grid.payload() if self.grid is not None else b"",
        )

    def run_episode(self, epsilon: float) -> None:
        """A whole episode inside one call: choose, act and learn until it ends (fast mode)."""
        state = self.reset()
        stop = self.session.stop_requested
        while True:
            action = self.choose(state, epsilon)
            outcome = self.act(state, action)
            self.learn(state, action, outcome)
            state = outcome.next_state
            if outcome.terminated or outcome.truncated or stop.is_set():
                return

    def end_episode(self) -> EpisodeEnd:
        """Report the episode that just ended, its metrics, and move to the next one."""
        reached, gave_up = self.goal_reached, self.gave_up
        self._successes.append(reached)
        self._lengths.append(self._step)
        session = self.session
        session.episode(
            self.episode,
            steps=self._step,
            total_reward=self._reward,
            terminated=self._terminated,
            truncated=self._truncated or not self._terminated,
            started_at=self._started_at,
            seed=None if self.settings.seed is None else self.settings.seed + self.episode,
            info=encoding.dumps(
                {
                    "epsilon": self.epsilon,
                    "explored": self._explored,
                    "goal_reached": reached,
                    "gave_up": gave_up,
                }
            ),
        )
        session.metrics(
            [
                ("episode/return", self.total_steps, self._reward),
                ("episode/length", self.total_steps, float(self._step)),
                ("train/success_rate", self.total_steps, self.success_rate),
                ("train/mean_length", self.total_steps, sum(self._lengths) / len(self._lengths)),
                ("train/epsilon", self.total_steps, self.epsilon),
            ]
        )
        end = EpisodeEnd(reached, gave_up, self._reward, self._step)
        self.episode += 1
        return end

    @property
    def checkpoint_due(self) -> bool:
        every = self.settings.checkpoint_every
        return not self.settings.evaluating and every > 0 and self.episode % every == 0

    # ------------------------------------------------------------ the table

    def table_file(self) -> QTableFile:
        settings = self.settings
        return QTableFile(
            q=self.learner.table(),
            env_id=settings.env_id,
            env_kwargs=settings.env_kwargs,
            map=self.map,
            hyperparameters=settings.hyperparameters,
            episode=self.episode,
            steps=self.total_steps,
            seed=settings.seed,
            epsilon=self.epsilon,
        )

    def save_checkpoint(self, reason: str) -> None:
        """Save the Q-table as it is and tell gym_gui where (``reason``: periodic or requested)."""
        path = periodic_path(self.episode)
        digest = self.table_file().save(self.run_dir / path)
        meta = {"episode": self.episode, "table_sha256": digest, "reason": reason}
        if reason == "requested":
            meta["requested"] = True  # `gym-gui checkpoint` and the window wait for this one
        self.session.artifact("checkpoint", path, self.total_steps, meta)

    def save_final(self, outcome: str) -> None:
        """The table learned so far is the run's model, whether the budget was spent or a stop came."""
        digest = self.table_file().save(self.run_dir / FINAL)
        self.session.artifact(
            "model",
            FINAL,
            self.total_steps,
            {"episode": self.episode, "table_sha256": digest, "outcome": outcome},
        )
