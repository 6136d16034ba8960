"""The Charts tab: a run's scalar metrics as live pyqtgraph plots, plus the chart pieces the Compare view shares."""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, QTimer, Slot
from PySide6.QtGui import QShowEvent
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QSlider,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from gym_gui.core.curves import DEFAULT_SMOOTHING, ema
from gym_gui.core.records import MetricBatch, RunRecord
from gym_gui.storage.run_dir import RunDir
from gym_gui.storage.telemetry import TelemetryReader
from gym_gui.ui.background import Background
from gym_gui.ui.daemon_link import DaemonLink, TelemetrySubscription
from gym_gui.ui.tabs.base import RunTab
from gym_gui.workers import worker_catalog

log = logging.getLogger(__name__)

REDRAW_MS = 100  # charts redraw at ~10 Hz whatever the stream rate
X_STEP = "step"
X_WALL = "wall time"
REFERENCE_COLOR = (200, 200, 200)  # a reference line (the score a curve is read against): neutral grey


# ---------------------------------------------------------------- series and smoothing


class MetricSeries:
    """One tag's points in arrival order, kept in growable numpy arrays (appending is amortised O(1))."""

    def __init__(self) -> None:
        self._steps = np.empty(256, dtype=np.float64)
        self._walls = np.empty(256, dtype=np.float64)
        self._values = np.empty(256, dtype=np.float64)
        self.size = 0
        # Bumped whenever points are replaced rather than appended, so cached smoothing restarts.
        self.version = 0

    def extend(self, steps: Iterable[float], walls: Iterable[float], values: Iterable[float]) -> None:
        s = np.asarray(steps, dtype=np.float64).ravel()
        w = np.asarray(walls, dtype=np.float64).ravel()
        v = np.asarray(values, dtype=np.float64).ravel()
        if not (len(s) == len(w) == len(v)):
            raise ValueError(f"steps, walls and values differ in length: {len(s)}, {len(w)}, {len(v)}")
        end = self.size + len(s)
        if end > len(self._steps):
            capacity = max(end, 2 * len(self._steps))
            self._steps = _grown(self._steps, capacity, self.size)
            self._walls = _grown(self._walls, capacity, self.size)
            self._values = _grown(self._values, capacity, self.size)
        self._steps[self.size : end] = s
        self._walls[self.size : end] = w
        self._values[self.size : end] = v
        self.size = end

    def replace(self, steps: Iterable[float], walls: Iterable[float], values: Iterable[float]) -> None:
        self.size = 0
        self.version += 1
        self.extend(steps, walls, values)

    @property
    def steps(self) -> np.ndarray:
        return self._steps[: self.size]

    @property
    def walls(self) -> np.ndarray:
        return self._walls[: self.size]

    @property
    def values(self) -> np.ndarray:
        return self._values[: self.size]

    @property
    def last_step(self) -> int | None:
        return int(self._steps[self.size - 1]) if self.size else None

    def edge(self) -> _Edge | None:
        """The last step held and how many times each (wall time, value) occurs at it."""
        last = self.last_step
        if last is None:
            return None
        at_last: Counter[tuple[float, float]] = Counter()
        i = self.size - 1
        while i >= 0 and self._steps[i] == last:
            at_last[(float(self._walls[i]), float(self._values[i]))] += 1
            i -= 1
        return _Edge(last, at_last)


@dataclass
class _Edge:
    """Where a series held from one source ends, to take the other source's points past it only.

    Several points can share the last step (CleanRL logs one return per env that finished, all at
    the same global step), so the step alone cannot tell a repeat from a new point: a point at
    that step is new unless it repeats one already held (counted, for equal repeats).
    """

    step: int
    held: Counter[tuple[float, float]]

    def admits(self, step: float, wall: float, value: float) -> bool:
        """Whether a point is past what the series holds; a repeat of a held one uses it up."""
        if step != self.step:
            return step > self.step
        key = (float(wall), float(value))
        if self.held[key] > 0:
            self.held[key] -= 1
            return False
        return True


def _grown(array: np.ndarray, capacity: int, used: int) -> np.ndarray:
    bigger = np.empty(capacity, dtype=array.dtype)
    bigger[:used] = array[:used]
    return bigger


class _Smoothed:
    """The EMA of one series, extended as points arrive and recomputed when the weight changes."""

    def __init__(self) -> None:
        self.weight = -1.0
        self.version = -1
        self.values = np.empty(0)
        self.state: tuple[float, int] = (0.0, 0)

    def of(self, series: MetricSeries, weight: float) -> np.ndarray:
        if weight != self.weight or series.version != self.version or len(self.values) > series.size:
            self.weight, self.version = weight, series.version
            self.values, self.state = ema(series.values, weight)
        elif len(self.values) < series.size:
            more, self.state = ema(series.values[len(self.values) :], weight, self.state)
            self.values = np.concatenate([self.values, more])
        return self.values


def new_curve(plot: pg.PlotItem, color: Any, width: float = 1.5, name: str | None = None) -> pg.PlotDataItem:
    """A curve that stays smooth with a million points: peak-preserving downsampling, clipped to the view."""
    curve = plot.plot(pen=pg.mkPen(color, width=width), name=name)
    curve.setDownsampling(auto=True, method="peak")
    curve.setClipToView(True)
    curve.setSkipFiniteCheck(True)
    return curve


def faint(color: Any, alpha: int = 70) -> Any:
    qcolor = pg.mkColor(color)
    qcolor.setAlpha(alpha)
    return qcolor


def smoothing_slider(initial: float = DEFAULT_SMOOTHING) -> tuple[QSlider, QLabel]:
    """A 0–0.99 smoothing slider and the label showing its value."""
    slider = QSlider(Qt.Orientation.Horizontal)
    slider.setRange(0, 99)
    slider.setValue(round(initial * 100))
    slider.setToolTip("Exponential moving average, as TensorBoard smooths (0: raw points)")
    label = QLabel(f"{initial:.2f}")
    label.setMinimumWidth(32)
    slider.valueChanged.connect(lambda v: label.setText(f"{v / 100:.2f}"))
    return slider, label


# ---------------------------------------------------------------- the tab


def _read_metrics(path: Path, since: dict[str, int]) -> dict[str, np.ndarray]:
    """Every tag's points from storage (after ``since[tag]`` when given), each an array of
    ``(step, wall_time, value)`` rows; runs off the GUI thread."""
    if not path.is_file():
        return {}
    reader = TelemetryReader(path)
    try:
        return {
            tag: np.array(reader.metric_rows(tag, since_step=since.get(tag)), dtype=np.float64).reshape(-1, 3)
            for tag in reader.metric_tags()
        }
    finally:
        reader.close()


class _TagPlot:
    """The plot of one tag: its raw points (faint when smoothed), the smoothed curve, and the line of
    its reference tag's latest value when the run's kind names one (hidden until it has a value)."""

    def __init__(self, plot: pg.PlotItem, color: Any, reference_tag: str | None = None) -> None:
        self.plot = plot
        self.color = color
        self.raw = new_curve(plot, color, width=1.0)
        self.smooth = new_curve(plot, color, width=2.0)
        self.smoothed = _Smoothed()
        self.shown: pg.PlotDataItem | None = None  # the curve the last redraw filled
        self.reference_tag = reference_tag
        self.reference: pg.InfiniteLine | None = None
        if reference_tag is not None:
            # Horizontal, so it spans whatever x axis is shown; its value counts in the y auto-range.
            self.reference = pg.InfiniteLine(
                angle=0,
                pen=pg.mkPen(REFERENCE_COLOR, width=1.5, style=Qt.PenStyle.DashLine),
                label=f"{reference_tag} {{value:.4g}}",
                labelOpts={"position": 0.05, "color": REFERENCE_COLOR, "anchors": [(0, 1), (0, 1)]},
            )
            self.reference.setVisible(False)
            plot.addItem(self.reference)


class ChartsTab(RunTab):
    """Live plots of a run's metrics, one per chosen tag, stacked.

    On attach the tab subscribes first, then back-fills from the run's telemetry database off the
    GUI thread; live points that arrive meanwhile are held and merged after the stored ones, so
    nothing is shown twice or missed. Points only mark the tab dirty; a 10 Hz timer redraws the
    visible plots (a hidden tab draws nothing).
    """

    title = "Charts"

    def __init__(self, link: DaemonLink, parent: QWidget | None = None) -> None:
        super().__init__(link, parent)
        self._series: dict[str, MetricSeries] = {}
        self._plots: dict[str, _TagPlot] = {}
        self._pending: list[MetricBatch] | None = None  # live batches held until the back-fill lands
        self._floor: dict[str, _Edge] = {}  # per tag, where what storage gave us ends
        self._subscription: TelemetrySubscription | None = None
        self._generation = 0
        self._dirty = False
        self._background = Background(self)

        # The tags the tab ticked by itself (the return curve or the first tag); [] once the user chose.
        self._default_choice: list[str] = []
        self.tags = QListWidget()
        self.tags.setToolTip("Tick the metrics to plot; each gets its own chart")
        self.tags.itemChanged.connect(self._tags_changed)
        self.smoothing, smoothing_value = smoothing_slider()
        self.smoothing.valueChanged.connect(self._mark_dirty)
        self.x_axis = QComboBox()
        self.x_axis.addItems([X_STEP, X_WALL])
        self.x_axis.currentTextChanged.connect(self._rebuild_plots)
        self.status = QLabel("No run selected.")
        self.status.setWordWrap(True)
        self.canvas = pg.GraphicsLayoutWidget()

        controls = QHBoxLayout()
        controls.addWidget(QLabel("Smoothing"))
        controls.addWidget(self.smoothing, 1)
        controls.addWidget(smoothing_value)
        controls.addSpacing(12)
        controls.addWidget(QLabel("X axis"))
        controls.addWidget(self.x_axis)
        right = QWidget()
        right_layout = QVBoxLayout(right)
        right_layout.setContentsMargins(0, 0, 0, 0)
        right_layout.addLayout(controls)
        right_layout.addWidget(self.canvas, 1)
        right_layout.addWidget(self.status)
        split = QSplitter()
        split.addWidget(self.tags)
        split.addWidget(right)
        split.setStretchFactor(1, 1)
        split.setSizes([200, 800])
        layout = QVBoxLayout(self)
        layout.addWidget(split)

        self._timer = QTimer(self)
        self._timer.setInterval(REDRAW_MS)
        self._timer.timeout.connect(self._tick)

    # ------------------------------------------------------------ RunTab

    def attach(self, run: RunRecord) -> None:
        self.detach()
        super().attach(run)
        self._generation += 1
        self._pending = []
        self.status.setText("Loading stored metrics…")
        self._subscription = None if run.state.terminal else self.link.subscribe(run.run_id)
        if self._subscription is not None:
            self._subscription.metrics.connect(self._on_metrics)
            self._subscription.start()
        self._backfill({})
        self._timer.start()

    def run_changed(self, run: RunRecord) -> None:
        was_active = self.run is not None and not self.run.state.terminal
        super().run_changed(run)
        if was_active and run.state.terminal and self._pending is None:
            # The stream may have dropped points in its last moments (or the daemon went away):
            # top up from storage, which is lossless.
            # From one step before each series' last: points sharing that step may not all be held.
            self._backfill(
                {tag: s.last_step - 1 for tag, s in self._series.items() if s.last_step is not None}
            )

    def detach(self) -> None:
        self._generation += 1
        self._timer.stop()
        if self._subscription is not None:
            self._subscription.metrics.disconnect(self._on_metrics)
            self._subscription.close()
            self._subscription = None
        self._pending = None
        self._floor.clear()
        self._series.clear()
        self.tags.clear()
        self._default_choice = []
        self._rebuild_plots()
        self.status.setText("No run selected.")
        super().detach()

    # ------------------------------------------------------------ data in

    def _backfill(self, since: dict[str, int]) -> None:
        run = self.run
        if run is None:
            return
        generation = self._generation
        path = RunDir(run.run_dir).telemetry_path
        self._background.run(
            lambda: _read_metrics(path, since),
            lambda stored: self._stored(generation, stored),
            lambda message: self._failed(generation, message),
            name=f"charts-backfill-{run.run_id}",
        )

    def _stored(self, generation: int, stored: dict[str, np.ndarray]) -> None:
        if generation != self._generation:
            return
        for tag, rows in stored.items():
            series = self._series.setdefault(tag, MetricSeries())
            # A top-up after live points arrived appends only what is past them.
            edge = series.edge()
            fresh = (
                rows if edge is None else rows[[edge.admits(*row) for row in rows.tolist()]].reshape(-1, 3)
            )
            series.extend(fresh[:, 0], fresh[:, 1], fresh[:, 2])
            floor = series.edge()
            if floor is not None:
                self._floor[tag] = floor
        pending, self._pending = self._pending, None
        for batch in pending or []:
            self._on_metrics(batch)
        self._tags_arrived()
        self._mark_dirty()

    def _failed(self, generation: int, message: str) -> None:
        if generation != self._generation:
            return
        # A run that has just started may not have initialised its database yet; its points
        # arrive live, so only a run without a live feed has something to report.
        if self._subscription is None:
            self.status.setText(f"Stored metrics could not be read: {message}")
        else:
            self.status.setText("Waiting for the run's first metrics…")
        pending, self._pending = self._pending, None
        for batch in pending or []:
            self._on_metrics(batch)

    @Slot(object)
    def _on_metrics(self, batch: MetricBatch) -> None:
        if self._pending is not None:
            self._pending.append(batch)
            return
        by_tag: dict[str, tuple[list[float], list[float], list[float]]] = {}
        for metric in batch.points:
            # Points storage already gave us arrive again where the stream overlaps the back-fill.
            floor = self._floor.get(metric.tag)
            if floor is not None and not floor.admits(metric.step, metric.wall_time, metric.value):
                continue
            steps, walls, values = by_tag.setdefault(metric.tag, ([], [], []))
            steps.append(metric.step)
            walls.append(metric.wall_time)
            values.append(metric.value)
        if not by_tag:
            return
        new_tag = False
        for tag, (steps, walls, values) in by_tag.items():
            if tag not in self._series:
                self._series[tag] = MetricSeries()
                new_tag = True
            self._series[tag].extend(steps, walls, values)
        if new_tag:
            self._tags_arrived()
        self._mark_dirty()

    def add_points(
        self, tag: str, steps: Iterable[float], walls: Iterable[float], values: Iterable[float]
    ) -> None:
        """Append points of ``tag`` (what live batches do), e.g. to show data from elsewhere."""
        is_new = tag not in self._series
        self._series.setdefault(tag, MetricSeries()).extend(steps, walls, values)
        if is_new:
            self._tags_arrived()
        self._mark_dirty()

    # ------------------------------------------------------------ tag picker

    def _tags_arrived(self) -> None:
        known = {self.tags.item(i).text() for i in range(self.tags.count())}
        self.tags.blockSignals(True)
        for tag in sorted(set(self._series) - known):
            item = QListWidgetItem(tag)
            item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
            item.setCheckState(Qt.CheckState.Unchecked)
            self.tags.addItem(item)
        self.tags.sortItems()
        # The run's returns first (its kind's return metric), else the first tag; a return metric that
        # comes after the tab chose another (a d3rlpy run's first evaluation ends its first epoch)
        # takes that choice's place, unless the user has ticked tags themselves.
        metric = worker_catalog().return_metric(self.run.worker) if self.run is not None else ""
        default = self.tags.findItems(metric, Qt.MatchFlag.MatchExactly) if metric else []
        checked = self.checked_tags()
        # Ticked by the tab itself, and not the return curve that has now come.
        superseded = bool(default) and checked == self._default_choice and checked != [metric]
        if self.tags.count() and (not checked or superseded):
            for i in range(self.tags.count()):
                self.tags.item(i).setCheckState(Qt.CheckState.Unchecked)
            chosen = default[0] if default else self.tags.item(0)
            chosen.setCheckState(Qt.CheckState.Checked)
            self._default_choice = [chosen.text()]
        self.tags.blockSignals(False)
        self._rebuild_plots()

    def checked_tags(self) -> list[str]:
        """The tags being plotted, in picker order."""
        return [
            self.tags.item(i).text()
            for i in range(self.tags.count())
            if self.tags.item(i).checkState() == Qt.CheckState.Checked
        ]

    def set_checked_tags(self, tags: Iterable[str]) -> None:
        """Plot ``tags`` (a choice of the user's: kept as they come and go)."""
        wanted = set(tags)
        self._default_choice = []
        self.tags.blockSignals(True)
        for i in range(self.tags.count()):
            item = self.tags.item(i)
            item.setCheckState(Qt.CheckState.Checked if item.text() in wanted else Qt.CheckState.Unchecked)
        self.tags.blockSignals(False)
        self._rebuild_plots()

    def _tags_changed(self, _item: QListWidgetItem) -> None:
        self._default_choice = []  # the user chose: the tab no longer changes the ticks
        self._rebuild_plots()

    def _rebuild_plots(self) -> None:
        wanted = self.checked_tags()
        if list(self._plots) == wanted and self._axis_matches():
            return
        self.canvas.clear()
        self._plots.clear()
        wall = self.x_axis.currentText() == X_WALL
        references = worker_catalog().reference_metrics(self.run.worker) if self.run is not None else {}
        for row, tag in enumerate(wanted):
            axis = {"bottom": pg.DateAxisItem(orientation="bottom")} if wall else None
            plot = self.canvas.addPlot(row=row, col=0, title=tag, axisItems=axis)
            plot.showGrid(x=True, y=True, alpha=0.2)
            plot.setLabel("bottom", X_WALL if wall else X_STEP)
            color = pg.intColor(row, hues=max(len(wanted), 6))
            self._plots[tag] = _TagPlot(plot, color, references.get(tag))
        self._mark_dirty()

    def _axis_matches(self) -> bool:
        wall = self.x_axis.currentText() == X_WALL
        return all(
            isinstance(p.plot.getAxis("bottom"), pg.DateAxisItem) == wall for p in self._plots.values()
        )

    # ------------------------------------------------------------ drawing

    def _mark_dirty(self, *_args: object) -> None:
        self._dirty = True

    def showEvent(self, event: QShowEvent) -> None:
        super().showEvent(event)
        self._dirty = True

    def _tick(self) -> None:
        if self._dirty and self.isVisible():
            self._dirty = False
            self.redraw()

    def redraw(self) -> None:
        """Hand every plotted tag's current data to its curves (the timer calls this at most 10×/s)."""
        weight = self.smoothing.value() / 100
        wall = self.x_axis.currentText() == X_WALL
        total = 0
        for tag, tag_plot in self._plots.items():
            self._draw_reference(tag_plot)
            series = self._series.get(tag)
            if series is None or series.size == 0:
                tag_plot.raw.setData([], [])
                tag_plot.smooth.setData([], [])
                tag_plot.shown = None
                continue
            xs = series.walls if wall else series.steps
            total += series.size
            if weight > 0:
                tag_plot.raw.setPen(pg.mkPen(faint(tag_plot.color), width=1.0))
                tag_plot.raw.setData(xs, series.values)
                tag_plot.smooth.setData(xs, tag_plot.smoothed.of(series, weight))
                tag_plot.smooth.setVisible(True)
                shown = tag_plot.smooth
            else:
                tag_plot.raw.setPen(pg.mkPen(tag_plot.color, width=1.5))
                tag_plot.raw.setData(xs, series.values)
                tag_plot.smooth.setVisible(False)
                shown = tag_plot.raw
            tag_plot.shown = shown
        if self.run is not None:
            last = max((s.last_step or 0 for s in self._series.values()), default=0)
            self.status.setText(
                f"{len(self._series)} tags · {total:,} points plotted · last step {last:,}"
                if self._series
                else "No metrics stored yet; they appear here as the run reports them."
            )

    def _draw_reference(self, tag_plot: _TagPlot) -> None:
        """Put the plot's reference line at its reference tag's latest value (hidden while it has none)."""
        line, tag = tag_plot.reference, tag_plot.reference_tag
        if line is None or tag is None:  # (both or neither)
            return
        reference = self._series.get(tag)
        if reference is None or reference.size == 0:
            line.setVisible(False)
            return
        line.setVisible(True)  # first: a hidden line's label does not follow its value
        line.setPos(float(reference.values[-1]))

    # ------------------------------------------------------------ for tests and callers

    def reference_line(self, tag: str) -> pg.InfiniteLine | None:
        """The reference line drawn on ``tag``'s plot, when it is plotted, its kind names a reference
        tag for it and that tag has a value; else None."""
        plot = self._plots.get(tag)
        if plot is None or plot.reference is None or not plot.reference.isVisible():
            return None
        return plot.reference

    def plot_of(self, tag: str) -> pg.PlotItem | None:
        """The plot ``tag`` is drawn on, while it is plotted."""
        plot = self._plots.get(tag)
        return None if plot is None else plot.plot

    def series(self, tag: str) -> tuple[np.ndarray, np.ndarray]:
        """The raw points of ``tag`` held by the tab: (steps, values)."""
        found = self._series.get(tag)
        if found is None:
            return np.empty(0), np.empty(0)
        return found.steps.copy(), found.values.copy()

    def points_drawn(self, tag: str) -> int:
        """How many points of ``tag`` are on screen: the last redraw's data after downsampling and clipping to the view."""
        plot = self._plots.get(tag)
        if plot is None or plot.shown is None:
            return 0
        xs, _ = plot.shown.getData()
        return 0 if xs is None else len(xs)
