"""The Arena's seats: an operator picker per pane, listing what `gym-gui operators` lists for the env
(those that cannot act on it greyed, with the reason)."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QStandardItem, QStandardItemModel
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QWidget

from gym_gui.play.operators import HUMAN, RANDOM, OperatorListing, OperatorRef, RandomOperator
from gym_gui.ui.arena.model import MAX_SEATS
from gym_gui.ui.combos import fit_to_layout
from gym_gui.ui.seat_control import PickerEntry, picker_entries

EMPTY = ""  # a seat left empty
OPERATOR_ROLE = int(Qt.ItemDataRole.UserRole)
PERSON = PickerEntry("human (you, by the keys)", HUMAN)


def seat_entries(listing: list[OperatorListing]) -> list[PickerEntry]:
    """A seat's lines: the play view's picker lines (``picker_entries``) and, after the random
    baseline, the person. Before the listing came (it needs the daemon), the two built-ins."""
    if not listing:
        listing = [OperatorListing(OperatorRef(RANDOM), RandomOperator(None).card)]
    entries = picker_entries(listing)
    after = next((i + 1 for i, entry in enumerate(entries) if entry.operator == RANDOM), 0)
    return [*entries[:after], PERSON, *entries[after:]]


class OperatorSeats(QWidget):
    """:data:`MAX_SEATS` pickers, one per pane; :meth:`operators` the chosen ones, as named."""

    changed = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.combos: list[QComboBox] = []
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        for index in range(MAX_SEATS):
            combo = QComboBox()
            combo.setObjectName(f"arenaSeat{index + 1}")
            fit_to_layout(combo, 12)
            combo.currentIndexChanged.connect(lambda _i: self.changed.emit())
            layout.addWidget(QLabel(f"{index + 1}"))
            layout.addWidget(combo, 1)
            self.combos.append(combo)
        self._listing: list[OperatorListing] = []
        self.set_listing([], default=(RANDOM, RANDOM))

    def set_listing(self, listing: list[OperatorListing], default: tuple[str, ...] = ()) -> None:
        """Offer ``listing`` in every seat, keeping each seat's choice where it is still offered
        (else ``default``'s, else empty)."""
        self._listing = list(listing)
        chosen = self.operators(keep_empty=True)
        if any(chosen):
            default = tuple(chosen)
        for index, combo in enumerate(self.combos):
            model = QStandardItemModel(combo)
            empty = QStandardItem("—")
            empty.setData(EMPTY, OPERATOR_ROLE)
            model.appendRow(empty)
            for entry in seat_entries(listing):
                item = QStandardItem(entry.label)
                item.setData(entry.operator, OPERATOR_ROLE)
                if entry.problem:
                    item.setEnabled(False)
                    item.setText(f"{entry.label} — {entry.problem}")
                    item.setToolTip(f"{entry.operator} cannot act here: {entry.problem}")
                else:
                    item.setToolTip(entry.operator)
                model.appendRow(item)
            combo.blockSignals(True)
            combo.setModel(model)
            wanted = default[index] if index < len(default) else EMPTY
            self._select(combo, wanted)
            combo.blockSignals(False)
        self.changed.emit()

    def set_operators(self, operators: list[str]) -> None:
        """Seat these operators (as named) in the first panes, the rest empty; one not offered (or
        not usable here) leaves its seat empty."""
        for index, combo in enumerate(self.combos):
            self._select(combo, operators[index] if index < len(operators) else EMPTY)

    def operators(self, keep_empty: bool = False) -> list[str]:
        """The operators chosen, seat by seat, as named (empty seats left out unless ``keep_empty``)."""
        chosen = [str(combo.currentData(OPERATOR_ROLE) or EMPTY) for combo in self.combos]
        return chosen if keep_empty else [name for name in chosen if name]

    def offered(self) -> list[tuple[str, bool, str]]:
        """What the pickers offer: (operator as named, usable, tooltip)."""
        model = self.combos[0].model()
        assert isinstance(model, QStandardItemModel)
        out = []
        for row in range(1, model.rowCount()):
            item = model.item(row)
            out.append((str(item.data(OPERATOR_ROLE)), item.isEnabled(), item.toolTip()))
        return out

    @staticmethod
    def _select(combo: QComboBox, name: str) -> None:
        model = combo.model()
        assert isinstance(model, QStandardItemModel)
        for row in range(model.rowCount()):
            item = model.item(row)
            if item.data(OPERATOR_ROLE) == name and item.isEnabled():
                combo.setCurrentIndex(row)
                return
        combo.setCurrentIndex(0)
