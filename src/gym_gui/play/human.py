"""HumanSession: one episode played by a person, published to the daemon as a `human` run."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np
from gym_gui_sdk import encoding, render
from gym_gui_sdk.worker import Phase, WorkerSession

from gym_gui.core.config import parse_run_config
from gym_gui.envs.check import make_env
from gym_gui.play.worker import HUMAN
from gym_gui.protocol.client import DaemonClient


@dataclass(frozen=True)
class Outcome:
    """What the player sees after a reset or a step."""

    observation: Any
    reward: float
    terminated: bool
    truncated: bool
    info: dict[str, Any]
    grid: dict[str, Any] | None  # the grid description, for grid environments
    frame: np.ndarray | None  # the RGB frame, for pixel environments
    step: int
    total_reward: float

    @property
    def done(self) -> bool:
        return self.terminated or self.truncated


class HumanSession:
    """Steps ``env_id`` for a person and records the episode as its own run.

    The daemon gets exactly what a worker would send: STARTED, every step (grid payload each step,
    or a PNG frame at ``render_fps``), the episode, COMPLETED. Nothing here knows of Qt; the window
    calls :meth:`step` with the action its key map chose.
    """

    def __init__(
        self, client: DaemonClient, env_id: str, seed: int | None = None, render_fps: float = 15.0
    ) -> None:
        self.client = client
        self.env_id = env_id
        self.seed = seed
        self.render_fps = render_fps
        self.env = make_env(env_id, render_mode="rgb_array")
        self.render_kind = render.render_kind_of(self.env)
        self.run_id = ""
        self._session: WorkerSession | None = None
        self._step = 0
        self._total = 0.0
        self._started_at = 0.0
        self._last_frame = 0.0
        self.finished = False

    def start(self) -> Outcome:
        """Submit the run, reset the environment and show its first state."""
        config = parse_run_config(
            {
                "worker": HUMAN.kind,
                "env_id": self.env_id,
                "seed": self.seed,
                "budget": {"episodes": 1},
                "telemetry": {"render_fps": self.render_fps, "batch_seconds": 0.2},
            }
        )
        record, token = self.client.submit(config)
        self.run_id = record.run_id
        self._session = WorkerSession(self.client.info.address, record.run_id, token, batch_steps=64)
        self._session.start()
        observation, info = self.env.reset(seed=self.seed)
        self._session.started(
            render_kind=self.render_kind,
            spaces={"observation": str(self.env.observation_space), "action": str(self.env.action_space)},
        )
        self._started_at = time.time()
        return self._outcome(observation, 0.0, False, False, info)

    def step(self, action: Any) -> Outcome:
        """Apply the player's action; the episode's run finishes when the episode ends."""
        if self._session is None or self.finished:
            raise RuntimeError("the episode is over; start a new session")
        observation, reward, terminated, truncated, info = self.env.step(action)
        self._step += 1
        self._total += float(reward)
        outcome = self._outcome(observation, float(reward), bool(terminated), bool(truncated), info)
        payload = b""
        if outcome.grid is not None:
            payload = render.grid_payload(self.env)
        elif outcome.frame is not None and self.render_fps > 0:
            now = time.monotonic()
            if now - self._last_frame >= 1.0 / self.render_fps or outcome.done:
                self._last_frame = now
                payload = render.frame_payload(outcome.frame)
        self._session.step(
            0,
            self._step - 1,
            outcome.reward,
            outcome.terminated,
            outcome.truncated,
            encoding.dumps(action),
            encoding.dumps(observation),
            encoding.dumps(info),
            payload,
        )
        if outcome.done:
            self._session.episode(
                0,
                steps=self._step,
                total_reward=self._total,
                terminated=outcome.terminated,
                truncated=outcome.truncated,
                started_at=self._started_at,
                seed=self.seed,
            )
            self._finish(Phase.COMPLETED, "episode played")
        return outcome

    def close(self) -> None:
        """Leave the episode: a run left before its end is CANCELLED (what was played stays stored)."""
        self._finish(Phase.CANCELLED, "player left the episode")

    def _finish(self, phase: Phase, message: str) -> None:
        if self._session is not None and not self.finished:
            self.finished = True
            self._session.finish(phase, message)
            self.env.close()

    def _outcome(
        self, observation: Any, reward: float, terminated: bool, truncated: bool, info: dict[str, Any]
    ) -> Outcome:
        grid = render.grid_description(self.env) if self.render_kind == render.GRID else None
        frame = self.env.render() if self.render_kind == render.PIXELS else None
        return Outcome(
            observation=observation,
            reward=reward,
            terminated=terminated,
            truncated=truncated,
            info=info,
            grid=grid,
            frame=frame if isinstance(frame, np.ndarray) else None,
            step=self._step,
            total_reward=self._total,
        )
