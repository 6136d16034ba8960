"""Installing an environment family from the window: the picker's Install action, with its progress."""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QMenu, QProgressBar, QPushButton, QVBoxLayout, QWidget

from gym_gui.core.envs import EnvFamily
from gym_gui.core.records import BundleProgress
from gym_gui.envs.catalog import env_families, family_installed
from gym_gui.storage.home import Home
from gym_gui.ui.background import Background
from gym_gui.workers import worker_catalog
from gym_gui.workers.family_install import install_family


def installable() -> list[EnvFamily]:
    """The families this machine can install and has not: those with packages of their own."""
    return [
        family
        for family in env_families().values()
        if family.packages and not family.unavailable and not family_installed(family.name)
    ]


class FamilyInstaller(QWidget):
    """Install… lists the families not installed here; choosing one installs it as `gym-gui envs install`
    does (its packages into gym_gui's environment, its extra into the bundles that train on it), off the
    GUI thread, with a progress bar of its steps and a line saying what was done or what went wrong.
    Nothing is installed but what the user chose."""

    installed = Signal(str)  # the family's name, once it is installed

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.button = QPushButton("Install a family…")
        self.button.setObjectName("installFamily")
        self.menu = QMenu(self.button)
        self.menu.aboutToShow.connect(self._fill_menu)
        self.button.setMenu(self.menu)
        self.progress = QProgressBar()
        self.progress.setObjectName("installProgress")
        self.progress.hide()
        self.status = QLabel()
        self.status.setObjectName("installStatus")
        self.status.setWordWrap(True)
        self.status.hide()
        row = QHBoxLayout()
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.button)
        row.addWidget(self.progress, 1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(row)
        layout.addWidget(self.status)
        self._background = Background(self, workers=1, name="family-install")
        self.setVisible(bool(installable()))

    def _fill_menu(self) -> None:
        self.menu.clear()
        for family in installable():
            action = self.menu.addAction(f"{family.title} ({', '.join(family.packages)})")
            action.setData(family.name)
            action.triggered.connect(lambda _checked=False, name=family.name: self.install(name))

    def install(self, name: str) -> None:
        """Install family ``name`` in the background; :attr:`installed` says when it is done."""
        self.button.setEnabled(False)
        self.progress.setRange(0, 0)  # busy until the first step says how many there are
        self.progress.show()
        self._say(f"installing {name}…")
        bundles = worker_catalog().bundle_directory(Home().bundles_dir)
        self._background.run(
            lambda: install_family(name, bundles, lambda update: self._background.post(self._step, update)),
            lambda done: self._finished(name, done),
            self._failed,
            name=f"installing family {name}",
        )

    def _step(self, update: BundleProgress) -> None:
        self.progress.setRange(0, update.total)
        self.progress.setValue(update.total if update.phase == "installed" else max(update.step - 1, 0))
        self.progress.setFormat(f"%v/%m {update.message}")

    def _finished(self, name: str, done: list[str]) -> None:
        self.progress.hide()
        self.button.setEnabled(True)
        self._say("\n".join(done))
        self.setVisible(True)  # the result stays readable even when nothing is left to install
        self.installed.emit(name)

    def _failed(self, message: str) -> None:
        self.progress.hide()
        self.button.setEnabled(True)
        self._say(message)

    def _say(self, text: str) -> None:
        self.status.setText(text)
        self.status.show()
