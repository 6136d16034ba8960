"""Evaluation batches: every operator plays the same seeds, headless, each as a run of its own (no Qt).

Each operator plays in a thread of its own against its own process (the random baseline in this
one). Within an operator, ``slots`` episodes are open at once, each in its own env: one request asks
the operator for all their actions (a network answers them in one forward pass), and an episode's
actions depend only on its seed, never on which episodes shared its requests. The runs of one batch
share a comparison id; each episode's numbers are also kept in the run's stored episodes.
"""

from __future__ import annotations

import math
import secrets
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from gym_gui_sdk import encoding, render
from gym_gui_sdk.operator import FRAME, GRID, Operator, OperatorError, SpaceSpec, Turn
from gym_gui_sdk.worker import Phase, WorkerSession

from gym_gui.core.config import parse_run_config
from gym_gui.core.errors import ConfigError
from gym_gui.envs.check import make_env
from gym_gui.play.operators import OperatorChoice
from gym_gui.play.seat import OPERATOR_ACTED, Control, Seeds, episode_seed, episode_success
from gym_gui.play.worker import OPERATOR
from gym_gui.protocol.client import DaemonClient

# Episodes an operator plays at once: enough to share a forward pass and a pipe's round trip
# (bench/arena.py: a PPO MLP's 200 CartPole episodes took 2.9–3.0 s with 8, 2.5–2.7 s with 16 and
# 32), few enough that a batch of short runs keeps every slot busy.
DEFAULT_SLOTS = 16


@dataclass(frozen=True)
class EpisodeResult:
    """One episode of one operator: its seed, return, length, success (None: the env has no notion)
    and how many of its decisions fell back (a language model's timeouts and unparseable replies)."""

    episode: int
    seed: int | None
    total_reward: float
    length: int
    success: bool | None
    fallbacks: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "episode": self.episode,
            "seed": self.seed,
            "return": self.total_reward,
            "length": self.length,
            "success": self.success,
            "fallbacks": self.fallbacks,
        }


@dataclass
class OperatorResult:
    """What one operator did in a batch: its run, its episodes (in episode order), and why it stopped
    early when it did."""

    operator: str  # as named on the command line
    name: str  # its card's title
    run_id: str = ""
    episodes: list[EpisodeResult] = field(default_factory=list)
    error: str = ""

    @property
    def returns(self) -> np.ndarray:
        return np.array([e.total_reward for e in self.episodes], dtype=np.float64)

    @property
    def mean_return(self) -> float:
        return float(self.returns.mean()) if self.episodes else math.nan

    @property
    def ci95(self) -> float:
        """The half width of the mean return's 95 % confidence interval (Student's t); 0 for one episode."""
        return mean_ci95(self.returns)

    @property
    def success_rate(self) -> float | None:
        known = [e.success for e in self.episodes if e.success is not None]
        return sum(known) / len(known) if known else None

    @property
    def mean_length(self) -> float:
        return float(np.mean([e.length for e in self.episodes])) if self.episodes else math.nan

    @property
    def fallbacks(self) -> int:
        return sum(e.fallbacks for e in self.episodes)

    def to_json(self) -> dict[str, Any]:
        return {
            "operator": self.operator,
            "name": self.name,
            "run_id": self.run_id,
            "error": self.error,
            "mean_return": _finite(self.mean_return),
            "ci95": _finite(self.ci95),
            "success_rate": self.success_rate,
            "mean_length": _finite(self.mean_length),
            "fallbacks": self.fallbacks,
            "episodes": [e.to_json() for e in self.episodes],
        }


def mean_ci95(values: np.ndarray) -> float:
    """The half width of the mean's 95 % confidence interval (Student's t); 0 for one value, NaN for none."""
    n = len(values)
    if n < 2:
        return 0.0 if n else math.nan
    # Imported here: scipy.stats takes longer to import than the window takes to open, which
    # imports this module (the Arena) but asks for an interval only once a batch has played.
    from scipy import stats

    sem = float(np.std(values, ddof=1)) / math.sqrt(n)
    return float(stats.t.ppf(0.975, n - 1)) * sem


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


SUMMARY_COLUMNS = ("episodes", "mean return ± 95 % CI", "success", "mean length")


def summary_cells(result: OperatorResult) -> tuple[str, str, str, str]:
    """An operator's numbers as `gym-gui arena` prints them and the window's batch table shows them,
    one text per :data:`SUMMARY_COLUMNS` ("-" where there is nothing to say)."""
    rate = result.success_rate
    played = bool(result.episodes)
    ci95 = result.ci95
    return (
        str(len(result.episodes)),
        f"{result.mean_return:.4g} ± {f'{ci95:.3g}' if math.isfinite(ci95) else '-'}" if played else "-",
        "-" if rate is None else f"{rate:.1%}",
        f"{result.mean_length:.1f}" if played else "-",
    )


def new_comparison_id(prefix: str) -> str:
    """A fresh comparison id: what it compares, when, and a few random letters."""
    return f"{prefix}-{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(3)}"


@dataclass
class _Slot:
    index: int
    env: Any
    episode: int = -1
    seed: int | None = None
    observation: Any = None
    steps: int = 0
    total: float = 0.0
    fallbacks: int = 0
    started_at: float = 0.0
    last: tuple[Any, float] | None = None


class EvaluationBatch:
    """Plays ``episodes`` episodes of ``env_id`` with each operator on one seed sequence.

    Args:
        seeds: :class:`Seeds` ``fixed`` (``seed`` every episode) or ``procedural`` (``seed``, ``seed + 1``, …).
        slots: episodes an operator plays at once.
        render_fps: frames stored per second of play for pixel envs (0: none; grid games always
            store their compact grid, so every episode replays).
        on_episode: called (from the operator's thread) with its index and each finished episode.
    """

    def __init__(
        self,
        client: DaemonClient,
        choices: Sequence[OperatorChoice],
        env_id: str,
        episodes: int,
        seed: int,
        *,
        seeds: Seeds = Seeds.PROCEDURAL,
        slots: int = DEFAULT_SLOTS,
        render_fps: float = 0.0,
        comparison: str | None = None,
        secret_env: dict[str, str] | None = None,
        on_episode: Callable[[int, EpisodeResult], None] | None = None,
    ) -> None:
        if episodes < 1:
            raise ConfigError(f"a batch plays at least one episode, got {episodes}")
        if not choices:
            raise ConfigError("a batch needs at least one operator")
        if any(choice.ref.builtin == "human" for choice in choices):
            raise ConfigError("a batch plays headless: a person takes a seat in the window's Arena")
        self.client = client
        self.choices = list(choices)
        self.env_id = env_id
        self.episodes = episodes
        self.seed = seed
        self.seeds = seeds
        self.slots = max(1, min(slots, episodes))
        self.render_fps = render_fps
        self.comparison = comparison or new_comparison_id("batch")
        self.secret_env = secret_env
        self.on_episode = on_episode
        self.results = [OperatorResult(choice.ref.text, choice.name) for choice in self.choices]
        self._stop = threading.Event()

    def run(self) -> list[OperatorResult]:
        """Play every operator's episodes (each operator in a thread of its own); returns their results.
        An operator that fails ends its run FAILED with the reason, its result says so, the rest go on."""
        threads = [
            threading.Thread(target=self._play, args=(i,), name=f"batch-{i}", daemon=True)
            for i in range(len(self.choices))
        ]
        for thread in threads:
            thread.start()
        try:
            for thread in threads:
                thread.join()
        except KeyboardInterrupt:
            self._stop.set()
            for thread in threads:
                thread.join()
            raise
        return self.results

    def stop(self) -> None:
        """Stop after the steps in flight: each run ends CANCELLED with what it played stored."""
        self._stop.set()

    @property
    def stopping(self) -> bool:
        return self._stop.is_set()

    def _play(self, index: int) -> None:
        choice, result = self.choices[index], self.results[index]
        session: WorkerSession | None = None
        operator: Operator | None = None
        slots = [_Slot(i, make_env(self.env_id, render_mode="rgb_array")) for i in range(self.slots)]
        try:
            operator = choice.start(slots[0].env.action_space, secret_env=self.secret_env)
            space = slots[0].env
            problem = operator.card.problem(
                self.env_id, SpaceSpec.of(space.observation_space), SpaceSpec.of(space.action_space)
            )
            if problem:
                raise ConfigError(f"operator {choice.ref.text}: {problem}")
            record, token = self.client.submit(self._config(choice))
            result.run_id = record.run_id
            session = WorkerSession(self.client.info.address, record.run_id, token)
            session.start()
            env = slots[0].env
            session.started(
                render_kind=render.render_kind_of(env),
                spaces={"observation": str(env.observation_space), "action": str(env.action_space)},
            )
            _Player(self, operator, session, slots, result).play()
            if self.stopping:
                session.finish(Phase.CANCELLED, "the batch was stopped")
            else:
                session.finish(Phase.COMPLETED, f"{len(result.episodes)} episodes played")
        except (OperatorError, ConfigError) as exc:
            result.error = str(exc)
            if session is not None:
                session.finish(Phase.FAILED, f"operator {result.name} failed: {exc}")
        except BaseException as exc:
            result.error = f"{type(exc).__name__}: {exc}"
            if session is not None:
                session.finish(Phase.FAILED, result.error)
            raise
        finally:
            if operator is not None:
                operator.close()
            for slot in slots:
                slot.env.close()
            result.episodes.sort(key=lambda e: e.episode)

    def _config(self, choice: OperatorChoice) -> Any:
        return parse_run_config(
            {
                "worker": OPERATOR.kind,
                "mode": "play",
                "env_id": self.env_id,
                "seed": self.seed,
                "algorithm": choice.card.name,
                "budget": {"episodes": self.episodes},
                "params": {
                    "operator": choice.ref.text,
                    "control": Control.AGENT.value,
                    "seeds": self.seeds.value,
                },
                "telemetry": {"render_fps": self.render_fps},
                "comparison": self.comparison,
            }
        )


class _Player:
    """One operator's episodes, ``len(slots)`` at a time."""

    def __init__(
        self,
        batch: EvaluationBatch,
        operator: Operator,
        session: WorkerSession,
        slots: list[_Slot],
        result: OperatorResult,
    ) -> None:
        self.batch = batch
        self.operator = operator
        self.session = session
        self.slots = slots
        self.result = result
        self.game = render.grid_game(slots[0].env)
        self.grid = render.render_kind_of(slots[0].env) == render.GRID
        self.pixels = render.render_kind_of(slots[0].env) == render.PIXELS
        inputs = operator.card.inputs
        self.wants_grid = GRID in inputs and self.game is not None
        self.wants_frame = FRAME in inputs
        self.next_episode = 0
        self.frames = render.FramePacer()  # at the render rate, at most a tenth of the time

    def play(self) -> None:
        active = [slot for slot in self.slots if self._begin(slot)]
        while active and not self.batch.stopping:
            decisions = self.operator.act([self._turn(slot) for slot in active])
            still = []
            for slot, decision in zip(active, decisions, strict=True):
                if not self._step(slot, decision.action, decision.note) or self._begin(slot):
                    still.append(slot)
            active = still

    def _begin(self, slot: _Slot) -> bool:
        """Start the next episode in ``slot``; False when none is left."""
        if self.next_episode >= self.batch.episodes:
            return False
        slot.episode = self.next_episode
        self.next_episode += 1
        slot.seed = episode_seed(self.batch.seed, slot.episode, self.batch.seeds)
        slot.observation, _ = slot.env.reset(seed=slot.seed)
        slot.steps, slot.total, slot.fallbacks, slot.last = 0, 0.0, 0, None
        slot.started_at = time.time()
        self.operator.begin(slot.index, slot.seed)
        return True

    def _turn(self, slot: _Slot) -> Turn:
        turn = Turn(slot.index, slot.observation)
        if self.wants_grid:
            turn.grid = render.grid_description(slot.env)
        if self.wants_frame:
            frame = slot.env.render()
            if isinstance(frame, np.ndarray):
                turn.frame = render.frame_payload(frame)
        if slot.last is not None:
            turn.taken, turn.reward = slot.last
        return turn

    def _step(self, slot: _Slot, action: Any, note: dict[str, Any]) -> bool:
        """Step ``slot``'s env with the operator's action; True when its episode ended."""
        env = slot.env
        if isinstance(action, list):
            action = np.asarray(action, dtype=env.action_space.dtype)
        observation, reward, terminated, truncated, info = env.step(action)
        reward = float(reward)
        payload = b""
        if self.grid:
            payload = render.grid_payload(env)
        elif self.pixels:
            payload = (
                self.frames.frame(lambda: render.frame_payload(env.render()), self.batch.render_fps) or b""
            )
        self.session.step(
            slot.episode,
            slot.steps,
            reward,
            bool(terminated),
            bool(truncated),
            encoding.dumps(action),
            observation,
            encoding.dumps({**info, **note}) if (info or note) else "{}",
            payload,
            actor=OPERATOR_ACTED,
        )
        slot.steps += 1
        slot.total += reward
        slot.fallbacks += bool(note.get("fallback"))
        slot.observation = observation
        slot.last = (action, reward)
        if not (terminated or truncated):
            return False
        self.operator.end(slot.index)
        success = episode_success(self.game, slot.total, bool(terminated), dict(info))
        episode = EpisodeResult(slot.episode, slot.seed, slot.total, slot.steps, success, slot.fallbacks)
        self.session.episode(
            slot.episode,
            steps=slot.steps,
            total_reward=slot.total,
            terminated=bool(terminated),
            truncated=bool(truncated),
            started_at=slot.started_at,
            seed=slot.seed,
            info=encoding.dumps(
                {"success": success, "fallbacks": slot.fallbacks, "operator": self.result.name}
            ),
        )
        self.result.episodes.append(episode)
        if self.batch.on_episode is not None:
            self.batch.on_episode(self.batch.results.index(self.result), episode)
        return True
