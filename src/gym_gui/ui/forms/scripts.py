"""The variant picker of a form whose kind has variants (CleanRL's scripts): the variants the daemon
lists, and the progress of the bundle they come from while the daemon installs it."""

from __future__ import annotations

from collections.abc import Sequence

from gym_gui_sdk.contract import Variant
from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QStandardItem, QStandardItemModel
from PySide6.QtWidgets import QComboBox, QFormLayout, QLabel, QProgressBar, QVBoxLayout, QWidget

from gym_gui.core.records import BundleProgress, EventRecord
from gym_gui.ui.daemon_link import DaemonLink, TelemetrySubscription
from gym_gui.ui.forms.widgets import greyed


class ScriptPicker(QWidget):
    """The variant combo ("Algorithm" for CleanRL): runnable variants selectable, the others greyed
    with their reason.

    Without the bundle there is no script to list: the combo takes a typed name, a note says the
    bundle comes on first use, and :meth:`watch_install` shows the daemon's progress installing it.
    """

    chosen = Signal(str)  # the user picked (or, without the bundle, typed) a script

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.combo = QComboBox()
        self.combo.setObjectName("algorithm")
        self.model = QStandardItemModel(self.combo)
        self.combo.setModel(self.model)
        self.combo.currentIndexChanged.connect(lambda _i: self._picked())
        self.combo.editTextChanged.connect(lambda _t: self._picked())
        self.bundle_note = QLabel()
        self.bundle_note.setWordWrap(True)
        self.bundle_note.hide()
        self.install_progress = QProgressBar()
        self.install_progress.setObjectName("bundleInstall")
        self.install_progress.setRange(0, 0)  # busy until the daemon reports steps
        self.install_progress.hide()
        self.install_run = ""  # the run whose bundle install is shown
        self.bundle = ""  # the bundle the scripts come from, once the daemon named it
        self._install: TelemetrySubscription | None = None
        self.row = QFormLayout()
        self.row.addRow("Algorithm", self.combo)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(self.row)
        layout.addWidget(self.bundle_note)
        layout.addWidget(self.install_progress)

    def _picked(self) -> None:
        name = self.algorithm()
        if name and not self.signalsBlocked():
            self.chosen.emit(name)

    def algorithm(self) -> str:
        if self.combo.isEditable():
            return self.combo.currentText().strip()
        data = self.combo.currentData(Qt.ItemDataRole.UserRole)
        return str(data) if data else ""

    # -------------------------------------------------------- what the daemon lists

    def set_label(self, label: str) -> None:
        """Name what a variant is (the kind's ``variant_label``)."""
        text = self.row.labelForField(self.combo)
        if isinstance(text, QLabel):
            text.setText(label)

    def show_scripts(self, variants: Sequence[Variant], wanted: str) -> str:
        """List the variants and select ``wanted`` (else the first runnable one); returns the selected
        name, "" when none can run."""
        self.blockSignals(True)
        try:
            self.model.clear()
            self.combo.setEditable(False)
            self.bundle_note.hide()
            chosen = -1
            for variant in variants:
                item = QStandardItem(variant.name)
                item.setData(variant.name, Qt.ItemDataRole.UserRole)
                if not variant.runnable:
                    greyed(item, f"cannot run here: {variant.reason}")
                else:
                    item.setToolTip(f"{variant.summary} · default env {variant.default_env}")
                self.model.appendRow(item)
                if variant.runnable and (chosen < 0 or variant.name == wanted):
                    chosen = self.model.rowCount() - 1
            self.combo.setCurrentIndex(chosen)
        finally:
            self.blockSignals(False)
        return self.algorithm() if chosen >= 0 else ""

    def show_missing_bundle(self, bundle: str, wanted: str) -> None:
        """No bundle yet: a typed script name, and a note saying when its scripts appear."""
        self.bundle = bundle
        self.blockSignals(True)
        try:
            self.model.clear()
            self.combo.setEditable(True)
            self.combo.setEditText(wanted)
        finally:
            self.blockSignals(False)
        self.bundle_note.setText(
            f"The {bundle} bundle will be installed on first use (a few minutes; "
            "the progress shows here). The script's own parameters appear once it is installed."
        )
        self.bundle_note.show()

    def set_algorithm(self, name: str) -> None:
        """Select a script as if the user had (selectable ones only)."""
        for row in range(self.model.rowCount()):
            item = self.model.item(row)
            if item is not None and item.data(Qt.ItemDataRole.UserRole) == name and item.isEnabled():
                self.combo.setCurrentIndex(row)
                return
        if self.combo.isEditable():
            self.combo.setEditText(name)

    # -------------------------------------------------------- the bundle's install

    def watch_install(self, link: DaemonLink, run_id: str) -> None:
        """Show the daemon's progress installing the bundle ``run_id`` waits for."""
        self.stop_install_watch()
        self.install_progress.setRange(0, 0)
        self.install_progress.setFormat(f"installing the {self.bundle} bundle…")
        self.install_progress.show()
        self.install_run = run_id
        subscription = link.subscribe(run_id, credits=1)
        if subscription is None:
            return
        self._install = subscription
        subscription.worker_event.connect(self._install_event)
        subscription.start()

    def _install_event(self, event: EventRecord) -> None:
        """One of the run's events: the install's progress is read from its data fields."""
        progress = BundleProgress.from_data(event.data)
        if progress is None:
            return
        if progress.phase == "waiting":
            self.install_progress.setRange(0, 0)
        else:
            self.install_progress.setRange(0, max(progress.total, 1))
            self.install_progress.setValue(progress.step)
        self.install_progress.setFormat(progress.text())

    def stop_install_watch(self, hide: bool = False) -> None:
        if self._install is not None:
            self._install.close()
            self._install = None
        self.install_run = ""
        if hide:
            self.install_progress.hide()
