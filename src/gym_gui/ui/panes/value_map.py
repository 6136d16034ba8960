"""ValueMapView: the largest action value of each state as a heat map over the grid, with the greedy
action's arrow (the value-map pane of :class:`~gym_gui.ui.panes.views.AgentPanes`)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QColor, QFont, QPainter, QPaintEvent, QPen, QPolygonF
from PySide6.QtWidgets import QSizePolicy, QWidget

from gym_gui.ui.env_view import BACKGROUND, TEXT
from gym_gui.ui.panes.payloads import ValueTable

_COLORS = pg.colormap.get("viridis")


class ValueMapView(QWidget):
    """The largest action value of each state as a heat map over the grid, with the greedy action's arrow.

    State ``s`` is the cell ``divmod(s, cols)``. An arrow points the way the greedy action moves
    (the catalog's arrow keys); a greedy action that moves nowhere is written as its number; a
    state whose values are all equal has none. Tile letters and the agent come from the grid.
    """

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.best: np.ndarray | None = None
        self.greedy: np.ndarray | None = None
        self.moves: dict[int, tuple[int, int]] = {}
        self.grid: dict[str, Any] | None = None
        self.frames_drawn = 0
        self.setMinimumSize(160, 160)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Expanding)

    def set_table(self, table: ValueTable, moves: dict[int, tuple[int, int]]) -> None:
        self.best, self.greedy, self.moves = table.best(), table.greedy(), moves
        self.update()

    def set_grid(self, grid: dict[str, Any]) -> None:
        self.grid = grid
        self.update()

    @property
    def arrows(self) -> dict[int, int]:
        """The greedy action of each state that has one."""
        if self.greedy is None:
            return {}
        return {int(s): int(a) for s, a in enumerate(self.greedy) if a >= 0}

    def paintEvent(self, event: QPaintEvent) -> None:
        painter = QPainter(self)
        try:
            painter.fillRect(self.rect(), BACKGROUND)
            if self.best is not None and self.grid is not None:
                self._paint(painter, self.best, self.grid)
        finally:
            painter.end()
        self.frames_drawn += 1

    def _paint(self, painter: QPainter, best: np.ndarray, grid: dict[str, Any]) -> None:
        rows, cols = int(grid["rows"]), int(grid["cols"])
        legend = painter.fontMetrics().height() + 6
        cell = max(1, min(self.width() // cols, (self.height() - legend) // rows))
        x0 = (self.width() - cell * cols) // 2
        y0 = (self.height() - legend - cell * rows) // 2
        low, high = float(np.nanmin(best)), float(np.nanmax(best))
        scaled = (best - low) / (high - low) if high > low else np.zeros_like(best)
        colors = _COLORS.map(np.nan_to_num(scaled), mode="qcolor")
        tiles: list[str] = list(grid.get("tiles") or [])
        painter.setRenderHint(QPainter.RenderHint.Antialiasing, True)
        font = QFont(painter.font())
        font.setPixelSize(max(7, cell // 5))
        painter.setFont(font)
        for state in range(rows * cols):
            r, c = divmod(state, cols)
            box = QRectF(x0 + c * cell, y0 + r * cell, cell, cell)
            painter.fillRect(box, colors[state])
            ink = QColor("black") if scaled[state] > 0.6 else QColor("white")
            painter.setPen(ink)
            letter = tiles[r][c] if r < len(tiles) and c < len(tiles[r]) else ""
            if letter not in ("", ".", "F"):
                painter.drawText(
                    box.adjusted(3, 1, 0, 0), Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop, letter
                )
            if cell >= 40:
                painter.drawText(
                    box.adjusted(0, 0, -3, -1),
                    Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignBottom,
                    f"{best[state]:.2f}",
                )
            if self.greedy is not None:
                self._paint_greedy(painter, int(self.greedy[state]), box, ink)
        painter.setPen(QPen(QColor("#8a9ba8"), 1))
        painter.setBrush(Qt.BrushStyle.NoBrush)
        for r in range(rows + 1):
            painter.drawLine(x0, y0 + r * cell, x0 + cols * cell, y0 + r * cell)
        for c in range(cols + 1):
            painter.drawLine(x0 + c * cell, y0, x0 + c * cell, y0 + rows * cell)
        agent = grid.get("agent")
        if isinstance(agent, list) and len(agent) == 2:
            painter.setPen(QPen(QColor("#e63946"), max(2, cell // 14)))
            inset = cell * 0.06
            painter.drawRect(
                QRectF(
                    x0 + agent[1] * cell + inset,
                    y0 + agent[0] * cell + inset,
                    cell - 2 * inset,
                    cell - 2 * inset,
                )
            )
        painter.setPen(TEXT)
        painter.drawText(
            QRectF(0, self.height() - legend, self.width(), legend),
            Qt.AlignmentFlag.AlignCenter,
            f"max Q {low:.3g} (dark) to {high:.3g} (bright)",
        )

    def _paint_greedy(self, painter: QPainter, action: int, box: QRectF, ink: QColor) -> None:
        if action < 0:
            return
        move = self.moves.get(action)
        center = box.center()
        if move is None:
            painter.setPen(ink)
            painter.drawText(box, Qt.AlignmentFlag.AlignCenter, str(action))
            return
        dy, dx = move
        length = box.width() * 0.32
        tip = QPointF(center.x() + dx * length, center.y() + dy * length)
        tail = QPointF(center.x() - dx * length * 0.6, center.y() - dy * length * 0.6)
        painter.setPen(QPen(ink, max(1.5, box.width() / 18)))
        painter.drawLine(tail, tip)
        head = box.width() * 0.14
        # The head's two back corners: back along the arrow, then out to either side.
        back = QPointF(tip.x() - dx * head, tip.y() - dy * head)
        side = QPointF(-dy * head * 0.7, dx * head * 0.7)
        painter.setBrush(ink)
        painter.drawPolygon(QPolygonF([tip, back + side, back - side]))
