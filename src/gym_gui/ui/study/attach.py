"""Attaching an Optuna study made anywhere (a gym_gui sweep, ``cleanrl_utils.tuner``, a plain script),
read-only: the dialog that names it and the dock that shows it."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtGui import QCloseEvent
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QDockWidget,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from gym_gui.sweeps.study import storage_url, study_names
from gym_gui.ui.background import Background
from gym_gui.ui.study.view import StudyWidget


class AttachStudyDialog(QDialog):
    """Asks for an SQLite file or an SQLAlchemy URL, lists the studies it holds and lets one be chosen.

    Nothing is written: the storage is opened read-only (``sweeps.study``). ``url()`` and
    ``study()`` are the answer once accepted.
    """

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Attach an Optuna study")
        self._url: str | None = None
        self._background = Background(self, workers=1, name="study-attach")
        self._generation = 0
        self.storage = QLineEdit()
        self.storage.setObjectName("studyStorage")
        self.storage.setPlaceholderText("an SQLite file, or an SQLAlchemy URL (sqlite:///…, postgresql://…)")
        self.storage.returnPressed.connect(self.read)
        browse = QPushButton("Browse…")
        browse.clicked.connect(self._browse)
        self.read_button = QPushButton("List studies")
        self.read_button.clicked.connect(self.read)
        row = QHBoxLayout()
        row.addWidget(self.storage, 1)
        row.addWidget(browse)
        row.addWidget(self.read_button)
        self.studies = QComboBox()
        self.studies.setObjectName("studyNames")
        self.message = QLabel("Name a storage, then List studies.")
        self.message.setObjectName("attachMessage")
        self.message.setWordWrap(True)
        self.message.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel
        )
        self.buttons.button(QDialogButtonBox.StandardButton.Ok).setText("Attach")
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        form = QFormLayout()
        form.addRow("Storage", row)
        form.addRow("Study", self.studies)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(self.message)
        layout.addWidget(self.buttons)
        self.resize(640, 180)
        self._update()

    def _browse(self) -> None:
        path, _filter = QFileDialog.getOpenFileName(
            self,
            "Optuna SQLite database",
            str(Path.home()),
            "SQLite (*.db *.sqlite *.sqlite3);;All files (*)",
        )
        if path:
            self.storage.setText(path)
            self.read()

    def read(self) -> None:
        """List the studies of the storage typed (off the GUI thread)."""
        text = self.storage.text().strip()
        self._generation += 1
        generation = self._generation
        self._url = None
        self.studies.clear()
        self._update()
        if not text:
            self.message.setText("Name a storage first.")
            return
        self.message.setText("Reading…")

        def names() -> tuple[str, list[str]]:
            url = storage_url(text)
            return url, study_names(url)

        self._background.run(
            names,
            lambda result: self._listed(generation, *result),
            lambda message: self._failed(generation, message),
            name="study-list",
        )

    def _failed(self, generation: int, message: str) -> None:
        if generation == self._generation:
            self.message.setText(message)

    def _listed(self, generation: int, url: str, names: list[str]) -> None:
        if generation != self._generation:
            return
        if not names:
            self.message.setText(f"{self.storage.text().strip()} holds no study.")
            return
        self._url = url
        self.studies.addItems(names)
        self.message.setText(
            f"{len(names)} studies: choose one." if len(names) > 1 else "One study: Attach shows it."
        )
        self._update()

    def _update(self) -> None:
        self.buttons.button(QDialogButtonBox.StandardButton.Ok).setEnabled(
            self._url is not None and self.studies.count() > 0
        )

    def url(self) -> str | None:
        return self._url

    def study(self) -> str:
        return self.studies.currentText()


class StudyDock(QDockWidget):
    """An attached study beside the runs: closing it stops its refresh and its dashboard."""

    def __init__(self, study: StudyWidget, name: str, parent: QWidget | None = None) -> None:
        super().__init__(f"Study: {name}", parent)
        self.setObjectName(f"studyDock-{name}")
        self.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        self.study = study
        self.setWidget(study)

    def closeEvent(self, event: QCloseEvent) -> None:
        self.study.stop()
        super().closeEvent(event)
