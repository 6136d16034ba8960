"""The search space's editor: one row per sweepable parameter of the base run, tied to its SpaceEntry."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QGridLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from gym_gui.ui.forms.widgets import bind, mark
from gym_gui.ui.sweep_form.model import SpaceEntry

RANGE_TIP = (
    "Drawn from [low, high]; log: on a log scale (low > 0); step: on a grid (a grid sampler needs one)."
)
CHOICES_TIP = "The values to try, separated by commas."
# What a field name under ``space.NAME`` may go on with: a field of the row, or the distribution's type
# (parse_spec names ``space.NAME.float`` for a range whose bounds do not fit together).
_PARTS = ("", "low", "high", "step", "choices", "float", "int", "categorical")


class SpaceRow:
    """The fields of one parameter: ticked to search it, a range (low, high, log, step) or choices."""

    def __init__(self, entry: SpaceEntry, changed: Callable[[], None]) -> None:
        self.entry = entry
        spec = entry.spec
        self.check = QCheckBox(spec.name)
        self.check.setObjectName(f"search:{spec.name}")
        default = f"default {spec.default}" if spec.default is not None else "no default"
        self.check.setToolTip(f"{spec.help}\n({spec.type}, {default})".strip())
        self.kind_combo = QComboBox()
        self.kind_combo.addItems(list(entry.kinds))
        self.kind_combo.setEnabled(len(entry.kinds) > 1)
        self.low_edit, self.high_edit, self.step_edit = QLineEdit(), QLineEdit(), QLineEdit()
        for edit, hint in ((self.low_edit, "low"), (self.high_edit, "high"), (self.step_edit, "step")):
            edit.setPlaceholderText(hint)
            edit.setToolTip(RANGE_TIP)
        self.log_check = QCheckBox("log")
        self.choices_edit = QLineEdit()
        self.choices_edit.setPlaceholderText("a, b, c")
        self.choices_edit.setToolTip(CHOICES_TIP)
        span = QWidget()
        spanned = QHBoxLayout(span)
        spanned.setContentsMargins(0, 0, 0, 0)
        for part in (self.low_edit, self.high_edit, self.log_check, self.step_edit):
            spanned.addWidget(part)
        self.values = QStackedWidget()
        self.values.addWidget(span)
        self.values.addWidget(self.choices_edit)

        def edited() -> None:
            self.enable()
            changed()

        self._shows = [
            bind(self.check, entry, "searched", edited),
            bind(self.kind_combo, entry, "kind", edited),
            bind(self.low_edit, entry, "low", changed),
            bind(self.high_edit, entry, "high", changed),
            bind(self.log_check, entry, "log", changed),
            bind(self.step_edit, entry, "step", changed),
            bind(self.choices_edit, entry, "choices", changed),
        ]
        for show in self._shows:
            show()
        self.enable()

    def enable(self) -> None:
        self.values.setCurrentIndex(0 if self.entry.kind == "range" else 1)
        self.kind_combo.setEnabled(self.entry.searched and len(self.entry.kinds) > 1)
        self.values.setEnabled(self.entry.searched)

    def mark(self, errors: dict[str, str]) -> None:
        """Mark the fields ``errors`` names; a message about the whole parameter (``space.NAME``, or
        its distribution: ``space.NAME.float``) marks its range, or its choices."""
        where = f"space.{self.entry.name}"
        own = {
            rest: why
            for key, why in errors.items()
            if (rest := key.removeprefix(where).removeprefix(".")) in _PARTS and key.startswith(where)
        }
        whole = own.get("", "") or next(
            (own[tag] for tag in ("float", "int", "categorical") if tag in own), ""
        )
        mark(self.low_edit, own.get("low", "") or whole, RANGE_TIP)
        mark(self.high_edit, own.get("high", "") or whole, RANGE_TIP)
        mark(self.step_edit, own.get("step", ""), RANGE_TIP)
        mark(self.choices_edit, own.get("choices", "") or whole, CHOICES_TIP)


class SpaceEditor(QGroupBox):
    """The parameters a sweep can search, one :class:`SpaceRow` each, over the model's entries."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Search space", parent)
        self.note = QLabel("Asking the daemon for the parameters…")
        self.note.setWordWrap(True)
        self.problem = QLabel()
        self.problem.setObjectName("spaceProblem")
        self.problem.setStyleSheet("color: #c62828;")
        self.problem.hide()
        self.rows: dict[str, SpaceRow] = {}
        self.grid_holder = QWidget()
        self._layout = QVBoxLayout(self)
        self._layout.addWidget(self.note)
        self._layout.addWidget(self.problem)
        self._layout.addWidget(self.grid_holder)

    def say(self, text: str) -> None:
        """Show ``text`` instead of the rows (parameters being read, none to search)."""
        self.note.setText(text)
        self.note.show()

    def show_entries(self, entries: dict[str, SpaceEntry], changed: Callable[[], None]) -> None:
        """A row per entry (the previous rows go)."""
        holder = QWidget()
        grid = QGridLayout(holder)
        grid.setContentsMargins(0, 0, 0, 0)
        self.rows = {}
        for line, entry in enumerate(entries.values()):
            row = self.rows[entry.name] = SpaceRow(entry, changed)
            grid.addWidget(row.check, line, 0)
            grid.addWidget(row.kind_combo, line, 1)
            grid.addWidget(row.values, line, 2)
        grid.setColumnStretch(2, 1)
        self._layout.replaceWidget(self.grid_holder, holder)
        self.grid_holder.deleteLater()
        self.grid_holder = holder
        self.note.setVisible(not entries)
        if not entries:
            self.note.setText("The base run's form describes no parameter a sweep can search.")

    def mark(self, errors: dict[str, str]) -> None:
        self.problem.setText(errors.get("space", ""))
        self.problem.setVisible(bool(self.problem.text()))
        for row in self.rows.values():
            row.mark(errors)
