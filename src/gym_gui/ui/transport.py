"""Transport: the replay controls — step back, play/pause, step forward, a position slider and a speed.

One widget for everything that plays back: stored steps (the Replay tab) and captured videos
(:mod:`gym_gui.ui.videos`). It only reports what the user asked for; its owner decides what a
step, a position and a speed mean.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSlider,
    QStyle,
    QVBoxLayout,
    QWidget,
)

SPEEDS = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0)


class Transport(QWidget):
    """Back / play-pause / forward buttons, a position slider and label, and a speed combo.

    Signals fire for the user's actions only: setting the position, range or speed from code
    (:meth:`set_position`, :meth:`set_range`, :meth:`set_speed`) emits nothing.
    """

    back = Signal()
    play_toggled = Signal()
    forward = Signal()
    seeked = Signal(int)
    speed_changed = Signal(float)

    def __init__(self, unit: str, speed_tip: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        style = self.style()
        self.back_button = QPushButton(style.standardIcon(QStyle.StandardPixmap.SP_MediaSeekBackward), "")
        self.back_button.setToolTip(f"One {unit} back (Left)")
        self.play_button = QPushButton(style.standardIcon(QStyle.StandardPixmap.SP_MediaPlay), "")
        self.play_button.setToolTip("Play / pause (Space)")
        self.forward_button = QPushButton(style.standardIcon(QStyle.StandardPixmap.SP_MediaSeekForward), "")
        self.forward_button.setToolTip(f"One {unit} forward (Right)")
        self.back_button.clicked.connect(self.back)
        self.play_button.clicked.connect(self.play_toggled)
        self.forward_button.clicked.connect(self.forward)
        self.slider = QSlider(Qt.Orientation.Horizontal)
        self.slider.valueChanged.connect(self.seeked)
        self.position_label = QLabel()
        self.speed_combo = QComboBox()
        for speed in SPEEDS:
            self.speed_combo.addItem(f"{speed:g}×", speed)
        self.speed_combo.setCurrentIndex(SPEEDS.index(1.0))
        self.speed_combo.setToolTip(speed_tip)
        self.speed_combo.currentIndexChanged.connect(lambda i: self.speed_changed.emit(SPEEDS[i]))

        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        for widget in (self.back_button, self.play_button, self.forward_button):
            layout.addWidget(widget)
        # The slider, and what its owner shows along it (the Replay tab: who acted at each step).
        self._slider_column = QVBoxLayout()
        self._slider_column.setContentsMargins(0, 0, 0, 0)
        self._slider_column.setSpacing(1)
        self._slider_column.addWidget(self.slider)
        layout.addLayout(self._slider_column, 1)
        layout.addWidget(self.position_label)
        layout.addWidget(QLabel("Speed"))
        layout.addWidget(self.speed_combo)

    def add_under_slider(self, widget: QWidget) -> None:
        """Show ``widget`` under the slider, as wide as it."""
        self._slider_column.addWidget(widget)

    def set_controls_enabled(self, enabled: bool) -> None:
        for widget in (
            self.back_button,
            self.play_button,
            self.forward_button,
            self.slider,
            self.speed_combo,
        ):
            widget.setEnabled(enabled)

    def set_playing(self, playing: bool) -> None:
        icon = QStyle.StandardPixmap.SP_MediaPause if playing else QStyle.StandardPixmap.SP_MediaPlay
        self.play_button.setIcon(self.style().standardIcon(icon))

    def set_range(self, maximum: int, page: int | None = None) -> None:
        self.slider.blockSignals(True)
        try:
            self.slider.setRange(0, max(0, maximum))
            self.slider.setPageStep(max(1, page if page is not None else (maximum + 1) // 20))
        finally:
            self.slider.blockSignals(False)

    def set_position(self, value: int, text: str) -> None:
        self.slider.blockSignals(True)
        try:
            self.slider.setValue(value)
        finally:
            self.slider.blockSignals(False)
        self.position_label.setText(text)

    def set_speed(self, speed: float) -> float:
        """Show ``speed`` clamped to :data:`SPEEDS`' range; returns the clamped value."""
        speed = min(max(speed, SPEEDS[0]), SPEEDS[-1])
        index = min(range(len(SPEEDS)), key=lambda i: abs(SPEEDS[i] - speed))
        if self.speed_combo.currentIndex() != index:
            self.speed_combo.blockSignals(True)
            self.speed_combo.setCurrentIndex(index)
            self.speed_combo.blockSignals(False)
        return speed
