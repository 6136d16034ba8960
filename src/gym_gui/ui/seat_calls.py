"""SeatCalls: the play view's calls on its seat (start, step, next episode, leave), one at a time, off the GUI thread."""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gym_gui_sdk.operator import OperatorError
from PySide6.QtCore import QObject, Signal

from gym_gui.core.envs import PlayArgument
from gym_gui.core.errors import ConfigError
from gym_gui.envs.check import DEFAULT_RENDER_FPS, render_fps
from gym_gui.play.operators import OperatorChoice
from gym_gui.play.seat import Control, Outcome, Seat, Seeds
from gym_gui.protocol.client import DaemonClient
from gym_gui.ui.daemon_link import DaemonLink
from gym_gui.ui.seat_control import play_rate

log = logging.getLogger(__name__)

START, STEP, NEXT, CLOSE = "start", "step", "next", "close"


@dataclass
class _Op:
    """One call on the seat. ``action``: a step's action (None: the operator's); ``session``: the seat a
    close leaves."""

    kind: str
    generation: int
    action: Any = None
    session: Seat | None = None


@dataclass(frozen=True)
class _OperatorFailed:
    """A step the operator could not take: its seat has ended the run FAILED with ``reason``."""

    reason: str


@dataclass(frozen=True)
class SeatStart:
    """What a seat starts with: the env (and what it is made with), the first seed, who acts and how
    the operator is chosen; an Arena pane also gives its seeds' rule, its session's comparison id and
    its episodes."""

    env_id: str
    seed: int | None
    control: Control
    choose: Callable[[DaemonClient], OperatorChoice] | None  # None: the person alone
    telemetry_fps: float
    seeds: Seeds = Seeds.PROCEDURAL
    comparison: str | None = None
    episodes: int | None = None  # None: the seat's default (one for a person)
    env_kwargs: tuple[PlayArgument, ...] = ()  # what the env is made with (the entry's play_kwargs)
    fps: float | None = None  # the play clock's steps a second; None: the env's render_fps


class SeatCalls(QObject):
    """Runs the calls on the current :class:`Seat` through ``link.call``, in order, one at a time, so
    the GUI thread never waits on the daemon nor on a model. A call made for a seat that has since
    been left (:meth:`leave`) reports nothing.
    """

    started = Signal(object)  # Outcome of the first reset; ``session`` and ``rate`` are set
    stepped = Signal(object)  # Outcome of a step or of the next episode's reset
    operator_failed = Signal(str)  # the operator failed or died: the run is FAILED with this reason
    failed = Signal(str, str)  # START or STEP, the message

    def __init__(self, link: DaemonLink, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.link = link
        self.session: Seat | None = None
        self.rate = DEFAULT_RENDER_FPS  # the play clock's steps a second, the env's own (at most 60)
        self._generation = 0
        self._ops: deque[_Op] = deque()
        self._busy = False
        self._left: Seat | None = None

    @property
    def busy(self) -> bool:
        """Whether a call is on its way or waiting."""
        return self._busy or bool(self._ops)

    @property
    def in_flight(self) -> bool:
        """Whether a call is on its way now (a step the operator is still choosing)."""
        return self._busy

    @property
    def queued_steps(self) -> int:
        return sum(1 for op in self._ops if op.kind == STEP)

    def start(self, plan: SeatStart) -> None:
        """Leave the seat in play and start a new one as ``plan`` says."""
        self.leave()
        self._submit(_Op(START, self._generation, action=plan))

    def step(self, action: Any) -> None:
        """Step with the person's ``action``, or the operator's when None."""
        self._submit(_Op(STEP, self._generation, action=action))

    def next_episode(self) -> None:
        """Reset for the operator's next episode, before any step still waiting."""
        self._ops.appendleft(_Op(NEXT, self._generation))
        self._next()

    def drop_steps(self) -> None:
        """Forget the steps waiting (presses meant for an episode that has ended)."""
        self._ops = deque(op for op in self._ops if op.kind != STEP)

    def leave(self) -> None:
        """Leave the seat in play (its run ends, see :meth:`Seat.close`); calls for it are dropped."""
        self._generation += 1
        self._ops = deque(op for op in self._ops if op.kind == CLOSE)
        session = self.session
        if session is not None and session is not self._left and not session.finished:
            self._left = session
            self._submit(_Op(CLOSE, self._generation, session=session))

    # ------------------------------------------------------------ inside

    def _submit(self, op: _Op) -> None:
        self._ops.append(op)
        self._next()

    def _next(self) -> None:
        while not self._busy and self._ops:
            op = self._ops.popleft()
            if op.kind == CLOSE or op.generation == self._generation:
                break
        else:
            return
        session = self.session
        work: Callable[[DaemonClient], Any]
        if op.kind == START:
            work = _start_work(op.action)
        elif op.kind == CLOSE:
            closing = op.session
            assert closing is not None
            work = lambda _client: closing.close()  # noqa: E731
        elif session is None:
            self._next()
            return
        else:
            work = _step_work(session, op)
        self._busy = True
        self.link.call(work, lambda result: self._done(op, result), lambda message: self._failed(op, message))

    def _done(self, op: _Op, result: Any) -> None:
        self._busy = False
        try:
            if op.kind == START:
                session, outcome, rate = result
                if op.generation != self._generation:
                    # Left while it started (another env, another Start): leave it at once.
                    self._ops.appendleft(_Op(CLOSE, op.generation, session=session))
                    return
                self.session, self.rate = session, rate
                self.started.emit(outcome)
            elif op.kind in (STEP, NEXT) and result is not None and op.generation == self._generation:
                if isinstance(result, _OperatorFailed):
                    self.operator_failed.emit(result.reason)
                else:
                    self.stepped.emit(result)
        finally:
            self._next()

    def _failed(self, op: _Op, message: str) -> None:
        self._busy = False
        try:
            if op.kind == CLOSE:
                log.warning("leaving the episode failed: %s", message)
            elif op.generation == self._generation:
                self._ops = deque(op for op in self._ops if op.kind == CLOSE)
                self.failed.emit(START if op.kind == START else STEP, message)
        finally:
            self._next()


def _start_work(plan: SeatStart) -> Callable[[DaemonClient], tuple[Seat, Outcome, float]]:
    def work(client: DaemonClient) -> tuple[Seat, Outcome, float]:
        # Choosing checks the operator against the env (and its model's digest) before anything starts.
        choice = plan.choose(client) if plan.choose is not None else None
        session = Seat(
            client,
            plan.env_id,
            choice,
            control=plan.control,
            seed=plan.seed,
            seeds=plan.seeds,
            render_fps=plan.telemetry_fps,
            comparison=plan.comparison,
            episodes=plan.episodes,
            env_kwargs=dict(plan.env_kwargs),
        )
        try:
            outcome = session.start()
        except OperatorError as exc:  # it could not load its model, in its own words
            session.env.close()
            raise ConfigError(str(exc)) from None
        except BaseException:
            session.env.close()
            raise
        return session, outcome, play_rate(plan.fps or render_fps(plan.env_id))

    return work


def _step_work(session: Seat, op: _Op) -> Callable[[DaemonClient], Outcome | _OperatorFailed | None]:
    kind, action = op.kind, op.action

    def work(_client: DaemonClient) -> Outcome | _OperatorFailed | None:
        try:
            if kind == NEXT:
                return None if session.finished else session.next_episode()
            # The episode may have ended on the step before this one was sent.
            if session.finished or session.episode_over:
                return None
            return session.step(action)
        except OperatorError as exc:
            # A step's failure has failed the run already; a reset's (the operator dead by then) not yet.
            session.fail(f"operator {session.name} failed: {exc}")
            return _OperatorFailed(str(exc))

    return work
