"""The Arena's plain model: its setup checked, the lock-step of its panes, its scoreboard, and the
box plot figures of a batch's returns.

No Qt here (an import-linter contract): the views of this package drive a :class:`LockStep` with
what their seats answer, feed a :class:`Scoreboard` the outcomes, and draw what these say.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

import numpy as np

from gym_gui.core.errors import ConfigError
from gym_gui.play.operators import HUMAN

MIN_SEATS, MAX_SEATS = 2, 4


@dataclass(frozen=True)
class ArenaSetup:
    """What an arena session (or a batch) plays: operators as named (``random``, ``human``, ``RUN``,
    ``RUN:CHECKPOINT``, ``llm:CONFIG.json``), the env, the first seed, the episodes (the seeds' rule,
    fixed or procedural, goes to the seats as it is)."""

    operators: tuple[str, ...]
    env_id: str
    seed: int
    episodes: int = 1

    @property
    def person(self) -> int | None:
        """The index of the person's pane, None when only operators play."""
        return self.operators.index(HUMAN) if HUMAN in self.operators else None

    def check(self, minimum: int = MIN_SEATS) -> None:
        """Raises ConfigError naming what is wrong: the seat count (a batch may play one operator:
        ``minimum`` 1), two people, no env, no episode."""
        if not minimum <= len(self.operators) <= MAX_SEATS:
            raise ConfigError(
                f"an arena seats {minimum} to {MAX_SEATS} operators, {len(self.operators)} chosen"
            )
        if self.operators.count(HUMAN) > 1:
            raise ConfigError("an arena seats one person: choose human for one pane only")
        if not self.env_id:
            raise ConfigError("choose the environment the operators play")
        if self.episodes < 1:
            raise ConfigError(f"an arena plays at least one episode, got {self.episodes}")


# ------------------------------------------------------------------ the lock-step


class PaneState(StrEnum):
    """Where one pane is: starting or answering a call (busy), its episode in play, its episode over
    (waiting for the others'), every episode played, or out (its operator failed)."""

    BUSY = "busy"
    PLAYING = "playing"
    OVER = "over"
    DONE = "done"
    FAILED = "failed"


class LockStep:
    """Which panes step in the next round and when the next episode begins for all.

    A round steps every pane whose episode is in play, once each, and the next round begins only
    when every one of them has answered: no pane is ever a step ahead of another. A pane whose
    episode ended waits; once every pane's has (a failed pane no longer counts), the next episode
    begins for all together, until each has played ``episodes``. A person's pane in play holds the
    round until the person has chosen an action.
    """

    def __init__(self, panes: int, episodes: int, person: int | None = None) -> None:
        self.states = [PaneState.BUSY] * panes  # each pane is starting
        self.episodes = episodes
        self.person = person
        self.played = [0] * panes  # whole episodes played by each pane
        self.rounds = 0

    # -------------------------------------------------------- what is due

    @property
    def idle(self) -> bool:
        """No pane is answering a call."""
        return PaneState.BUSY not in self.states

    @property
    def round_due(self) -> bool:
        """A round can begin: nothing is in flight and some pane's episode is in play."""
        return self.idle and PaneState.PLAYING in self.states

    @property
    def waits_for_person(self) -> bool:
        """The next round needs the person's action (their episode is in play)."""
        return self.person is not None and self.states[self.person] is PaneState.PLAYING

    @property
    def reset_due(self) -> bool:
        """Every pane still in the arena has ended its episode and has episodes left: reset them all."""
        return self.idle and PaneState.OVER in self.states and PaneState.PLAYING not in self.states

    @property
    def finished(self) -> bool:
        """Every pane has played all its episodes or is out."""
        return all(state in (PaneState.DONE, PaneState.FAILED) for state in self.states)

    def in_play(self) -> list[int]:
        return [i for i, state in enumerate(self.states) if state is PaneState.PLAYING]

    # -------------------------------------------------------- what happened

    def begin_round(self) -> list[int]:
        """The panes that step now (every one in play), each marked busy until :meth:`stepped`."""
        if not self.round_due:
            return []
        panes = self.in_play()
        for index in panes:
            self.states[index] = PaneState.BUSY
        self.rounds += 1
        return panes

    def begin_reset(self) -> list[int]:
        """The panes whose next episode starts now (every one waiting), each busy until :meth:`ready`."""
        if not self.reset_due:
            return []
        panes = [i for i, state in enumerate(self.states) if state is PaneState.OVER]
        for index in panes:
            self.states[index] = PaneState.BUSY
        return panes

    def ready(self, index: int) -> None:
        """Pane ``index`` started (or reset): its episode is in play."""
        if self.states[index] is PaneState.BUSY:
            self.states[index] = PaneState.PLAYING

    def stepped(self, index: int, episode_over: bool) -> None:
        """Pane ``index`` answered its step; ``episode_over`` when that step ended its episode."""
        if self.states[index] is not PaneState.BUSY:
            return
        if not episode_over:
            self.states[index] = PaneState.PLAYING
            return
        self.played[index] += 1
        self.states[index] = PaneState.DONE if self.played[index] >= self.episodes else PaneState.OVER

    def failed(self, index: int) -> None:
        """Pane ``index`` is out (its operator died, its run could not start): the others go on."""
        self.states[index] = PaneState.FAILED


# ------------------------------------------------------------------ the scoreboard


@dataclass(frozen=True)
class EpisodeScore:
    """One pane's finished episode: its return, length, success (None: the env has no notion) and
    fallbacks (a language model's decisions that fell back)."""

    total_reward: float
    length: int
    success: bool | None
    fallbacks: int = 0


@dataclass
class _PaneScore:
    name: str
    episodes: list[EpisodeScore] = field(default_factory=list)
    total: float = 0.0  # the episode in play
    length: int = 0
    fallbacks: int = 0  # of the episode in play
    failed: str = ""


def _steps(count: float) -> str:
    return f"{count:g} step" if count == 1 else f"{count:g} steps"


def _success_text(success: bool | None) -> str:
    return "" if success is None else " · success" if success else " · failed"


class Scoreboard:
    """Each pane's return, length and success per episode and in total, and its fallbacks.

    :meth:`rows` is the table the view shows: one row per episode (panes play episode N together),
    then the totals and the fallbacks, one column per pane (:attr:`columns`).
    """

    def __init__(self, names: Sequence[str]) -> None:
        self._panes = [_PaneScore(name) for name in names]

    @property
    def columns(self) -> list[str]:
        return [pane.name + (" (out)" if pane.failed else "") for pane in self._panes]

    def stepped(
        self, index: int, total_reward: float, length: int, fallback: bool, success: bool | None, done: bool
    ) -> None:
        """Pane ``index`` took a step: its episode's return and length so far; ``success`` counts
        once ``done``."""
        pane = self._panes[index]
        pane.total, pane.length = total_reward, length
        pane.fallbacks += fallback
        if done:
            pane.episodes.append(EpisodeScore(total_reward, length, success, pane.fallbacks))
            pane.total, pane.length, pane.fallbacks = 0.0, 0, 0

    def failed(self, index: int, reason: str) -> None:
        self._panes[index].failed = reason or "failed"

    def rename(self, index: int, name: str) -> None:
        """Pane ``index`` is called ``name`` from now on (its operator's title, once it is seated)."""
        self._panes[index].name = name

    def episodes(self, index: int) -> list[EpisodeScore]:
        return list(self._panes[index].episodes)

    def fallbacks(self, index: int) -> int:
        """Every fallback of pane ``index``: its finished episodes' and the one in play's."""
        pane = self._panes[index]
        return sum(e.fallbacks for e in pane.episodes) + pane.fallbacks

    def rows(self) -> list[tuple[str, list[str]]]:
        """(row title, a cell per pane): a row per episode (the one a pane plays, marked playing),
        then "total" and "fallbacks"."""
        count = max((len(p.episodes) + bool(p.length) for p in self._panes), default=0)
        rows = [
            (f"episode {n + 1}", [self._episode_cell(pane, n) for pane in self._panes]) for n in range(count)
        ]
        rows.append(("total", [self._total_cell(pane) for pane in self._panes]))
        rows.append(("fallbacks", [str(self.fallbacks(i)) for i in range(len(self._panes))]))
        return rows

    @staticmethod
    def _episode_cell(pane: _PaneScore, n: int) -> str:
        if n < len(pane.episodes):
            score = pane.episodes[n]
            return f"{score.total_reward:g} · {_steps(score.length)}{_success_text(score.success)}"
        if n == len(pane.episodes) and pane.length and not pane.failed:
            return f"{pane.total:g} · {_steps(pane.length)} (playing)"
        return "-" if pane.failed else ""

    @staticmethod
    def _total_cell(pane: _PaneScore) -> str:
        played = pane.episodes
        if not played:
            return "-"
        total = sum(e.total_reward for e in played)
        length = sum(e.length for e in played) / len(played)
        known = [e.success for e in played if e.success is not None]
        success = f" · {sum(known)}/{len(known)} successes" if known else ""
        return f"{total:g} in {len(played)} episodes · {length:.1f} steps on average{success}"


# ------------------------------------------------------------------ a batch's box plot


@dataclass(frozen=True)
class BoxFigures:
    """A box plot's figures (Tukey's): the quartiles, the whiskers at the most extreme values within
    1.5 × IQR of the box, and the values beyond them."""

    low: float
    q1: float
    median: float
    q3: float
    high: float
    outliers: tuple[float, ...]


def box_figures(values: Iterable[float]) -> BoxFigures | None:
    """The box plot of ``values`` (None when there are none or none is finite)."""
    data = np.asarray([v for v in values if math.isfinite(v)], dtype=np.float64)
    if data.size == 0:
        return None
    q1, median, q3 = (float(q) for q in np.percentile(data, [25, 50, 75]))
    reach = 1.5 * (q3 - q1)
    inside = data[(data >= q1 - reach) & (data <= q3 + reach)]
    outliers = tuple(float(v) for v in np.sort(data[(data < q1 - reach) | (data > q3 + reach)]))
    return BoxFigures(float(inside.min()), q1, median, q3, float(inside.max()), outliers)
