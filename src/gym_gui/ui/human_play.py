"""HumanPlayWidget: play a catalog environment by keyboard, each episode recorded as a `human` run."""

from __future__ import annotations

import logging
import random
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from PySide6.QtCore import QEvent, QRegularExpression, Qt, QTimer, Signal
from PySide6.QtGui import QFocusEvent, QKeyEvent, QRegularExpressionValidator
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from gym_gui.core.envs import Action, EnvEntry, KeyBinding, env_entry
from gym_gui.envs.check import DEFAULT_RENDER_FPS, render_fps
from gym_gui.play.seat import Outcome, Seat
from gym_gui.protocol.client import DaemonClient
from gym_gui.ui.daemon_link import DaemonLink
from gym_gui.ui.env_view import EnvView

log = logging.getLogger(__name__)

MAX_SEED = 2**32 - 1
# Turn-based presses typed faster than steps come back wait here; more than this are dropped.
MAX_QUEUED_PRESSES = 16

IDLE, STARTING, PLAYING, DONE = "idle", "starting", "playing", "done"


def qt_key(name: str) -> int:
    """The Qt key code of a catalog key name (``"Left"`` → ``Qt.Key.Key_Left``).

    Raises:
        ValueError: when Qt has no key of that name.
    """
    key = getattr(Qt.Key, "Key_" + name, None)
    if key is None:
        raise ValueError(f"{name!r} is not a Qt key name")
    return int(key.value)


@dataclass
class _Op:
    """One call on the episode's session; ops run one at a time, in order, off the GUI thread."""

    kind: str  # "start", "step", "close"
    generation: int
    action: Any = None
    session: Seat | None = None


class HumanPlayWidget(QWidget):
    """Keyboard play of the chosen environment.

    Turn-based envs (``entry.realtime`` False) take one step per key press. Real-time envs step on
    a timer at the env's ``render_fps`` with the action of the held keys (the latest one held for
    discrete actions; the clipped sum of all held for continuous ones); with no key held they
    send ``entry.idle_action``, or wait when it is None (CartPole has no no-op).

    Every episode is one :class:`Seat`, i.e. one ``human`` run in the daemon. Its calls
    (start, step, close) run one at a time through ``link.call`` so the GUI thread never waits —
    not even for the end of an episode, when the session waits for the daemon to confirm
    storage. A key pressed when no episode is playing starts one.
    """

    episode_started = Signal(str)  # run id
    episode_finished = Signal(str, float, int)  # run id, total reward, steps
    status = Signal(str)  # lifecycle and error messages, for the window's status bar

    def __init__(self, link: DaemonLink, parent: QWidget | None = None, *, render_fps: float = 15.0) -> None:
        super().__init__(parent)
        self.link = link
        self.render_fps = render_fps
        self.entry: EnvEntry | None = None
        self.session: Seat | None = None
        self.outcome: Outcome | None = None
        self.phase = IDLE
        self._generation = 0
        self._ops: deque[_Op] = deque()
        self._busy = False
        self._bindings: dict[int, KeyBinding] = {}
        self._held: list[KeyBinding] = []
        self._low: np.ndarray | None = None
        self._high: np.ndarray | None = None
        self.ticks = 0  # beats of the real-time clock, stepping or not
        self._timer = QTimer(self)
        self._timer.setTimerType(Qt.TimerType.PreciseTimer)
        self._timer.timeout.connect(self._tick)
        self._build()
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self.set_env("")

    def _build(self) -> None:
        self.title = QLabel()
        self.title.setStyleSheet("font-weight: bold;")
        self.seed_field = QLineEdit("0")
        self.seed_field.setPlaceholderText("random")
        self.seed_field.setToolTip("Seed of the next episode (empty: a fresh random one each episode)")
        self.seed_field.setValidator(QRegularExpressionValidator(QRegularExpression(r"\d{0,10}"), self))
        self.seed_field.setMaximumWidth(120)
        self.new_seed_button = QPushButton("New seed")
        self.start_button = QPushButton("Start")
        self.start_button.setToolTip("Start a new episode (the current one, if any, is cancelled)")
        # Buttons must not take the focus away from the keys that play the game.
        for button in (self.new_seed_button, self.start_button):
            button.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.new_seed_button.clicked.connect(self.new_seed)
        self.start_button.clicked.connect(self.start_episode)

        top = QHBoxLayout()
        top.addWidget(self.title, 1)
        top.addWidget(QLabel("Seed"))
        top.addWidget(self.seed_field)
        top.addWidget(self.new_seed_button)
        top.addWidget(self.start_button)

        self.env_view = EnvView(self)
        self.env_view.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.status_line = QLabel()
        self.status_line.setTextInteractionFlags(Qt.TextInteractionFlag.NoTextInteraction)

        self.keys_table = QTableWidget(0, 2, self)
        self.keys_table.setHorizontalHeaderLabels(["Key", "Action"])
        self.keys_table.verticalHeader().setVisible(False)
        self.keys_table.horizontalHeader().setSectionResizeMode(0, QHeaderView.ResizeMode.ResizeToContents)
        self.keys_table.horizontalHeader().setStretchLastSection(True)
        self.keys_table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.keys_table.setSelectionMode(QAbstractItemView.SelectionMode.NoSelection)
        self.keys_table.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.keys_table.setMaximumWidth(320)

        body = QHBoxLayout()
        body.addWidget(self.env_view, 1)
        body.addWidget(self.keys_table)

        layout = QVBoxLayout(self)
        layout.addLayout(top)
        layout.addLayout(body, 1)
        layout.addWidget(self.status_line)

    # ------------------------------------------------------------ public API

    @property
    def env_id(self) -> str:
        return self.entry.env_id if self.entry is not None else ""

    @property
    def run_id(self) -> str:
        """The run of the current (or last) episode; empty before the first one started."""
        return self.session.run_id if self.session is not None else ""

    @property
    def realtime(self) -> bool:
        return self.entry is not None and self.entry.realtime

    @property
    def fps(self) -> float:
        """Steps per second of real-time play: the env's ``render_fps``, else 30."""
        return render_fps(self.env_id) if self.session is not None else DEFAULT_RENDER_FPS

    def session_ready(self) -> bool:
        """Whether an episode is being played (keys step it)."""
        return self.phase == PLAYING

    def seed(self) -> int | None:
        """The seed the next episode uses, None when the field is empty.

        Raises:
            ValueError: when the seed is above 2**32 - 1.
        """
        text = self.seed_field.text().strip()
        if not text:
            return None
        value = int(text)
        if value > MAX_SEED:
            raise ValueError(f"the seed must be at most {MAX_SEED}, got {value}")
        return value

    def set_seed(self, seed: int | None) -> None:
        self.seed_field.setText("" if seed is None else str(seed))

    def new_seed(self) -> None:
        self.set_seed(random.randrange(2**31))

    def set_env(self, env_id: str) -> None:
        """Play ``env_id`` from now on; an episode in progress is left (its run is CANCELLED)."""
        if self.entry is not None and self.entry.env_id == env_id:
            return
        self.close_session()
        self.entry = env_entry(env_id) if env_id else None
        self.outcome = None
        self.phase = IDLE
        self._held.clear()
        self._bindings = {}
        self.keys_table.setRowCount(0)
        entry = self.entry
        if entry is None:
            self.title.setText("No environment chosen")
            self.env_view.clear(
                "Choose an environment to play." if not env_id else f"{env_id} is not in the catalog."
            )
        elif not entry.human_playable:
            self.title.setText(entry.title)
            self.env_view.clear(
                f"{entry.title} has no keyboard controls: its actions are not something keys can drive."
            )
        else:
            self.title.setText(f"{entry.title}  ({entry.env_id})")
            for binding in entry.keys:
                try:
                    self._bindings[qt_key(binding.key)] = binding
                except ValueError:
                    log.warning("key map of %s names an unknown key %r", entry.env_id, binding.key)
            self.keys_table.setRowCount(len(entry.keys))
            for row, binding in enumerate(entry.keys):
                self.keys_table.setItem(row, 0, QTableWidgetItem(binding.key))
                self.keys_table.setItem(row, 1, QTableWidgetItem(binding.description))
            pace = "real time at the env's speed" if entry.realtime else "one step per key press"
            self.env_view.clear(f"Press Start or one of the keys to play {entry.title} ({pace}).")
        playable = entry is not None and entry.human_playable
        self.start_button.setEnabled(playable)
        self._show_status("Ready." if playable else "")

    def start_episode(self) -> None:
        """Start a new episode (a new ``human`` run); the one in progress, if any, is left first."""
        entry = self.entry
        if entry is None or not entry.human_playable:
            self._say("Choose an environment with keyboard controls first.")
            return
        try:
            seed = self.seed()
        except ValueError as exc:
            self._say(str(exc))
            return
        self.close_session()
        self._generation += 1
        self.phase = STARTING
        self.outcome = None
        self.start_button.setText("Reset")
        self._show_status(f"Starting an episode of {entry.env_id}…")
        self._submit(_Op("start", self._generation, action=seed))
        self.setFocus(Qt.FocusReason.OtherFocusReason)

    def press(self, key_name: str) -> None:
        """A key goes down (the same as a key press event, by catalog key name).

        Turn-based: one step with that key's action. Real-time: the key is held until
        :meth:`release`. With no episode playing, the press starts one.
        """
        binding = self._binding_named(key_name)
        if binding is not None:
            self._press(binding, repeat=False)

    def release(self, key_name: str) -> None:
        """A key goes up (real-time play stops using its action)."""
        binding = self._binding_named(key_name)
        if binding is not None:
            self._release(binding)

    def close_session(self) -> None:
        """Leave the episode in progress (its run becomes CANCELLED; what was played stays stored)."""
        self._timer.stop()
        self._held.clear()
        session = self.session
        # Steps of that episode not yet sent are dropped: the episode is being left.
        self._ops = deque(op for op in self._ops if op.kind == "close")
        self._generation += 1
        if session is not None and not session.finished and self.phase in (PLAYING, STARTING):
            self._submit(_Op("close", self._generation, session=session))
        if self.phase != IDLE:
            self.phase = DONE if self.phase == PLAYING else IDLE
        self.start_button.setText("Start")

    # ------------------------------------------------------------ keyboard

    def _binding_named(self, key_name: str) -> KeyBinding | None:
        for binding in self.entry.keys if self.entry is not None else ():
            if binding.key == key_name:
                return binding
        return None

    def event(self, event: QEvent) -> bool:
        if isinstance(event, QKeyEvent) and event.key() in self._bindings:
            if event.type() == QEvent.Type.ShortcutOverride:
                # While playing, the game's keys win over the window's shortcuts (Space, arrows).
                event.accept()
                return True
            if event.type() == QEvent.Type.KeyPress:
                # Tab would move the focus away, but MiniGrid uses it to pick things up.
                self.keyPressEvent(event)
                return True
        return super().event(event)

    def keyPressEvent(self, event: QKeyEvent) -> None:
        binding = self._bindings.get(event.key())
        if binding is None:
            super().keyPressEvent(event)
            return
        event.accept()
        self._press(binding, repeat=event.isAutoRepeat())

    def keyReleaseEvent(self, event: QKeyEvent) -> None:
        binding = self._bindings.get(event.key())
        if binding is None:
            super().keyReleaseEvent(event)
            return
        event.accept()
        if not event.isAutoRepeat():
            self._release(binding)

    def focusOutEvent(self, event: QFocusEvent) -> None:
        # The release of a key held while the focus leaves never arrives here.
        self._held.clear()
        super().focusOutEvent(event)

    def _press(self, binding: KeyBinding, *, repeat: bool) -> None:
        if self.realtime:
            if repeat:
                return  # held is held; auto-repeat adds nothing
            if binding in self._held:
                self._held.remove(binding)
            self._held.append(binding)
            if self.phase in (IDLE, DONE):
                self.start_episode()
            return
        if self.phase in (IDLE, DONE):
            if not repeat:
                self.start_episode()
            return
        pending = sum(1 for op in self._ops if op.kind == "step")
        if pending >= MAX_QUEUED_PRESSES:
            return
        self._submit(_Op("step", self._generation, action=binding.action))

    def _release(self, binding: KeyBinding) -> None:
        if binding in self._held:
            self._held.remove(binding)

    # ------------------------------------------------------------ real-time stepping

    def held_action(self) -> Any:
        """The action real-time play sends now: from the held keys, else the idle action (None: wait)."""
        entry = self.entry
        if entry is None:
            return None
        if not self._held:
            return self._as_action(entry.idle_action)
        latest = self._held[-1].action
        if isinstance(latest, int):
            return latest
        total = np.zeros(len(latest), dtype=np.float64)
        for binding in self._held:
            if not isinstance(binding.action, int):
                total += np.asarray(binding.action, dtype=np.float64)
        return self._as_action(tuple(float(x) for x in total))

    def _as_action(self, action: Action | None) -> Any:
        if action is None or isinstance(action, int):
            return action
        vector = np.asarray(action, dtype=np.float32)
        if self._low is not None and self._high is not None:
            vector = np.clip(vector, self._low, self._high).astype(np.float32)
        return vector

    def _tick(self) -> None:
        self.ticks += 1
        # A step still on its way means the env runs slower than its fps: skip this beat.
        if self.phase != PLAYING or self._busy or self._ops:
            return
        action = self.held_action()
        if action is None:
            return
        self._submit(_Op("step", self._generation, action=action))

    # ------------------------------------------------------------ the ops pipeline

    def _submit(self, op: _Op) -> None:
        self._ops.append(op)
        self._next()

    def _next(self) -> None:
        if self._busy or not self._ops:
            return
        op = self._ops.popleft()
        work: Callable[[DaemonClient], Any]
        if op.kind == "start":
            entry = self.entry
            if entry is None or op.generation != self._generation:
                self._next()
                return
            env_id, seed, render_fps = entry.env_id, op.action, self.render_fps

            def work(client: DaemonClient) -> tuple[Seat, Outcome]:
                session = Seat(client, env_id, seed=seed, render_fps=render_fps)
                try:
                    return session, session.start()
                except BaseException:
                    session.env.close()
                    raise

            done: Callable[[Any], None] = lambda result: self._started(op, result)  # noqa: E731
        elif op.kind == "step":
            session = self.session
            if session is None or op.generation != self._generation or self.phase != PLAYING:
                self._next()
                return
            action = op.action

            def work(_client: DaemonClient) -> Outcome | None:
                # The episode may have ended on the step before this one was sent.
                return None if session.finished else session.step(action)

            done = lambda outcome: self._stepped(op, outcome)  # noqa: E731
        else:
            closing = op.session
            assert closing is not None

            def work(_client: DaemonClient) -> None:
                closing.close()

            done = lambda _result: None  # noqa: E731
        self._busy = True
        self.link.call(
            work, lambda result: self._finished(done, result), lambda message: self._failed(op, message)
        )

    def _finished(self, done: Callable[[Any], None], result: Any) -> None:
        self._busy = False
        try:
            done(result)
        finally:
            self._next()

    def _failed(self, op: _Op, message: str) -> None:
        self._busy = False
        try:
            if op.kind == "close":
                log.warning("leaving the human episode failed: %s", message)
            elif op.generation == self._generation:
                self._timer.stop()
                self.phase = DONE if op.kind == "step" else IDLE
                self.start_button.setText("Start")
                self._say(f"Human play stopped: {message}")
                self.env_view.clear(f"Human play stopped: {message}")
        finally:
            self._next()

    def _started(self, op: _Op, result: tuple[Seat, Outcome]) -> None:
        session, outcome = result
        if op.generation != self._generation:
            # Superseded while it started (another env, another Start): leave it at once.
            self._ops.appendleft(_Op("close", op.generation, session=session))
            return
        self.session = session
        self.phase = PLAYING
        space = session.env.action_space
        low, high = getattr(space, "low", None), getattr(space, "high", None)
        self._low = None if low is None else np.asarray(low, dtype=np.float32)
        self._high = None if high is None else np.asarray(high, dtype=np.float32)
        self._show(outcome)
        if self.realtime:
            self._timer.start(max(1, round(1000.0 / self.fps)))
        self.episode_started.emit(session.run_id)
        self._say(f"Episode started: run {session.run_id}")

    def _stepped(self, op: _Op, outcome: Outcome | None) -> None:
        if outcome is None or op.generation != self._generation:
            return
        self._show(outcome)
        if outcome.done:
            self._timer.stop()
            self.phase = DONE
            self.start_button.setText("Start")
            # Presses queued behind the last step were meant for the episode that just ended.
            self._ops = deque(op for op in self._ops if op.kind != "step")
            run_id = self.session.run_id if self.session is not None else ""
            self.episode_finished.emit(run_id, outcome.total_reward, outcome.step)
            self._show_status(f"{self.status_line.text()} · press a key to play again")
            self.status.emit(
                f"Episode over after {outcome.step} steps, return {outcome.total_reward:g} (run {run_id})."
            )

    # ------------------------------------------------------------ showing

    def _show(self, outcome: Outcome) -> None:
        self.outcome = outcome
        if outcome.grid is not None:
            self.env_view.show_grid(outcome.grid)
        elif outcome.frame is not None:
            self.env_view.show_frame(outcome.frame)
        flags = ""
        if outcome.terminated:
            flags = " · done (terminated)"
        elif outcome.truncated:
            flags = " · done (truncated)"
        self._show_status(
            f"step {outcome.step} · reward {outcome.reward:g} · total {outcome.total_reward:g}{flags}"
        )

    def _show_status(self, text: str) -> None:
        self.status_line.setText(text)

    def _say(self, message: str) -> None:
        self._show_status(message)
        self.status.emit(message)
