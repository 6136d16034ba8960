"""The runs table's Prune… dialog: `gym-gui prune`'s rules, its dry run shown, then exactly those runs deleted."""

from __future__ import annotations

import dataclasses

from PySide6.QtWidgets import (
    QCheckBox,
    QDialog,
    QFormLayout,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPushButton,
    QSpinBox,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from gym_gui.core.errors import GymGuiError
from gym_gui.core.pruning import ENDED_STATES, PruneResult, PruneRules, parse_age, summary
from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.space import format_bytes
from gym_gui.ui.daemon_link import DaemonLink


class PruneDialog(QDialog):
    """Which ended runs to delete (age, states, each sweep's best kept), what they are (a dry run on
    Preview), and Delete for exactly the runs previewed (decision 0050: pruning deletes)."""

    def __init__(self, link: DaemonLink, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("pruneDialog")
        self.setWindowTitle("Prune runs")
        self.link = link
        self.previewed: PruneResult | None = None
        self._rules: PruneRules | None = None

        self.older_than = QLineEdit()
        self.older_than.setPlaceholderText("any age (e.g. 30d, 12h, 2w)")
        self.older_than.setToolTip("Runs that ended at least this long ago")
        self.states = {state: QCheckBox(state.value) for state in ENDED_STATES}
        states = QHBoxLayout()
        for box in self.states.values():
            box.setToolTip("Runs that ended in the checked states (none checked: any)")
            states.addWidget(box)
        self.per_sweep = QCheckBox("Only sweeps' trials, keeping each sweep's best")
        self.keep_best = QSpinBox()
        self.keep_best.setRange(1, 100_000)
        self.keep_best.setValue(3)
        self.keep_best.setEnabled(False)
        self.per_sweep.toggled.connect(self.keep_best.setEnabled)
        sweeps = QHBoxLayout()
        sweeps.addWidget(self.per_sweep)
        sweeps.addWidget(self.keep_best)
        sweeps.addStretch(1)
        form = QFormLayout()
        form.addRow("Ended at least", self.older_than)
        form.addRow("In states", states)
        form.addRow("Sweeps", sweeps)

        self.runs = QTableWidget(0, 3)
        self.runs.setHorizontalHeaderLabels(["Run", "State", "Disk"])
        self.runs.horizontalHeader().setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        self.runs.verticalHeader().hide()
        self.message = QLabel("Preview lists the runs the rules match; nothing is deleted until Delete.")
        self.message.setObjectName("pruneMessage")
        self.message.setWordWrap(True)
        self.preview_button = QPushButton("Preview")
        self.delete_button = QPushButton("Delete")
        self.delete_button.setEnabled(False)
        close = QPushButton("Close")
        buttons = QHBoxLayout()
        buttons.addStretch(1)
        for button in (self.preview_button, self.delete_button, close):
            buttons.addWidget(button)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(self.runs, 1)
        layout.addWidget(self.message)
        layout.addLayout(buttons)

        self.preview_button.clicked.connect(self.preview)
        self.delete_button.clicked.connect(self.delete)
        close.clicked.connect(self.close)
        for box in (*self.states.values(), self.per_sweep):
            box.toggled.connect(self._changed)
        self.older_than.textChanged.connect(self._changed)
        self.keep_best.valueChanged.connect(self._changed)
        self.resize(640, 420)

    def rules(self) -> PruneRules:
        """The rules as set (a dry run).

        Raises:
            ConfigError: a rule that cannot be (an age that is none, no rule at all), naming it.
        """
        text = self.older_than.text().strip()
        return PruneRules(
            older_than=parse_age(text) if text else None,
            states=tuple(state for state, box in self.states.items() if box.isChecked()),
            keep_best=self.keep_best.value() if self.per_sweep.isChecked() else 0,
            per_sweep=self.per_sweep.isChecked(),
            dry_run=True,
        )

    def _changed(self) -> None:
        # What was previewed is no longer what the rules say: preview again before deleting.
        self.previewed = None
        self.delete_button.setEnabled(False)
        self.delete_button.setText("Delete")

    def _say(self, text: str, error: bool = False) -> None:
        self.message.setStyleSheet("color: #c62828;" if error else "")
        self.message.setText(text)

    def preview(self) -> None:
        """List the runs the rules match and the disk they hold (the daemon's dry run)."""
        try:
            rules = self.rules()
        except GymGuiError as exc:
            self._say(str(exc), error=True)
            return
        self._changed()
        self._say("listing…")

        def listed(result: PruneResult) -> None:
            self._rules, self.previewed = rules, result
            self._show(result)
            if result.runs:
                self.delete_button.setText(f"Delete {len(result.runs):,} runs ({format_bytes(result.bytes)})")
                self.delete_button.setEnabled(True)

        self.link.call(lambda client: client.prune(rules), listed, lambda message: self._say(message, True))

    def delete(self) -> None:
        """Delete exactly the runs previewed (one that matched since waits for the next prune)."""
        if self.previewed is None or self._rules is None or not self.previewed.runs:
            return
        rules = dataclasses.replace(
            self._rules, run_ids=tuple(run.record.run_id for run in self.previewed.runs), dry_run=False
        )
        self._changed()
        self._say("deleting…")

        def pruned(client: DaemonClient) -> PruneResult:
            return client.prune(rules)

        self.link.call(pruned, self._show, lambda message: self._say(message, True))

    def _show(self, result: PruneResult) -> None:
        self.runs.setRowCount(len(result.runs))
        for row, run in enumerate(result.runs):
            cells = (run.record.run_id, run.record.state.value, format_bytes(run.bytes))
            for column, text in enumerate(cells):
                self.runs.setItem(row, column, QTableWidgetItem(text))
        said = summary(result, format_bytes(result.bytes)).replace(" (--dry-run: nothing changed)", "")
        kept = "".join(f"\nkept {note}" for note in result.skipped)
        self._say(said + kept)
