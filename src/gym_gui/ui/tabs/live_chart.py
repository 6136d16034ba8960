"""ReturnChart: the Live tab's chart of a run's episode returns and their running mean."""

from __future__ import annotations

from collections import deque

import numpy as np
import pyqtgraph as pg
from PySide6.QtWidgets import QWidget

from gym_gui.core.records import EpisodeRecord

# Episode returns the chart keeps (a long FrozenLake run ends millions of episodes).
CHART_CAPACITY = 20_000
# Episodes averaged by the chart's smoothed curve.
MEAN_WINDOW = 100


class ReturnChart(pg.PlotWidget):
    """The last :data:`CHART_CAPACITY` episode returns, raw and as a mean of :data:`MEAN_WINDOW`.

    Returns are added as they come and drawn only by :meth:`redraw`, which does nothing when none
    came since the last one: the tab calls it at its own pace, never per episode.
    """

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("liveReturns")
        self.setTitle("Episode return")
        self.setLabel("bottom", "episode")
        self.setLabel("left", "return")
        self.addLegend(offset=(10, 10))
        item = self.getPlotItem()
        # Thousands of episodes are drawn as about one point per pixel column; subsampling is the
        # cheapest way there, and hairline pens stay on Qt's fast path (wider ones are stroked).
        item.setDownsampling(auto=True, mode="subsample")
        item.setClipToView(True)
        self._view_box = item.getViewBox()
        self._raw_curve = self.plot(pen=pg.mkPen((150, 170, 196), width=1), name="return")
        self._mean_curve = self.plot(pen=pg.mkPen((230, 110, 0), width=1), name=f"mean of {MEAN_WINDOW}")
        self._episodes: deque[int] = deque(maxlen=CHART_CAPACITY)
        self._returns: deque[float] = deque(maxlen=CHART_CAPACITY)
        self._dirty = False

    @property
    def points(self) -> int:
        """Episode returns the chart holds."""
        return len(self._episodes)

    def add_return(self, episode: EpisodeRecord) -> None:
        """Add ``episode``'s return (not when a back-filled one already holds its number)."""
        if self._episodes and episode.episode <= self._episodes[-1]:
            return  # episodes come in order
        self._episodes.append(episode.episode)
        self._returns.append(episode.total_reward)
        self._dirty = True

    def merge_older(self, episodes: list[EpisodeRecord]) -> None:
        """Put the stored ``episodes`` older than the first one held before it (a back-fill)."""
        first_live = self._episodes[0] if self._episodes else None
        older = [e for e in episodes if first_live is None or e.episode < first_live]
        if not older:
            return
        xs = [e.episode for e in older] + list(self._episodes)
        ys = [e.total_reward for e in older] + list(self._returns)
        self._episodes = deque(xs, maxlen=CHART_CAPACITY)
        self._returns = deque(ys, maxlen=CHART_CAPACITY)
        self._dirty = True

    def clear_returns(self) -> None:
        """Hold no return (drawn empty at the next :meth:`redraw`)."""
        self._episodes.clear()
        self._returns.clear()
        self._dirty = True

    def redraw(self) -> None:
        """Draw the returns held, if they changed since the last draw."""
        if not self._dirty:
            return
        self._dirty = False
        x = np.fromiter(self._episodes, dtype=np.float64, count=len(self._episodes))
        y = np.fromiter(self._returns, dtype=np.float64, count=len(self._returns))
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
