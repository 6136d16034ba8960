"""CompareView: one metric of several runs overlaid, with a mean ± std band over runs that differ only in seed."""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QVBoxLayout, QWidget

from gym_gui.core.errors import StorageError
from gym_gui.core.records import RunRecord
from gym_gui.storage.run_dir import RunDir
from gym_gui.storage.telemetry import TelemetryReader
from gym_gui.ui.background import Background
from gym_gui.ui.tabs.charts import ema, faint, new_curve, smoothing_slider
from gym_gui.workers import worker_catalog

log = logging.getLogger(__name__)

# Fields of a run's config that do not change what is learned: runs differing only in these are
# repetitions of one experiment. Tracking (TensorBoard, W&B, video capture) only changes where the
# same numbers are also sent.
IGNORED_FOR_GROUPING = ("seed", "notes", "tracking", "dry_run")
GRID_POINTS = 400


@dataclass(frozen=True)
class Band:
    """Mean ± std of one group of runs (same config, different seeds) on a common step grid."""

    run_ids: tuple[str, ...]
    steps: np.ndarray
    mean: np.ndarray
    std: np.ndarray


def experiment_key(config: dict[str, Any]) -> str:
    """What identifies a run's experiment: its config without the fields in :data:`IGNORED_FOR_GROUPING`."""
    kept = {k: v for k, v in config.items() if k not in IGNORED_FOR_GROUPING}
    return json.dumps(kept, sort_keys=True, default=str)


def mean_std_band(
    run_ids: list[str], curves: list[tuple[np.ndarray, np.ndarray]], points: int = GRID_POINTS
) -> Band | None:
    """Interpolate each curve onto a common step grid (where all of them have data) and take mean and std.

    Returns None when the curves share no step range.
    """
    prepared = []
    for steps, values in curves:
        if len(steps) == 0:
            return None
        # np.interp needs increasing x: average the points logged at one step (several envs
        # can end an episode at the same global step).
        unique, inverse = np.unique(steps, return_inverse=True)
        means = np.bincount(inverse, weights=values) / np.bincount(inverse)
        prepared.append((unique, means))
    start = max(s[0] for s, _ in prepared)
    stop = min(s[-1] for s, _ in prepared)
    if not stop > start:
        return None
    grid = np.linspace(start, stop, points)
    stacked = np.vstack([np.interp(grid, s, v) for s, v in prepared])
    return Band(tuple(run_ids), grid, stacked.mean(axis=0), stacked.std(axis=0))


@dataclass
class _RunData:
    info: RunRecord
    tags: list[str]
    key: str


def _load_runs(runs: list[RunRecord]) -> list[_RunData]:
    """Each run's metric tags and experiment key (blocking: call it off the GUI thread)."""
    loaded = []
    for info in runs:
        files = RunDir(info.run_dir)
        tags: list[str] = []
        if files.has_telemetry():
            reader = TelemetryReader(files.telemetry_path)
            try:
                tags = reader.metric_tags()
            finally:
                reader.close()
        try:
            key = experiment_key(files.read_config().model_dump(mode="json"))
        except StorageError as exc:
            # A run without a readable config forms a group of its own.
            log.info("compare: run %s stands alone: %s", info.run_id, exc)
            key = f"run:{info.run_id}"
        loaded.append(_RunData(info, tags, key))
    return loaded


def _load_series(runs: list[_RunData], tag: str) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    series = {}
    for run in runs:
        files = RunDir(run.info.run_dir)
        if not files.has_telemetry():
            continue
        reader = TelemetryReader(files.telemetry_path)
        try:
            points = reader.metrics(tag)
        finally:
            reader.close()
        series[run.info.run_id] = (
            np.fromiter((p.step for p in points), dtype=np.float64, count=len(points)),
            np.fromiter((p.value for p in points), dtype=np.float64, count=len(points)),
        )
    return series


class CompareView(QWidget):
    """Several runs' curves of one metric on one chart.

    ``set_runs`` reads the runs' tags from storage (off the GUI thread) and offers the tags they
    all have. Each run is one curve (smoothed like the Charts tab). Runs whose stored config is the
    same apart from seed, notes and tracking are grouped: each group of two or more gets a mean
    ± std band, computed on a common step grid where all its runs have data.
    """

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._runs: list[_RunData] = []
        self._series: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self._curves: dict[str, pg.PlotDataItem] = {}
        self._bands: list[Band] = []
        self._generation = 0
        self._background = Background(self)

        self.tag = QComboBox()
        self.tag.setMinimumContentsLength(24)
        self.tag.currentTextChanged.connect(self._tag_chosen)
        self.smoothing, smoothing_value = smoothing_slider()
        self.smoothing.valueChanged.connect(lambda _v: self._draw())
        self.status = QLabel("Select several runs to compare them.")
        self.status.setWordWrap(True)
        self.plot_widget = pg.PlotWidget()
        self.plot = self.plot_widget.getPlotItem()
        self.plot.showGrid(x=True, y=True, alpha=0.2)
        self.plot.setLabel("bottom", "step")
        self.legend = self.plot.addLegend(offset=(10, 10))

        controls = QHBoxLayout()
        controls.addWidget(QLabel("Metric"))
        controls.addWidget(self.tag, 1)
        controls.addSpacing(12)
        controls.addWidget(QLabel("Smoothing"))
        controls.addWidget(self.smoothing, 1)
        controls.addWidget(smoothing_value)
        layout = QVBoxLayout(self)
        layout.addLayout(controls)
        layout.addWidget(self.plot_widget, 1)
        layout.addWidget(self.status)

    # ------------------------------------------------------------ input

    def set_runs(self, runs: list[RunRecord]) -> None:
        """Compare ``runs`` (their stored metrics; runs still training show what is stored so far)."""
        self._generation += 1
        generation = self._generation
        self._runs = []
        self._series = {}
        self._clear_plot()
        self.tag.blockSignals(True)
        self.tag.clear()
        self.tag.blockSignals(False)
        if not runs:
            self.status.setText("Select several runs to compare them.")
            return
        self.status.setText(f"Reading {len(runs)} runs…")
        wanted = list(runs)
        self._background.run(
            lambda: _load_runs(wanted),
            lambda loaded: self._runs_loaded(generation, loaded),
            lambda message: self._failed(generation, message),
            name="compare-runs",
        )

    def _failed(self, generation: int, message: str) -> None:
        if generation == self._generation:
            self.status.setText(f"The runs could not be read: {message}")

    def _runs_loaded(self, generation: int, loaded: list[_RunData]) -> None:
        if generation != self._generation:
            return
        self._runs = loaded
        common = set(loaded[0].tags) if loaded else set()
        for run in loaded[1:]:
            common &= set(run.tags)
        tags = sorted(common)
        if not tags:
            self.status.setText("These runs have no metric in common.")
            return
        self.tag.blockSignals(True)
        self.tag.addItems(tags)
        returns = worker_catalog().return_metric(loaded[0].info.worker)
        self.tag.setCurrentText(returns if returns in common else tags[0])
        self.tag.blockSignals(False)
        self._tag_chosen(self.tag.currentText())

    def _tag_chosen(self, tag: str) -> None:
        if not tag or not self._runs:
            return
        self._generation += 1
        generation = self._generation
        runs = list(self._runs)
        self.status.setText(f"Reading {tag}…")
        self._background.run(
            lambda: _load_series(runs, tag),
            lambda series: self._series_loaded(generation, series),
            lambda message: self._failed(generation, message),
            name="compare-series",
        )

    def _series_loaded(self, generation: int, series: dict[str, tuple[np.ndarray, np.ndarray]]) -> None:
        if generation != self._generation:
            return
        self._series = series
        self._draw()

    # ------------------------------------------------------------ drawing

    def _clear_plot(self) -> None:
        self.plot.clear()
        self.legend.clear()
        self._curves = {}
        self._bands = []

    def _draw(self) -> None:
        self._clear_plot()
        if not self._series:
            return
        weight = self.smoothing.value() / 100
        smoothed = {run_id: (s, ema(v, weight)[0]) for run_id, (s, v) in self._series.items()}
        groups: dict[str, list[str]] = {}
        for run in self._runs:
            if run.info.run_id in smoothed:
                groups.setdefault(run.key, []).append(run.info.run_id)
        for index, members in enumerate(groups.values()):
            if len(members) < 2:
                continue
            band = mean_std_band(members, [smoothed[m] for m in members])
            if band is None:
                continue
            self._bands.append(band)
            # Pastel, so a band never reads as one of the (saturated) run curves.
            hue = pg.intColor(index, hues=max(len(groups), 6), sat=90, alpha=70)
            upper = pg.PlotDataItem(band.steps, band.mean + band.std, pen=pg.mkPen(None))
            lower = pg.PlotDataItem(band.steps, band.mean - band.std, pen=pg.mkPen(None))
            self.plot.addItem(pg.FillBetweenItem(upper, lower, brush=pg.mkBrush(hue)))
            first = next(r.info for r in self._runs if r.info.run_id == members[0])
            mean = self.plot.plot(
                band.steps,
                band.mean,
                pen=pg.mkPen(
                    pg.intColor(index, hues=max(len(groups), 6), sat=90),
                    width=2.5,
                    style=Qt.PenStyle.DashLine,
                ),
                name=f"mean ± std of {len(members)} seeds ({first.worker} {first.env_id})",
            )
            mean.setZValue(10)
        total = len(smoothed)
        for index, run in enumerate(r for r in self._runs if r.info.run_id in smoothed):
            steps, values = smoothed[run.info.run_id]
            color = pg.intColor(index, hues=max(total, 6))
            curve = new_curve(self.plot, color, width=1.5, name=run.info.run_id)
            curve.setData(steps, values)
            self._curves[run.info.run_id] = curve
            if weight > 0:  # the raw points, faint behind the smoothed curve, as in the Charts tab
                raw_steps, raw_values = self._series[run.info.run_id]
                raw = new_curve(self.plot, faint(color, 40), width=1.0)
                raw.setData(raw_steps, raw_values)
                raw.setZValue(-1)
        groups_text = ", ".join(f"{len(b.run_ids)} seeds" for b in self._bands)
        self.status.setText(
            f"{self.tag.currentText()}: {total} runs"
            + (
                f"; mean ± std bands over {groups_text}"
                if self._bands
                else "; no runs share a config apart from the seed"
            )
        )

    # ------------------------------------------------------------ for tests and callers

    def tags(self) -> list[str]:
        """The metric tags offered (those every compared run has)."""
        return [self.tag.itemText(i) for i in range(self.tag.count())]

    def curves(self) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """The drawn curve of each run: (steps, smoothed values)."""
        out = {}
        for run_id, curve in self._curves.items():
            x, y = curve.getOriginalDataset()
            out[run_id] = (np.asarray(x), np.asarray(y))
        return out

    def bands(self) -> list[Band]:
        """The mean ± std bands drawn, one per group of runs that differ only in seed."""
        return list(self._bands)
