"""ReplayTogetherView: 2–4 runs replayed side by side — one episode number, one step slider and one
Play/Pause for every pane, each drawn with the environment view and titled with its operator."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtGui import QHideEvent
from PySide6.QtWidgets import QComboBox, QFrame, QGridLayout, QHBoxLayout, QLabel, QVBoxLayout, QWidget

from gym_gui.core.records import RunRecord
from gym_gui.envs.check import DEFAULT_RENDER_FPS, MAX_DRAW_FPS
from gym_gui.ui.background import Background
from gym_gui.ui.combos import fit_to_layout
from gym_gui.ui.env_view import EnvView
from gym_gui.ui.replay_together.model import Listing, PaneStep, Shown, TogetherReplay
from gym_gui.ui.tabs.actor_strip import ACTOR_COLOURS, ActorStrip
from gym_gui.ui.tabs.playback import Playback
from gym_gui.ui.tabs.replay_model import ActorTimeline, PlaybackClock
from gym_gui.ui.transport import Transport

COLUMNS = 2  # panes a row: two runs side by side, three or four in a square


class RunPane(QFrame):
    """One run in the replay: its operator and run as the title, its environment at the shared step,
    where it is (its step, or done at its last) with its return so far, and who acted."""

    def __init__(self, run: RunRecord, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.run = run
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.title = QLabel(run.run_id)
        self.title.setStyleSheet("font-weight: bold;")
        self.title.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.env_view = EnvView(self, max_fps=MAX_DRAW_FPS)  # playback's clock paces the pictures
        self.status = QLabel("reading…")
        self.actor = QLabel()
        self.actor.setToolTip("Who acted at this step (the colours of the strips under the slider)")
        # Who acted in this run's episode, drawn under the shared slider (read with each step shown).
        self.timeline = ActorTimeline(lambda _episode, _start: self._spans)
        self._spans: list[tuple[int, int, str]] = []
        self.strip = ActorStrip(self.timeline)
        where = QHBoxLayout()
        where.addWidget(self.status, 1)
        where.addWidget(self.actor)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(self.title)
        layout.addWidget(self.env_view, 1)
        layout.addLayout(where)

    def set_title(self, title: str) -> None:
        self.title.setText(f"{title} — run {self.run.run_id}")
        self.strip.setToolTip(f"{title}: who acted at each step (blue the operator, orange a person)")

    def show_step(self, episode: int, steps: int, pane: PaneStep) -> None:
        """Show ``pane`` of ``episode``; its strip drawn over the longest episode's ``steps`` steps."""
        if pane.spans is not self._spans or self.timeline.episode != episode:
            self._spans = pane.spans
            self.timeline.select(episode)
        self.strip.show_episode(steps)
        self.status.setText(pane.status())
        actor = pane.actor
        self.actor.setText(f"acted: {actor}" if actor else "")
        self.actor.setStyleSheet(f"color: {ACTOR_COLOURS[actor]}; font-weight: bold;" if actor else "")
        if pane.record is None:
            self.env_view.clear(pane.status())
        elif pane.picture is None:
            self.env_view.clear("No picture stored at or before this step.")
        else:
            self.env_view.show_payload(pane.picture)


class ReplayTogetherView(QWidget):
    """The runs of one comparison (or 2–4 runs chosen in the runs table) side by side.

    :meth:`show_runs` opens them: their episodes are listed (:attr:`episode_combo`, one number for all)
    and the first is shown. Back, Play/Pause, Forward and the slider move every pane to the same step;
    a run whose episode ended earlier shows its last step, done. Storage is read by a
    :class:`~gym_gui.ui.replay_together.model.TogetherReplay` on one reading thread, never the GUI's;
    what it read arrives as a :class:`~gym_gui.ui.replay_together.model.Shown` (:attr:`shown`). While
    a read is in flight, only the latest step asked for waits (playing never queues reads up).
    """

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.replay: TogetherReplay | None = None
        self.listing: Listing | None = None
        self.shown: Shown | None = None
        self.panes: list[RunPane] = []
        self.clock = PlaybackClock(DEFAULT_RENDER_FPS)
        self._generation = 0  # of the runs shown: what an older replay reads is dropped
        self._queue: list[tuple[str, int]] = []  # ("select", episode) / ("seek", step), not sent yet
        self._reading = False
        self._reads = Background(self, workers=1, name="replay-together")  # one thread: the readers' own

        self.episode_combo = fit_to_layout(QComboBox(), 32)
        self.episode_combo.setToolTip("One episode number for every run: an arena's runs play it on one seed")
        self.episode_combo.activated.connect(
            lambda index: self.select_episode(self.episode_combo.itemData(index))
        )
        self.notice = QLabel("Open a comparison, or choose Replay together on 2–4 runs in the runs table.")
        self.notice.setWordWrap(True)
        self.grid = QGridLayout()
        self.transport = Transport("step", "Replay speed; 1× is the environment's own frame rate")
        self.transport.back.connect(self.step_back)
        self.transport.play_toggled.connect(self.toggle_play)
        self.transport.forward.connect(self.step_forward)
        self.transport.seeked.connect(self.seek)
        self.transport.set_controls_enabled(False)
        self.playback = Playback(self.transport, self.clock, self._tick, self)
        self.transport.speed_changed.connect(self.playback.set_speed)

        top = QHBoxLayout()
        top.addWidget(QLabel("Episode"))
        top.addWidget(self.episode_combo, 1)
        layout = QVBoxLayout(self)
        layout.addLayout(top)
        layout.addWidget(self.notice)
        layout.addLayout(self.grid, 1)
        layout.addWidget(self.transport)

    # ------------------------------------------------------------ the runs

    def show_runs(self, runs: list[RunRecord], what: str = "the selection") -> None:
        """Replay ``runs`` together, their first episode shown once read.

        Raises:
            ConfigError: for fewer than 2 or more than 4 runs, naming ``what`` held them (nothing
                shown changes).
        """
        replay = TogetherReplay(runs, what=what)
        self._let_go()
        self._generation += 1
        self.replay = replay
        for index, run in enumerate(runs):
            pane = RunPane(run)
            self.panes.append(pane)
            self.grid.addWidget(pane, index // COLUMNS, index % COLUMNS)
            self.transport.add_under_slider(pane.strip)
        self.notice.setText("Reading the runs…")
        self._read(replay.open, self._listed)

    def _let_go(self) -> None:
        """Forget the runs shown: their panes go, their readers close on the reading thread."""
        self.pause()
        old, self.replay, self.listing, self.shown = self.replay, None, None, None
        if old is not None:
            self._reads.run(old.close, name="replay-together close")
        self._queue = []
        for pane in self.panes:
            pane.strip.setParent(None)
            pane.strip.deleteLater()
            pane.setParent(None)
            pane.deleteLater()
        self.panes = []
        self.episode_combo.clear()
        self.transport.set_controls_enabled(False)
        self.transport.position_label.setText("")

    def _listed(self, listing: Listing) -> None:
        self.listing = listing
        self.clock.fps = listing.fps
        for pane, run in zip(self.panes, listing.runs, strict=True):
            pane.set_title(run.title)
        self.episode_combo.clear()
        for episode in listing.episodes:
            self.episode_combo.addItem(listing.label(episode), episode)
        self._say(listing.errors, "" if listing.episodes else "None of these runs stores an episode.")
        if listing.episodes:
            self.select_episode(listing.episodes[0])

    def _say(self, errors: list[str], otherwise: str = "") -> None:
        self.notice.setText("; ".join(errors) or otherwise)
        self.notice.setVisible(bool(self.notice.text()))

    # ------------------------------------------------------------ reading off the GUI thread

    def _read(self, fn: Callable[[], Any], done: Callable[[Any], None]) -> None:
        generation = self._generation

        def arrived(value: Any) -> None:
            self._reading = False
            if generation == self._generation:
                done(value)
            self._next()

        def failed(message: str) -> None:
            self._reading = False
            if generation == self._generation:
                self._say([message])
            self._next()

        self._reading = True
        self._reads.run(fn, arrived, failed, name="replay-together read")

    def _ask(self, kind: str, value: int) -> None:
        # A newer choice of episode replaces whatever waits; a newer step replaces a step that waits.
        if kind == "select":
            self._queue = [(kind, value)]
        else:
            self._queue = [entry for entry in self._queue if entry[0] == "select"] + [(kind, value)]
        self._next()

    def _next(self) -> None:
        replay = self.replay
        if self._reading or not self._queue or replay is None or self.listing is None:
            return
        kind, value = self._queue.pop(0)
        call = replay.select if kind == "select" else replay.seek
        self._read(lambda: call(value), self._show)

    @property
    def reading(self) -> bool:
        """Whether a read is in flight or waits to be sent."""
        return self._reading or bool(self._queue)

    def _show(self, shown: Shown) -> None:
        self.shown = shown
        self.transport.set_controls_enabled(True)
        self.transport.set_range(shown.last_step)
        self.transport.set_position(shown.step, f"step {shown.step} / {max(0, shown.last_step)}")
        index = self.episode_combo.findData(shown.episode)
        if index >= 0:
            self.episode_combo.setCurrentIndex(index)
        for pane, step in zip(self.panes, shown.panes, strict=True):
            pane.show_step(shown.episode, shown.last_step + 1, step)
        self._say(shown.errors)

    # ------------------------------------------------------------ choosing and seeking

    @property
    def episode(self) -> int | None:
        """The episode shown, None before one is."""
        return self.shown.episode if self.shown is not None else None

    @property
    def step(self) -> int:
        """The shared step shown."""
        return self.shown.step if self.shown is not None else 0

    def select_episode(self, episode: int) -> None:
        """Show episode ``episode`` of every run from its first step.

        Raises:
            ValueError: when no run stores an episode ``episode``.
        """
        listed = self.listing.episodes if self.listing is not None else []
        if episode not in listed:
            raise ValueError(
                f"none of the runs replayed together stores episode {episode}; they store {listed}"
            )
        self.pause()
        self._ask("select", episode)

    def seek(self, step: int) -> None:
        """Move every pane to ``step`` (clamped to the longest episode)."""
        if self.shown is not None or self._queue:
            self._ask("seek", step)

    def _wanted_step(self) -> int:
        """The step last asked for (waiting or shown)."""
        seeks = [value for kind, value in self._queue if kind == "seek"]
        return seeks[-1] if seeks else self.step

    def step_forward(self) -> None:
        self.pause()
        self.seek(self._wanted_step() + 1)

    def step_back(self) -> None:
        self.pause()
        self.seek(max(0, self._wanted_step() - 1))

    # ------------------------------------------------------------ playing

    @property
    def playing(self) -> bool:
        return self.clock.playing

    def play(self) -> None:
        """Move every pane on at the chosen speed (from the first step when all are at their end)."""
        shown = self.shown
        if shown is None or shown.last_step < 0:
            return
        start = 0 if shown.at_end else self._wanted_step()
        if start != shown.step:
            self.seek(start)
        self.clock.start(start)
        self.playback.started()

    def pause(self) -> None:
        self.playback.stop()

    def hideEvent(self, event: QHideEvent) -> None:
        self.pause()  # a closed dock plays on for no one
        super().hideEvent(event)

    def toggle_play(self) -> None:
        if self.playing:
            self.pause()
        else:
            self.play()

    def _tick(self) -> None:
        shown = self.shown
        if shown is None:
            return
        target = self.clock.advance()
        if target >= shown.last_step and not shown.live:
            target = shown.last_step
            self.pause()
        if target != self._wanted_step():
            self.seek(target)
