"""The runs table's model: one row per run (state, progress, elapsed, SPS, interventions), the archive
filter over it."""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import (
    QAbstractTableModel,
    QModelIndex,
    QObject,
    QPersistentModelIndex,
    QSortFilterProxyModel,
    Qt,
)
from PySide6.QtGui import QBrush, QColor

from gym_gui.core.records import RunDetail, RunRecord
from gym_gui.core.states import RunState

COLUMNS = ("ID", "Worker", "Env", "State", "Progress", "Elapsed", "SPS", "Interventions")
ID, WORKER, ENV, STATE, PROGRESS, ELAPSED, SPS, INTERVENTIONS = range(len(COLUMNS))
RUN_ID_ROLE = int(Qt.ItemDataRole.UserRole) + 1
ARCHIVED_ROLE = RUN_ID_ROLE + 1
FRACTION_ROLE = RUN_ID_ROLE + 2  # progress in [0, 1], or None without a budget
SORT_ROLE = RUN_ID_ROLE + 3
WARNING_ROLE = RUN_ID_ROLE + 4  # the daemon's live warning about the run (disk low …), "" when none
REFRESH_MS = 1000  # progress and elapsed at most once a second


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
    # The share of the steps that say who acted that a person acted, read once the run has ended;
    # None while not read, or when no step says (a run without an operator a person took over from).
    intervention_rate: float | None = None
    interventions_read: bool = False


class RunsModel(QAbstractTableModel):
    """Runs keyed by run id, one row each, in arrival order (the view sorts)."""

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._rows: list[RunRow] = []
        self._index: dict[str, int] = {}
        # Older runs than those held: what the view asks for when scrolled to its end (Qt's
        # canFetchMore/fetchMore, through the proxy); the table sets both.
        self.more = False
        self.fetch_more: Callable[[], None] | None = None

    def canFetchMore(self, parent: QModelIndex | QPersistentModelIndex) -> bool:
        return not parent.isValid() and self.more and self.fetch_more is not None

    def fetchMore(self, parent: QModelIndex | QPersistentModelIndex) -> None:
        if self.canFetchMore(parent) and self.fetch_more is not None:
            self.fetch_more()

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
            if column == INTERVENTIONS and row.intervention_rate is not None:
                return f"A person acted {row.intervention_rate:.1%} of the steps whose actor was recorded"
            if column == ID:
                return f"{info.run_id}\n{info.run_dir}" + ("\n(archived)" if info.archived else "")
        if role == Qt.ItemDataRole.ForegroundRole and info.archived:
            return QBrush(QColor("#9e9e9e"))
        if role == Qt.ItemDataRole.TextAlignmentRole and column in (PROGRESS, ELAPSED, SPS, INTERVENTIONS):
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
        if column == INTERVENTIONS:
            rate = row.intervention_rate
            return "" if rate is None else f"{rate:.1%}"
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
        if column == INTERVENTIONS:  # runs without a rate after those with one of 0
            return -1.0 if row.intervention_rate is None else row.intervention_rate
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

    def set_intervention_rate(self, run_id: str, rate: float | None) -> None:
        """The ended run's intervention rate (None: no step says who acted), read once and kept."""
        row = self.row(run_id)
        if row is None:
            return
        row.intervention_rate, row.interventions_read = rate, True
        index = self._index[run_id]
        self.dataChanged.emit(self.index(index, INTERVENTIONS), self.index(index, INTERVENTIONS))

    def warnings(self) -> list[str]:
        """The live warnings of the rows, newest run first."""
        rows = sorted(self._rows, key=lambda row: row.info.created_at, reverse=True)
        return [row.info.warning for row in rows if row.info.warning and not row.info.state.terminal]

    def tick(self) -> None:
        """Elapsed time moves on for running rows."""
        for index, row in enumerate(self._rows):
            if row.info.state.active:
                self.dataChanged.emit(self.index(index, ELAPSED), self.index(index, SPS))


class ArchivedFilter(QSortFilterProxyModel):
    """The rows the table shows (archived runs only while "Archived" is checked), sorted by
    :data:`SORT_ROLE`."""

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
