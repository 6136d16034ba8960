"""The Live tab's table of the latest steps: a model over a bounded ring buffer, filled in bulk from
step batches, and its view set up never to measure a row it does not show."""

from __future__ import annotations

from collections import deque
from typing import Any, ClassVar

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, Qt
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QTableView, QWidget

from gym_gui.core.records import StepBatch

_Index = QModelIndex | QPersistentModelIndex
# One table row: episode, step, action (JSON), reward, terminated, truncated, info (JSON).
StepRow = tuple[int, int, str, float, bool, bool, str]

# Steps the table keeps; older rows fall off the top.
TABLE_CAPACITY = 2_000


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
        for episode, step, reward, terminated, truncated, action, _obs, info, *_ in batch.rows[start:]
    ]


def step_view(model: StepTableModel) -> QTableView:
    """A view of ``model``: whole rows selected, read-only, one line a row."""
    view = QTableView()
    view.setObjectName("liveSteps")
    view.setModel(model)
    view.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
    view.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
    view.setWordWrap(False)
    # Fixed row heights and no content-sized columns: the view never measures rows it does not show.
    vertical = view.verticalHeader()
    vertical.setSectionResizeMode(QHeaderView.ResizeMode.Fixed)
    vertical.setDefaultSectionSize(vertical.fontMetrics().height() + 6)
    vertical.hide()
    view.horizontalHeader().setStretchLastSection(True)
    return view
