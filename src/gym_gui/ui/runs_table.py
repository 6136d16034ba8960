"""The runs table (state badges, progress, SPS, run actions and controls) and the log drawer of the selected run."""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from PySide6.QtCore import (
    QAbstractTableModel,
    QItemSelection,
    QModelIndex,
    QObject,
    QPersistentModelIndex,
    QPoint,
    QRect,
    QSortFilterProxyModel,
    Qt,
    QTimer,
    QUrl,
    Signal,
)
from PySide6.QtGui import QBrush, QColor, QDesktopServices, QFontDatabase, QPainter
from PySide6.QtWidgets import (
    QAbstractItemView,
    QApplication,
    QCheckBox,
    QFileDialog,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QMenu,
    QMessageBox,
    QPlainTextEdit,
    QStyle,
    QStyledItemDelegate,
    QStyleOptionProgressBar,
    QStyleOptionViewItem,
    QTableView,
    QTabWidget,
    QToolBar,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from gym_gui.core.config import RunConfig
from gym_gui.core.controls import Control
from gym_gui.core.errors import GymGuiError
from gym_gui.core.records import EventRecord, RunDetail, RunRecord
from gym_gui.core.rerun import PackageChange
from gym_gui.core.states import RunState
from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.run_dir import RunDir
from gym_gui.storage.telemetry import TelemetryReader
from gym_gui.ui.background import Background
from gym_gui.ui.daemon_link import DaemonLink
from gym_gui.ui.run_controls import DESCRIPTIONS, RERUN_DESCRIPTION, refusal, rerun_refusal, send_control
from gym_gui.workers import secrets_from_environment

log = logging.getLogger(__name__)

COLUMNS = ("ID", "Worker", "Env", "State", "Progress", "Elapsed", "SPS")
ID, WORKER, ENV, STATE, PROGRESS, ELAPSED, SPS = range(len(COLUMNS))
RUN_ID_ROLE = int(Qt.ItemDataRole.UserRole) + 1
ARCHIVED_ROLE = RUN_ID_ROLE + 1
FRACTION_ROLE = RUN_ID_ROLE + 2  # progress in [0, 1], or None without a budget
SORT_ROLE = RUN_ID_ROLE + 3
WARNING_ROLE = RUN_ID_ROLE + 4  # the daemon's live warning about the run (disk low …), "" when none
WARNING_COLOUR = "#ef6c00"

STATE_COLOURS = {
    "QUEUED": "#757575",
    "STARTING": "#0288d1",
    "RUNNING": "#1565c0",
    "PAUSED": "#f9a825",
    "COMPLETED": "#2e7d32",
    "FAILED": "#c62828",
    "CANCELLED": "#8e24aa",
    "LOST": "#6d4c41",
    "PRUNED": "#00838f",
}
SPS_TAG = "charts/SPS"
REFRESH_MS = 1000  # progress and elapsed at most once a second
FINAL_FETCHES_PER_TICK = 4  # ended runs whose last figures are still unknown, fetched a few at a time
LOG_LINES = 200


def compact(number: int) -> str:
    """A count short enough for a table cell: 1,234 · 12.3k · 4.5M."""
    if number < 10_000:
        return f"{number:,}"
    if number < 1_000_000:
        return f"{number / 1000:.1f}k"
    return f"{number / 1_000_000:.1f}M"


def format_elapsed(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, secs = divmod(int(seconds), 60)
    if minutes < 60:
        return f"{minutes}m {secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes:02d}m"


# ------------------------------------------------------------------ model


@dataclass
class RunRow:
    """One run as the table shows it: the daemon's info plus the figures fetched for it."""

    info: RunRecord
    budget: int | None = None
    unit: str = ""  # "episodes" or "steps"
    done: int = 0
    steps: int = 0
    sps: float | None = None
    sps_cursor: int | None = None  # the last charts/SPS step read from storage
    fetched: bool = False  # figures fetched at least once (or the run ended before any existed)
    final_fetched: bool = False


class RunsModel(QAbstractTableModel):
    """Runs keyed by run id, one row each, in arrival order (the view sorts)."""

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._rows: list[RunRow] = []
        self._index: dict[str, int] = {}

    # -------------------------------------------------------- Qt model

    def rowCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(self._rows)

    def columnCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(COLUMNS)

    def headerData(
        self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole
    ) -> Any:
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole:
            return COLUMNS[section]
        return None

    def data(
        self, index: QModelIndex | QPersistentModelIndex, role: int = Qt.ItemDataRole.DisplayRole
    ) -> Any:
        if not index.isValid():
            return None
        row = self._rows[index.row()]
        info, column = row.info, index.column()
        if role == RUN_ID_ROLE:
            return info.run_id
        if role == ARCHIVED_ROLE:
            return info.archived
        if role == FRACTION_ROLE:
            return self._fraction(row)
        if role == WARNING_ROLE:
            return info.warning
        if role == Qt.ItemDataRole.DisplayRole:
            return self._display(row, column)
        if role == SORT_ROLE:
            return self._sort_key(row, column)
        if role == Qt.ItemDataRole.ToolTipRole:
            if column == STATE and (info.reason or info.warning):
                reason = f"{info.state}: {info.reason}" if info.reason else info.state
                return f"{reason}\n⚠ {info.warning}" if info.warning else reason
            if column == PROGRESS and row.fetched:
                total = f" of {row.budget:,}" if row.budget else ""
                return f"{row.done:,}{total} {row.unit}"
            if column == ID:
                return f"{info.run_id}\n{info.run_dir}" + ("\n(archived)" if info.archived else "")
        if role == Qt.ItemDataRole.ForegroundRole and info.archived:
            return QBrush(QColor("#9e9e9e"))
        if role == Qt.ItemDataRole.TextAlignmentRole and column in (PROGRESS, ELAPSED, SPS):
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        return None

    @staticmethod
    def _fraction(row: RunRow) -> float | None:
        if row.info.state == RunState.COMPLETED.value:
            return 1.0
        if not row.budget:
            return None
        return max(0.0, min(1.0, row.done / row.budget))

    @staticmethod
    def elapsed(info: RunRecord) -> float | None:
        if not info.started_at:
            return None
        end = info.ended_at or (time.time() if not info.state.terminal else info.started_at)
        return max(0.0, end - info.started_at)

    def _sps(self, row: RunRow) -> float | None:
        if row.info.lane == "analytics":
            return row.sps
        elapsed = self.elapsed(row.info)
        if not row.steps or not elapsed:
            return None
        return row.steps / elapsed

    def _display(self, row: RunRow, column: int) -> str:
        info = row.info
        if column == ID:
            return info.run_id
        if column == WORKER:
            return info.worker
        if column == ENV:
            return info.env_id
        if column == STATE:
            return info.state.value
        if column == PROGRESS:
            if not row.fetched:
                return ""
            if row.budget:
                return f"{compact(row.done)} / {compact(row.budget)} {row.unit}"
            return f"{compact(row.done)} {row.unit}".strip()
        if column == ELAPSED:
            elapsed = self.elapsed(info)
            return "" if elapsed is None else format_elapsed(elapsed)
        if column == SPS:
            sps = self._sps(row)
            return "" if sps is None else f"{sps:,.0f}"
        return ""

    def _sort_key(self, row: RunRow, column: int) -> Any:
        if column == ID:
            return row.info.created_at
        if column == PROGRESS:
            return self._fraction(row) or 0.0
        if column == ELAPSED:
            return self.elapsed(row.info) or 0.0
        if column == SPS:
            return self._sps(row) or 0.0
        return self._display(row, column)

    # -------------------------------------------------------- rows

    def run_ids(self) -> list[str]:
        return [row.info.run_id for row in self._rows]

    def row(self, run_id: str) -> RunRow | None:
        index = self._index.get(run_id)
        return None if index is None else self._rows[index]

    def info(self, run_id: str) -> RunRecord | None:
        row = self.row(run_id)
        return None if row is None else row.info

    def upsert(self, info: RunRecord) -> None:
        index = self._index.get(info.run_id)
        if index is None:
            position = len(self._rows)
            self.beginInsertRows(QModelIndex(), position, position)
            self._rows.append(RunRow(info=info))
            self._index[info.run_id] = position
            self.endInsertRows()
            return
        self._rows[index].info = info
        self.dataChanged.emit(self.index(index, 0), self.index(index, len(COLUMNS) - 1))

    def remove(self, run_id: str) -> None:
        index = self._index.get(run_id)
        if index is None:
            return
        self.beginRemoveRows(QModelIndex(), index, index)
        del self._rows[index]
        self._index = {row.info.run_id: i for i, row in enumerate(self._rows)}
        self.endRemoveRows()

    def set_figures(self, run_id: str, detail: RunDetail, sps: tuple[int, float] | None) -> None:
        """Progress from a GetRun reply; the latest charts/SPS point (step, value) when one was read."""
        row = self.row(run_id)
        if row is None:
            return
        if not row.fetched or row.budget is None:
            try:
                budget = json.loads(detail.config_json or "{}").get("budget") or {}
            except ValueError:
                budget = {}
            if row.info.lane == "analytics" or not budget.get("episodes"):
                row.budget, row.unit = budget.get("timesteps"), "steps"
            else:
                row.budget, row.unit = budget.get("episodes"), "episodes"
        if row.info.state.active and detail.record.warning != row.info.warning:
            # The free space in the warning moves on between the daemon's row updates.
            row.info = dataclasses.replace(row.info, warning=detail.record.warning)
            index = self._index[run_id]
            self.dataChanged.emit(self.index(index, STATE), self.index(index, STATE))
        progress = detail.progress
        row.steps = max(progress.steps, progress.global_step)
        if row.unit == "episodes":
            row.done = progress.episodes
        elif row.info.lane == "analytics":
            row.done = progress.global_step
        else:
            row.done = progress.steps
        if sps is not None:
            row.sps_cursor, row.sps = sps[0], sps[1]
        row.fetched = True
        if detail.record.state.terminal:
            row.final_fetched = True
        index = self._index[run_id]
        self.dataChanged.emit(self.index(index, PROGRESS), self.index(index, SPS))

    def warnings(self) -> list[str]:
        """The live warnings of the rows, newest run first."""
        rows = sorted(self._rows, key=lambda row: row.info.created_at, reverse=True)
        return [row.info.warning for row in rows if row.info.warning and not row.info.state.terminal]

    def tick(self) -> None:
        """Elapsed time moves on for running rows."""
        for index, row in enumerate(self._rows):
            if row.info.state.active:
                self.dataChanged.emit(self.index(index, ELAPSED), self.index(index, SPS))


class _ArchivedFilter(QSortFilterProxyModel):
    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.show_archived = False
        self.setSortRole(SORT_ROLE)

    def set_show_archived(self, show: bool) -> None:
        self.beginFilterChange()
        self.show_archived = show
        self.endFilterChange(QSortFilterProxyModel.Direction.Rows)

    def filterAcceptsRow(self, source_row: int, source_parent: QModelIndex | QPersistentModelIndex) -> bool:
        if self.show_archived:
            return True
        index = self.sourceModel().index(source_row, 0, source_parent)
        return not bool(index.data(ARCHIVED_ROLE))


# ------------------------------------------------------------------ delegate


class RunCellDelegate(QStyledItemDelegate):
    """Draws the state as a coloured badge and the progress as a bar behind its text."""

    def paint(
        self, painter: QPainter, option: QStyleOptionViewItem, index: QModelIndex | QPersistentModelIndex
    ) -> None:
        if index.column() == STATE:
            self._badge(painter, option, index)
        elif index.column() == PROGRESS and index.data(FRACTION_ROLE) is not None:
            self._bar(painter, option, index)
        else:
            super().paint(painter, option, index)

    def _badge(
        self, painter: QPainter, option: QStyleOptionViewItem, index: QModelIndex | QPersistentModelIndex
    ) -> None:
        state = str(index.data() or "")
        rect: QRect = option.rect  # type: ignore[attr-defined]
        if option.state & QStyle.StateFlag.State_Selected:  # type: ignore[attr-defined]
            painter.fillRect(rect, option.palette.highlight())  # type: ignore[attr-defined]
        metrics = option.fontMetrics  # type: ignore[attr-defined]
        room = rect.height() + 4 if index.data(WARNING_ROLE) else 0  # for the warning mark
        width = min(rect.width() - 6 - room, metrics.horizontalAdvance(state) + 14)
        badge = QRect(rect.x() + 3, rect.y() + 3, max(width, 0), rect.height() - 6)
        painter.save()
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(QColor(STATE_COLOURS.get(state, "#616161")))
        painter.drawRoundedRect(badge, badge.height() / 2, badge.height() / 2)
        painter.setPen(QColor("white"))
        painter.drawText(badge, int(Qt.AlignmentFlag.AlignCenter), state)
        if index.data(WARNING_ROLE):
            # The daemon warns about this run (its tooltip says what): an amber mark beside the badge.
            side = badge.height()
            mark = QRect(badge.right() + 4, badge.y(), side, side)
            painter.setBrush(QColor(WARNING_COLOUR))
            painter.drawEllipse(mark)
            painter.drawText(mark, int(Qt.AlignmentFlag.AlignCenter), "!")
        painter.restore()

    def _bar(
        self, painter: QPainter, option: QStyleOptionViewItem, index: QModelIndex | QPersistentModelIndex
    ) -> None:
        fraction = float(index.data(FRACTION_ROLE))
        bar = QStyleOptionProgressBar()
        bar.rect = option.rect.adjusted(2, 3, -2, -3)  # type: ignore[attr-defined]
        bar.minimum, bar.maximum = 0, 1000
        bar.progress = int(fraction * 1000)
        bar.text = str(index.data() or "")
        bar.textVisible = True
        bar.state = option.state  # type: ignore[attr-defined]
        style = QApplication.style()
        style.drawControl(QStyle.ControlElement.CE_ProgressBar, bar, painter)


# ------------------------------------------------------------------ the table


def _bind(fn: Callable[..., Any], *args: Any) -> Callable[[Any], Any]:
    """``fn(first, *args)`` as a one-argument callable (a client method bound to a run id, a loop-safe
    replacement for lambdas with default arguments)."""

    def call(first: Any) -> Any:
        return fn(first, *args)

    return call


def _latest_metric(path: Path, tag: str, since_step: int | None) -> tuple[int, float] | None:
    """The newest point of ``tag`` after ``since_step`` (an index range scan), or None."""
    if not path.exists():
        return None
    try:
        reader = TelemetryReader(path)
    except GymGuiError:
        return None
    try:
        points = reader.metrics(tag, since_step=since_step)
    except GymGuiError:
        return None
    finally:
        reader.close()
    return (points[-1].step, points[-1].value) if points else None


def _button(text: str) -> QToolButton:
    """A button of the runs' tool bar: as wide as its text (a push button's style minimum is wider)."""
    button = QToolButton()
    button.setText(text)
    button.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextOnly)
    return button


class RunsTable(QWidget):
    """Every run of the home, current through the link's WatchRuns stream.

    Progress (episodes or steps against the budget) and SPS are fetched with GetRun for active runs
    once a second; an ended run is fetched once more for its final figures. SPS is steps per
    second of wall time for telemetry-lane runs and the latest ``charts/SPS`` metric for
    analytics-lane runs. Actions work on the selected rows; Delete asks first unless
    ``confirm_delete`` is False or ``delete(..., confirm=False)`` is called.
    """

    selection_changed = Signal(list)  # run ids of the selected rows
    run_selected = Signal(str)  # the current row's run id
    exported = Signal(str, str)  # run id, archive path
    message = Signal(str)  # the outcome of the last action, for a status bar
    # The table is the window's one store of runs: these fire once it holds (or dropped) a run,
    # whether the watch stream, a re-listing or an action told it.
    run_updated = Signal(object)  # RunRecord
    run_removed = Signal(str)  # run id
    warning_changed = Signal(str)  # the newest live run's warning (disk low …), "" once none has one

    def __init__(self, link: DaemonLink, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.link = link
        self.confirm_delete = True
        self.model = RunsModel(self)
        self.proxy = _ArchivedFilter(self)
        self.proxy.setSourceModel(self.model)
        self._in_flight: set[str] = set()
        self._files = Background(self, workers=1, name="file-work")
        self._warning = ""

        self.view = QTableView()
        self.view.setObjectName("runsTable")
        self.view.setModel(self.proxy)
        self.view.setItemDelegate(RunCellDelegate(self.view))
        self.view.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.view.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.view.setSortingEnabled(True)
        self.view.sortByColumn(ID, Qt.SortOrder.DescendingOrder)  # newest first
        self.view.verticalHeader().hide()
        self.view.setAlternatingRowColors(True)
        self.view.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        header = self.view.horizontalHeader()
        header.setSectionResizeMode(ID, QHeaderView.ResizeMode.Stretch)
        for column in (WORKER, ENV, STATE, PROGRESS, ELAPSED, SPS):
            header.setSectionResizeMode(column, QHeaderView.ResizeMode.Interactive)
        header.resizeSection(PROGRESS, 170)

        self.cancel_button = _button("Cancel")
        self.pause_button = _button("Pause")
        self.pause_button.setObjectName("runsPause")
        self.resume_button = _button("Resume")
        self.resume_button.setObjectName("runsResume")
        self.checkpoint_button = _button("Checkpoint")
        self.checkpoint_button.setObjectName("runsCheckpoint")
        # The run controls, enabled from the selected runs' states and their workers' capabilities.
        self.control_buttons = {
            Control.PAUSE: self.pause_button,
            Control.RESUME: self.resume_button,
            Control.CHECKPOINT: self.checkpoint_button,
        }
        self.rerun_button = _button("Re-run")
        self.rerun_button.setObjectName("runsRerun")
        # The confirmation a re-run asks for when the package set differs (None while none is open).
        self.rerun_dialog: QMessageBox | None = None
        self.archive_button = _button("Archive")
        self.delete_button = _button("Delete…")
        self.open_button = _button("Open folder")
        self.export_button = _button("Export…")
        # Short, as the buttons are: every one of them fits beside a form at the default 1400 px.
        self.show_archived_check = QCheckBox("Archived")
        self.show_archived_check.setToolTip("Show archived runs too")
        self.message_label = QLabel()
        self.message_label.setObjectName("runsMessage")
        self.message_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        # The row actions, in the order of the button bar and of the context menu.
        self.action_buttons = (
            self.cancel_button,
            self.pause_button,
            self.resume_button,
            self.checkpoint_button,
            self.rerun_button,
            self.archive_button,
            self.delete_button,
            self.open_button,
            self.export_button,
        )
        # The buttons sit in a tool bar, which folds those that do not fit into its » menu: the runs
        # dock never holds the dock beside it (a run's form) narrow. A long message is cut, in full
        # as its tooltip, for the same reason.
        self.button_bar = QToolBar()
        self.button_bar.setObjectName("runsButtons")
        for button in self.action_buttons:
            self.button_bar.addWidget(button)
        self.message_label.setMinimumWidth(1)
        buttons = QHBoxLayout()
        buttons.addWidget(self.button_bar)
        buttons.addWidget(self.message_label, 1)
        buttons.addWidget(self.show_archived_check)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(buttons)
        layout.addWidget(self.view, 1)

        self.cancel_button.clicked.connect(lambda: self.cancel())
        self.pause_button.clicked.connect(lambda: self.control(Control.PAUSE))
        self.resume_button.clicked.connect(lambda: self.control(Control.RESUME))
        self.checkpoint_button.clicked.connect(lambda: self.control(Control.CHECKPOINT))
        self.rerun_button.clicked.connect(lambda: self.rerun())
        self.archive_button.clicked.connect(self._archive_clicked)
        self.delete_button.clicked.connect(lambda: self.delete())
        self.open_button.clicked.connect(lambda: self.open_folder())
        self.export_button.clicked.connect(lambda: self.export_dialog())
        self.show_archived_check.toggled.connect(self.set_show_archived)
        self.view.customContextMenuRequested.connect(self._context_menu)
        self.view.selectionModel().selectionChanged.connect(self._selection)
        self.view.selectionModel().currentRowChanged.connect(self._current)
        link.run_updated.connect(self._run_updated)
        link.run_removed.connect(self._run_removed)
        link.connection_changed.connect(self._connection)

        self._timer = QTimer(self)
        self._timer.setInterval(REFRESH_MS)
        self._timer.timeout.connect(self._tick)
        self._timer.start()
        self._update_buttons()
        if link.connected:
            # Runs the link announced before this table existed come from a listing.
            self.refresh()

    # -------------------------------------------------------- feeding

    def _connection(self, connected: bool, _message: str) -> None:
        if connected:
            self.refresh()

    def refresh(self) -> None:
        """Re-list every run from the daemon (adds what is missing, drops what was deleted meanwhile)."""
        asked_at = time.time()

        def listed(runs: list[RunRecord]) -> None:
            present = {run.run_id for run in runs}
            for run in runs:
                self._run_updated(run)
            for run_id in self.model.run_ids():
                info = self.model.info(run_id)
                # A run created after the listing was asked for may legitimately be missing from it.
                if run_id not in present and info is not None and info.created_at < asked_at:
                    self._run_removed(run_id)

        self.link.call(lambda client: client.list_runs(include_archived=True), listed, self._error)

    def _run_updated(self, info: RunRecord) -> None:
        self.model.upsert(info)
        self._update_buttons()
        self._update_warning()
        self.run_updated.emit(info)

    def _run_removed(self, run_id: str) -> None:
        self.model.remove(run_id)
        self._update_buttons()
        self._update_warning()
        self.run_removed.emit(run_id)

    @property
    def warning(self) -> str:
        """What the table warns of now (the newest live run's warning, and how many runs have one)."""
        return self._warning

    def _update_warning(self) -> None:
        warnings = self.model.warnings()
        text = warnings[0] if warnings else ""
        if len(warnings) > 1:
            text += f" ({len(warnings)} runs warned)"
        if text != self._warning:
            self._warning = text
            self.warning_changed.emit(text)

    def _tick(self) -> None:
        self.model.tick()
        if not self.link.connected:
            return
        finals = 0
        for run_id in self.model.run_ids():
            row = self.model.row(run_id)
            if row is None or run_id in self._in_flight:
                continue
            if row.info.state.active:
                self._fetch(row)
            elif row.info.state.terminal and not row.final_fetched and finals < FINAL_FETCHES_PER_TICK:
                finals += 1
                self._fetch(row)

    def _fetch(self, row: RunRow) -> None:
        run_id, lane, cursor = row.info.run_id, row.info.lane, row.sps_cursor
        telemetry = RunDir(row.info.run_dir).telemetry_path if row.info.run_dir else None
        self._in_flight.add(run_id)

        def fetch(client: DaemonClient) -> tuple[RunDetail, tuple[int, float] | None]:
            detail = client.get_run(run_id)
            sps = None
            if lane == "analytics" and telemetry is not None:
                sps = _latest_metric(telemetry, SPS_TAG, cursor)
            return detail, sps

        def done(result: tuple[RunDetail, tuple[int, float] | None]) -> None:
            self._in_flight.discard(run_id)
            self.model.set_figures(run_id, *result)
            self._update_warning()

        def failed(message: str) -> None:
            self._in_flight.discard(run_id)
            current = self.model.row(run_id)
            if current is not None and current.info.state.terminal:
                current.final_fetched = True  # do not ask again and again for a run that cannot answer

        self.link.call(fetch, done, failed)

    # -------------------------------------------------------- selection

    def run_ids(self, visible_only: bool = False) -> list[str]:
        """The runs in the table (with ``visible_only``, those the archive filter shows)."""
        if not visible_only:
            return self.model.run_ids()
        return [str(self.proxy.index(r, 0).data(RUN_ID_ROLE)) for r in range(self.proxy.rowCount())]

    def info(self, run_id: str) -> RunRecord | None:
        return self.model.info(run_id)

    def state_of(self, run_id: str) -> RunState | None:
        info = self.model.info(run_id)
        return None if info is None else info.state

    def selected_run_ids(self) -> list[str]:
        rows = self.view.selectionModel().selectedRows()
        return [str(index.data(RUN_ID_ROLE)) for index in sorted(rows, key=lambda i: i.row())]

    def current_run_id(self) -> str | None:
        index = self.view.currentIndex()
        return str(index.data(RUN_ID_ROLE)) if index.isValid() else None

    def select(self, run_ids: str | list[str]) -> None:
        """Select rows by run id (the first one becomes current)."""
        wanted = [run_ids] if isinstance(run_ids, str) else list(run_ids)
        selection = QItemSelection()
        first: QModelIndex | None = None
        for row in range(self.proxy.rowCount()):
            index = self.proxy.index(row, 0)
            if index.data(RUN_ID_ROLE) in wanted:
                selection.select(index, self.proxy.index(row, len(COLUMNS) - 1))
                if first is None or index.data(RUN_ID_ROLE) == wanted[0]:
                    first = index
        model = self.view.selectionModel()
        flags = model.SelectionFlag.ClearAndSelect | model.SelectionFlag.Rows
        model.select(selection, flags)
        if first is not None:
            model.setCurrentIndex(first, model.SelectionFlag.NoUpdate)

    def set_show_archived(self, show: bool) -> None:
        if self.show_archived_check.isChecked() != show:
            self.show_archived_check.setChecked(show)  # comes back here through toggled
            return
        self.proxy.set_show_archived(show)

    def _selection(self, *_args: Any) -> None:
        self._update_buttons()
        self.selection_changed.emit(self.selected_run_ids())

    def _current(self, current: QModelIndex, _previous: QModelIndex) -> None:
        if current.isValid():
            self.run_selected.emit(str(current.data(RUN_ID_ROLE)))

    def _targets(self, run_ids: list[str] | None) -> list[str]:
        return list(run_ids) if run_ids is not None else self.selected_run_ids()

    def _update_buttons(self) -> None:
        selected = [info for info in map(self.model.info, self.selected_run_ids()) if info is not None]
        self.cancel_button.setEnabled(any(not info.state.terminal for info in selected))
        for control, button in self.control_buttons.items():
            refusals = [refusal(info, control) for info in selected]
            button.setEnabled(any(not why for why in refusals))
            # One run selected: say why it cannot; several: apply to those that can.
            why = refusals[0] if len(refusals) == 1 else ""
            button.setToolTip(why or DESCRIPTIONS[control])
        why = rerun_refusal(selected[0]) if len(selected) == 1 else "select one run to re-run it"
        self.rerun_button.setEnabled(not why)
        self.rerun_button.setToolTip(why or RERUN_DESCRIPTION)
        self.archive_button.setEnabled(bool(selected))
        self.archive_button.setText(
            "Unarchive" if selected and all(info.archived for info in selected) else "Archive"
        )
        self.delete_button.setEnabled(bool(selected))
        self.open_button.setEnabled(len(selected) == 1)
        self.export_button.setEnabled(len(selected) == 1)

    def context_menu(self) -> QMenu | None:
        """The row actions of the selected runs as a menu (None when nothing is selected)."""
        if not self.selected_run_ids():
            return None
        menu = QMenu(self)
        for button in self.action_buttons:
            action = menu.addAction(button.text())
            action.setEnabled(button.isEnabled())
            action.setToolTip(button.toolTip())
            action.triggered.connect(button.click)
        menu.setToolTipsVisible(True)
        return menu

    def _context_menu(self, position: QPoint) -> None:
        menu = self.context_menu()
        if menu is not None:
            menu.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
            menu.popup(self.view.viewport().mapToGlobal(position))

    # -------------------------------------------------------- actions

    def _error(self, message: str) -> None:
        self._say(message, "color: #c62828;")

    def _note(self, message: str) -> None:
        self._say(message, "")

    def _say(self, message: str, style: str) -> None:
        self.message_label.setStyleSheet(style)
        self.message_label.setText(message)
        self.message_label.setToolTip(message)
        self.message.emit(message)

    def cancel(self, run_ids: list[str] | None = None) -> None:
        """Cancel runs (default: the selected ones that have not ended)."""
        for run_id in self._targets(run_ids):
            self.link.call(_bind(DaemonClient.cancel, run_id), self._cancelled, self._error)

    def _cancelled(self, info: RunRecord) -> None:
        self._note(f"cancelling {info.run_id}")

    def control(self, control: Control, run_ids: list[str] | None = None) -> None:
        """Pause, resume or checkpoint runs (default: the selected ones); runs it does not apply to are skipped."""
        asked = {
            Control.PAUSE: "pausing",
            Control.RESUME: "resuming",
            Control.CHECKPOINT: "checkpoint asked of",
        }
        for run_id in self._targets(run_ids):
            info = self.model.info(run_id)
            if info is None or refusal(info, control):
                continue
            send_control(self.link, run_id, control, _bind(self._controlled, asked[control]), self._error)

    def _controlled(self, info: RunRecord, asked: str) -> None:
        self._note(f"{asked} {info.run_id}")

    def rerun(self, run_id: str | None = None) -> None:
        """Run a run again (default: the current one) with its config and seed. The daemon's preview
        says first how today's package set differs from the one it ran with; a difference is shown
        in :attr:`rerun_dialog` and the re-run starts only once it is confirmed."""
        run_id = run_id or self.current_run_id()
        if not run_id:
            return

        def plan(client: DaemonClient) -> tuple[RunConfig, list[PackageChange]]:
            config = client.rerun_config(run_id)
            return config, client.preview(config, secrets_from_environment(config)).package_changes

        self.link.call(plan, lambda planned: self._rerun_planned(run_id, *planned), self._error)

    def _rerun_planned(self, run_id: str, config: RunConfig, changes: list[PackageChange]) -> None:
        if not changes:
            self._submit_rerun(run_id, config)
            return
        shown = "\n".join(change.text() for change in changes[:20])
        if len(changes) > 20:
            shown += f"\n… and {len(changes) - 20} more"
        dialog = QMessageBox(
            QMessageBox.Icon.Warning,
            "Re-run",
            f"The package set differs from the one {run_id} ran with (old → new):\n\n{shown}\n\n"
            "Re-run with today's packages?",
            QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No,
            self,
        )
        dialog.setObjectName("rerunConfirm")
        dialog.setDefaultButton(QMessageBox.StandardButton.No)

        def answered(result: int) -> None:
            self.rerun_dialog = None
            if result == QMessageBox.StandardButton.Yes:
                self._submit_rerun(run_id, config)
            else:
                self._note(f"not re-run: {len(changes)} packages differ from those {run_id} ran with")

        dialog.finished.connect(answered)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        self.rerun_dialog = dialog
        dialog.open()

    def _submit_rerun(self, run_id: str, config: RunConfig) -> None:
        def submit(client: DaemonClient) -> RunRecord:
            return client.submit(config, secrets_from_environment(config))[0]

        def done(record: RunRecord) -> None:
            self._run_updated(record)
            self._note(f"re-running {run_id} as {record.run_id}")

        self.link.call(submit, done, self._error)

    def _archive_clicked(self) -> None:
        self.set_archived(None, self.archive_button.text() == "Archive")

    def set_archived(self, run_ids: list[str] | None = None, archived: bool = True) -> None:
        """Archive (hidden unless "Archived" is checked) or unarchive runs (default: the selected ones)."""
        for run_id in self._targets(run_ids):
            self.link.call(_bind(DaemonClient.archive, run_id, archived), self._run_updated, self._error)

    def archive(self, run_ids: list[str] | None = None) -> None:
        self.set_archived(run_ids, True)

    def unarchive(self, run_ids: list[str] | None = None) -> None:
        self.set_archived(run_ids, False)

    def delete(self, run_ids: list[str] | None = None, confirm: bool | None = None) -> bool:
        """Delete runs and their directories (default: the selected ones), after asking.

        Args:
            confirm: ask first; None means :attr:`confirm_delete`.

        Returns:
            Whether the deletion was sent to the daemon.
        """
        targets = self._targets(run_ids)
        if not targets:
            return False
        if self.confirm_delete if confirm is None else confirm:
            shown = "\n".join(targets[:10]) + (
                f"\n… and {len(targets) - 10} more" if len(targets) > 10 else ""
            )
            answer = QMessageBox.question(
                self,
                "Delete runs",
                f"Delete {len(targets)} run(s) with their directories? This cannot be undone.\n\n{shown}",
                QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No,
                QMessageBox.StandardButton.No,
            )
            if answer != QMessageBox.StandardButton.Yes:
                return False
        for run_id in targets:
            self.link.call(_bind(DaemonClient.delete, run_id), _bind(self._deleted, run_id), self._error)
        return True

    def _deleted(self, _result: object, run_id: str) -> None:
        self._run_removed(run_id)
        self._note(f"deleted {run_id}")

    def open_folder(self, run_id: str | None = None) -> bool:
        """Open the run's directory in the desktop's file manager."""
        run_id = run_id or self.current_run_id()
        info = self.model.info(run_id) if run_id else None
        if info is None or not info.run_dir:
            return False
        return QDesktopServices.openUrl(QUrl.fromLocalFile(info.run_dir))

    def export_dialog(self, run_id: str | None = None) -> None:
        """Ask where to write the run's archive, then export it."""
        run_id = run_id or self.current_run_id()
        if not run_id:
            return
        path, _filter = QFileDialog.getSaveFileName(
            self, "Export run", f"{run_id}.tar.gz", "Run archives (*.tar.gz)"
        )
        if path:
            self.export(run_id, Path(path))

    def export(self, run_id: str, path: Path | str) -> None:
        """Write the run's directory as a .tar.gz at ``path`` (off the GUI thread); emits :attr:`exported`."""
        info = self.model.info(run_id)
        if info is None or not info.run_dir:
            self._error(f"no run {run_id} in the table")
            return
        files, target = RunDir(info.run_dir), Path(path)

        def done(_none: None) -> None:
            self._note(f"exported {run_id} to {target}")
            self.exported.emit(run_id, str(target))

        self._files.run(lambda: files.export(target), done, lambda m: self._error(f"export failed: {m}"))

    def closeEvent(self, event: Any) -> None:
        self._timer.stop()
        self._files.shutdown()
        super().closeEvent(event)


# ------------------------------------------------------------------ log drawer


def tail_lines(path: Path, lines: int = LOG_LINES, max_bytes: int = 512 * 1024) -> str:
    """The last ``lines`` lines of a file, read backwards from its end in blocks (never the whole file)."""
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            end = position = handle.tell()
            data = b""
            while position > 0 and data.count(b"\n") <= lines and end - position < max_bytes:
                size = min(8192, position)
                position -= size
                handle.seek(position)
                data = handle.read(size) + data
    except FileNotFoundError:
        return ""
    parts = data.decode("utf-8", errors="replace").splitlines()
    if position > 0 and parts:
        parts = parts[1:]  # the first line read is most likely cut
    return "\n".join(parts[-lines:])


def event_line(event: EventRecord) -> str:
    """One stored event as the drawer lists it: its time, level and message."""
    return f"{time.strftime('%H:%M:%S', time.localtime(event.time))} {event.level:<7} {event.message}"


def _events_after(path: Path, after: int) -> list[EventRecord]:
    """The run's stored events with an id above ``after`` ([] while it has no telemetry yet)."""
    if not path.exists():
        return []
    try:
        reader = TelemetryReader(path)
    except GymGuiError:
        return []  # not initialised yet: the next refresh finds them
    try:
        return reader.events(after)
    finally:
        reader.close()


class LogDrawer(QWidget):
    """The tails of the selected run's worker output, stdout and stderr (last ~200 lines each).

    Refreshed once a second while the run may still write (a file is re-read only when its size or
    time changed); reads happen on a worker thread.
    """

    def __init__(self, link: DaemonLink | None = None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.run: RunRecord | None = None
        self._files = Background(self, workers=1, name="file-work")
        self._reading = False
        self._seen: dict[str, tuple[int, int]] = {}
        self.title = QLabel("No run selected.")
        self.title.setObjectName("logTitle")
        self.stdout_view = self._text_view("logStdout")
        self.stderr_view = self._text_view("logStderr")
        # What the daemon and the worker said about the run (warnings, a re-run's verdict …).
        self.events_view = self._text_view("logEvents")
        self._events_read = 0  # the id of the last event shown
        self.tabs = QTabWidget()
        self.tabs.addTab(self.stdout_view, "stdout")
        self.tabs.addTab(self.stderr_view, "stderr")
        self.tabs.addTab(self.events_view, "events")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.title)
        layout.addWidget(self.tabs, 1)
        self._timer = QTimer(self)
        self._timer.setInterval(REFRESH_MS)
        self._timer.timeout.connect(self.refresh)
        if link is not None:
            link.run_updated.connect(self.run_changed)

    @staticmethod
    def _text_view(name: str) -> QPlainTextEdit:
        view = QPlainTextEdit()
        view.setObjectName(name)
        view.setReadOnly(True)
        view.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        view.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        return view

    def show_run(self, run: RunRecord | None) -> None:
        """Follow ``run`` (None: show nothing)."""
        self.run = run
        self._seen = {}
        self._events_read = 0
        self.stdout_view.clear()
        self.stderr_view.clear()
        self.events_view.clear()
        if run is None:
            self.title.setText("No run selected.")
            self._timer.stop()
            return
        self.title.setText(f"Logs of {run.run_id}")
        self.refresh()
        if run.state.terminal:
            self._timer.stop()
        else:
            self._timer.start()

    def run_changed(self, run: RunRecord) -> None:
        if self.run is None or run.run_id != self.run.run_id:
            return
        self.run = run
        if run.state.terminal:
            self.refresh()  # what the worker wrote last
            self._timer.stop()

    def clear(self) -> None:
        self.show_run(None)

    def _paths(self) -> tuple[Path, Path, Path] | None:
        if self.run is None or not self.run.run_dir:
            return None
        files = RunDir(self.run.run_dir)
        return files.worker_stdout_log, files.worker_stderr_log, files.telemetry_path

    def refresh(self) -> None:
        """Read the tails again if the files changed (off the GUI thread)."""
        paths = self._paths()
        if paths is None or self._reading:
            return
        run_id = self.run.run_id if self.run is not None else ""
        seen = dict(self._seen)
        events_read = self._events_read
        stdout_path, stderr_path, telemetry_path = paths
        self._reading = True

        def read() -> tuple[dict[str, tuple[tuple[int, int], str]], list[EventRecord]]:
            result = {}
            for name, path in (("stdout", stdout_path), ("stderr", stderr_path)):
                try:
                    stat = path.stat()
                except OSError:
                    continue
                stamp = (stat.st_size, stat.st_mtime_ns)
                if seen.get(name) != stamp:
                    result[name] = (stamp, tail_lines(path))
            return result, _events_after(telemetry_path, events_read)

        def done(read_now: tuple[dict[str, tuple[tuple[int, int], str]], list[EventRecord]]) -> None:
            self._reading = False
            if self.run is None or self.run.run_id != run_id:
                return  # another run was selected meanwhile
            result, events = read_now
            for name, (stamp, text) in result.items():
                self._seen[name] = stamp
                self._set_text(self.stdout_view if name == "stdout" else self.stderr_view, text)
            if events and self._events_read == events_read:
                self._events_read += len(events)  # event ids have no gaps
                for event in events:
                    self.events_view.appendPlainText(event_line(event))

        def failed(message: str) -> None:
            self._reading = False
            log.warning("log tail of %s: %s", run_id, message)

        self._files.run(read, done, failed)

    @staticmethod
    def _set_text(view: QPlainTextEdit, text: str) -> None:
        bar = view.verticalScrollBar()
        at_bottom = bar.value() >= bar.maximum() - 2
        position = bar.value()
        view.setPlainText(text)
        # Follow the tail unless the user scrolled up to read something.
        bar.setValue(bar.maximum() if at_bottom else position)

    def text(self, stream: str = "stdout") -> str:
        """What the drawer shows of ``stream``: stdout, stderr or events."""
        views = {"stdout": self.stdout_view, "stderr": self.stderr_view, "events": self.events_view}
        return views[stream].toPlainText()

    def closeEvent(self, event: Any) -> None:
        self._timer.stop()
        self._files.shutdown()
        super().closeEvent(event)
