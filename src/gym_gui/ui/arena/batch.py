"""The Arena's batch part: an evaluation batch from the window — every operator on the same seeds,
headless — with the table `gym-gui arena` prints and a box plot of each operator's returns."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import pyqtgraph as pg
from PySide6.QtCore import QPointF, QRectF, Qt, Signal
from PySide6.QtGui import QPainter
from PySide6.QtWidgets import (
    QAbstractItemView,
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

from gym_gui.core.errors import GymGuiError
from gym_gui.play.batch import (
    SUMMARY_COLUMNS,
    EpisodeResult,
    EvaluationBatch,
    OperatorResult,
    new_comparison_id,
    summary_cells,
)
from gym_gui.play.operators import Operators
from gym_gui.play.seat import Seeds
from gym_gui.protocol.client import DaemonClient
from gym_gui.ui.arena.model import ArenaSetup, BoxFigures, box_figures
from gym_gui.ui.background import Background
from gym_gui.ui.daemon_link import DaemonLink
from gym_gui.ui.tabs.charts import faint

TABLE_COLUMNS = ("operator", *SUMMARY_COLUMNS, "fallbacks", "run", "error")
BOX_WIDTH = 0.5


class BoxItem(pg.GraphicsObject):
    """One operator's box plot at ``x``: the box from Q1 to Q3, the median, the whiskers (the outliers
    are a scatter beside it). Drawn in data coordinates with cosmetic pens, so zooming keeps the lines thin."""

    def __init__(self, x: float, figures: BoxFigures, color: object) -> None:
        super().__init__()
        self.x = x
        self.figures = figures
        self._pen = pg.mkPen(color, width=1.5)
        self._median_pen = pg.mkPen(color, width=3)
        self._brush = pg.mkBrush(faint(color, 80))
        for pen in (self._pen, self._median_pen):
            pen.setCosmetic(True)
        low = min((figures.low, *figures.outliers))
        high = max((figures.high, *figures.outliers))
        half = BOX_WIDTH / 2
        self._bounds = QRectF(x - half, low, BOX_WIDTH, max(high - low, 1e-9))

    def paint(self, painter: QPainter, *_args: object) -> None:
        f, x, half = self.figures, self.x, BOX_WIDTH / 2
        painter.setPen(self._pen)
        painter.setBrush(self._brush)
        painter.drawRect(QRectF(x - half, f.q1, BOX_WIDTH, f.q3 - f.q1))
        for end, edge in ((f.low, f.q1), (f.high, f.q3)):
            painter.drawLine(QPointF(x, end), QPointF(x, edge))
            painter.drawLine(QPointF(x - half / 2, end), QPointF(x + half / 2, end))
        painter.setPen(self._median_pen)
        painter.drawLine(QPointF(x - half, f.median), QPointF(x + half, f.median))

    def boundingRect(self) -> QRectF:
        return QRectF(self._bounds)


class BatchPanel(QWidget):
    """Runs an :class:`EvaluationBatch` off the GUI thread (its progress marshalled back), then shows
    each operator's numbers as `gym-gui arena` prints them and a box plot of their returns."""

    comparison_requested = Signal(str)  # the batch's comparison id: open its runs

    def __init__(
        self,
        link: DaemonLink,
        read_setup: Callable[[int], tuple[ArenaSetup, Seeds]],
        operators: Callable[[DaemonClient], Operators],
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.link = link
        self.read_setup = read_setup
        self.operators = operators
        self._pool = Background(self, workers=1, name="arena-batch")
        self._generation = 0
        self.batch: EvaluationBatch | None = None
        self.running = False
        self.results: list[OperatorResult] = []
        self.boxes: list[BoxItem] = []
        self.comparison = ""
        self._stop_asked = False
        self._played: dict[int, int] = {}
        self._names: list[str] = []
        self._build()

    def _build(self) -> None:
        self.episodes = QSpinBox()
        self.episodes.setObjectName("batchEpisodes")
        self.episodes.setRange(1, 100_000)
        self.episodes.setValue(100)
        self.run_button = QPushButton("Run batch")
        self.run_button.setToolTip("Every operator plays the episodes on the same seeds, headless")
        self.stop_button = QPushButton("Stop")
        self.compare_button = QPushButton("Open the comparison")
        self.compare_button.setToolTip("Select this batch's runs: Compare overlays them, Replay plays each")
        self.run_button.clicked.connect(self.run_from_setup)
        self.stop_button.clicked.connect(self.stop)
        self.compare_button.clicked.connect(lambda: self.comparison_requested.emit(self.comparison))
        self.progress = QLabel("Choose operators (no person: a batch plays headless) and Run batch.")
        self.progress.setWordWrap(True)
        top = QHBoxLayout()
        top.addWidget(QLabel("Episodes"))
        top.addWidget(self.episodes)
        top.addWidget(self.run_button)
        top.addWidget(self.stop_button)
        top.addStretch(1)
        top.addWidget(self.compare_button)

        self.table = QTableWidget(0, len(TABLE_COLUMNS))
        self.table.setObjectName("batchTable")
        self.table.setHorizontalHeaderLabels(list(TABLE_COLUMNS))
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.verticalHeader().setVisible(False)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.table.horizontalHeader().setStretchLastSection(True)
        self.plot_widget = pg.PlotWidget()
        self.plot = self.plot_widget.getPlotItem()
        self.plot.showGrid(x=False, y=True, alpha=0.2)
        self.plot.setLabel("left", "return per episode")
        self.plot.setMouseEnabled(x=False, y=True)
        split = QSplitter(Qt.Orientation.Vertical)
        split.addWidget(self.table)
        split.addWidget(self.plot_widget)
        split.setStretchFactor(1, 2)
        layout = QVBoxLayout(self)
        layout.addLayout(top)
        layout.addWidget(self.progress)
        layout.addWidget(split, 1)
        self._enable()

    # ------------------------------------------------------------ running

    def run_from_setup(self) -> None:
        """Run a batch of what the setup says (a refusal said in one line)."""
        try:
            setup, seeds = self.read_setup(self.episodes.value())
            setup.check(minimum=1)
        except (GymGuiError, ValueError) as exc:
            self.progress.setText(str(exc))
            return
        self.run(setup, seeds)

    def run(self, setup: ArenaSetup, seeds: Seeds = Seeds.PROCEDURAL) -> None:
        """Play ``setup``'s batch off the GUI thread; the table and box plot come when it is over."""
        client = self.link.client
        if self.running:
            return
        if client is None:
            self.progress.setText("not connected to the gym_gui daemon")
            return
        self._generation += 1
        generation = self._generation
        self.running, self.batch, self._stop_asked = True, None, False
        self._played, self._names = {}, list(setup.operators)
        self.comparison = new_comparison_id("batch")
        self.progress.setText(f"Choosing {len(setup.operators)} operators for {setup.env_id}…")
        self._pool.run(
            partial(self._play, client, setup, seeds, self.comparison, generation),
            partial(self._finished, generation),
            partial(self._failed, generation),
            name="arena batch",
        )
        self._enable()

    def stop(self) -> None:
        """Stop after the steps in flight: each run ends CANCELLED with what it played stored."""
        self._stop_asked = True
        if self.batch is not None:
            self.batch.stop()
        self.progress.setText("Stopping after the steps in flight…")

    def _play(
        self,
        client: DaemonClient,
        setup: ArenaSetup,
        seeds: Seeds,
        comparison: str,
        generation: int,
    ) -> list[OperatorResult]:
        """The batch, on the pool's thread: choose every operator (refused ones say why), then play."""
        operators = self.operators(client)
        choices = [operators.choose(name, setup.env_id) for name in setup.operators]

        def episode_done(index: int, episode: EpisodeResult) -> None:
            self._pool.post(self._episode_done, (generation, index, episode))

        batch = EvaluationBatch(
            client,
            choices,
            setup.env_id,
            setup.episodes,
            setup.seed,
            seeds=seeds,
            comparison=comparison,
            on_episode=episode_done,
        )
        self._pool.post(self._created, (generation, batch))
        return batch.run()

    def _created(self, created: tuple[int, EvaluationBatch]) -> None:
        generation, batch = created
        if generation != self._generation:
            return
        self.batch = batch
        self._names = [result.name for result in batch.results]
        if self._stop_asked:
            batch.stop()
        self.progress.setText(f"Playing {batch.episodes} episodes each (comparison {batch.comparison})…")

    def _episode_done(self, done: tuple[int, int, EpisodeResult]) -> None:
        generation, index, _episode = done
        if generation != self._generation or self.batch is None:
            return
        self._played[index] = self._played.get(index, 0) + 1
        total = self.batch.episodes
        shown = " · ".join(f"{name}: {self._played.get(i, 0)}/{total}" for i, name in enumerate(self._names))
        self.progress.setText(f"Playing: {shown}")

    def _finished(self, generation: int, results: list[OperatorResult]) -> None:
        if generation != self._generation:
            return
        self.running = False
        self.show_results(results)
        stopped = " (stopped)" if self._stop_asked else ""
        failed = [r for r in results if r.error]
        self.progress.setText(
            f"Batch over{stopped}: comparison {self.comparison}"
            + (f"; {len(failed)} operator(s) failed (see error)" if failed else "")
        )
        self._enable()

    def _failed(self, generation: int, message: str) -> None:
        if generation != self._generation:
            return
        self.running = False
        self.progress.setText(message)
        self._enable()

    # ------------------------------------------------------------ showing

    def show_results(self, results: list[OperatorResult]) -> None:
        """The table (the numbers `gym-gui arena` prints) and a box plot per operator that played."""
        self.results = list(results)
        self.table.setRowCount(len(results))
        for row, result in enumerate(results):
            cells = (
                result.name,
                *summary_cells(result),
                str(result.fallbacks),
                result.run_id,
                result.error,
            )
            for column, text in enumerate(cells):
                item = QTableWidgetItem(text)
                if column == len(cells) - 1 and text:
                    item.setToolTip(text)
                self.table.setItem(row, column, item)
        self.plot.clear()
        self.boxes = []
        for index, result in enumerate(results):
            figures = box_figures(result.returns)
            if figures is None:
                continue
            color = pg.intColor(index, hues=max(len(results), 6))
            box = BoxItem(float(index), figures, color)
            self.plot.addItem(box)
            self.boxes.append(box)
            if figures.outliers:
                self.plot.plot(
                    [float(index)] * len(figures.outliers),
                    list(figures.outliers),
                    pen=None,
                    symbol="o",
                    symbolSize=6,
                    symbolBrush=faint(color, 160),
                )
        self.plot.getAxis("bottom").setTicks([[(float(i), r.name) for i, r in enumerate(results)]])
        self.plot.setXRange(-0.6, len(results) - 0.4, padding=0)
        self.plot.enableAutoRange(axis="y")

    def cells(self) -> list[list[str]]:
        """The table's texts, row by row (what a test compares with the CLI's numbers)."""
        return [
            [
                item.text() if (item := self.table.item(r, c)) is not None else ""
                for c in range(self.table.columnCount())
            ]
            for r in range(self.table.rowCount())
        ]

    def _enable(self) -> None:
        self.run_button.setEnabled(not self.running)
        self.stop_button.setEnabled(self.running)
        self.compare_button.setEnabled(bool(self.comparison) and not self.running)
