"""HumanPlayWidget: play a catalog environment by keyboard, alone or with an operator (Human | Hybrid | Agent)."""

from __future__ import annotations

import logging
import random
from collections.abc import Callable

from PySide6.QtCore import QEvent, QRegularExpression, Qt, QTimer, Signal
from PySide6.QtGui import QFocusEvent, QKeyEvent, QRegularExpressionValidator
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPushButton,
    QSizePolicy,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from gym_gui.core.envs import EnvEntry, KeyBinding
from gym_gui.envs.catalog import env_entry
from gym_gui.envs.check import DEFAULT_RENDER_FPS, MAX_DRAW_FPS
from gym_gui.play.operators import Operators
from gym_gui.play.seat import Control, Outcome, Seat
from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.home import Home
from gym_gui.ui.daemon_link import DaemonLink
from gym_gui.ui.env_view import EnvView
from gym_gui.ui.operator_picker import OperatorPicker
from gym_gui.ui.seat_calls import START, SeatCalls, SeatStart
from gym_gui.ui.seat_control import TAKEOVER_KEY, SeatControl
from gym_gui.workers import worker_catalog

log = logging.getLogger(__name__)

MAX_SEED = 2**32 - 1
# Turn-based presses typed faster than steps come back wait here; more than this are dropped.
MAX_QUEUED_PRESSES = 16

IDLE, STARTING, PLAYING, DONE = "idle", "starting", "playing", "done"
OPERATOR_COLOUR, PERSON_COLOUR, FAILED_COLOUR = "#1e88e5", "#e65100", "#c62828"


def qt_key(name: str) -> int:
    """The Qt key code of a catalog key name (``"Left"`` → ``Qt.Key.Key_Left``).

    Raises:
        ValueError: when Qt has no key of that name.
    """
    key = getattr(Qt.Key, "Key_" + name, None)
    if key is None:
        raise ValueError(f"{name!r} is not a Qt key name")
    return int(key.value)


TAKEOVER = qt_key(TAKEOVER_KEY)


class HumanPlayWidget(QWidget):
    """Keyboard play of the chosen environment, by the person (Human), an operator (Agent) or both
    (Hybrid: the operator plays until the person holds a key, see :class:`SeatControl`).

    Human: turn-based envs (``entry.realtime`` False) take one step per key press; real-time envs
    step on a clock at the env's ``render_fps`` (``entry.play_fps`` where it has one: an Atari
    game's 60) with the action of the held keys (the latest one held for discrete actions, their
    chord where the entry has chords; the clipped sum of all held for continuous ones), with none
    held ``entry.idle_action``, or wait when it is None (CartPole has no no-op). Each episode is one
    ``human`` run. Hybrid and Agent: every env steps on the clock (the env's rate, at most 60 a
    second), each beat asking who acts at that moment; the operator's episodes follow one another
    in one ``operator`` run until the person leaves. The env is made with ``entry.play_kwargs``
    (an Atari game: one frame a step), which its run records.

    Every call on the :class:`Seat` (start, step, next episode, close) runs one at a time through
    ``link.call``, so the GUI thread never waits on the daemon nor on a model. A key pressed when
    no episode is playing starts one (not in Agent). ``paced`` False keeps the clock stopped: each
    :meth:`tick` is one beat (tests drive play beat by beat).
    """

    episode_started = Signal(str)  # run id
    episode_finished = Signal(str, float, int)  # run id, total reward, steps
    status = Signal(str)  # lifecycle and error messages, for the window's status bar

    def __init__(
        self,
        link: DaemonLink,
        parent: QWidget | None = None,
        *,
        render_fps: float = 15.0,
        operators: Callable[[DaemonClient], Operators] | None = None,
        paced: bool = True,
    ) -> None:
        super().__init__(parent)
        self.link = link
        self.render_fps = render_fps
        self.paced = paced
        self.operators = operators or self._home_operators
        self.entry: EnvEntry | None = None
        self.outcome: Outcome | None = None
        self.phase = IDLE
        self.control = SeatControl()
        self.failure = ""  # why the last start failed, or why the operator stopped (its run FAILED)
        self._operator_name = ""
        self.calls = SeatCalls(link, self)
        self.calls.started.connect(self._started)
        self.calls.stepped.connect(self._stepped)
        self.calls.operator_failed.connect(self._operator_failed)
        self.calls.failed.connect(self._failed)
        self._bindings: dict[int, KeyBinding] = {}
        self.ticks = 0  # beats of the clock, stepping or not
        self._timer = QTimer(self)
        self._timer.setTimerType(Qt.TimerType.PreciseTimer)
        self._timer.timeout.connect(self.tick)
        self._build()
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self.set_env("")

    def _home_operators(self, client: DaemonClient) -> Operators:
        return Operators(Home(self.link.home), worker_catalog(), client.list_runs)

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

        self.picker = OperatorPicker(self.link, self.operators, self)
        self.picker.mode_changed.connect(self.set_mode)
        self.picker.operator_changed.connect(self._operator_changed)
        self.picker.checked.connect(self._operator_checked)
        self.control_label = QLabel()
        self.control_label.setObjectName("controlIndicator")
        # A long reason (an operator's failure) must not widen the window: it is cut, its tooltip whole.
        self.control_label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.interventions_label = QLabel()
        self.interventions_label.setObjectName("interventions")
        who = QHBoxLayout()
        who.addWidget(self.picker, 2)
        who.addSpacing(12)
        who.addWidget(self.control_label, 1)
        who.addWidget(self.interventions_label)

        # The play clock paces the steps (the env's rate, at most 60 a second) and keys step turn-based
        # envs: the view draws each step's picture, up to a screen's rate.
        self.env_view = EnvView(self, max_fps=MAX_DRAW_FPS)
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
        layout.addLayout(who)
        layout.addLayout(body, 1)
        layout.addWidget(self.status_line)

    # ------------------------------------------------------------ public API

    @property
    def env_id(self) -> str:
        return self.entry.env_id if self.entry is not None else ""

    @property
    def mode(self) -> Control:
        return self.control.mode

    @property
    def run_id(self) -> str:
        """The run of the current (or last) episode; empty before the first one started."""
        return self.session.run_id if self.session is not None else ""

    @property
    def session(self) -> Seat | None:
        """The seat of the current (or last) episode."""
        return self.calls.session

    @property
    def realtime(self) -> bool:
        return self.entry is not None and self.entry.realtime

    @property
    def fps(self) -> float:
        """Steps per second on the clock: the entry's ``play_fps``, else the env's ``render_fps`` (at
        most 60), else 30."""
        return self.calls.rate if self.session is not None else DEFAULT_RENDER_FPS

    @property
    def step_pending(self) -> bool:
        """Whether a call on the seat is on its way (a step the operator is still choosing)."""
        return self.calls.in_flight

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

    def set_mode(self, mode: Control) -> None:
        """Human, Hybrid or Agent from now on; an episode in progress is left."""
        self.picker.set_mode(mode)  # the switch shows it (and tells back here when it changed)
        if mode is self.control.mode:
            return
        self.close_session()
        self.control.set_mode(mode)
        self._fill_keys()
        self._show_control()
        self._enable_start()

    def set_env(self, env_id: str) -> None:
        """Play ``env_id`` from now on; an episode in progress is left (its run is CANCELLED)."""
        if self.entry is not None and self.entry.env_id == env_id:
            return
        self.close_session()
        self.entry = env_entry(env_id) if env_id else None
        self.control.set_env(self.entry)
        self.picker.set_env(env_id)
        self.outcome = None
        self.phase = IDLE
        self._bindings = {}
        entry = self.entry
        if entry is None:
            self.title.setText("No environment chosen")
            self.env_view.clear(
                "Choose an environment to play." if not env_id else f"{env_id} is not in the catalog."
            )
        else:
            self.title.setText(f"{entry.title}  ({entry.env_id})")
            for binding in entry.keys:
                try:
                    self._bindings[qt_key(binding.key)] = binding
                except ValueError:
                    log.warning("key map of %s names an unknown key %r", entry.env_id, binding.key)
            if not entry.human_playable:
                self.env_view.clear(
                    f"{entry.title} has no keyboard controls: its actions are not something keys can "
                    "drive (an operator can play it in Agent)."
                )
            else:
                pace = "real time at the env's speed" if entry.realtime else "one step per key press"
                self.env_view.clear(f"Press Start or one of the keys to play {entry.title} ({pace}).")
        self._fill_keys()
        self._show_control()
        self._show_status("Ready." if self._enable_start() else "")

    def start_episode(self) -> None:
        """Start a new episode (a new run); the one in progress, if any, is left first."""
        entry, mode = self.entry, self.control.mode
        if entry is None or not (entry.human_playable or mode is Control.AGENT):
            self._say("Choose an environment with keyboard controls first.")
            return
        operator = self.picker.operator() if mode is not Control.HUMAN else ""
        if mode is not Control.HUMAN and not operator:
            self._say(f"Choose the operator that plays {mode.value} first.")
            return
        try:
            seed = self.seed()
        except ValueError as exc:
            self._say(str(exc))
            return
        self._timer.stop()
        self.control.reset()
        self.phase = STARTING
        self.outcome = None
        self.failure = ""
        self._operator_name = operator
        self.start_button.setText("Reset")
        who = f" with {operator}" if operator else ""
        self._show_status(f"Starting {entry.env_id}{who}…")
        self._show_control()
        operators = self.operators
        choose = (lambda client: operators(client).choose(operator, entry.env_id)) if operator else None
        self.calls.start(
            SeatStart(
                entry.env_id,
                seed,
                mode,
                choose,
                self.render_fps,
                env_kwargs=entry.play_kwargs,
                fps=entry.play_fps,
            )
        )
        self.setFocus(Qt.FocusReason.OtherFocusReason)

    def press(self, key_name: str) -> None:
        """A key goes down (the same as a key press event, by catalog key name).

        Turn-based Human: one step with that key's action. Otherwise the key is held until
        :meth:`release`. With no episode playing, the press starts one (not in Agent).
        """
        binding = self._binding_named(key_name)
        if binding is not None:
            self._press(binding, repeat=False)

    def release(self, key_name: str) -> None:
        """A key goes up (the clock stops using its action)."""
        binding = self._binding_named(key_name)
        if binding is not None:
            self.control.release(binding)
            self._show_control()

    def toggle_takeover(self) -> None:
        """The takeover key (Hybrid): hold control with the person, or give it back to the operator."""
        self.control.toggle()
        self._show_control()

    def tick(self) -> None:
        """One beat of the clock: the step of whoever acts at this moment (none while one is on its way)."""
        self.ticks += 1
        # A step still on its way means the env (or the operator) runs slower than the clock: skip.
        if self.phase != PLAYING or self.calls.busy:
            return
        session = self.session
        if session is None or session.episode_over:
            return
        move = self.control.move()
        self._show_control()
        if move is None:
            return
        self.calls.step(move.action if move.human else None)

    def close_session(self) -> None:
        """Leave the episode in progress (a person's run becomes CANCELLED, an operator's COMPLETED
        after whole episodes; what was played stays stored)."""
        self._timer.stop()
        self.control.release_all()
        self.failure = ""
        # Steps of that episode not yet sent are dropped: the episode is being left.
        self.calls.leave()
        if self.phase != IDLE:
            self.phase = DONE if self.phase == PLAYING else IDLE
        self.start_button.setText("Start")

    # ------------------------------------------------------------ keyboard

    def _binding_named(self, key_name: str) -> KeyBinding | None:
        for binding in self.entry.keys if self.entry is not None else ():
            if binding.key == key_name:
                return binding
        return None

    def _takes(self, key: int) -> bool:
        return key in self._bindings or (key == TAKEOVER and self.control.mode is Control.HYBRID)

    def event(self, event: QEvent) -> bool:
        if isinstance(event, QKeyEvent) and self._takes(event.key()):
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
        if event.key() == TAKEOVER and self.control.mode is Control.HYBRID:
            event.accept()
            if not event.isAutoRepeat():
                self.toggle_takeover()
            return
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
            self.control.release(binding)
            self._show_control()

    def focusOutEvent(self, event: QFocusEvent) -> None:
        # The release of a key held while the focus leaves never arrives here.
        self.control.release_all()
        self._show_control()
        super().focusOutEvent(event)

    def _press(self, binding: KeyBinding, *, repeat: bool) -> None:
        mode = self.control.mode
        if mode is Control.AGENT:
            return  # the operator plays alone
        if self.realtime or mode is Control.HYBRID:
            if repeat:
                return  # held is held; auto-repeat adds nothing
            self.control.press(binding)
            self._show_control()
            if self.phase in (IDLE, DONE):
                self.start_episode()
            return
        if self.phase in (IDLE, DONE):
            if not repeat:
                self.start_episode()
            return
        if self.calls.queued_steps < MAX_QUEUED_PRESSES:
            self.calls.step(binding.action)

    # ------------------------------------------------------------ what the seat answers

    def _started(self, outcome: Outcome) -> None:
        session = self.calls.session
        assert session is not None
        self.phase = PLAYING
        space = session.env.action_space
        self.control.set_bounds(getattr(space, "low", None), getattr(space, "high", None))
        self._show(outcome)
        if self.paced and (self.realtime or self.control.mode is not Control.HUMAN):
            self._timer.start(max(1, round(1000.0 / self.fps)))
        self.episode_started.emit(session.run_id)
        self._say(f"Episode started: run {session.run_id}")

    def _stepped(self, outcome: Outcome) -> None:
        self._show(outcome)
        if not outcome.done:
            return
        session = self.calls.session
        run_id = self.run_id
        self.episode_finished.emit(run_id, outcome.total_reward, outcome.step)
        self.status.emit(
            f"Episode over after {outcome.step} steps, return {outcome.total_reward:g} (run {run_id})."
        )
        if session is not None and session.choice is not None and not session.finished:
            self.calls.next_episode()  # an operator's episodes follow one another in its run
            return
        self._stop(DONE)
        # Presses queued behind the last step were meant for the episode that just ended.
        self.calls.drop_steps()
        self._show_status(f"{self.status_line.text()} · press a key to play again")

    def _operator_failed(self, reason: str) -> None:
        self._stop(DONE)
        self.failure = f"Operator failed: {reason}"
        self._say(f"{self.failure} (run {self.run_id} FAILED)")
        self._show_control()

    def _failed(self, what: str, message: str) -> None:
        self._stop(IDLE if what == START else DONE)
        self.failure = f"Cannot start: {message}" if what == START else f"Play stopped: {message}"
        self._say(self.failure)
        self.env_view.clear(self.failure)
        self._show_control()

    def _stop(self, phase: str) -> None:
        self._timer.stop()
        self.phase = phase
        self.start_button.setText("Start")

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
        episode = f"episode {outcome.episode + 1} · " if self.control.mode is not Control.HUMAN else ""
        self._show_status(
            f"{episode}step {outcome.step} · reward {outcome.reward:g} · total {outcome.total_reward:g}{flags}"
        )
        self._show_control()

    def _show_control(self) -> None:
        mode = self.control.mode
        operated = mode is not Control.HUMAN
        self.control_label.setVisible(operated)
        self.interventions_label.setVisible(mode is Control.HYBRID)
        if not operated:
            return
        if self.failure or self.picker.refusal:
            text, colour = self.failure or f"Cannot play: {self.picker.refusal}", FAILED_COLOUR
        else:
            text = self.control.indicator(self._operator_name or self.picker.operator())
            colour = PERSON_COLOUR if self.control.person_acts else OPERATOR_COLOUR
        self.control_label.setText(text)
        self.control_label.setToolTip(text)
        self.control_label.setStyleSheet(f"color: {colour}; font-weight: bold;")
        outcome = self.outcome
        taken, steps = (outcome.interventions, outcome.human_steps) if outcome is not None else (0, 0)
        self.interventions_label.setText(f"interventions this episode: {taken} ({steps} steps yours)")

    def _fill_keys(self) -> None:
        entry = self.entry
        keys = [(b.key, b.description) for b in entry.keys] if entry is not None else []
        # Keys held together for an action of their own (Atari's diagonals and fire) follow the keys.
        keys += (
            [(" + ".join(c.keys), c.description) for c in entry.chords if len(c.keys) > 1] if entry else []
        )
        if keys and self.control.mode is Control.HYBRID:
            keys.append((TAKEOVER_KEY, "take control / give it back to the operator"))
        self.keys_table.setRowCount(len(keys))
        for row, (key, description) in enumerate(keys):
            self.keys_table.setItem(row, 0, QTableWidgetItem(key))
            self.keys_table.setItem(row, 1, QTableWidgetItem(description))

    def _enable_start(self) -> bool:
        entry = self.entry
        playable = entry is not None and (entry.human_playable or self.control.mode is Control.AGENT)
        self.start_button.setEnabled(playable)
        return playable

    def _operator_changed(self, name: str) -> None:
        # A seat plays one operator: choosing another leaves the episode in progress.
        if self.control.mode is not Control.HUMAN and self.phase in (STARTING, PLAYING):
            self.close_session()
        self._operator_name = name
        self._show_control()
        self.setFocus(Qt.FocusReason.OtherFocusReason)

    def _operator_checked(self, refusal: str) -> None:
        can = f"{self.picker.operator()} can play {self.env_id}: press Start."
        self._say(f"Cannot play: {refusal}" if refusal else can)
        self._show_control()

    def _show_status(self, text: str) -> None:
        self.status_line.setText(text)

    def _say(self, message: str) -> None:
        self._show_status(message)
        self.status.emit(message)
