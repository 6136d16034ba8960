"""How the runs table draws its cells: the state as a coloured badge (with a warning mark), progress
as a bar."""

from __future__ import annotations

from PySide6.QtCore import QModelIndex, QPersistentModelIndex, QRect, Qt
from PySide6.QtGui import QColor, QPainter
from PySide6.QtWidgets import (
    QApplication,
    QStyle,
    QStyledItemDelegate,
    QStyleOptionProgressBar,
    QStyleOptionViewItem,
)

from gym_gui.ui.runs.model import FRACTION_ROLE, PROGRESS, STATE, WARNING_ROLE

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
        rect: QRect = option.rect
        if option.state & QStyle.StateFlag.State_Selected:
            painter.fillRect(rect, option.palette.highlight())
        metrics = option.fontMetrics
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
        bar.rect = option.rect.adjusted(2, 3, -2, -3)
        bar.minimum, bar.maximum = 0, 1000
        bar.progress = int(fraction * 1000)
        bar.text = str(index.data() or "")
        bar.textVisible = True
        bar.state = option.state
        style = QApplication.style()
        style.drawControl(QStyle.ControlElement.CE_ProgressBar, bar, painter)
