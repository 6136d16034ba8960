"""A seat: one environment played by a person, an operator, or both (hybrid), published as one run.

The daemon gets exactly what a worker would send: STARTED, every step (a grid payload each step for
grid games, a PNG frame at ``render_fps`` for pixel envs), each episode, the end. Steps of an
operator's run say who acted (``operator`` or ``human``) and, where a person overrode the operator,
the action it proposed; each episode's info counts the interventions. Nothing here knows of Qt; the
window calls :meth:`Seat.step` off its GUI thread with the action its key map chose, or None to let
the operator act.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import numpy as np
from gym_gui_sdk import encoding, render
from gym_gui_sdk.operator import FRAME, GRID, Decision, Operator, OperatorError, SpaceSpec, Turn
from gym_gui_sdk.worker import Phase, WorkerSession

from gym_gui.core.config import parse_run_config
from gym_gui.core.errors import ConfigError
from gym_gui.envs.check import make_env
from gym_gui.play.operators import OperatorChoice
from gym_gui.play.worker import HUMAN, OPERATOR
from gym_gui.protocol.client import DaemonClient

OPERATOR_ACTED = "operator"
HUMAN_ACTED = "human"


class Control(StrEnum):
    """Who acts in a seat: a person alone, the operator alone, or the operator until a person takes over."""

    HUMAN = "human"
    AGENT = "agent"
    HYBRID = "hybrid"


class Seeds(StrEnum):
    """The seeds of a seat's episodes: the same one every episode, or ``seed``, ``seed + 1``, …"""

    FIXED = "fixed"
    PROCEDURAL = "procedural"


def episode_seed(seed: int | None, episode: int, seeds: Seeds = Seeds.PROCEDURAL) -> int | None:
    """The seed episode ``episode`` (from 0) resets with."""
    if seed is None or seeds is Seeds.FIXED:
        return seed
    return seed + episode


def episode_success(
    game: str | None, total_reward: float, terminated: bool, info: dict[str, Any]
) -> bool | None:
    """Whether an episode reached its goal, or None where the env has no notion of one.

    The env's own word first (``is_success`` or ``success`` in its last info: robotics, MetaWorld,
    highway); grid games where every step costs (CliffWalking, Taxi) succeed by ending; the other grid
    games (FrozenLake, MiniGrid) by a positive return. CartPole, Atari and MuJoCo say nothing: None.
    """
    for key in ("is_success", "success"):
        if key in info:
            return bool(info[key])
    if game in ("cliffwalking", "taxi"):
        return terminated
    if game is not None:
        return total_reward > 0
    return None


@dataclass(frozen=True)
class Outcome:
    """What the seat shows after a reset or a step: the env's answer, who acted and what was proposed."""

    observation: Any
    reward: float
    terminated: bool
    truncated: bool
    info: dict[str, Any]
    grid: dict[str, Any] | None  # the grid description, for grid environments
    frame: np.ndarray | None  # the RGB frame, for pixel environments
    step: int
    total_reward: float
    episode: int = 0
    actor: str = ""  # "operator", "human" or "" (a person's own run)
    action: Any = None
    proposed: Any = None  # the operator's proposal when a person overrode it
    note: dict[str, Any] = field(default_factory=dict)  # the operator's note (a language model's call)
    interventions: int = 0  # the times a person took over in the episode so far
    human_steps: int = 0  # the steps a person acted in the episode so far

    @property
    def done(self) -> bool:
        return self.terminated or self.truncated


@dataclass
class _Episode:
    """The running counts of the episode in play."""

    index: int
    seed: int | None
    started_at: float
    steps: int = 0
    total: float = 0.0
    human_steps: list[int] = field(default_factory=list)  # the steps a person acted
    interventions: int = 0  # the times a person took over: runs of consecutive human steps
    fallbacks: int = 0


class Seat:
    """Plays ``env_id`` for a person, an operator or both, and records its episodes as one run.

    A person alone (``choice`` None) plays one episode per run, a ``human`` run, unless ``episodes``
    asks for more (a person's pane in the Arena: one run for the session, as each operator's). With an
    operator the run is an ``operator`` run of many episodes (:meth:`next_episode`) until :meth:`close`.
    Every call may block (a model answering, the daemon storing): the window calls them off its GUI
    thread.
    """

    def __init__(
        self,
        client: DaemonClient,
        env_id: str,
        choice: OperatorChoice | None = None,
        *,
        control: Control = Control.HUMAN,
        seed: int | None = None,
        seeds: Seeds = Seeds.PROCEDURAL,
        render_fps: float = 15.0,
        comparison: str | None = None,
        episodes: int | None = None,  # default: 1 for a person, 1000 with an operator
        secret_env: dict[str, str] | None = None,
        env_kwargs: dict[str, Any] | None = None,
    ) -> None:
        if choice is None and control is not Control.HUMAN:
            raise ConfigError(f"a {control.value} seat needs an operator")
        if choice is not None and control is Control.HUMAN:
            raise ConfigError("a human seat takes no operator: the person acts alone")
        self.client = client
        self.env_id = env_id
        self.choice = choice
        self.control = control
        self.seed = seed
        self.seeds = seeds
        self.render_fps = render_fps
        self.comparison = comparison
        self.episodes = episodes if episodes is not None else 1 if choice is None else 1000
        if self.episodes < 1:
            raise ConfigError(f"a seat plays at least one episode, got {self.episodes}")
        self.secret_env = secret_env
        self.env_kwargs = dict(env_kwargs or {})
        self.env = make_env(env_id, render_mode="rgb_array", **self.env_kwargs)
        self.render_kind = render.render_kind_of(self.env)
        self.game = render.grid_game(self.env)
        self.operator: Operator | None = None
        self.run_id = ""
        self.finished = False
        self._session: WorkerSession | None = None
        self._episode: _Episode | None = None
        self._episodes_played = 0
        self._observation: Any = None
        self._proposal: Decision | None = None
        self._last: tuple[Any, float] | None = None  # the slot's previous action and reward
        self._last_frame = 0.0

    @property
    def name(self) -> str:
        return "you" if self.choice is None else self.choice.name

    def start(self) -> Outcome:
        """Start the operator (loading its model), submit the run and show the first state.

        Raises:
            ConfigError: the operator's loaded model cannot act on this env.
            OperatorError: the operator could not start (its own words).
        """
        if self.choice is not None:
            self.operator = self.choice.start(self.env.action_space, secret_env=self.secret_env)
            problem = self.operator.card.problem(
                self.env_id, SpaceSpec.of(self.env.observation_space), SpaceSpec.of(self.env.action_space)
            )
            if problem:
                self.operator.close()
                raise ConfigError(f"operator {self.choice.ref.text}: {problem}")
        config = self._config()
        try:
            record, token = self.client.submit(config)
        except BaseException:
            if self.operator is not None:
                self.operator.close()
            raise
        self.run_id = record.run_id
        self._session = WorkerSession(self.client.info.address, record.run_id, token, batch_steps=64)
        self._session.start()
        self._session.started(
            render_kind=self.render_kind,
            spaces={"observation": str(self.env.observation_space), "action": str(self.env.action_space)},
        )
        return self._reset()

    def next_episode(self) -> Outcome:
        """Start the run's next episode (a seat of several episodes), seeded by :attr:`seeds`."""
        if self.finished or self._episode is not None:
            raise RuntimeError("the episode in play is not over, or the seat is closed")
        return self._reset()

    @property
    def episode_over(self) -> bool:
        return self._episode is None

    def propose(self) -> Decision:
        """The operator's action for the current observation (asked once per step, then kept)."""
        if self.operator is None or self._episode is None:
            raise RuntimeError("no operator is playing an episode in this seat")
        if self._proposal is None:
            turn = Turn(0, self._observation)
            inputs = self.operator.card.inputs
            if GRID in inputs and self.game is not None:
                turn.grid = render.grid_description(self.env)
            if FRAME in inputs:
                frame = self.env.render()
                if isinstance(frame, np.ndarray):
                    turn.frame = render.frame_payload(frame)
            if self._last is not None:
                turn.taken, turn.reward = self._last
            self._proposal = self.operator.act([turn])[0]
        return self._proposal

    def step(self, human_action: Any = None) -> Outcome:
        """Apply the person's action when given (overriding the operator's proposal in hybrid),
        else the operator's. The episode's end is stored when it comes; the run goes on (an
        operator's seat) or finishes (a person's).

        Raises:
            OperatorError: the operator failed or died: the run is FAILED with the reason.
        """
        episode = self._episode
        if self._session is None or self.finished or episode is None:
            raise RuntimeError("no episode is in play; start one first")
        proposal: Decision | None = None
        if self.operator is not None:
            try:
                proposal = self.propose()
            except OperatorError as exc:
                self._finish(Phase.FAILED, f"operator {self.name} failed: {exc}")
                raise
        if human_action is None:
            if proposal is None:
                raise RuntimeError("a person's seat steps with the person's action")
            action, actor = proposal.action, OPERATOR_ACTED
        else:
            action, actor = human_action, HUMAN_ACTED if self.operator is not None else ""
        action = _as_env_action(self.env.action_space, action)
        observation, reward, terminated, truncated, info = self.env.step(action)
        index = episode.steps
        episode.steps += 1
        episode.total += float(reward)
        note = proposal.note if proposal is not None and actor == OPERATOR_ACTED else {}
        if actor == HUMAN_ACTED:
            if not episode.human_steps or episode.human_steps[-1] != index - 1:
                episode.interventions += 1
            episode.human_steps.append(index)
        if note.get("fallback"):
            episode.fallbacks += 1
        outcome = self._outcome(
            observation, float(reward), bool(terminated), bool(truncated), dict(info), actor, action, proposal
        )
        self._session.step(
            episode.index,
            index,
            outcome.reward,
            outcome.terminated,
            outcome.truncated,
            encoding.dumps(action),
            # The array itself: a numeric one travels packed and the daemon writes its JSON (a screen
            # compact), so the window's thread does not spend an Atari frame's encoding on every step.
            observation,
            encoding.dumps({**info, **note}) if note else encoding.dumps(info),
            self._payload(outcome),
            actor=actor,
            proposed_action=encoding.dumps(proposal.action) if actor == HUMAN_ACTED and proposal else "",
        )
        self._observation = observation
        self._proposal = None
        self._last = (action, float(reward))
        if outcome.done:
            self._end_episode(outcome)
        return outcome

    def close(self, reason: str = "") -> None:
        """Leave: a run of several episodes that played whole ones is COMPLETED, a run left in the
        middle of its only episode is CANCELLED (what was played stays stored)."""
        if self._episodes_played and (self.choice is not None or self.episodes > 1):
            self._finish(Phase.COMPLETED, reason or f"{self._episodes_played} episodes played")
        else:
            self._finish(Phase.CANCELLED, reason or "player left the episode")

    def fail(self, reason: str) -> None:
        """End the run FAILED with ``reason`` (the window's view of an operator that died)."""
        self._finish(Phase.FAILED, reason)

    # ------------------------------------------------------------------ inside

    def _config(self) -> Any:
        data: dict[str, Any] = {
            "env_id": self.env_id,
            "env_kwargs": self.env_kwargs,
            "seed": self.seed,
            "budget": {"episodes": self.episodes},
            "telemetry": {"render_fps": self.render_fps, "batch_seconds": 0.2},
            "comparison": self.comparison,
        }
        if self.choice is None:
            return parse_run_config({**data, "worker": HUMAN.kind})
        return parse_run_config(
            {
                **data,
                "worker": OPERATOR.kind,
                "mode": "play",
                "algorithm": self.choice.card.name,
                "params": {
                    "operator": self.choice.ref.text,
                    "control": self.control.value,
                    "seeds": self.seeds.value,
                },
            }
        )

    def _reset(self) -> Outcome:
        index = self._episodes_played
        seed = episode_seed(self.seed, index, self.seeds)
        observation, info = self.env.reset(seed=seed)
        self.env.action_space.seed(seed)
        self._episode = _Episode(index, seed, time.time())
        self._observation = observation
        self._proposal = None
        self._last = None
        if self.operator is not None:
            self.operator.begin(0, seed)
        return self._outcome(observation, 0.0, False, False, dict(info), "", None, None)

    def _end_episode(self, outcome: Outcome) -> None:
        episode = self._episode
        assert episode is not None and self._session is not None
        self._episode = None
        self._episodes_played += 1
        info: dict[str, Any] = {
            "success": episode_success(self.game, episode.total, outcome.terminated, outcome.info)
        }
        if self.operator is not None:
            info.update(
                {
                    "operator": self.name,
                    "interventions": episode.interventions,
                    "intervention_steps": episode.human_steps,
                    "intervention_rate": len(episode.human_steps) / max(episode.steps, 1),
                    "fallbacks": episode.fallbacks,
                }
            )
            self.operator.end(0)
        self._session.episode(
            episode.index,
            steps=episode.steps,
            total_reward=episode.total,
            terminated=outcome.terminated,
            truncated=outcome.truncated,
            started_at=episode.started_at,
            seed=episode.seed,
            info=encoding.dumps(info),
        )
        if self._episodes_played >= self.episodes:
            self._finish(
                Phase.COMPLETED,
                "every episode played" if self.episodes > 1 or self.choice else "episode played",
            )

    def _finish(self, phase: Phase, message: str) -> None:
        if self.finished:
            return
        self.finished = True
        try:
            if self._session is not None:
                self._session.finish(phase, message)
        finally:
            if self.operator is not None:
                self.operator.close()
            self.env.close()

    def _payload(self, outcome: Outcome) -> bytes:
        if outcome.grid is not None:
            return render.grid_payload(self.env)
        if outcome.frame is not None and self.render_fps > 0:
            now = time.monotonic()
            if now - self._last_frame >= 1.0 / self.render_fps or outcome.done:
                self._last_frame = now
                return render.frame_payload(outcome.frame)
        return b""

    def _outcome(
        self,
        observation: Any,
        reward: float,
        terminated: bool,
        truncated: bool,
        info: dict[str, Any],
        actor: str,
        action: Any,
        proposal: Decision | None,
    ) -> Outcome:
        grid = render.grid_description(self.env) if self.render_kind == render.GRID else None
        frame = self.env.render() if self.render_kind == render.PIXELS else None
        episode = self._episode
        return Outcome(
            observation=observation,
            reward=reward,
            terminated=terminated,
            truncated=truncated,
            info=info,
            grid=grid,
            frame=frame if isinstance(frame, np.ndarray) else None,
            step=episode.steps if episode else 0,
            total_reward=episode.total if episode else 0.0,
            episode=episode.index if episode else self._episodes_played - 1,
            actor=actor,
            action=action,
            proposed=proposal.action if proposal is not None and actor == HUMAN_ACTED else None,
            note=proposal.note if proposal is not None and actor == OPERATOR_ACTED else {},
            interventions=episode.interventions if episode else 0,
            human_steps=len(episode.human_steps) if episode else 0,
        )


def _as_env_action(space: Any, action: Any) -> Any:
    """An action as the env takes it: an operator's JSON list becomes the Box's array."""
    if isinstance(action, list):
        return np.asarray(action, dtype=getattr(space, "dtype", None) or np.float32)
    return action
