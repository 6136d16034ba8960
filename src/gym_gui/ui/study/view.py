"""StudyWidget: an Optuna study's trials, optimisation history and parameter importances, refreshed
while shown, with Train with best and the study in optuna-dashboard."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pyqtgraph as pg
from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QBrush, QColor, QFont, QHideEvent, QShowEvent
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from gym_gui.core.config import redact_url
from gym_gui.core.errors import GymGuiError
from gym_gui.storage.home import Home
from gym_gui.sweeps.study import (
    StudyView,
    history_title,
    importance_note,
    param_importances,
    read_only_url,
    read_study,
)
from gym_gui.ui.background import Background
from gym_gui.ui.local_web import LocalServer, LocalServerError, LocalWebPage
from gym_gui.ui.study.model import (
    StudyTable,
    follow_up,
    study_table,
    trial_for_training,
)

REFRESH_MS = 3000  # a running sweep's new trials appear within this
BEST_BRUSH = QBrush(QColor(255, 236, 179))  # the best trial, or the Pareto front
CURRENT_BRUSH = QBrush(QColor(187, 222, 251))  # the trial of the run whose tab this is
OTHER_HOME_BRUSH = QBrush(QColor(120, 120, 120))  # text of a trial another home's daemon plays


def dashboard_server(url: str, log_path: Path) -> LocalServer:
    """optuna-dashboard (from gym_gui's own environment) serving the storage ``url``, SQLite read-only."""
    program = Path(sys.executable).parent / "optuna-dashboard"
    if not program.exists():
        raise LocalServerError(
            f"optuna-dashboard is not installed beside {sys.executable} ({program} is missing)"
        )

    def command(port: int) -> list[str]:
        return [str(program), read_only_url(url), "--host", "127.0.0.1", "--port", str(port)]

    return LocalServer("optuna-dashboard", command, log_path, shown=redact_url)


class StudyWidget(QWidget):
    """One study as read through ``sweeps.study`` (off the GUI thread, every few seconds while shown).

    A read that fails shows its message above the last good data. The trials table is best first,
    the best trial (or the Pareto front) marked; activating a row with runs asks for its first run
    (:attr:`run_requested`); Train with best hands the follow-up run to the window (:attr:`train_requested`).
    """

    run_requested = Signal(str)  # a trial's run to select in the runs table
    train_requested = Signal(object)  # a FollowUp for the training form

    def __init__(self, home: Home, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.dashboard_log = home.dashboard_log
        self.home_id = home.known_home_id()  # a shared study's trials of other homes have no run here
        self.url: str | None = None
        self.name: str | None = None
        self.highlight: int | None = None  # the trial of the run this view belongs to
        self.view: StudyView | None = None  # the last good read
        self.importances: dict[str, float] = {}
        self.table_data: StudyTable | None = None
        self.reads = 0  # good reads so far (tests wait on it)
        self._reading = False
        self._generation = 0
        self._background = Background(self, workers=2, name="study-read")
        self._timer = QTimer(self)
        self._timer.setInterval(REFRESH_MS)
        self._timer.timeout.connect(self.refresh)

        self.title = QLabel("No study.")
        self.title.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.title.setWordWrap(True)
        self.error = QLabel()
        self.error.setObjectName("studyError")
        self.error.setWordWrap(True)
        self.error.setStyleSheet("color: #c62828;")
        self.error.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.error.hide()
        self.train_button = QPushButton("Train with best")
        self.train_button.setToolTip(
            "Fill the training form with the best trial's parameters (several objectives: the selected "
            "trial of the Pareto front), ready for a longer run"
        )
        self.train_button.clicked.connect(self.train_with_best)
        self.dashboard_button = QPushButton("Open in optuna-dashboard")
        self.dashboard_button.clicked.connect(self.open_dashboard)
        buttons = QHBoxLayout()
        buttons.addWidget(self.train_button)
        buttons.addWidget(self.dashboard_button)
        buttons.addStretch(1)

        self.table = QTableWidget()
        self.table.setObjectName("trialsTable")
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.verticalHeader().setVisible(False)
        self.table.activated.connect(lambda index: self.open_trial_run(index.row()))

        self.history = pg.PlotWidget()
        self.history.setObjectName("studyHistory")
        self.history.setLabel("bottom", "trial")
        self.history.addLegend()
        self.history_points = pg.ScatterPlotItem(size=8, brush=pg.mkBrush(33, 150, 243), name="value")
        self.best_line = pg.PlotDataItem(
            pen=pg.mkPen(229, 57, 53, width=2), stepMode=None, name="best so far"
        )
        self.history.addItem(self.history_points)
        self.history.addItem(self.best_line)
        self.importance_plot = pg.PlotWidget()
        self.importance_plot.setObjectName("studyImportances")
        self.importance_plot.setTitle("parameter importances")
        self.importance_bars: pg.BarGraphItem | None = None
        self.importance_note = QLabel()
        self.importance_note.setWordWrap(True)
        importances = QWidget()
        importance_layout = QVBoxLayout(importances)
        importance_layout.setContentsMargins(0, 0, 0, 0)
        importance_layout.addWidget(self.importance_note)
        importance_layout.addWidget(self.importance_plot, 1)
        charts = QSplitter(Qt.Orientation.Horizontal)
        charts.addWidget(self.history)
        charts.addWidget(importances)
        split = QSplitter(Qt.Orientation.Vertical)
        split.addWidget(self.table)
        split.addWidget(charts)
        split.setStretchFactor(0, 3)
        split.setStretchFactor(1, 2)

        self.dashboard = LocalWebPage("optuna-dashboard")
        self.dashboard.say("optuna-dashboard starts with “Open in optuna-dashboard”.")
        self.pages = QTabWidget()
        self.pages.addTab(split, "Trials")
        self.pages.addTab(self.dashboard, "optuna-dashboard")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.title)
        layout.addWidget(self.error)
        layout.addLayout(buttons)
        layout.addWidget(self.pages, 1)

    # ------------------------------------------------------------ which study

    def show_study(self, url: str, name: str, highlight: int | None = None) -> None:
        """Show study ``name`` of the storage ``url`` (read now, then every few seconds while shown)."""
        self.stop()
        self.url, self.name, self.highlight = url, name, highlight
        self.view, self.importances, self.table_data = None, {}, None
        self.table.clear()
        self.table.setRowCount(0)
        self.title.setText(f"Study {name!r} — reading…")
        self.refresh()
        if self.isVisible():
            self._timer.start()

    def stop(self) -> None:
        """Stop refreshing and stop the dashboard (its process ends)."""
        self._generation += 1
        self._reading = False
        self._timer.stop()
        self.dashboard.stop()
        self.dashboard.say("optuna-dashboard starts with “Open in optuna-dashboard”.")

    def showEvent(self, event: QShowEvent) -> None:
        super().showEvent(event)
        if self.url is not None:
            self._timer.start()
            self.refresh()

    def hideEvent(self, event: QHideEvent) -> None:
        super().hideEvent(event)
        self._timer.stop()

    # ------------------------------------------------------------ reading

    def refresh(self) -> None:
        """Read the study again (off the GUI thread); one read at a time."""
        url, name = self.url, self.name
        if url is None or name is None or self._reading:
            return
        self._reading = True
        generation = self._generation

        def read() -> tuple[StudyView, dict[str, float]]:
            view = read_study(url, name)
            return view, param_importances(url, name)

        self._background.run(
            read,
            lambda result: self._read(generation, *result),
            lambda message: self._failed(generation, message),
            name="study-read",
        )

    def _failed(self, generation: int, message: str) -> None:
        if generation != self._generation:
            return
        self._reading = False
        self.error.setText(message)
        self.error.show()

    def _read(self, generation: int, view: StudyView, importances: dict[str, float]) -> None:
        if generation != self._generation:
            return
        self._reading = False
        self.error.hide()
        self.error.setText("")
        self.view, self.importances = view, importances
        self.reads += 1
        made = f"gym_gui sweep {view.sweep_id}" if view.sweep_id else "made outside gym_gui"
        directions = ", ".join(view.directions)
        self.title.setText(
            f"Study {view.name!r} in {view.storage} ({made}): {len(view.trials)} trials, "
            f"{len(view.complete())} complete; {directions}"
        )
        self._fill_table(study_table(view, self.home_id))
        self._draw_history(view)
        self._draw_importances(view, importances)

    def _fill_table(self, data: StudyTable) -> None:
        selected = self.selected_trial()
        self.table_data = data
        self.table.setSortingEnabled(False)
        self.table.clear()
        self.table.setColumnCount(len(data.columns))
        self.table.setHorizontalHeaderLabels(list(data.columns))
        self.table.setRowCount(len(data.lines))
        bold = QFont()
        bold.setBold(True)
        for row, line in enumerate(data.lines):
            for column, text in enumerate(line.cells):
                item = QTableWidgetItem(text)
                if line.best:
                    item.setBackground(BEST_BRUSH)
                    item.setFont(bold)
                if line.trial.number == self.highlight:
                    item.setBackground(CURRENT_BRUSH)
                if self.home_id and line.trial.elsewhere(self.home_id):
                    item.setForeground(OTHER_HOME_BRUSH)
                    item.setToolTip(f"played by the daemon of home {line.trial.home}: its runs are there")
                elif line.trial.run_ids:
                    item.setToolTip("Enter or double-click: select this trial's run")
                self.table.setItem(row, column, item)
        self.table.resizeColumnsToContents()
        keep = selected if selected is not None else self.highlight
        kept = data.row_of(keep) if keep is not None else None
        if kept is not None:
            self.table.selectRow(kept)

    def _draw_history(self, view: StudyView) -> None:
        points = view.history()
        self.history.setTitle(history_title(view))
        self.history_points.setData([p[0] for p in points], [p[1] for p in points])
        self.best_line.setData([p[0] for p in points], [p[2] for p in points])

    def _draw_importances(self, view: StudyView, importances: dict[str, float]) -> None:
        if self.importance_bars is not None:
            self.importance_plot.removeItem(self.importance_bars)
            self.importance_bars = None
        note = importance_note(view, importances)
        self.importance_note.setText(note)
        self.importance_note.setVisible(bool(note))
        names = list(importances)
        if names:
            self.importance_bars = pg.BarGraphItem(
                x0=0, y=list(range(len(names))), height=0.6, width=[importances[n] for n in names]
            )
            self.importance_plot.addItem(self.importance_bars)
        self.importance_plot.getAxis("left").setTicks([list(enumerate(names))])

    # ------------------------------------------------------------ for the user

    def selected_trial(self) -> int | None:
        """The number of the trial selected in the table, or None."""
        rows = self.table.selectionModel().selectedRows() if self.table.selectionModel() else []
        if not rows or self.table_data is None or rows[0].row() >= len(self.table_data.lines):
            return None
        return self.table_data.lines[rows[0].row()].trial.number

    def open_trial_run(self, row: int) -> None:
        """Ask for the first run of the trial in ``row`` (nothing for a trial without runs)."""
        if self.table_data is None or not 0 <= row < len(self.table_data.lines):
            return
        trial = self.table_data.lines[row].trial
        runs = trial.run_ids
        if self.home_id and trial.elsewhere(self.home_id):
            self.error.setText(
                f"trial {trial.number} is played in home {trial.home}: its runs are not in this one"
            )
            self.error.show()
        elif runs:
            self.run_requested.emit(runs[0])
        else:
            self.error.setText(f"trial {self.table_data.lines[row].trial.number} names no run of gym_gui")
            self.error.show()

    def train_with_best(self) -> None:
        """Emit the follow-up run of the best trial (or the selected Pareto trial), or say why not."""
        if self.view is None:
            return
        try:
            trial = trial_for_training(self.view, self.selected_trial())
        except GymGuiError as exc:
            self.error.setText(str(exc))
            self.error.show()
            return
        self.error.hide()
        self.train_requested.emit(follow_up(self.view, trial))

    def open_dashboard(self) -> None:
        """Serve the study's storage with optuna-dashboard on loopback and show it."""
        url, log_path = self.url, self.dashboard_log
        if url is None:
            return

        def launch() -> LocalServer:
            server = dashboard_server(url, log_path)
            server.start()
            return server

        self.pages.setCurrentWidget(self.dashboard)
        self.dashboard.start(launch, f" (serving {self.view.storage if self.view else 'the study'})")

    def values_column(self, column: str) -> list[Any]:
        """The cells of ``column`` top to bottom (for tests and callers)."""
        if self.table_data is None:
            return []
        index = self.table_data.columns.index(column)
        return [line.cells[index] for line in self.table_data.lines]
