"""The Qt pieces every form is made of: fields tied to a model, one editor per parameter, marks."""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from typing import Any

from gym_gui_sdk.contract import EnvChoice
from PySide6.QtCore import Qt
from PySide6.QtGui import QFont, QFontDatabase, QStandardItem, QStandardItemModel
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QFrame,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QScrollArea,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from gym_gui.envs.catalog import catalog
from gym_gui.ui.combos import fit_to_layout
from gym_gui.ui.forms.model import RunModel
from gym_gui.ui.forms.params import Param, Params
from gym_gui.ui.forms.sections import EXECUTORS

INVALID_STYLE = "border: 2px solid #d32f2f;"


def mark(widget: QWidget, error: str, help_text: str = "") -> None:
    """Show a field as invalid (red border, the reason as tooltip) or as fine again."""
    # Restyling re-polishes the widget: only touch it when the verdict changes.
    if widget.property("invalidReason") == error and widget.property("invalid") is not None:
        return
    widget.setProperty("invalid", bool(error))
    widget.setProperty("invalidReason", error)
    widget.setStyleSheet(INVALID_STYLE if error else "")
    widget.setToolTip(f"{error}\n\n{help_text}".strip() if error else help_text)


def scrolled(*parts: QWidget) -> QScrollArea:
    """A form's fields, one under the other, in the form's one scroll area (its command, messages and
    Submit button stay in view below it)."""
    inner = QWidget()
    layout = QVBoxLayout(inner)
    for part in parts:
        layout.addWidget(part)
    layout.addStretch(1)
    scroll = QScrollArea()
    scroll.setObjectName("formFields")
    scroll.setWidgetResizable(True)
    scroll.setFrameShape(QFrame.Shape.NoFrame)
    scroll.setWidget(inner)
    return scroll


def monospace() -> QFont:
    return QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)


def greyed(item: QStandardItem, reason: str) -> QStandardItem:
    """A list entry that cannot be chosen, with why not as its tooltip."""
    item.setEnabled(False)
    item.setSelectable(False)
    item.setToolTip(reason)
    return item


def env_combo() -> QComboBox:
    """The env id field: the catalog's ids, and any other registered id typed in (the daemon checks it)."""
    combo = QComboBox()
    combo.setObjectName("envId")
    combo.setInsertPolicy(QComboBox.InsertPolicy.NoInsert)
    fit_to_layout(combo, 16)  # the form's width, not its longest id's or reason's
    show_env_choices(combo, None)
    return combo


def show_env_choices(combo: QComboBox, envs: Sequence[EnvChoice] | None) -> None:
    """Fill an env id field. With ``envs`` (as a worker says what its variant trains on) the ids it
    trains on are choices, the others follow a separator greyed with their reason, and nothing else can
    be typed; with None (not known) the catalog's ids, and any id typed in."""
    model = combo.model()
    assert isinstance(model, QStandardItemModel)  # a QComboBox's own model
    combo.blockSignals(True)
    try:
        combo.clear()
        combo.setEditable(envs is None)
        if envs is None:
            for env_id in catalog():
                combo.addItem(env_id)
            return
        for env in envs:
            if not env.reason:
                combo.addItem(env.id)
        refused = [env for env in envs if env.reason]
        if refused:
            combo.insertSeparator(combo.count())
        for env in refused:
            model.appendRow(greyed(QStandardItem(env.id), env.reason))
    finally:
        combo.blockSignals(False)


def choosable(combo: QComboBox, index: int) -> bool:
    """Whether the combo's entry at ``index`` can be chosen (not greyed, not a separator)."""
    flags = combo.model().flags(combo.model().index(index, combo.modelColumn()))
    return bool(flags & Qt.ItemFlag.ItemIsEnabled and flags & Qt.ItemFlag.ItemIsSelectable)


def set_combo_text(combo: QComboBox, text: str) -> None:
    """Show ``text``: its entry when it can be chosen, else the typed text of an editable combo."""
    index = combo.findText(text)
    if index >= 0 and choosable(combo, index):
        combo.setCurrentIndex(index)
    elif combo.isEditable():
        combo.setEditText(text)


def bind(widget: QWidget, model: Any, path: str, changed: Callable[[], None]) -> Callable[[], None]:
    """Tie ``widget`` to the attribute ``path`` (dotted) of ``model``: every edit writes it and calls
    ``changed``; the function returned shows the attribute's value again (after the model changed it).

    Line and text edits hold text, check boxes bools, spin boxes numbers, combo boxes their text.
    """
    *parents, name = path.split(".")

    def owner() -> Any:
        return operator.attrgetter(".".join(parents))(model) if parents else model

    def write(value: Any) -> None:
        setattr(owner(), name, value)
        changed()

    def read() -> Any:
        return getattr(owner(), name)

    if isinstance(widget, QCheckBox):
        widget.toggled.connect(write)
        return lambda: widget.setChecked(bool(read()))
    if isinstance(widget, QLineEdit):
        widget.textChanged.connect(write)
        return lambda: widget.setText(read()) if widget.text() != read() else None
    if isinstance(widget, QPlainTextEdit):
        widget.textChanged.connect(lambda: write(widget.toPlainText()))
        return lambda: widget.setPlainText(read()) if widget.toPlainText() != read() else None
    if isinstance(widget, QSpinBox | QDoubleSpinBox):
        widget.valueChanged.connect(write)
        return lambda: widget.setValue(read())
    if isinstance(widget, QComboBox):
        widget.currentTextChanged.connect(lambda text: write(text.strip() if widget.isEditable() else text))
        return lambda: set_combo_text(widget, read())
    raise TypeError(f"no binding for {type(widget).__name__}")


class ExecutorRow(QWidget):
    """Where the run's worker runs, in every form: this machine (local) or a Ray cluster, by its
    head's dashboard address (RunConfig's ``executor``)."""

    ADDRESS_TIP = "The Ray head's dashboard address, e.g. head:8265 (the run's worker becomes a Ray job)."

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.kind_combo = QComboBox()
        self.kind_combo.setObjectName("executor")
        self.kind_combo.addItems(list(EXECUTORS))
        self.kind_combo.setToolTip("local: a process of the daemon's machine; ray: a job on a Ray cluster")
        self.address_edit = QLineEdit()
        self.address_edit.setObjectName("rayAddress")
        self.address_edit.setPlaceholderText("Ray head, e.g. head:8265")
        self.address_edit.setToolTip(self.ADDRESS_TIP)
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.kind_combo)
        row.addWidget(self.address_edit, 1)

    def bind(self, model: RunModel, changed: Callable[[], None]) -> list[Callable[[], None]]:
        """Tie the row to ``model.executor``; the functions returned show it again."""

        def enable() -> None:
            self.address_edit.setEnabled(model.executor.kind == "ray")

        def edited() -> None:
            enable()
            changed()

        shows = [
            bind(self.kind_combo, model, "executor.kind", edited),
            bind(self.address_edit, model, "executor.ray_address", changed),
        ]
        return [*shows, enable]

    def mark(self, errors: dict[str, str]) -> None:
        mark(self.address_edit, errors.get("executor.ray_address", ""), self.ADDRESS_TIP)


# ------------------------------------------------------------------ parameters


class ParamEditor:
    """The field of one parameter, chosen by its editor kind: a check box, a combo of its choices,
    or a line edit; every edit goes into ``param.raw``."""

    def __init__(self, param: Param, changed: Callable[[], None]) -> None:
        self.param = param
        self.widget: QWidget
        if param.editor == "check":
            box = QCheckBox()
            box.toggled.connect(lambda on: self._write(on, changed))
            self.widget = box
        elif param.editor == "choice":
            combo = QComboBox()
            for label, value in param.options():
                combo.addItem(label, value)
            combo.currentIndexChanged.connect(lambda _i: self._write(combo.currentData(), changed))
            self.widget = combo
        elif param.editor == "multiline":
            text = QPlainTextEdit()
            text.setFont(monospace())
            text.setMinimumHeight(120)
            text.textChanged.connect(lambda: self._write(text.toPlainText(), changed))
            self.widget = text
        else:
            edit = QLineEdit()
            if param.default is None:
                edit.setPlaceholderText("required" if param.required else "script default: none")
            edit.textChanged.connect(lambda text: self._write(text, changed))
            self.widget = edit
        self.widget.setObjectName(f"param:{param.name}")
        self.widget.setToolTip(param.help)
        self.show()

    def _write(self, raw: Any, changed: Callable[[], None]) -> None:
        self.param.raw = raw
        changed()

    def show(self) -> None:
        """Show what ``param.raw`` holds."""
        widget, raw = self.widget, self.param.raw
        widget.blockSignals(True)
        try:
            if isinstance(widget, QCheckBox):
                widget.setChecked(bool(raw))
            elif isinstance(widget, QComboBox):
                widget.setCurrentIndex(max(widget.findData(raw), 0))
            elif isinstance(widget, QLineEdit):
                widget.setText(str(raw))
            elif isinstance(widget, QPlainTextEdit) and widget.toPlainText() != str(raw):
                widget.setPlainText(str(raw))
        finally:
            widget.blockSignals(False)


class ParamEditors(QGroupBox):
    """A group of parameter editors, one row each, rebuilt for every new set of parameters."""

    def __init__(self, title: str, placeholder: str, parent: QWidget | None = None) -> None:
        super().__init__(title, parent)
        self.rows = QFormLayout(self)
        self.editors: dict[str, ParamEditor] = {}
        self.placeholder = QLabel(placeholder)
        self.placeholder.setWordWrap(True)
        self.rows.addRow(self.placeholder)

    def show_params(self, params: Params, changed: Callable[[], None], empty: str = "") -> None:
        """One editor per parameter; ``empty`` is said when there are none."""
        while self.rows.rowCount():
            self.rows.removeRow(0)
        self.editors = {}
        group = ""
        for param in params:
            if param.group != group:  # the kind's groups, each under its heading, in its order
                group = param.group
                heading = QLabel(f"<b>{group}</b>" if group else "")
                heading.setObjectName(f"paramGroup:{group}")
                self.rows.addRow(heading)
            editor = ParamEditor(param, changed)
            self.editors[param.name] = editor
            label = QLabel(param.name)
            label.setToolTip(param.help)
            self.rows.addRow(label, editor.widget)
        self.placeholder = QLabel(empty if not self.editors else "")
        self.placeholder.setWordWrap(True)
        self.rows.addRow(self.placeholder)  # parented first: a parentless label shown is a window
        self.placeholder.setVisible(not self.editors)

    def say(self, text: str) -> None:
        """A note in place of the editors (while they are read, or why there are none)."""
        self.placeholder.setText(text)

    def names(self) -> list[str]:
        return list(self.editors)

    def editor_widget(self, name: str) -> QWidget | None:
        editor = self.editors.get(name)
        return editor.widget if editor is not None else None

    def refresh(self) -> None:
        for editor in self.editors.values():
            editor.show()

    def mark(self, errors: dict[str, str]) -> None:
        for name, editor in self.editors.items():
            mark(editor.widget, errors.get(f"params.{name}", ""), editor.param.help)
