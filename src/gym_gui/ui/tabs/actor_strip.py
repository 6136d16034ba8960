"""ActorStrip: the Replay timeline's strip under the step slider, each step coloured by who acted."""

from __future__ import annotations

from PySide6.QtCore import QSize
from PySide6.QtGui import QColor, QPainter, QPaintEvent
from PySide6.QtWidgets import QSizePolicy, QWidget

from gym_gui.ui.tabs.replay_model import ActorTimeline

# The operator's steps and a person's: two colours told apart in colour-blind palettes too.
ACTOR_COLOURS = {"operator": "#1e88e5", "human": "#fb8c00"}
HEIGHT = 6


class ActorStrip(QWidget):
    """Who acted along the selected episode, as wide as the slider above it: the operator's steps in
    one colour, a person's in another, steps that do not say in none. Hidden for an episode whose
    steps never say. Its bands are the timeline's (:meth:`ActorTimeline.bands`), worked out again only
    when the episode's length, the strip's width or the spans change, never at every paint.
    """

    def __init__(self, timeline: ActorTimeline, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.timeline = timeline
        self.steps = 0
        self._drawn_for: tuple[int, int, object] | None = None  # (steps, width, spans) of _bands
        self._bands: list[tuple[int, int, str]] = []
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.setToolTip(
            "Who acted at each step: blue the operator, orange a person who took over "
            "(no colour where the step does not say)"
        )
        self.setVisible(False)

    def sizeHint(self) -> QSize:
        return QSize(100, HEIGHT)

    def show_episode(self, steps: int) -> None:
        """Show the selected episode's ``steps`` steps (shown only when some of them say who acted)."""
        self.setVisible(self.timeline.recorded)
        if steps != self.steps or self._drawn_for is None or self._drawn_for[2] is not self.timeline.spans:
            self.steps = steps
            self.update()

    def bands(self) -> list[tuple[int, int, str]]:
        """The stretches of pixels drawn, ``(x, end, actor)``."""
        spans = self.timeline.spans
        key = (self.steps, self.width(), spans)
        if self._drawn_for is None or key[:2] != self._drawn_for[:2] or spans is not self._drawn_for[2]:
            self._bands = self.timeline.bands(self.steps, self.width())
            self._drawn_for = key
        return self._bands

    def paintEvent(self, event: QPaintEvent) -> None:
        painter = QPainter(self)
        try:
            height = self.height()
            for x, end, actor in self.bands():
                painter.fillRect(x, 0, end - x, height, QColor(ACTOR_COLOURS[actor]))
        finally:
            painter.end()
