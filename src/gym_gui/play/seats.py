"""Arena games of a turn-based multi-agent env: an operator in each seat, every game stored (no Qt).

A seating maps each of the env's agents to an operator; it is checked whole before anything starts
(every agent seated, no unknown agent, each operator able to act on its seat's spaces). Its games are
one run of the Operator kind: every step names its agent (decision 0049), the seat whose turn it is
is asked, and a move the env's action mask refuses is replaced by a random legal one and counted.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from gym_gui_sdk import encoding
from gym_gui_sdk.operator import ANY_SPACE, TEXT, Operator, OperatorError, SpaceSpec, Turn
from gym_gui_sdk.worker import Phase, WorkerSession

from gym_gui.core.config import parse_run_config
from gym_gui.core.errors import ConfigError, GymGuiError
from gym_gui.envs.catalog import env_entry
from gym_gui.envs.check import make_multi_agent_env
from gym_gui.envs.families.pettingzoo.text import board_text
from gym_gui.play.batch import mean_ci95, new_comparison_id
from gym_gui.play.operators import HUMAN, OperatorChoice
from gym_gui.play.seat import OPERATOR_ACTED
from gym_gui.play.worker import OPERATOR
from gym_gui.protocol.client import DaemonClient

SEAT_SEPARATOR = "="
# Replacement moves draw from a seed of their own, apart from the seat's operator's.
_REPLACEMENT_OFFSET = 1_000_003


def parse_seats(texts: Sequence[str]) -> dict[str, str]:
    """``AGENT=OPERATOR`` texts as ``{agent: operator}``, in the order given.

    Raises:
        ConfigError: a text without ``=``, or an agent seated twice.
    """
    seats: dict[str, str] = {}
    for text in texts:
        agent, separator, operator = text.partition(SEAT_SEPARATOR)
        agent, operator = agent.strip(), operator.strip()
        if not separator or not agent or not operator:
            raise ConfigError(f"--seat {text!r}: write AGENT=OPERATOR, e.g. player_0=random")
        if agent in seats:
            raise ConfigError(f"--seat {agent}: seated twice ({seats[agent]} and {operator})")
        seats[agent] = operator
    return seats


def seat_spaces(env_id: str) -> dict[str, tuple[SpaceSpec, SpaceSpec, str]]:
    """Each agent's observation and action spaces in ``env_id`` (made here, blocking), and the
    observation space's own spelling."""
    env = make_multi_agent_env(env_id)
    try:
        return {
            agent: (
                SpaceSpec.of(env.observation_space(agent)),
                SpaceSpec.of(env.action_space(agent)),
                str(env.observation_space(agent)),
            )
            for agent in env.possible_agents
        }
    finally:
        env.close()


def check_seating(
    env_id: str,
    seats: dict[str, str],
    choose: Callable[[str, str, tuple[SpaceSpec, SpaceSpec]], OperatorChoice],
) -> dict[str, OperatorChoice]:
    """Each agent of ``env_id`` with its operator chosen (``choose(text, env_id, spaces)``), in the
    env's agent order.

    Raises:
        ConfigError: ``env_id`` has one agent or is played all at once, an agent is unknown or has no
            seat, or an operator cannot act on its seat (one line naming the seat and why).
    """
    entry = env_entry(env_id)
    if entry is None or not entry.agents:
        raise ConfigError(f"--seat: {env_id} has one agent; name the operators to compare instead")
    if entry.realtime:
        raise ConfigError(
            f"--seat: {env_id} is played by every agent at once; the arena seats turn-based games"
        )
    agents = list(entry.agents)
    for agent in seats:
        if agent not in agents:
            raise ConfigError(
                f"--seat {agent}: {env_id} has no agent {agent}; its agents: {', '.join(agents)}"
            )
    missing = [agent for agent in agents if agent not in seats]
    if missing:
        raise ConfigError(f"seat {missing[0]} has no operator: add --seat {missing[0]}=OPERATOR")
    spaces = seat_spaces(env_id)
    chosen: dict[str, OperatorChoice] = {}
    for agent in agents:
        if seats[agent] == HUMAN:
            raise ConfigError(f"seat {agent}: the arena plays headless; a person takes a seat in the window")
        observation, action, spelled = spaces[agent]
        try:
            choice = choose(seats[agent], env_id, (observation, action))
        except GymGuiError as exc:  # its configuration's env made here (UnknownEnv), or ConfigError
            raise ConfigError(f"seat {agent}: {exc}") from None
        # A Classic seat observes a board with its action mask (a Dict, "any space" to a card): only
        # an operator that takes any observation can read it.
        if observation == ANY_SPACE and choice.card.observation != ANY_SPACE:
            raise ConfigError(
                f"seat {agent}: operator {seats[agent]}: {choice.card.title} expects "
                f"{choice.card.observation} observations; {env_id}'s seat observes {_short(spelled)}"
            )
        chosen[agent] = choice
    return chosen


def _short(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def swapped(seating: dict[str, str]) -> list[dict[str, str]]:
    """Every rotation of the operators round the seats (both sides of a two-seat game), the given first."""
    agents, operators = list(seating), list(seating.values())
    return [
        dict(zip(agents, operators[shift:] + operators[:shift], strict=True)) for shift in range(len(agents))
    ]


@dataclass
class SeatResult:
    """One seat's games: its operator, its return in each game, and its replaced illegal moves."""

    agent: str
    operator: str  # as named on the command line
    name: str  # its card's title
    returns: list[float] = field(default_factory=list)
    outcomes: list[int] = field(default_factory=list)  # per game: 1 won, 0 drawn, -1 lost
    illegal: int = 0
    fallbacks: int = 0

    @property
    def games(self) -> int:
        return len(self.returns)

    @property
    def wins(self) -> int:
        return self.outcomes.count(1)

    @property
    def draws(self) -> int:
        return self.outcomes.count(0)

    @property
    def losses(self) -> int:
        return self.outcomes.count(-1)

    @property
    def mean_return(self) -> float:
        return float(np.mean(self.returns)) if self.returns else math.nan

    @property
    def ci95(self) -> float:
        return mean_ci95(np.asarray(self.returns, dtype=np.float64))

    def win_ci95(self) -> tuple[float, float]:
        """The win rate's 95 % confidence interval (Wilson's)."""
        if not self.games:
            return math.nan, math.nan
        from scipy import stats  # as mean_ci95: only once games were played

        interval = stats.binomtest(self.wins, self.games).proportion_ci(0.95, method="wilson")
        return float(interval.low), float(interval.high)

    def to_json(self) -> dict[str, Any]:
        low, high = self.win_ci95()
        return {
            "agent": self.agent,
            "operator": self.operator,
            "name": self.name,
            "games": self.games,
            "wins": self.wins,
            "draws": self.draws,
            "losses": self.losses,
            "win_ci95": [low, high] if self.games else None,
            "mean_return": self.mean_return if self.games else None,
            "ci95": self.ci95 if self.games else None,
            "illegal": self.illegal,
            "fallbacks": self.fallbacks,
            "returns": self.returns,
        }


@dataclass
class SeatingResult:
    """One seating's games: its run and each seat's numbers, in the env's agent order."""

    seats: list[SeatResult]
    run_id: str = ""
    error: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "error": self.error, "seats": [s.to_json() for s in self.seats]}


def outcomes(returns: dict[str, float]) -> dict[str, int]:
    """Each seat's outcome of a game: won (its return above every other's), lost (another's above
    its), drawn (the rest)."""
    best = max(returns.values())
    leaders = [agent for agent, value in returns.items() if value == best]
    return {
        agent: (1 if len(leaders) == 1 else 0) if value == best else -1 for agent, value in returns.items()
    }


class SeatedGames:
    """Plays ``episodes`` games of ``env_id`` with one operator in each seat, as one stored run.

    Game ``i`` resets with ``seed + i``; each seat's operator begins it with a seed of the game's and
    the seat's place, and so do its random replacement moves, so the same seed plays the same games again (deterministic operators).
    """

    def __init__(
        self,
        client: DaemonClient,
        env_id: str,
        seating: dict[str, OperatorChoice],
        episodes: int,
        seed: int,
        *,
        comparison: str | None = None,
        secret_env: dict[str, str] | None = None,
        on_episode: Callable[[int], None] | None = None,
    ) -> None:
        if episodes < 1:
            raise ConfigError(f"an arena plays at least one game, got {episodes}")
        self.client = client
        self.env_id = env_id
        self.seating = seating
        self.episodes = episodes
        self.seed = seed
        self.comparison = comparison or new_comparison_id("arena")
        self.secret_env = secret_env
        self.on_episode = on_episode
        self.result = SeatingResult(
            [SeatResult(agent, choice.ref.text, choice.name) for agent, choice in seating.items()]
        )

    def run(self) -> SeatingResult:
        """Play the games; an operator that fails ends the run FAILED with the reason, and the result says so."""
        env = make_multi_agent_env(self.env_id)
        operators: dict[str, Operator] = {}
        session: WorkerSession | None = None
        try:
            for agent, choice in self.seating.items():
                operators[agent] = choice.start(env.action_space(agent), secret_env=self.secret_env)
            record, token = self.client.submit(self._config())
            self.result.run_id = record.run_id
            session = WorkerSession(self.client.info.address, record.run_id, token)
            session.start()
            agents = list(env.possible_agents)
            session.started(
                spaces={
                    "agents": agents,
                    "observation": {agent: str(env.observation_space(agent)) for agent in agents},
                    "action": {agent: str(env.action_space(agent)) for agent in agents},
                }
            )
            for episode in range(self.episodes):
                self._game(env, operators, session, episode)
                if self.on_episode is not None:
                    self.on_episode(episode)
            session.finish(Phase.COMPLETED, f"{self.episodes} games played")
        except (OperatorError, ConfigError) as exc:
            self.result.error = str(exc)
            if session is not None:
                session.finish(Phase.FAILED, str(exc))
        except BaseException as exc:
            self.result.error = f"{type(exc).__name__}: {exc}"
            if session is not None:
                session.finish(Phase.FAILED, self.result.error)
            raise
        finally:
            for operator in operators.values():
                operator.close()
            env.close()
        return self.result

    def _config(self) -> Any:
        names = " vs ".join(choice.name for choice in self.seating.values())
        return parse_run_config(
            {
                "worker": OPERATOR.kind,
                "mode": "play",
                "env_id": self.env_id,
                "seed": self.seed,
                "algorithm": names,
                "budget": {"episodes": self.episodes},
                "params": {"seats": {agent: choice.ref.text for agent, choice in self.seating.items()}},
                "telemetry": {"render_fps": 0.0},
                "comparison": self.comparison,
            }
        )

    def _game(self, env: Any, operators: dict[str, Operator], session: WorkerSession, episode: int) -> None:
        seed = self.seed + episode
        started_at = time.time()
        env.reset(seed=seed)
        seats = {result.agent: result for result in self.result.seats}
        replacements = {}
        for index, agent in enumerate(env.possible_agents):
            # A seed a seat: two random seats drawing alike would play the same columns every game.
            seat_seed = seed * len(seats) + index
            space = env.action_space(agent)
            space.seed(seat_seed + _REPLACEMENT_OFFSET)
            replacements[agent] = space
            operators[agent].begin(0, seat_seed)
        returns = {agent: 0.0 for agent in env.possible_agents}
        last: dict[str, tuple[Any, float]] = {}  # a seat's previous move and what it earned
        pending: dict[str, tuple[str, str]] = {}  # a seat's move waiting for its next turn: action, note
        step = 0
        terminated_any = truncated_any = False
        for agent in env.agent_iter():
            observation, reward, terminated, truncated, _ = env.last()
            returns[agent] += float(reward)
            if agent in pending:
                action_text, info_text = pending.pop(agent)
                session.step(
                    episode, step, float(reward), bool(terminated), bool(truncated),
                    action_text, observation, info_text, b"", actor=OPERATOR_ACTED, agent=agent,
                )  # fmt: skip
                step += 1
                taken = last[agent][0]
                last[agent] = (taken, float(reward))
            if terminated or truncated:
                terminated_any |= bool(terminated)
                truncated_any |= bool(truncated)
                env.step(None)
                continue
            operator = operators[agent]
            turn = Turn(0, observation)
            if agent in last:
                turn.taken, turn.reward = last[agent]
            if TEXT in operator.card.inputs:
                turn.text = board_text(self.env_id, observation)
            decision = operator.act([turn])[0]
            action, refused = _legal(decision.action, observation, replacements[agent])
            seat = seats[agent]
            seat.illegal += refused
            seat.fallbacks += bool(decision.note.get("fallback"))
            note = {
                **decision.note,
                **({"illegal": encoding.to_jsonable(decision.action)} if refused else {}),
            }
            env.step(action)
            last[agent] = (action, 0.0)
            pending[agent] = (encoding.dumps(action), encoding.dumps(note) if note else "{}")
        for agent in env.possible_agents:
            operators[agent].end(0)
        won = outcomes(returns)
        for agent, value in returns.items():
            seats[agent].returns.append(value)
            seats[agent].outcomes.append(won[agent])
        session.episode(
            episode,
            steps=step,
            total_reward=sum(returns.values()),
            terminated=terminated_any,
            truncated=truncated_any and not terminated_any,
            started_at=started_at,
            seed=seed,
            agent_returns=list(returns.items()),
        )


def _legal(action: Any, observation: Any, space: Any) -> tuple[int, bool]:
    """``action`` when the observation's action mask allows it, else a random legal move of ``space``;
    and whether it was replaced."""
    mask = np.asarray(observation["action_mask"], dtype=np.int8) if isinstance(observation, dict) else None
    try:
        move = int(action)
    except (TypeError, ValueError):
        move = -1
    if mask is None:
        return (move, False) if space.contains(move) else (int(space.sample()), True)
    if 0 <= move < len(mask) and mask[move]:
        return move, False
    return int(space.sample(mask=mask)), True
