"""EnvView: draws an environment — grid games natively from their description, pixel envs as scaled frames."""

from __future__ import annotations

import logging
import time
from typing import Any

import numpy as np
from gym_gui_sdk.render import decode_payload
from PySide6.QtCore import QPointF, QRect, QRectF, Qt, QTimer, Signal
from PySide6.QtGui import QColor, QFont, QImage, QPainter, QPaintEvent, QPen, QPixmap, QPolygonF
from PySide6.QtWidgets import QSizePolicy, QWidget

from gym_gui.envs.check import DEFAULT_RENDER_FPS, draw_rate, render_fps

log = logging.getLogger(__name__)

BACKGROUND = QColor("#1e1f22")
TEXT = QColor("#c9ccd1")
GRID_LINE = QColor("#8a9ba8")

# Toy-text tiles (FrozenLake, CliffWalking): start, ice, hole, goal, ground, cliff.
TOY_TILES: dict[str, QColor] = {
    "S": QColor("#8fd3c1"),
    "F": QColor("#e3f1fb"),
    "H": QColor("#14263b"),
    "G": QColor("#f4c430"),
    ".": QColor("#e8e2cf"),
    "C": QColor("#8d3b2e"),
}
AGENT = QColor("#e63946")
AGENT_OUTLINE = QColor("#ffffff")

# Taxi's four stands, in the env's own order (R, G, Y, B).
TAXI_STANDS: dict[str, QColor] = {
    "R": QColor("#e53935"),
    "G": QColor("#43a047"),
    "Y": QColor("#fbc02d"),
    "B": QColor("#1e88e5"),
}
TAXI_ROAD = QColor("#f3f3f3")
TAXI_WALL = QColor("#263238")
TAXI_EMPTY = QColor("#ffb300")
TAXI_FULL = QColor("#2e7d32")
PASSENGER = QColor("#8e24aa")

# minigrid's COLORS, indexed by COLOR_TO_IDX (0 red, 1 green, 2 blue, 3 purple, 4 yellow, 5 grey).
MINIGRID_COLORS: tuple[QColor, ...] = (
    QColor(255, 0, 0),
    QColor(0, 255, 0),
    QColor(0, 0, 255),
    QColor(112, 39, 195),
    QColor(255, 255, 0),
    QColor(100, 100, 100),
)
MINIGRID_EMPTY = QColor(0, 0, 0)
MINIGRID_LINE = QColor(60, 60, 60)
MINIGRID_WALL = QColor(100, 100, 100)
MINIGRID_GOAL = QColor(0, 200, 0)
MINIGRID_LAVA = QColor(255, 128, 0)
MINIGRID_UNSEEN = QColor(40, 40, 40)
MINIGRID_AGENT = QColor(255, 0, 0)

# Unit triangles of the MiniGrid agent for dir 0 right, 1 down, 2 left, 3 up (cell-relative, 0..1).
_ARROWS: tuple[tuple[tuple[float, float], ...], ...] = (
    ((0.12, 0.19), (0.87, 0.5), (0.12, 0.81)),
    ((0.19, 0.12), (0.81, 0.12), (0.5, 0.87)),
    ((0.88, 0.19), (0.13, 0.5), (0.88, 0.81)),
    ((0.19, 0.88), (0.81, 0.88), (0.5, 0.13)),
)


def env_draw_rate(env_id: str) -> float:
    """:func:`draw_rate` of ``env_id``'s ``metadata["render_fps"]`` (read from its registered class,
    without making it); :data:`DEFAULT_RENDER_FPS` for no env or one that declares none."""
    return draw_rate(render_fps(env_id)) if env_id else DEFAULT_RENDER_FPS


def _color(index_char: str) -> QColor:
    index = ord(index_char) - 48
    return MINIGRID_COLORS[index] if 0 <= index < len(MINIGRID_COLORS) else MINIGRID_WALL


class EnvView(QWidget):
    """Draws what an environment looks like now.

    ``show_grid``, ``show_frame``, ``show_payload`` and ``clear`` only record the latest picture;
    a single-shot timer applies it at most ``max_fps`` times a second (latest picture wins), so a
    stream of thousands of steps per second costs at most that many draws: the env's own rate where
    its owner knows it (:meth:`set_max_fps`, at most 60), else 30. Payloads are decoded only when
    their turn to be drawn comes, so coalesced PNG frames are never decoded.

    ``frames_drawn`` counts the pictures actually painted (a bench reads it); ``grid``,
    ``frame`` and ``message`` hold the picture last applied; ``applied`` is emitted each time one is.
    """

    applied = Signal()

    def __init__(self, parent: QWidget | None = None, *, max_fps: float = DEFAULT_RENDER_FPS) -> None:
        super().__init__(parent)
        self.frames_drawn = 0
        self.max_fps = draw_rate(max_fps)
        self.grid: dict[str, Any] | None = None
        self.frame: np.ndarray | None = None
        self.message = ""
        self._image: QImage | None = None
        self._pending: tuple[str, Any] | None = None
        self._interval = 1.0 / self.max_fps
        self._last_apply = -1e9
        self._fresh = False
        self._static_key: tuple[Any, ...] = ()
        self._static: QPixmap | None = None
        self._static_for: tuple[Any, ...] = ()
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setTimerType(Qt.TimerType.PreciseTimer)
        self._timer.timeout.connect(self._apply)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Expanding)
        self.setMinimumSize(160, 120)
        # Every pixel is painted each time: Qt need not clear the widget first.
        self.setAttribute(Qt.WidgetAttribute.WA_OpaquePaintEvent)

    def set_max_fps(self, fps: float) -> None:
        """Draw at most ``fps`` pictures a second (an env's ``render_fps``), at most
        :data:`MAX_DRAW_FPS`; :data:`DEFAULT_RENDER_FPS` when ``fps`` is not positive (not known)."""
        self.max_fps = draw_rate(fps)
        self._interval = 1.0 / self.max_fps

    # ------------------------------------------------------------ input (any rate)

    def show_grid(self, desc: dict[str, Any]) -> None:
        """Draw a grid description (the SDK's grid payload as a dict)."""
        self._offer("grid", desc)

    def show_frame(self, rgb: np.ndarray) -> None:
        """Draw an ``H x W x 3`` (or ``x 4``, or ``H x W`` grey) uint8 frame scaled to the view."""
        self._offer("frame", rgb)

    def show_image(self, image: QImage) -> None:
        """Draw a QImage (a decoded video frame) scaled to the view."""
        self._offer("image", image)

    def show_payload(self, payload: bytes | None) -> None:
        """Draw a render payload (grid JSON or PNG); None or empty keeps the current picture."""
        if payload:
            self._offer("payload", payload)

    def clear(self, message: str = "") -> None:
        """Drop the picture and show ``message`` instead."""
        self._offer("clear", message)

    @property
    def image(self) -> QImage | None:
        """The picture shown now when it is a frame or a video image (None for a grid or a message)."""
        return self._image

    @property
    def has_pending(self) -> bool:
        """Whether a picture waits for its turn to be drawn."""
        return self._pending is not None

    def _offer(self, kind: str, value: Any) -> None:
        self._pending = (kind, value)
        if self._timer.isActive():
            return  # the timer will take whatever is latest when it fires
        wait = self._interval - (time.monotonic() - self._last_apply)
        self._timer.start(max(0, int(wait * 1000)))

    # ------------------------------------------------------------ at most max_fps times a second

    def _apply(self) -> None:
        pending, self._pending = self._pending, None
        if pending is None:
            return
        # Draw on a fixed cadence (the previous slot + 1/fps), so a late timer is made up at the
        # next slot instead of pushing every later draw back; after an idle spell, start afresh.
        now = time.monotonic()
        self._last_apply = max(self._last_apply + self._interval, now - self._interval)
        kind, value = pending
        if kind == "payload":
            try:
                value = decode_payload(value)
            except ValueError as exc:
                self._set_message(f"cannot draw this step: {exc}")
                return
            kind = "grid" if isinstance(value, dict) else "frame"
        if kind == "grid":
            self._set_grid(value)
        elif kind == "frame":
            self._set_frame(value)
        elif kind == "image":
            self.grid, self.frame, self._image, self.message = None, None, value, ""
            self._changed()
        else:
            self._set_message(str(value))
        self.applied.emit()

    def _set_message(self, message: str) -> None:
        self.grid, self.frame, self._image, self.message = None, None, None, message
        self._changed()

    def _set_grid(self, desc: dict[str, Any]) -> None:
        try:
            rows, cols = int(desc["rows"]), int(desc["cols"])
            tiles = tuple(desc["tiles"])
            if rows <= 0 or cols <= 0 or len(tiles) != rows or any(len(row) != cols for row in tiles):
                raise ValueError(f"{len(tiles)} tile rows for a {rows} x {cols} grid")
        except (KeyError, TypeError, ValueError) as exc:
            self._set_message(f"cannot draw this grid: {exc}")
            return
        self.grid, self.frame, self._image, self.message = desc, None, None, ""
        # What the cached background depends on; the agent and markers are drawn over it.
        self._static_key = (
            desc.get("game"),
            rows,
            cols,
            tiles,
            tuple(desc.get("colors") or ()),
            tuple(desc.get("states") or ()),
            tuple(desc.get("map") or ()),
        )
        self._changed()

    def _set_frame(self, rgb: np.ndarray) -> None:
        array = np.asarray(rgb)
        if (
            array.dtype != np.uint8
            or array.ndim not in (2, 3)
            or (array.ndim == 3 and array.shape[2] not in (3, 4))
        ):
            self._set_message(f"cannot draw a frame of shape {array.shape} and dtype {array.dtype}")
            return
        # QImage reads the array's memory in place; copy only when rows are not contiguous.
        array = np.ascontiguousarray(array)
        height, width = array.shape[:2]
        if array.ndim == 2:
            fmt, depth = QImage.Format.Format_Grayscale8, 1
        elif array.shape[2] == 3:
            fmt, depth = QImage.Format.Format_RGB888, 3
        else:
            fmt, depth = QImage.Format.Format_RGBA8888, 4
        # The QImage does not own the memory: self.frame keeps the array alive as long as it is shown.
        self._image = QImage(array, width, height, width * depth, fmt)  # type: ignore[call-overload]
        self.grid, self.frame, self.message = None, array, ""
        self._changed()

    def _changed(self) -> None:
        self._fresh = True
        self.update()

    # ------------------------------------------------------------ painting

    def paintEvent(self, event: QPaintEvent) -> None:
        painter = QPainter(self)
        try:
            painter.fillRect(self.rect(), BACKGROUND)
            if self.grid is not None:
                self._paint_grid(painter, self.grid)
            elif self._image is not None:
                self._paint_frame(painter, self._image)
            elif self.message:
                painter.setPen(TEXT)
                painter.drawText(
                    self.rect().adjusted(12, 12, -12, -12),
                    Qt.AlignmentFlag.AlignCenter | Qt.TextFlag.TextWordWrap,
                    self.message,
                )
        finally:
            painter.end()
        if self._fresh:
            self._fresh = False
            self.frames_drawn += 1

    def _paint_frame(self, painter: QPainter, image: QImage) -> None:
        width, height = image.width(), image.height()
        scale = min(self.width() / width, self.height() / height)
        target = QRectF(
            (self.width() - width * scale) / 2,
            (self.height() - height * scale) / 2,
            width * scale,
            height * scale,
        )
        # Enlarged small frames (Atari, MiniGrid pixels) stay crisp; shrunk ones are filtered.
        painter.setRenderHint(QPainter.RenderHint.SmoothPixmapTransform, scale < 1.0)
        painter.drawImage(target, image)

    def _caption(self, desc: dict[str, Any]) -> str:
        if desc.get("game") != "minigrid":
            return ""
        parts = [str(desc.get("mission") or "")]
        carrying = desc.get("carrying")
        if isinstance(carrying, dict):
            parts.append(f"carrying a {carrying.get('color', '')} {carrying.get('type', '')}")
        if desc.get("max_steps"):
            parts.append(f"step {desc.get('step', 0)}/{desc['max_steps']}")
        return " · ".join(part for part in parts if part)

    def _paint_grid(self, painter: QPainter, desc: dict[str, Any]) -> None:
        rows, cols = int(desc["rows"]), int(desc["cols"])
        caption = self._caption(desc)
        caption_height = painter.fontMetrics().height() + 8 if caption else 0
        area_height = self.height() - caption_height
        cell = max(1, min(self.width() // cols, area_height // rows))
        x0 = (self.width() - cell * cols) // 2
        y0 = (area_height - cell * rows) // 2
        static_for = (self._static_key, cell)
        if self._static is None or self._static_for != static_for:
            self._static = self._paint_static(desc, rows, cols, cell)
            self._static_for = static_for
        painter.drawPixmap(x0, y0, self._static)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing, True)
        game = desc.get("game")
        if game == "taxi":
            self._paint_taxi_markers(painter, desc, x0, y0, cell)
        elif game == "minigrid":
            self._paint_minigrid_agent(painter, desc, x0, y0, cell)
        else:
            self._paint_token(painter, desc, x0, y0, cell)
        if caption:
            painter.setPen(TEXT)
            painter.drawText(
                QRect(0, area_height, self.width(), caption_height),
                Qt.AlignmentFlag.AlignCenter,
                caption,
            )

    # Static layer: tiles, walls, grid lines — redrawn only when they or the cell size change.

    def _paint_static(self, desc: dict[str, Any], rows: int, cols: int, cell: int) -> QPixmap:
        ratio = self.devicePixelRatioF()
        pixmap = QPixmap(int(cols * cell * ratio), int(rows * cell * ratio))
        pixmap.setDevicePixelRatio(ratio)
        pixmap.fill(BACKGROUND)
        painter = QPainter(pixmap)
        try:
            game = desc.get("game")
            if game == "minigrid":
                self._paint_minigrid_tiles(painter, desc, rows, cols, cell)
            elif game == "taxi":
                self._paint_taxi_tiles(painter, desc, rows, cols, cell)
            else:
                self._paint_toy_tiles(painter, desc, rows, cols, cell)
        finally:
            painter.end()
        return pixmap

    def _paint_toy_tiles(
        self, painter: QPainter, desc: dict[str, Any], rows: int, cols: int, cell: int
    ) -> None:
        tiles: list[str] = desc["tiles"]
        fallback = TOY_TILES["."]
        for r, line in enumerate(tiles):
            for c, ch in enumerate(line):
                painter.fillRect(c * cell, r * cell, cell, cell, TOY_TILES.get(ch, fallback))
        painter.setRenderHint(QPainter.RenderHint.Antialiasing, True)
        # Holes read as holes (a darker pit), start and goal carry their letter for colour-blind eyes.
        font = QFont(painter.font())
        font.setPixelSize(max(6, cell // 3))
        font.setBold(True)
        painter.setFont(font)
        pit = TOY_TILES["H"].darker(170)
        inset = cell // 6
        for r, line in enumerate(tiles):
            for c, ch in enumerate(line):
                if ch == "H":
                    painter.setPen(Qt.PenStyle.NoPen)
                    painter.setBrush(pit)
                    painter.drawEllipse(
                        c * cell + inset, r * cell + inset, cell - 2 * inset, cell - 2 * inset
                    )
                elif ch in "SG":
                    painter.setPen(QColor("#37474f"))
                    painter.drawText(
                        QRect(c * cell, r * cell, cell, cell),
                        Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop,
                        f" {ch}",
                    )
        self._grid_lines(painter, rows, cols, cell, GRID_LINE)

    def _paint_taxi_tiles(
        self, painter: QPainter, desc: dict[str, Any], rows: int, cols: int, cell: int
    ) -> None:
        tiles: list[str] = desc["tiles"]
        font = QFont(painter.font())
        font.setPixelSize(max(6, cell // 3))
        font.setBold(True)
        painter.setFont(font)
        for r, line in enumerate(tiles):
            for c, ch in enumerate(line):
                stand = TAXI_STANDS.get(ch)
                painter.fillRect(
                    c * cell, r * cell, cell, cell, TAXI_ROAD if stand is None else stand.lighter(150)
                )
                if stand is not None:
                    painter.setPen(stand.darker(140))
                    painter.drawText(
                        QRect(c * cell, r * cell, cell, cell),
                        Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop,
                        f" {ch}",
                    )
        self._grid_lines(painter, rows, cols, cell, QColor("#cfd8dc"))
        # The ASCII map puts a "|" between cells (r, c) and (r, c + 1) where a wall stands.
        wall = QPen(TAXI_WALL, max(2, cell // 10))
        wall.setCapStyle(Qt.PenCapStyle.FlatCap)
        painter.setPen(wall)
        ascii_map: list[str] = desc.get("map") or []
        for r in range(rows):
            line = ascii_map[r + 1] if r + 1 < len(ascii_map) else ""
            for c in range(cols - 1):
                if 2 * c + 2 < len(line) and line[2 * c + 2] == "|":
                    x = (c + 1) * cell
                    painter.drawLine(x, r * cell, x, (r + 1) * cell)
        painter.setBrush(Qt.BrushStyle.NoBrush)
        half = wall.width() // 2
        painter.drawRect(half, half, cols * cell - wall.width(), rows * cell - wall.width())

    def _paint_minigrid_tiles(
        self, painter: QPainter, desc: dict[str, Any], rows: int, cols: int, cell: int
    ) -> None:
        tiles: list[str] = desc["tiles"]
        colors: list[str] = desc.get("colors") or ["5" * cols] * rows
        states: list[str] = desc.get("states") or ["0" * cols] * rows
        painter.fillRect(0, 0, cols * cell, rows * cell, MINIGRID_EMPTY)
        self._grid_lines(painter, rows, cols, cell, MINIGRID_LINE)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing, True)
        small = max(1, cell // 8)
        for r, line in enumerate(tiles):
            for c, ch in enumerate(line):
                if ch == ".":
                    continue
                x, y = c * cell, r * cell
                color = _color(colors[r][c])
                painter.setPen(Qt.PenStyle.NoPen)
                if ch == "W":
                    painter.fillRect(x, y, cell, cell, MINIGRID_WALL)
                elif ch == "G":
                    painter.fillRect(x + 1, y + 1, cell - 1, cell - 1, MINIGRID_GOAL)
                elif ch == "V":
                    painter.fillRect(x + 1, y + 1, cell - 1, cell - 1, MINIGRID_LAVA)
                    painter.setPen(QPen(MINIGRID_EMPTY, max(1, cell // 16)))
                    for k in (1, 2, 3):
                        wy = y + k * cell // 4
                        painter.drawLine(x + small, wy, x + cell - small, wy)
                elif ch == "F":
                    painter.fillRect(x + 1, y + 1, cell - 1, cell - 1, color.darker(200))
                elif ch == "?":
                    painter.fillRect(x + 1, y + 1, cell - 1, cell - 1, MINIGRID_UNSEEN)
                elif ch == "D":
                    self._paint_door(painter, x, y, cell, color, states[r][c])
                elif ch == "K":
                    painter.setBrush(color)
                    painter.drawEllipse(QPointF(x + cell * 0.5, y + cell * 0.3), cell * 0.17, cell * 0.17)
                    painter.fillRect(QRectF(x + cell * 0.45, y + cell * 0.4, cell * 0.1, cell * 0.45), color)
                    painter.fillRect(QRectF(x + cell * 0.55, y + cell * 0.7, cell * 0.12, cell * 0.07), color)
                elif ch == "A":
                    painter.setBrush(color)
                    painter.drawEllipse(QPointF(x + cell * 0.5, y + cell * 0.5), cell * 0.3, cell * 0.3)
                elif ch == "B":
                    painter.setPen(QPen(color, max(1, cell // 12)))
                    painter.setBrush(Qt.BrushStyle.NoBrush)
                    painter.drawRect(QRectF(x + cell * 0.15, y + cell * 0.15, cell * 0.7, cell * 0.7))
                    painter.drawLine(
                        QPointF(x + cell * 0.15, y + cell * 0.5), QPointF(x + cell * 0.85, y + cell * 0.5)
                    )

    @staticmethod
    def _paint_door(painter: QPainter, x: int, y: int, cell: int, color: QColor, state: str) -> None:
        # minigrid's door states: 0 open, 1 closed, 2 locked.
        if state == "0":
            painter.setPen(QPen(color, max(1, cell // 12)))
            painter.setBrush(Qt.BrushStyle.NoBrush)
            painter.drawRect(QRectF(x + cell * 0.08, y + cell * 0.08, cell * 0.84, cell * 0.84))
            return
        painter.fillRect(x + 1, y + 1, cell - 1, cell - 1, color)
        if state == "2":
            # Locked: a keyhole slot, as minigrid draws it.
            painter.fillRect(QRectF(x + cell * 0.5, y + cell * 0.47, cell * 0.3, cell * 0.06), MINIGRID_EMPTY)
        else:
            painter.fillRect(QRectF(x + cell * 0.1, y + cell * 0.1, cell * 0.8, cell * 0.8), MINIGRID_EMPTY)
            painter.fillRect(QRectF(x + cell * 0.14, y + cell * 0.14, cell * 0.72, cell * 0.72), color)
            painter.setPen(Qt.PenStyle.NoPen)
            painter.setBrush(MINIGRID_EMPTY)
            painter.drawEllipse(QPointF(x + cell * 0.75, y + cell * 0.5), cell * 0.08, cell * 0.08)

    @staticmethod
    def _grid_lines(painter: QPainter, rows: int, cols: int, cell: int, color: QColor) -> None:
        painter.setPen(QPen(color, 1))
        for r in range(rows + 1):
            painter.drawLine(0, r * cell, cols * cell, r * cell)
        for c in range(cols + 1):
            painter.drawLine(c * cell, 0, c * cell, rows * cell)

    # Dynamic layer: the agent and per-step markers, drawn every frame over the static layer.

    @staticmethod
    def _agent_cell(desc: dict[str, Any]) -> tuple[int, int] | None:
        agent = desc.get("agent")
        if not isinstance(agent, list | tuple) or len(agent) != 2:
            return None
        return int(agent[0]), int(agent[1])

    def _paint_token(self, painter: QPainter, desc: dict[str, Any], x0: int, y0: int, cell: int) -> None:
        where = self._agent_cell(desc)
        if where is None:
            return
        r, c = where
        painter.setPen(QPen(AGENT_OUTLINE, max(1, cell // 20)))
        painter.setBrush(AGENT)
        center = QPointF(x0 + (c + 0.5) * cell, y0 + (r + 0.5) * cell)
        painter.drawEllipse(center, cell * 0.3, cell * 0.3)

    def _paint_taxi_markers(
        self, painter: QPainter, desc: dict[str, Any], x0: int, y0: int, cell: int
    ) -> None:
        destination = desc.get("destination_at")
        tiles: list[str] = desc["tiles"]
        if isinstance(destination, list | tuple) and len(destination) == 2:
            r, c = int(destination[0]), int(destination[1])
            stand = TAXI_STANDS.get(tiles[r][c] if 0 <= r < len(tiles) and 0 <= c < len(tiles[r]) else "")
            pen = QPen(stand.darker(130) if stand is not None else PASSENGER, max(2, cell // 12))
            pen.setStyle(Qt.PenStyle.DashLine)
            painter.setPen(pen)
            painter.setBrush(Qt.BrushStyle.NoBrush)
            inset = cell * 0.08
            painter.drawRect(
                QRectF(x0 + c * cell + inset, y0 + r * cell + inset, cell - 2 * inset, cell - 2 * inset)
            )
        where = self._agent_cell(desc)
        in_taxi = bool(desc.get("in_taxi"))
        if where is not None:
            r, c = where
            painter.setPen(QPen(TAXI_WALL, max(1, cell // 24)))
            painter.setBrush(TAXI_FULL if in_taxi else TAXI_EMPTY)
            painter.drawRoundedRect(
                QRectF(x0 + c * cell + cell * 0.18, y0 + r * cell + cell * 0.28, cell * 0.64, cell * 0.44),
                cell * 0.1,
                cell * 0.1,
            )
        passenger = desc.get("passenger_at")
        if not in_taxi and isinstance(passenger, list | tuple) and len(passenger) == 2:
            r, c = int(passenger[0]), int(passenger[1])
            painter.setPen(QPen(AGENT_OUTLINE, max(1, cell // 24)))
            painter.setBrush(PASSENGER)
            painter.drawEllipse(
                QPointF(x0 + (c + 0.72) * cell, y0 + (r + 0.72) * cell), cell * 0.16, cell * 0.16
            )

    def _paint_minigrid_agent(
        self, painter: QPainter, desc: dict[str, Any], x0: int, y0: int, cell: int
    ) -> None:
        where = self._agent_cell(desc)
        if where is None:
            return
        r, c = where
        direction = int(desc.get("dir", 0)) % 4
        x, y = x0 + c * cell, y0 + r * cell
        triangle = QPolygonF([QPointF(x + px * cell, y + py * cell) for px, py in _ARROWS[direction]])
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(MINIGRID_AGENT)
        painter.drawPolygon(triangle)
