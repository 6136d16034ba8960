"""One pane of the Arena: an operator's name and run, its environment as the Human tab draws it, and
where it stands (its step, its return, or why it is out)."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFrame, QLabel, QVBoxLayout, QWidget

from gym_gui.play.seat import Outcome
from gym_gui.ui.env_view import EnvView

FAILED_STYLE = "color: #c62828; font-weight: bold;"


class ArenaPane(QFrame):
    """Shows one seat: :meth:`show` an outcome, :meth:`fail` when its operator is out."""

    def __init__(self, name: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.name = name
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.title = QLabel(name)
        self.title.setStyleSheet("font-weight: bold;")
        self.title.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.env_view = EnvView(self)
        self.env_view.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.status = QLabel("starting…")
        self.status.setWordWrap(True)
        self.outcome: Outcome | None = None
        self.failed = ""
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(self.title)
        layout.addWidget(self.env_view, 1)
        layout.addWidget(self.status)

    def set_seat(self, name: str, run_id: str) -> None:
        """The pane is seated: its operator's title and its run."""
        self.name = name
        self.title.setText(f"{name} — run {run_id}")

    def show_outcome(self, outcome: Outcome) -> None:
        self.outcome = outcome
        if outcome.grid is not None:
            self.env_view.show_grid(outcome.grid)
        elif outcome.frame is not None:
            self.env_view.show_frame(outcome.frame)
        ended = " · episode over" if outcome.done else ""
        fallback = " · fell back" if outcome.note.get("fallback") else ""
        self.say(
            f"episode {outcome.episode + 1} · step {outcome.step} · return {outcome.total_reward:g}"
            f"{ended}{fallback}"
        )

    def say(self, text: str) -> None:
        if not self.failed:
            self.status.setText(text)

    def fail(self, reason: str) -> None:
        """The pane is out: it says why (its run is FAILED with the same reason)."""
        self.failed = reason
        self.status.setStyleSheet(FAILED_STYLE)
        self.status.setText(f"out: {reason}")
