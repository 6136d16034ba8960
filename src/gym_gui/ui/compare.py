"""CompareView: one metric of several runs overlaid, with a mean ± std band over runs that differ only in seed."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QVBoxLayout, QWidget

from gym_gui.core.curves import Band, ema, mean_std_band
from gym_gui.core.records import RunRecord
from gym_gui.storage.comparison import (
    EPISODE_TOTALS,
    ComparedRun,
    Series,
    common_tags,
    group_by_experiment,
    load_runs,
    load_series,
)
from gym_gui.ui.background import Background
from gym_gui.ui.combos import fit_to_layout
from gym_gui.ui.tabs.charts import faint, new_curve, smoothing_slider
from gym_gui.workers import worker_catalog


class CompareView(QWidget):
    """Several runs' curves of one metric on one chart.

    ``set_runs`` reads the runs' tags from storage (off the GUI thread) and offers the tags they
    all have. Each run is one curve (smoothed like the Charts tab). Runs whose stored config is the
    same apart from seed, notes and tracking are grouped: each group of two or more gets a mean
    ± std band, computed on a common step grid where all its runs have data.
    """

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._runs: list[ComparedRun] = []
        self._series: dict[str, Series] = {}
        self._curves: dict[str, pg.PlotDataItem] = {}
        self._bands: list[Band] = []
        self._generation = 0
        self._background = Background(self)

        self.tag = fit_to_layout(QComboBox(), 24)
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
            lambda: load_runs(wanted),
            lambda loaded: self._runs_loaded(generation, loaded),
            lambda message: self._failed(generation, message),
            name="compare-runs",
        )

    def _failed(self, generation: int, message: str) -> None:
        if generation == self._generation:
            self.status.setText(f"The runs could not be read: {message}")

    def _runs_loaded(self, generation: int, loaded: list[ComparedRun]) -> None:
        if generation != self._generation:
            return
        self._runs = loaded
        tags = common_tags(loaded)
        if not tags:
            self.status.setText("These runs have no metric in common.")
            return
        self.tag.blockSignals(True)
        self.tag.addItems(tags)
        returns = worker_catalog().return_metric(loaded[0].info.worker)
        # Runs that log no return metric (a person's, an operator's) compare their stored episodes.
        fallback = EPISODE_TOTALS if EPISODE_TOTALS in tags else tags[0]
        self.tag.setCurrentText(returns if returns in tags else fallback)
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
            lambda: load_series(runs, tag),
            lambda series: self._series_loaded(generation, series),
            lambda message: self._failed(generation, message),
            name="compare-series",
        )

    def _series_loaded(self, generation: int, series: dict[str, Series]) -> None:
        if generation != self._generation:
            return
        self._series = series
        self.plot.setLabel("bottom", "episode" if self.tag.currentText() == EPISODE_TOTALS else "step")
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
        groups = [[run.info.run_id for run in group] for group in group_by_experiment(self._runs, smoothed)]
        for index, members in enumerate(groups):
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

    def curves(self) -> dict[str, Series]:
        """The drawn curve of each run: (steps, smoothed values)."""
        out = {}
        for run_id, curve in self._curves.items():
            x, y = curve.getOriginalDataset()
            out[run_id] = (np.asarray(x), np.asarray(y))
        return out

    def bands(self) -> list[Band]:
        """The mean ± std bands drawn, one per group of runs that differ only in seed."""
        return list(self._bands)
