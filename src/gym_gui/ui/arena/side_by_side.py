"""The Arena's side-by-side part: a pane per operator, all on one seed sequence, stepped lock-step, with
a scoreboard; each pane's play is a run of its own, the session's runs share one comparison id."""

from __future__ import annotations

import logging
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np
from PySide6.QtCore import QEvent, Qt, QTimer, Signal
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import (
    QAbstractItemView,
    QGridLayout,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QSpinBox,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from gym_gui.core.envs import KeyBinding
from gym_gui.core.errors import GymGuiError
from gym_gui.envs.catalog import env_entry
from gym_gui.play.batch import new_comparison_id
from gym_gui.play.operators import HUMAN, OperatorChoice, Operators
from gym_gui.play.seat import Control, Outcome, Seat, Seeds, episode_success
from gym_gui.protocol.client import DaemonClient
from gym_gui.ui.arena.model import MAX_SEATS, ArenaSetup, LockStep, PaneState, Scoreboard
from gym_gui.ui.arena.pane import ArenaPane
from gym_gui.ui.daemon_link import DaemonLink
from gym_gui.ui.human_play import qt_key
from gym_gui.ui.seat_calls import SeatCalls, SeatStart

log = logging.getLogger(__name__)

# Frames a pixel env's pane stores per second of play, for its replay (grid games store every step).
TELEMETRY_FPS = 15.0
# Step all from the keyboard: no catalog key map binds N (a person's keys would win if one did).
STEP_KEY = Qt.Key.Key_N


class SideBySide(QWidget):
    """Operators side by side on shared seeds.

    :meth:`start` seats every operator (one :class:`Seat` each, same seed and seeds rule, one
    comparison id) and resets them together. A round (:meth:`step_all`, the Step button, or each beat
    of free-running at the env's rate, at most 60 a second) steps every pane in play once; the next
    round waits for every answer (:class:`LockStep`). A person's pane (operator ``human``) takes the
    catalog's keys: each press is the person's step, and the operators wait for it. Each pane's calls
    go through a :class:`SeatCalls` of its own (in order, off the GUI thread; the panes' at once). A
    pane whose operator fails says why and is out (its run FAILED with the reason); the others go on.
    """

    comparison_requested = Signal(str)  # the session's comparison id: open its runs

    def __init__(
        self,
        link: DaemonLink,
        read_setup: Callable[[int], tuple[ArenaSetup, Seeds]],
        operators: Callable[[DaemonClient], Operators],
    ) -> None:
        super().__init__()
        self.link = link
        self.read_setup = read_setup
        self.operators = operators
        # A pane's calls stay in order, the panes' run at once; a call for a session left reports nothing.
        self._calls = [SeatCalls(link, self) for _ in range(MAX_SEATS)]
        for index, calls in enumerate(self._calls):
            calls.started.connect(partial(self._started, index))
            calls.stepped.connect(partial(self._answered, index))
            calls.operator_failed.connect(partial(self._operator_failed, index))
            calls.failed.connect(partial(self._failed, index))
        self._resetting: set[int] = set()
        self.setup: ArenaSetup | None = None
        self.seats: list[Seat | None] = []
        self.panes: list[ArenaPane] = []
        self.first_outcomes: list[Outcome | None] = []
        self.lock: LockStep | None = None
        self.scoreboard: Scoreboard | None = None
        self.comparison = ""
        self.rate = 0.0
        self._pending: Any = None  # the person's press waiting for its round
        self._bindings: dict[int, KeyBinding] = {}
        self.clock = QTimer(self)
        self.clock.setTimerType(Qt.TimerType.PreciseTimer)
        self.clock.timeout.connect(self._beat)
        self._build()
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)

    def _build(self) -> None:
        self.episodes = QSpinBox()
        self.episodes.setObjectName("arenaEpisodes")
        self.episodes.setRange(1, 10_000)
        self.episodes.setValue(3)
        self.episodes.setToolTip("Episodes each pane plays (all reset together on the seed sequence)")
        self.start_button = QPushButton("Start")
        self.start_button.setToolTip("Seat the chosen operators and reset them together on the seed")
        self.step_button = QPushButton("Step all")
        self.step_button.setToolTip("One step for every pane, N (a person's pane steps by its keys)")
        self.free_button = QPushButton("Run free")
        self.free_button.setCheckable(True)
        self.free_button.setToolTip("Step all at the environment's own rate (at most 60 steps a second)")
        self.stop_button = QPushButton("Stop")
        self.compare_button = QPushButton("Open the comparison")
        self.compare_button.setToolTip("Select this session's runs: Compare overlays them, Replay plays each")
        for button in (self.start_button, self.step_button, self.free_button, self.stop_button):
            button.setFocusPolicy(Qt.FocusPolicy.NoFocus)  # the keys play the person's pane
        self.compare_button.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.start_button.clicked.connect(self.start_from_setup)
        self.step_button.clicked.connect(self.step_all)
        self.free_button.toggled.connect(self.set_free_running)
        self.stop_button.clicked.connect(self.stop)
        self.compare_button.clicked.connect(lambda: self.comparison_requested.emit(self.comparison))
        self.message = QLabel("Choose 2 to 4 operators and press Start.")
        self.message.setWordWrap(True)
        buttons = QHBoxLayout()
        buttons.addWidget(QLabel("Episodes"))
        buttons.addWidget(self.episodes)
        for button in (self.start_button, self.step_button, self.free_button, self.stop_button):
            buttons.addWidget(button)
        buttons.addStretch(1)
        buttons.addWidget(self.compare_button)

        self.pane_area = QWidget()
        self.pane_grid = QGridLayout(self.pane_area)
        self.pane_grid.setContentsMargins(0, 0, 0, 0)
        self.board = QTableWidget(0, 0)
        self.board.setObjectName("arenaScoreboard")
        self.board.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.board.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.board.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Stretch)
        split = QSplitter(Qt.Orientation.Vertical)
        split.addWidget(self.pane_area)
        split.addWidget(self.board)
        split.setStretchFactor(0, 3)
        split.setStretchFactor(1, 1)
        split.setSizes([500, 170])  # the panes first; the scoreboard grows a row an episode
        layout = QVBoxLayout(self)
        layout.addLayout(buttons)
        layout.addWidget(self.message)
        layout.addWidget(split, 1)
        self._enable()

    # ------------------------------------------------------------ public API

    @property
    def person(self) -> int | None:
        return self.setup.person if self.setup is not None else None

    def start_from_setup(self) -> None:
        """Start a session of what the setup above says (its refusal, if any, said in one line)."""
        try:
            setup, seeds = self.read_setup(self.episodes.value())
            setup.check()
        except (GymGuiError, ValueError) as exc:
            self._say(str(exc))
            return
        self.start(setup, seeds)

    def start(
        self,
        setup: ArenaSetup,
        seeds: Seeds = Seeds.PROCEDURAL,
        chosen: dict[int, OperatorChoice] | None = None,
    ) -> None:
        """Seat ``setup``'s operators (the session before, if any, is left) and reset them together.

        ``chosen`` gives panes an operator already chosen (by their index); the others' are chosen
        by name on their pane's thread, refused ones said in their pane.
        """
        self.stop()
        if self.link.client is None:
            self._say("not connected to the gym_gui daemon")
            return
        self.setup = setup
        self.comparison = new_comparison_id("arena")
        count = len(setup.operators)
        self.seats = [None] * count
        self.first_outcomes = [None] * count
        self.lock = LockStep(count, setup.episodes, setup.person)
        self.scoreboard = Scoreboard([_pane_name(name) for name in setup.operators])
        self._pending = None
        self._resetting = set()
        self._bindings = self._person_keys(setup)
        self._make_panes([_pane_name(name) for name in setup.operators])
        for index, name in enumerate(setup.operators):
            choice = (chosen or {}).get(index)
            person = name == HUMAN and choice is None
            plan = SeatStart(
                setup.env_id,
                setup.seed,
                Control.HUMAN if person else Control.AGENT,
                None if person else partial(_choose, self.operators, name, setup.env_id, choice),
                TELEMETRY_FPS,
                seeds=seeds,
                comparison=self.comparison,
                episodes=setup.episodes,
            )
            self._calls[index].start(plan)
        self._say(f"Seating {count} operators on {setup.env_id} from seed {setup.seed} ({seeds.value})…")
        self._show_board()
        self._enable()
        self.setFocus(Qt.FocusReason.OtherFocusReason)

    def step_all(self) -> None:
        """One round: every pane in play steps once (the person's pane with the press waiting, if any)."""
        if self.lock is None:
            return
        if self.lock.waits_for_person and self._pending is None:
            self._say(f"Your move: {self._keys_text()}")
            return
        self._round()

    def press(self, key_name: str) -> None:
        """The person presses a key of the env's key map (by catalog key name): their next step."""
        binding = next((b for b in self._bindings.values() if b.key == key_name), None)
        if binding is not None:
            self._press(binding)

    def set_free_running(self, running: bool) -> None:
        """Step all at the env's rate (at most 60 steps a second: ``seat_control.play_rate``) or only on Step."""
        if self.free_button.isChecked() != running:
            self.free_button.setChecked(running)  # comes back here through toggled
            return
        if running and self.rate > 0:
            self.clock.start(max(1, round(1000.0 / self.rate)))
        else:
            self.clock.stop()

    def stop(self) -> None:
        """Leave the session: every seat's run ends (whole episodes played: COMPLETED, else CANCELLED)."""
        self.clock.stop()
        for calls in self._calls:
            calls.leave()  # its seat's run ends; what it still answers is dropped
        self.seats = [None] * len(self.seats)
        if self.lock is not None and not self.lock.finished:
            self._say("Stopped: what was played is stored.")
        self.lock = None
        self._enable()

    # ------------------------------------------------------------ keys

    def event(self, event: QEvent) -> bool:
        if (
            isinstance(event, QKeyEvent)
            and event.type() == QEvent.Type.ShortcutOverride
            and event.key() in self._bindings
        ):
            event.accept()  # the person's keys win over the window's shortcuts (arrows, Space)
            return True
        return super().event(event)

    def keyPressEvent(self, event: QKeyEvent) -> None:
        binding = self._bindings.get(event.key())
        if binding is None and event.key() == STEP_KEY and not event.isAutoRepeat():
            event.accept()
            self.step_all()
            return
        if binding is None or event.isAutoRepeat():
            super().keyPressEvent(event)
            return
        event.accept()
        self._press(binding)

    def _press(self, binding: KeyBinding) -> None:
        lock = self.lock
        if (
            lock is None
            or lock.person is None
            or lock.states[lock.person] not in (PaneState.BUSY, PaneState.PLAYING)
        ):
            return  # no episode of the person's in play
        action = binding.action
        self._pending = action if isinstance(action, int) else np.asarray(action, dtype=np.float32)
        if lock.round_due:
            self._round()

    def _person_keys(self, setup: ArenaSetup) -> dict[int, KeyBinding]:
        entry = env_entry(setup.env_id)
        if setup.person is None or entry is None:
            return {}
        bindings = {}
        for binding in entry.keys:
            try:
                bindings[qt_key(binding.key)] = binding
            except ValueError:
                log.warning("key map of %s names an unknown key %r", setup.env_id, binding.key)
        return bindings

    def _keys_text(self) -> str:
        shown = ", ".join(f"{b.key}: {b.description}" for b in self._bindings.values())
        return shown or "this environment has no keyboard controls"

    # ------------------------------------------------------------ the rounds

    def _round(self) -> None:
        lock = self.lock
        if lock is None or not lock.round_due:
            return
        if lock.waits_for_person and self._pending is None:
            return
        person_action, self._pending = self._pending, None
        for index in lock.begin_round():
            self._calls[index].step(person_action if index == lock.person else None)

    def _beat(self) -> None:
        if self.lock is not None and not self.lock.waits_for_person:
            self._round()

    def _advance(self) -> None:
        """After every answer: reset all once every episode is over, go on with a press waiting, or
        say the session is over."""
        lock = self.lock
        if lock is None or not lock.idle:
            return
        if lock.finished:
            self.clock.stop()
            self.free_button.setChecked(False)
            self._say(f"Every episode played: the runs share comparison {self.comparison}.")
            self._enable()
            return
        if lock.reset_due:
            for index in lock.begin_reset():
                self._resetting.add(index)
                self._calls[index].next_episode()
            return
        if self._pending is not None:
            self._round()
        elif lock.waits_for_person:
            self._say(f"Your move: {self._keys_text()}")

    # ------------------------------------------------------------ answers

    def _started(self, index: int, outcome: Outcome) -> None:
        assert self.lock is not None
        calls = self._calls[index]
        seat = calls.session
        assert seat is not None
        self.seats[index] = seat
        self.first_outcomes[index] = outcome
        self.rate = calls.rate
        self.panes[index].set_seat(seat.name, seat.run_id)
        assert self.scoreboard is not None
        self.scoreboard.rename(index, seat.name)
        self._show_board()
        self.panes[index].show_outcome(outcome)
        self.lock.ready(index)
        if self.lock.idle:
            self._say(
                f"All seated (comparison {self.comparison}): Step all, Run free"
                + (f", or your keys ({self._keys_text()})" if self.person is not None else "")
                + "."
            )
            if self.free_button.isChecked():
                self.set_free_running(True)
        self._enable()
        self._advance()

    def _answered(self, index: int, outcome: Outcome) -> None:
        if index in self._resetting:
            self._resetting.discard(index)
            self._reset(index, outcome)
        else:
            self._stepped(index, outcome)
        self._advance()

    def _operator_failed(self, index: int, reason: str) -> None:
        self._resetting.discard(index)
        self._out(index, f"operator {self.panes[index].name} failed: {reason}")
        self._advance()

    def _failed(self, index: int, _kind: str, message: str) -> None:
        self._resetting.discard(index)
        self._calls[index].leave()  # its run ends with what it played
        self._out(index, message)
        self._advance()

    def _stepped(self, index: int, outcome: Outcome) -> None:
        assert self.lock is not None and self.scoreboard is not None
        seat = self.seats[index]
        assert seat is not None
        self.panes[index].show_outcome(outcome)
        success = episode_success(seat.game, outcome.total_reward, outcome.terminated, outcome.info)
        fallback = bool(outcome.note.get("fallback"))
        self.scoreboard.stepped(index, outcome.total_reward, outcome.step, fallback, success, outcome.done)
        self.lock.stepped(index, outcome.done)
        self._show_board()

    def _reset(self, index: int, outcome: Outcome) -> None:
        assert self.lock is not None
        self.panes[index].show_outcome(outcome)
        self.lock.ready(index)

    def _out(self, index: int, reason: str) -> None:
        assert self.lock is not None and self.scoreboard is not None
        self.panes[index].fail(reason)
        self.lock.failed(index)
        self.scoreboard.failed(index, reason)
        self._show_board()
        self._enable()

    # ------------------------------------------------------------ showing

    def _make_panes(self, names: list[str]) -> None:
        for pane in self.panes:
            self.pane_grid.removeWidget(pane)
            pane.deleteLater()
        self.panes = [ArenaPane(name) for name in names]
        columns = 2 if len(names) == 4 else len(names)
        for index, pane in enumerate(self.panes):
            self.pane_grid.addWidget(pane, index // columns, index % columns)

    def _show_board(self) -> None:
        board = self.scoreboard
        if board is None:
            return
        rows = board.rows()
        self.board.setColumnCount(len(board.columns))
        self.board.setHorizontalHeaderLabels(board.columns)
        self.board.setRowCount(len(rows))
        self.board.setVerticalHeaderLabels([title for title, _ in rows])
        for row, (_title, cells) in enumerate(rows):
            for column, text in enumerate(cells):
                self.board.setItem(row, column, QTableWidgetItem(text))
        self.board.scrollToBottom()

    def _enable(self) -> None:
        playing = self.lock is not None and not self.lock.finished
        self.step_button.setEnabled(playing)
        self.stop_button.setEnabled(playing)
        self.compare_button.setEnabled(bool(self.comparison))

    def _say(self, text: str) -> None:
        self.message.setText(text)


def _pane_name(operator: str) -> str:
    return "you" if operator == HUMAN else operator


def _choose(
    operators: Callable[[DaemonClient], Operators],
    operator: str,
    env_id: str,
    choice: OperatorChoice | None,
    client: DaemonClient,
) -> OperatorChoice:
    """``operator`` chosen and checked against the env (blocking), unless ``choice`` is it already."""
    if choice is not None:
        return choice
    return operators(client).choose(operator, env_id)
