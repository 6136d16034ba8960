"""LiveTab: a run's live view — the current frame and the agent panes beside it, the latest steps, the
episode-return chart, its controls, badges."""

from __future__ import annotations

import dataclasses
import logging
import math
import time
from collections import deque
from typing import Any, ClassVar

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QSplitter,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from gym_gui.core.records import EpisodeRecord, RunRecord, StateTransition, StepBatch
from gym_gui.core.records import StepRow as StreamRow  # a step as the stream carries it
from gym_gui.core.states import RunState
from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.run_dir import RunDir
from gym_gui.storage.telemetry import TelemetryReader
from gym_gui.ui.daemon_link import DaemonLink, TelemetrySubscription
from gym_gui.ui.env_view import EnvView
from gym_gui.ui.panes.views import AgentPanes
from gym_gui.ui.run_controls import RunControlBar
from gym_gui.ui.tabs.base import RunTab

log = logging.getLogger(__name__)

_Index = QModelIndex | QPersistentModelIndex
# One table row: episode, step, action (JSON), reward, terminated, truncated, info (JSON).
StepRow = tuple[int, int, str, float, bool, bool, str]

# The subscription's credit window: step batches in flight towards this view at most.
DEFAULT_CREDITS = 4
# Steps the table keeps; older rows fall off the top.
TABLE_CAPACITY = 2_000
# Episode returns the chart keeps (a long FrozenLake run ends millions of episodes).
CHART_CAPACITY = 20_000
# Episodes averaged by the chart's smoothed curve.
MEAN_WINDOW = 100
# The chart and the table are redrawn at ~10 Hz whatever the stream rate: a
# table scrolling faster cannot be read, and each redraw of either costs milliseconds.
REDRAW_INTERVAL_MS = 100
# Payloads are kept no closer than this in stream time: a little finer than the EnvView's ~30
# frames/s, so each of its draws finds a fresh picture.
FRAME_SPACING = 1 / 40
# The most the picture may trail the stream to play smoothly (a batch waits up to the run's
# batch_seconds, 0.2 s by default, before it is sent).
MAX_PLAYBACK_DELAY = 0.5
# Batches over which the playback delay is estimated.
DELAY_WINDOW = 30
# Payloads waiting for their turn at most (a bound, whatever the stream does).
MAX_QUEUED_FRAMES = 64
# Batches that arrive together are taken in one go a few ms later, and their credits go back only
# once the view has taken them.
TAKE_DELAY_MS = 5


class StepTableModel(QAbstractTableModel):
    """The latest steps of a run over a bounded ring buffer, appended in bulk.

    Rows are plain tuples formatted only when the view asks for a visible cell, so a table of
    thousands of rows costs what its visible rows cost. Rows beyond ``capacity`` are dropped
    from the top with ``beginRemoveRows`` before new ones are inserted at the bottom.
    """

    COLUMNS: ClassVar[tuple[str, ...]] = (
        "episode",
        "step",
        "action",
        "reward",
        "terminated",
        "truncated",
        "info",
    )
    _NUMERIC: ClassVar[frozenset[int]] = frozenset({0, 1, 3})

    def __init__(self, capacity: int = TABLE_CAPACITY, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        if capacity < 1:
            raise ValueError(f"capacity must be at least 1, got {capacity}")
        self.capacity = capacity
        self._rows: deque[StepRow] = deque()

    def rowCount(self, parent: _Index = QModelIndex()) -> int:  # noqa: B008 - Qt's signature
        return 0 if parent.isValid() else len(self._rows)

    def columnCount(self, parent: _Index = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(self.COLUMNS)

    def headerData(
        self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole
    ) -> Any:
        if role == Qt.ItemDataRole.DisplayRole and orientation == Qt.Orientation.Horizontal:
            return self.COLUMNS[section]
        return None

    def data(self, index: _Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid():
            return None
        column = index.column()
        if role == Qt.ItemDataRole.DisplayRole:
            value = self._rows[index.row()][column]
            if column == 3:
                return f"{value:.6g}"
            if column in (4, 5):
                return "yes" if value else ""
            return str(value)
        if role == Qt.ItemDataRole.ToolTipRole and column in (2, 6):
            return self._rows[index.row()][column]
        if role == Qt.ItemDataRole.TextAlignmentRole and column in self._NUMERIC:
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        return None

    def row(self, row: int) -> StepRow:
        """Row ``row`` (0 is the oldest kept)."""
        return self._rows[row]

    def append_rows(self, rows: list[StepRow]) -> None:
        """Append ``rows`` at the bottom in one insert, dropping the oldest rows beyond capacity."""
        if len(rows) > self.capacity:
            rows = rows[-self.capacity :]
        if not rows:
            return
        overflow = len(self._rows) + len(rows) - self.capacity
        if overflow > 0:
            self.beginRemoveRows(QModelIndex(), 0, overflow - 1)
            for _ in range(overflow):
                self._rows.popleft()
            self.endRemoveRows()
        first = len(self._rows)
        self.beginInsertRows(QModelIndex(), first, first + len(rows) - 1)
        self._rows.extend(rows)
        self.endInsertRows()

    def clear(self) -> None:
        self.beginResetModel()
        self._rows.clear()
        self.endResetModel()


def batch_rows(batch: StepBatch, limit: int) -> list[StepRow]:
    """The table rows of the last ``limit`` steps of ``batch``."""
    start = max(0, len(batch.rows) - limit)
    return [
        (episode, step, action, reward, terminated, truncated, info)
        for episode, step, reward, terminated, truncated, action, _obs, info, _render, _wall in batch.rows[
            start:
        ]
    ]


class FramePacer:
    """Plays the render payloads of step batches at the pace their steps happened (a jitter buffer).

    Steps travel in batches, a few to tens a second, each holding the payloads of many steps.
    Drawing only the newest payload of each batch would move the picture in jumps at the batch
    rate. Instead the pacer keeps payloads at least ``FRAME_SPACING`` apart in the steps' own
    wall time (always including each batch's newest) and releases each one ``delay`` after its
    step happened, ``delay`` being how late the oldest kept payload of recent batches arrived,
    at most ``MAX_PLAYBACK_DELAY``. The worker's clock is only compared with arrival times, so a
    skewed or remote clock costs at most that bound.
    """

    def __init__(self) -> None:
        self._frames: deque[tuple[float, StreamRow]] = deque()  # (due on the monotonic clock, its step)
        self._lags: deque[float] = deque(maxlen=DELAY_WINDOW)
        self.delay = 0.0

    def __len__(self) -> int:
        return len(self._frames)

    def add(self, batch: StepBatch, arrived_wall: float, arrived_mono: float) -> int:
        """Queue the payloads of ``batch``, which arrived at those times; returns how many were kept."""
        picked: list[tuple[float, StreamRow]] = []
        newest: tuple[float, StreamRow] | None = None
        last = -math.inf
        for row in batch.rows:
            payload, wall_time = row[8], row[9]
            if not payload:
                continue
            newest = (wall_time, row)
            if wall_time - last >= FRAME_SPACING:
                picked.append(newest)
                last = wall_time
        if newest is None:
            return 0
        if picked[-1] is not newest:
            picked.append(newest)
        self._lags.append(arrived_wall - picked[0][0])
        self.delay = min(MAX_PLAYBACK_DELAY, max(0.0, *self._lags))
        floor = self._frames[-1][0] if self._frames else arrived_mono
        for wall_time, row in picked:
            wait = min(MAX_PLAYBACK_DELAY, max(0.0, wall_time + self.delay - arrived_wall))
            # Never before a payload queued earlier: the picture only moves forward.
            floor = max(floor, arrived_mono + wait)
            self._frames.append((floor, row))
        # A stream far faster than the view can hold only so much: what is overdue is skipped.
        while len(self._frames) > MAX_QUEUED_FRAMES:
            self._frames.popleft()
        return len(picked)

    def next_due(self) -> float | None:
        """When the oldest queued payload is due (monotonic clock), or None when none waits."""
        return self._frames[0][0] if self._frames else None

    def pop_due(self, now: float) -> StreamRow | None:
        """The step of the newest payload due by ``now`` (older due ones are skipped), or None."""
        row = None
        while self._frames and self._frames[0][0] <= now:
            row = self._frames.popleft()[1]
        return row

    def clear(self) -> None:
        self._frames.clear()
        self._lags.clear()
        self.delay = 0.0


class LiveTab(RunTab):
    """The selected run as it happens (telemetry lane).

    Step batches arrive through a :class:`TelemetrySubscription` with a small credit window.
    Each burst of batches is *taken* in one go — its rows queued for the table, its render
    payloads queued in a :class:`FramePacer` that hands them to the :class:`EnvView` (which draws
    at most ~30 frames/s) at the pace the steps happened — and only then is one credit per batch
    granted back, so the daemon never sends more than the view has taken and coalesces the rest
    (STARVED, shown as a badge until RESUMED). Episode events feed the return chart. The chart
    and the table (rows inserted in bulk, the oldest dropped beyond its capacity) are redrawn at
    ~10 Hz by a timer, never per event or batch. The :class:`AgentPanes` show the step whose
    picture the EnvView draws, and read the run's storage for their value map at the redraw.

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
        self._ret_x: deque[int] = deque(maxlen=CHART_CAPACITY)
        self._ret_y: deque[float] = deque(maxlen=CHART_CAPACITY)
        self._chart_dirty = False

        self.banner = QLabel()
        self.banner.setObjectName("liveBanner")
        self.banner.setWordWrap(True)
        self.banner.setStyleSheet("QLabel#liveBanner { background: #fff4c2; color: #5c4700; padding: 8px; }")
        self.banner.hide()

        self.status = QLabel("No run attached.")
        self.status.setObjectName("liveStatus")
        self.counters = QLabel()
        self.counters.setObjectName("liveCounters")
        self.starved_badge = QLabel("STARVED")
        self.starved_badge.setObjectName("starvedBadge")
        self.starved_badge.setStyleSheet(
            "QLabel#starvedBadge { background: #b3261e; color: white; font-weight: bold;"
            " padding: 2px 8px; border-radius: 4px; }"
        )
        self.starved_badge.setToolTip(
            "The view is behind the stream: the daemon is skipping step batches for it (the latest "
            "frame wins). Storage keeps every step; episodes and metrics still arrive."
        )
        # The badge keeps its room when hidden: showing it must not lay out (and redraw) the whole tab.
        policy = self.starved_badge.sizePolicy()
        policy.setRetainSizeWhenHidden(True)
        self.starved_badge.setSizePolicy(policy)
        self.starved_badge.hide()
        self.paused_badge = QLabel("PAUSED")
        self.paused_badge.setObjectName("pausedBadge")
        self.paused_badge.setStyleSheet(
            "QLabel#pausedBadge { background: #f9a825; color: black; font-weight: bold;"
            " padding: 2px 8px; border-radius: 4px; }"
        )
        self.paused_badge.setToolTip("The run is paused: its worker holds its process until it is resumed.")
        self.paused_badge.hide()

        self.controls = RunControlBar(link)
        self.control_message = QLabel()
        self.control_message.setObjectName("liveControlMessage")
        self.controls.message.connect(self.control_message.setText)

        self.env_view = EnvView()
        self.model = StepTableModel(table_capacity, self)
        self.table = QTableView()
        self.table.setObjectName("liveSteps")
        self.table.setModel(self.model)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setWordWrap(False)
        # Fixed row heights and no content-sized columns: the view never measures rows it does not show.
        vertical = self.table.verticalHeader()
        vertical.setSectionResizeMode(QHeaderView.ResizeMode.Fixed)
        vertical.setDefaultSectionSize(vertical.fontMetrics().height() + 6)
        vertical.hide()
        self.table.horizontalHeader().setStretchLastSection(True)

        self.chart = pg.PlotWidget()
        self.chart.setObjectName("liveReturns")
        self.chart.setTitle("Episode return")
        self.chart.setLabel("bottom", "episode")
        self.chart.setLabel("left", "return")
        self.chart.addLegend(offset=(10, 10))
        item = self.chart.getPlotItem()
        # Thousands of episodes are drawn as about one point per pixel column; subsampling is the
        # cheapest way there, and hairline pens stay on Qt's fast path (wider ones are stroked).
        item.setDownsampling(auto=True, mode="subsample")
        item.setClipToView(True)
        self._view_box = item.getViewBox()
        self._raw_curve = self.chart.plot(pen=pg.mkPen((150, 170, 196), width=1), name="return")
        self._mean_curve = self.chart.plot(
            pen=pg.mkPen((230, 110, 0), width=1), name=f"mean of {MEAN_WINDOW}"
        )

        header = QHBoxLayout()
        header.addWidget(self.status, 1)
        header.addWidget(self.paused_badge)
        header.addWidget(self.counters)
        header.addWidget(self.starved_badge)
        control_row = QHBoxLayout()
        control_row.addWidget(self.controls)
        control_row.addWidget(self.control_message, 1)
        right = QSplitter(Qt.Orientation.Vertical)
        right.addWidget(self.chart)
        right.addWidget(self.table)
        self.panes = AgentPanes(follow_table=True)
        # The panes show the step whose picture the view has just drawn: picture and panes agree.
        self.env_view.applied.connect(lambda: self.panes.show_offered(self.env_view.grid))
        self.body = QSplitter(Qt.Orientation.Horizontal)
        self.body.addWidget(self.env_view)
        self.body.addWidget(self.panes)
        self.body.addWidget(right)
        self.body.setStretchFactor(0, 1)
        self.body.setStretchFactor(1, 1)
        self.body.setStretchFactor(2, 1)
        layout = QVBoxLayout(self)
        layout.addWidget(self.banner)
        layout.addLayout(header)
        layout.addLayout(control_row)
        layout.addWidget(self.body, 1)

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
        self._update_counters()

    # ------------------------------------------------------------ what tests and the bench read

    @property
    def frames_drawn(self) -> int:
        """Frames the EnvView has drawn (it draws at most ~30 a second)."""
        return int(self.env_view.frames_drawn)

    @property
    def starved(self) -> bool:
        """Whether the daemon is coalescing step batches for this view right now."""
        return self._starved

    @property
    def chart_points(self) -> int:
        """Episode returns the chart holds."""
        return len(self._ret_x)

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
        self._ret_x.clear()
        self._ret_y.clear()
        self._chart_dirty = True
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
        episode, step, _reward, _terminated, _truncated, action, _obs, info, _render, _wall = row
        self.panes.offer(episode, step, action, info)

    # ------------------------------------------------------------ other events

    def _on_episode(self, episode: EpisodeRecord) -> None:
        if not self._current():
            return
        self.episodes_seen += 1
        # Episodes come in order; a back-filled one may already hold this number.
        if self._ret_x and episode.episode <= self._ret_x[-1]:
            return
        self._ret_x.append(episode.episode)
        self._ret_y.append(episode.total_reward)
        self._chart_dirty = True

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
                self._merge_backfill(episodes)

        def failed(message: str) -> None:
            log.info("live tab: no back-fill of episode returns: %s", message)

        self.link.call(read, done, failed)

    def _merge_backfill(self, episodes: list[EpisodeRecord]) -> None:
        first_live = self._ret_x[0] if self._ret_x else None
        older = [e for e in episodes if first_live is None or e.episode < first_live]
        if not older:
            return
        xs = [e.episode for e in older] + list(self._ret_x)
        ys = [e.total_reward for e in older] + list(self._ret_y)
        self._ret_x = deque(xs, maxlen=CHART_CAPACITY)
        self._ret_y = deque(ys, maxlen=CHART_CAPACITY)
        self._chart_dirty = True

    def _redraw(self) -> None:
        self._update_counters()
        self._flush_rows()
        self.panes.refresh(self.env_view.grid)
        if not self._chart_dirty:
            return
        self._chart_dirty = False
        x = np.fromiter(self._ret_x, dtype=np.float64, count=len(self._ret_x))
        y = np.fromiter(self._ret_y, dtype=np.float64, count=len(self._ret_y))
        self._raw_curve.setData(x, y)
        if len(y) >= 2:
            window = min(MEAN_WINDOW, len(y))
            sums = np.cumsum(np.insert(y, 0, 0.0))
            mean = (sums[window:] - sums[:-window]) / window
            self._mean_curve.setData(x[window - 1 :], mean)
        else:
            self._mean_curve.setData([], [])
        # Settle the auto-range now: left to the paint, it changes the range there and costs a
        # second full paint of the chart.
        self._view_box.prepareForPaint()

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
