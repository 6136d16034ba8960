"""OperatorPicker: the play view's Human | Hybrid | Agent switch and the operator that plays, as listed for the env."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QStandardItemModel
from PySide6.QtWidgets import QButtonGroup, QComboBox, QHBoxLayout, QLabel, QPushButton, QWidget

from gym_gui.play.operators import OperatorListing, Operators
from gym_gui.play.seat import Control
from gym_gui.protocol.client import DaemonClient
from gym_gui.ui.combos import fit_to_layout
from gym_gui.ui.daemon_link import DaemonLink
from gym_gui.ui.seat_control import CONTROL_TITLES, PickerEntry, picker_entries

# What a person may type instead of choosing a listed line (checkpoints and language models are not listed).
TYPED_NAMES = "RUN, RUN:CHECKPOINT or llm:CONFIG.json"


class OperatorPicker(QWidget):
    """The switch and, for Hybrid and Agent, the operators of the home (``Operators.listing``):
    usable ones selectable, the others greyed with the reason as their tooltip. The listing is read
    off the GUI thread whenever the env changes; a name may also be typed."""

    mode_changed = Signal(object)  # Control
    operator_changed = Signal(str)  # the operator's name, once chosen or typed
    checked = Signal(str)  # why the chosen operator cannot play the env ("": it can), once checked
    listed = Signal(str)  # env id: the listing for it is shown (or failed: ``problem`` says why)

    def __init__(
        self,
        link: DaemonLink,
        operators: Callable[[DaemonClient], Operators],
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.link = link
        self.operators = operators
        self.env_id = ""
        self.entries: list[PickerEntry] = []
        self.problem = ""  # why the last listing failed
        self.refusal = ""  # why the chosen operator cannot play the env
        self._generation = 0
        self._checks = 0

        self.buttons: dict[Control, QPushButton] = {}
        group = QButtonGroup(self)
        group.setExclusive(True)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        for mode, title in CONTROL_TITLES.items():
            button = QPushButton(title)
            button.setObjectName(f"control{title}")
            button.setCheckable(True)
            # The switch must not take the keyboard from the game.
            button.setFocusPolicy(Qt.FocusPolicy.NoFocus)
            group.addButton(button)
            layout.addWidget(button)
            self.buttons[mode] = button
            button.clicked.connect(lambda _=False, m=mode: self._switched(m))
        self.buttons[Control.HUMAN].setChecked(True)
        self.buttons[Control.HUMAN].setToolTip("You play alone")
        self.buttons[Control.HYBRID].setToolTip("The operator plays; hold a key to take over")
        self.buttons[Control.AGENT].setToolTip("The operator plays alone, at the env's rate")

        self.combo = QComboBox()
        self.combo.setObjectName("operatorPicker")
        self.combo.setEditable(True)
        self.combo.setInsertPolicy(QComboBox.InsertPolicy.NoInsert)
        fit_to_layout(self.combo, 10)  # narrow at its least: the window may be small
        line = self.combo.lineEdit()
        assert line is not None
        line.setPlaceholderText(TYPED_NAMES)
        self.combo.setToolTip(f"Who plays: a listed operator, or type {TYPED_NAMES}")
        self.combo.activated.connect(lambda _index: self._chosen())
        line.returnPressed.connect(self._chosen)
        layout.addSpacing(8)
        self.operator_label = QLabel("Operator")
        layout.addWidget(self.operator_label)
        layout.addWidget(self.combo, 1)
        self._enable()

    # ------------------------------------------------------------ the switch

    @property
    def mode(self) -> Control:
        return next(mode for mode, button in self.buttons.items() if button.isChecked())

    def set_mode(self, mode: Control) -> None:
        """Switch (as a click does, telling the view) unless already there."""
        if mode is not self.mode:
            self.buttons[mode].setChecked(True)
            self._switched(mode)

    def _switched(self, mode: Control) -> None:
        self._enable()
        if mode is not Control.HUMAN:
            self.refresh()  # runs that finished since may be operators now
        self.mode_changed.emit(mode)

    def _enable(self) -> None:
        operated = self.mode is not Control.HUMAN
        self.combo.setEnabled(operated)
        self.operator_label.setEnabled(operated)

    # ------------------------------------------------------------ the operators

    def set_env(self, env_id: str) -> None:
        """List the operators for ``env_id`` (now if one plays, else when Hybrid or Agent is chosen)."""
        self.env_id = env_id
        self.refusal = ""
        self._checks += 1
        if self.mode is not Control.HUMAN:
            self.refresh()

    def refresh(self) -> None:
        """Read the listing again, off the GUI thread (runs that finished since become operators)."""
        self._generation += 1
        generation, env_id = self._generation, self.env_id
        if not env_id:
            self._fill(generation, env_id, [])
            return
        make = self.operators

        def work(client: DaemonClient) -> list[OperatorListing]:
            return make(client).listing(env_id)

        self.link.call(
            work,
            lambda listing: self._fill(generation, env_id, listing),
            lambda message: self._failed(generation, env_id, message),
        )

    def operator(self) -> str:
        """The chosen operator's name: the listed line's, else what was typed."""
        text = self.combo.currentText().strip()
        for entry in self.entries:
            if text == entry.label:
                return entry.operator
        return text

    def set_operator(self, name: str) -> None:
        """Choose the listed line of operator ``name``, else type ``name``."""
        for index, entry in enumerate(self.entries):
            if entry.operator == name:
                self.combo.setCurrentIndex(index)
                return
        self.combo.setEditText(name)

    def choose(self, name: str) -> None:
        """Choose operator ``name`` as a person does (picking its line, or typing it and Enter)."""
        self.set_operator(name)
        self._chosen()

    def _chosen(self) -> None:
        """Tell the view, then check the operator against the env (and its model's digest) off the
        GUI thread, so one that cannot play says why before anything starts."""
        name, env_id, operators = self.operator(), self.env_id, self.operators
        self.refusal = ""
        self._checks += 1
        check = self._checks
        self.operator_changed.emit(name)
        if not name or not env_id:
            return

        def checked(refusal: str) -> None:
            if check == self._checks:  # else another operator (or env) was chosen since
                self.refusal = refusal
                self.checked.emit(refusal)

        self.link.call(lambda client: operators(client).choose(name, env_id), lambda _: checked(""), checked)

    def entry(self, name: str) -> PickerEntry | None:
        return next((entry for entry in self.entries if entry.operator == name), None)

    def enabled(self, name: str) -> bool:
        """Whether the line of operator ``name`` can be chosen (False: greyed, or not listed)."""
        model = self.combo.model()
        assert isinstance(model, QStandardItemModel)
        index = next((i for i, entry in enumerate(self.entries) if entry.operator == name), -1)
        item = model.item(index) if index >= 0 else None
        return item is not None and item.isEnabled()

    def tooltip(self, name: str) -> str:
        model = self.combo.model()
        assert isinstance(model, QStandardItemModel)
        index = next((i for i, entry in enumerate(self.entries) if entry.operator == name), -1)
        item = model.item(index) if index >= 0 else None
        return item.toolTip() if item is not None else ""

    def _fill(self, generation: int, env_id: str, listing: list[OperatorListing]) -> None:
        if generation != self._generation:
            return  # a later env's listing is on its way
        chosen = self.operator()
        self.entries = picker_entries(listing)
        self.problem = ""
        model = self.combo.model()
        assert isinstance(model, QStandardItemModel)
        self.combo.blockSignals(True)
        try:
            self.combo.clear()
            for index, entry in enumerate(self.entries):
                self.combo.addItem(entry.label, entry.operator)
                item = model.item(index)
                if entry.problem:
                    item.setEnabled(False)
                    item.setToolTip(f"Cannot play {env_id}: {entry.problem}")
                else:
                    item.setToolTip(entry.operator)
            usable = [entry.operator for entry in self.entries if not entry.problem]
            keep = chosen if chosen and (chosen in usable or not self.entry(chosen)) else ""
            self.set_operator(keep or (usable[0] if usable else ""))
        finally:
            self.combo.blockSignals(False)
        self.listed.emit(env_id)

    def _failed(self, generation: int, env_id: str, message: str) -> None:
        if generation != self._generation:
            return
        self.problem = f"cannot list the operators for {env_id}: {message}"
        self.listed.emit(env_id)
