"""StepDetails: the fields of one stored step as the Replay tab shows them (step, action, who acted, reward,
its ends, observation and info)."""

from __future__ import annotations

import json

import numpy as np
from gym_gui_sdk.encoding import loads_observation
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFormLayout, QLabel, QPlainTextEdit, QWidget

from gym_gui.core.records import StepRecord

# Characters of an observation or an info shown at most (a pixel observation's text runs to megabytes).
MAX_TEXT = 20_000


def _pretty(text: str) -> str:
    try:
        shown = json.dumps(json.loads(text), indent=2, sort_keys=True)
    except (ValueError, TypeError):
        shown = text
    return shown if len(shown) <= MAX_TEXT else shown[:MAX_TEXT] + "\n…"


def _observation(text: str) -> str:
    """A stored observation as shown: a large array stored compact as its dtype, shape and a summary of
    its values; any other as its JSON text (cut at :data:`MAX_TEXT`)."""
    if text.startswith("{"):  # an object: the compact form of a large array is one
        try:
            value = loads_observation(text)
        except ValueError as exc:
            return f"(this observation cannot be read: {exc})"
        if isinstance(value, np.ndarray):
            shape = " × ".join(map(str, value.shape))
            span = f", values {value.min()} to {value.max()}" if value.size else ""
            summary = np.array2string(value, threshold=200, edgeitems=3, max_line_width=100)
            return f"{value.dtype} array, {shape}{span}\n{summary}"
    return text if len(text) <= MAX_TEXT else text[:MAX_TEXT] + "…"


class StepDetails(QWidget):
    """A form of one step's fields; the info shows as indented JSON."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.step_fields = {
            name: QLabel() for name in ("step", "action", "reward", "terminated", "truncated")
        }
        for label in self.step_fields.values():
            label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.observation_text = QPlainTextEdit(readOnly=True)
        self.observation_text.setMaximumBlockCount(2000)
        self.info_text = QPlainTextEdit(readOnly=True)
        # Who chose the action, for a run whose steps say (an operator a person may take over from).
        self.actor_label = QLabel()
        self.actor_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        form = self.form = QFormLayout(self)
        for name, label in self.step_fields.items():
            form.addRow(name.capitalize(), label)
            if name == "action":
                form.addRow("Acted by", self.actor_label)
        form.setRowVisible(self.actor_label, False)
        form.addRow("Observation", self.observation_text)
        form.addRow("Info", self.info_text)

    def show_step(self, record: StepRecord) -> None:
        self.step_fields["step"].setText(str(record.step))
        self.step_fields["action"].setText(record.action)
        self.actor_label.setText(
            f"{record.actor} (the operator proposed {record.proposed_action})"
            if record.proposed_action
            else record.actor
        )
        self.form.setRowVisible(self.actor_label, bool(record.actor))
        self.step_fields["reward"].setText(f"{record.reward:g}")
        self.step_fields["terminated"].setText("yes" if record.terminated else "no")
        self.step_fields["truncated"].setText("yes" if record.truncated else "no")
        self.observation_text.setPlainText(_observation(record.observation))
        self.info_text.setPlainText(_pretty(record.info))

    def clear(self, message: str = "") -> None:
        """Show no step; ``message`` says why, in the info's place."""
        for label in self.step_fields.values():
            label.setText("")
        self.actor_label.setText("")
        self.form.setRowVisible(self.actor_label, False)
        self.observation_text.setPlainText("")
        self.info_text.setPlainText(message)
