"""LiveTab: a run's live view — the current frame and the agent panes beside it, the latest steps, the
episode-return chart, its controls, badges."""

from __future__ import annotations

import dataclasses
import logging
import math
import time
from collections import deque

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QSplitter, QVBoxLayout, QWidget

from gym_gui.core.records import EpisodeRecord, RunRecord, StateTransition, StepBatch
from gym_gui.core.records import StepRow as StreamRow  # a step as the stream carries it
from gym_gui.core.states import RunState
from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.run_dir import RunDir
from gym_gui.storage.telemetry import TelemetryReader
from gym_gui.ui.daemon_link import DaemonLink, TelemetrySubscription
from gym_gui.ui.env_view import EnvView, env_draw_rate
from gym_gui.ui.panes.views import AgentPanes
from gym_gui.ui.run_controls import RunControlBar
from gym_gui.ui.tabs.base import RunTab
from gym_gui.ui.tabs.frame_pacer import FramePacer
from gym_gui.ui.tabs.live_chart import CHART_CAPACITY, ReturnChart
from gym_gui.ui.tabs.live_steps import TABLE_CAPACITY, StepRow, StepTableModel, batch_rows, step_view

log = logging.getLogger(__name__)

# The subscription's credit window: step batches in flight towards this view at most.
DEFAULT_CREDITS = 4
# The chart and the table are redrawn at ~10 Hz whatever the stream rate: a
# table scrolling faster cannot be read, and each redraw of either costs milliseconds.
REDRAW_INTERVAL_MS = 100
# Batches that arrive together are taken in one go a few ms later, and their credits go back only
# once the view has taken them.
TAKE_DELAY_MS = 5


class LiveTab(RunTab):
    """The selected run as it happens (telemetry lane).

    Step batches arrive through a :class:`TelemetrySubscription` with a small credit window.
    Each burst of batches is *taken* in one go — its rows queued for the table, its render
    payloads queued in a :class:`FramePacer` that hands them to the :class:`EnvView` at the pace
    the steps happened — and only then is one credit per batch
    granted back, so the daemon never sends more than the view has taken and coalesces the rest
    (STARVED, shown as a badge until RESUMED). Episode events feed the return chart. The chart
    and the table (rows inserted in bulk, the oldest dropped beyond its capacity) are redrawn at
    ~10 Hz by a timer, never per event or batch. The :class:`AgentPanes` show the step whose
    picture the EnvView draws, and read the run's storage for their value map at the redraw.

    The view draws at most at the env's own rate, its ``metadata["render_fps"]`` read from the
    run's env id when the run is attached (:func:`env_draw_rate`: at most 60, 30 when unknown);
    the pacer keeps payloads a little closer than that apart.

    With a banner (:meth:`set_banner`, for analytics-lane runs) the tab subscribes to nothing: it
    shows the banner and the run's state.
    """

    title = "Live"
    # True when the daemon starts coalescing for this view (STARVED), False when it resumes.
    starved_changed = Signal(bool)

    def __init__(
        self,
        link: DaemonLink,
        parent: QWidget | None = None,
        *,
        credits: int = DEFAULT_CREDITS,
        table_capacity: int = TABLE_CAPACITY,
    ) -> None:
        super().__init__(link, parent)
        if credits < 1:
            raise ValueError(f"credits must be at least 1, got {credits}")
        self.credits = credits
        self.subscription: TelemetrySubscription | None = None
        self.steps_seen = 0
        self.episodes_seen = 0
        self.batches_taken = 0
        self.frames_offered = 0
        self.starved_count = 0
        self._starved = False
        self._paused = False
        # Batches received but not taken yet, with their arrival times (wall, monotonic).
        self._pending: list[tuple[StepBatch, float, float]] = []
        self._pacer = FramePacer()
        # Rows taken but not in the table yet: the table catches up at each redraw.
        self._rows: deque[StepRow] = deque(maxlen=table_capacity)
        self._banner = ""
        self._backfilled = False

        self.banner = QLabel()
        self.banner.setObjectName("liveBanner")
        self.banner.setWordWrap(True)
        self.banner.setStyleSheet("QLabel#liveBanner { background: #fff4c2; color: #5c4700; padding: 8px; }")
        self.banner.hide()
        self.controls = RunControlBar(link)
        self.control_message = QLabel()
        self.control_message.setObjectName("liveControlMessage")
        self.controls.message.connect(self.control_message.setText)
        self.env_view = EnvView()
        self.model = StepTableModel(table_capacity, self)
        self.table = step_view(self.model)
        self.chart = ReturnChart()
        self.panes = AgentPanes(follow_table=True)
        # The panes show the step whose picture the view has just drawn: picture and panes agree.
        self.env_view.applied.connect(lambda: self.panes.show_offered(self.env_view.grid))

        control_row = QHBoxLayout()
        control_row.addWidget(self.controls)
        control_row.addWidget(self.control_message, 1)
        layout = QVBoxLayout(self)
        layout.addWidget(self.banner)
        layout.addLayout(self._header())
        layout.addLayout(control_row)
        layout.addWidget(self._body(), 1)
        self._make_timers()
        self._update_counters()

    def _header(self) -> QHBoxLayout:
        """The run's state, its PAUSED badge, the counters and the STARVED badge."""
        self.status = QLabel("No run attached.")
        self.status.setObjectName("liveStatus")
        self.counters = QLabel()
        self.counters.setObjectName("liveCounters")
        self.starved_badge = _badge(
            "STARVED",
            "starvedBadge",
            "background: #b3261e; color: white;",
            "The view is behind the stream: the daemon is skipping step batches for it (the latest "
            "frame wins). Storage keeps every step; episodes and metrics still arrive.",
        )
        # The badge keeps its room when hidden: showing it must not lay out (and redraw) the whole tab.
        policy = self.starved_badge.sizePolicy()
        policy.setRetainSizeWhenHidden(True)
        self.starved_badge.setSizePolicy(policy)
        self.paused_badge = _badge(
            "PAUSED",
            "pausedBadge",
            "background: #f9a825; color: black;",
            "The run is paused: its worker holds its process until it is resumed.",
        )
        header = QHBoxLayout()
        header.addWidget(self.status, 1)
        header.addWidget(self.paused_badge)
        header.addWidget(self.counters)
        header.addWidget(self.starved_badge)
        return header

    def _body(self) -> QSplitter:
        """The picture, the agent panes, and the chart over the table, side by side."""
        right = QSplitter(Qt.Orientation.Vertical)
        right.addWidget(self.chart)
        right.addWidget(self.table)
        self.body = QSplitter(Qt.Orientation.Horizontal)
        self.body.addWidget(self.env_view)
        self.body.addWidget(self.panes)
        self.body.addWidget(right)
        for column in range(3):
            self.body.setStretchFactor(column, 1)
        return self.body

    def _make_timers(self) -> None:
        self._take_timer = QTimer(self)
        self._take_timer.setSingleShot(True)
        self._take_timer.setInterval(TAKE_DELAY_MS)
        self._take_timer.timeout.connect(self._take)
        self._frame_timer = QTimer(self)
        self._frame_timer.setSingleShot(True)
        self._frame_timer.setTimerType(Qt.TimerType.PreciseTimer)
        self._frame_timer.timeout.connect(self._show_due_frame)
        self._redraw_timer = QTimer(self)
        self._redraw_timer.setInterval(REDRAW_INTERVAL_MS)
        self._redraw_timer.timeout.connect(self._redraw)

    # ------------------------------------------------------------ what tests and the bench read

    @property
    def frames_drawn(self) -> int:
        """Frames the EnvView has drawn (it draws at most :attr:`draw_fps` a second)."""
        return int(self.env_view.frames_drawn)

    @property
    def draw_fps(self) -> float:
        """Pictures a second the view draws at most: the attached run's env's own rate (at most 60)."""
        return self.env_view.max_fps

    @property
    def starved(self) -> bool:
        """Whether the daemon is coalescing step batches for this view right now."""
        return self._starved

    @property
    def chart_points(self) -> int:
        """Episode returns the chart holds."""
        return self.chart.points

    @property
    def banner_text(self) -> str:
        return self._banner

    # ------------------------------------------------------------ RunTab

    def set_banner(self, text: str) -> None:
        """Show ``text`` above the view and stream no steps (analytics lane); an empty text clears it.

        Takes effect at once: an attached run is re-attached in the new mode.
        """
        self._banner = text
        self.banner.setText(text)
        self.banner.setVisible(bool(text))
        self.body.setVisible(not text)
        self.counters.setVisible(not text)
        run = self.run
        if run is not None:
            self.detach()
            self.attach(run)

    def attach(self, run: RunRecord) -> None:
        self.detach()
        super().attach(run)
        self.controls.set_run(run)
        self._show_state(run.state, run.reason)
        if self._banner:
            return
        fps = env_draw_rate(run.env_id)
        self.env_view.set_max_fps(fps)
        self._pacer.set_fps(fps)
        subscription = self.link.subscribe(run.run_id, credits=self.credits)
        if subscription is None:
            self.status.setText(f"{run.run_id}: not connected to the daemon")
            return
        self.subscription = subscription
        self.panes.attach(run)
        subscription.steps.connect(self._on_steps)
        subscription.episode.connect(self._on_episode)
        subscription.state.connect(self._on_state)
        subscription.starved.connect(self._on_starved)
        subscription.ended.connect(self._on_ended)
        subscription.start()
        self._redraw_timer.start()

    def run_changed(self, run: RunRecord) -> None:
        super().run_changed(run)
        self.controls.run_changed(run)
        self._show_state(run.state, run.reason)

    def detach(self) -> None:
        subscription = self.subscription
        self.subscription = None
        if subscription is not None:
            subscription.close()
        self._take_timer.stop()
        self._frame_timer.stop()
        self._redraw_timer.stop()
        self._pending.clear()
        self._pacer.clear()
        self._set_starved(False)
        self._backfilled = False
        self.steps_seen = self.episodes_seen = self.batches_taken = 0
        self.frames_offered = self.starved_count = 0
        self.chart.clear_returns()
        self._redraw()
        self._rows.clear()
        self.model.clear()
        self.env_view.clear("No run attached.")
        self.panes.detach()
        self.controls.set_run(None)
        self.control_message.clear()
        self.paused_badge.hide()
        super().detach()

    # ------------------------------------------------------------ consumption

    def pause_consuming(self) -> None:
        """Stop taking step batches (and so granting credits): the daemon starves this view."""
        self._paused = True
        self._take_timer.stop()

    def resume_consuming(self) -> None:
        """Take what waits and grant its credits back: the daemon resumes this view."""
        self._paused = False
        if self._pending:
            self._take_timer.start()

    def _current(self) -> bool:
        # Signals already queued by a subscription this tab has let go of still arrive: ignore them.
        sender = self.sender()
        return sender is not None and sender is self.subscription

    def _on_steps(self, batch: StepBatch) -> None:
        if not self._current():
            return
        self._pending.append((batch, time.time(), time.monotonic()))
        if not self._paused and not self._take_timer.isActive():
            self._take_timer.start()

    def _take(self) -> None:
        subscription = self.subscription
        pending, self._pending = self._pending, []
        if subscription is None or not pending:
            return
        undrawn: StreamRow | None = None
        for batch, arrived_wall, arrived_mono in pending:
            self.steps_seen += len(batch.rows)
            self._rows.extend(batch_rows(batch, self.model.capacity))
            if not self._pacer.add(batch, arrived_wall, arrived_mono) and batch.rows:
                undrawn = batch.rows[-1]
        if undrawn is not None:
            # Steps without pictures: the panes show the newest one taken.
            self._offer_step(undrawn)
            self.panes.show_offered()
        self.batches_taken += len(pending)
        self._schedule_frame()
        subscription.consumed(len(pending))

    def _schedule_frame(self) -> None:
        due = self._pacer.next_due()
        if due is None or self._frame_timer.isActive():
            return
        self._frame_timer.start(max(0, math.ceil((due - time.monotonic()) * 1000)))

    def _show_due_frame(self) -> None:
        row = self._pacer.pop_due(time.monotonic())
        if row is not None:
            self.frames_offered += 1
            self.env_view.show_payload(row[8])
            self._offer_step(row)
        self._schedule_frame()

    def _offer_step(self, row: StreamRow) -> None:
        episode, step, _reward, _terminated, _truncated, action, _obs, info, *_ = row
        self.panes.offer(episode, step, action, info)

    # ------------------------------------------------------------ other events

    def _on_episode(self, episode: EpisodeRecord) -> None:
        if not self._current():
            return
        self.episodes_seen += 1
        self.chart.add_return(episode)

    def _on_state(self, change: StateTransition) -> None:
        if not self._current():
            return
        if self.run is not None and change.to_state != self.run.state:
            # The stream may tell of a change before the runs table does: the controls follow it.
            self.run_changed(dataclasses.replace(self.run, state=change.to_state, reason=change.reason))
        else:
            self._show_state(change.to_state, change.reason)
        if not self._backfilled:
            # The daemon sends the state once the subscription is on the bus: from here on every
            # episode reaches this view, so storage fills in the ones before.
            self._backfilled = True
            self._backfill()

    def _on_starved(self, starved: bool) -> None:
        if not self._current():
            return
        if starved and not self._starved:
            self.starved_count += 1
        self._set_starved(starved)

    def _on_ended(self) -> None:
        if not self._current():
            return
        # The run ended (or the daemon went away): nothing is held back any more.
        self._set_starved(False)
        self._take()
        self._redraw()

    def _set_starved(self, starved: bool) -> None:
        if starved == self._starved:
            return
        self._starved = starved
        self.starved_badge.setVisible(starved)
        self.starved_changed.emit(starved)

    def _show_state(self, state: str, reason: str = "") -> None:
        run_id = self.run.run_id if self.run is not None else ""
        self.status.setText(f"{run_id}: {state}" + (f" — {reason}" if reason else ""))
        self.paused_badge.setVisible(state == RunState.PAUSED.value)

    # ------------------------------------------------------------ back-fill and chart

    def _backfill(self) -> None:
        run = self.run
        if run is None or not run.run_dir:
            return
        path = RunDir(run.run_dir).telemetry_path
        subscription = self.subscription

        def read(_client: DaemonClient) -> list[EpisodeRecord]:
            if not path.exists():
                return []
            reader = TelemetryReader(path)
            try:
                count = reader.episode_count()
                return reader.episodes(offset=max(0, count - CHART_CAPACITY))
            finally:
                reader.close()

        def done(episodes: list[EpisodeRecord]) -> None:
            if subscription is self.subscription and subscription is not None:
                self.chart.merge_older(episodes)

        def failed(message: str) -> None:
            log.info("live tab: no back-fill of episode returns: %s", message)

        self.link.call(read, done, failed)

    def _redraw(self) -> None:
        self._update_counters()
        self._flush_rows()
        self.panes.refresh(self.env_view.grid)
        self.chart.redraw()

    def _flush_rows(self) -> None:
        if not self._rows:
            return
        scroll = self.table.verticalScrollBar()
        # Follow the newest step unless the researcher scrolled up to read something.
        follow = scroll.value() >= scroll.maximum() - 2 * self.table.verticalHeader().defaultSectionSize()
        self.model.append_rows(list(self._rows))
        self._rows.clear()
        if follow:
            self.table.scrollToBottom()

    def _update_counters(self) -> None:
        self.counters.setText(
            f"steps seen {self.steps_seen:,} · episodes {self.episodes_seen:,} · "
            f"batches {self.batches_taken:,} · frames {self.frames_drawn:,} · starved ×{self.starved_count}"
        )


def _badge(text: str, name: str, colours: str, tip: str) -> QLabel:
    """A bold rounded badge (hidden until the state it names comes)."""
    badge = QLabel(text)
    badge.setObjectName(name)
    badge.setStyleSheet(
        f"QLabel#{name} {{ {colours} font-weight: bold; padding: 2px 8px; border-radius: 4px; }}"
    )
    badge.setToolTip(tip)
    badge.hide()
    return badge
