"""The Optuna tab: the study a sweep's trial run belongs to, its own trial highlighted."""

from __future__ import annotations

from PySide6.QtWidgets import QVBoxLayout, QWidget

from gym_gui.core.errors import GymGuiError
from gym_gui.core.records import RunRecord
from gym_gui.storage.home import Home
from gym_gui.storage.run_dir import Manifest, RunDir
from gym_gui.ui.daemon_link import DaemonLink
from gym_gui.ui.study.view import StudyWidget
from gym_gui.ui.tabs.base import RunTab


def trial_manifest(run: RunRecord) -> Manifest | None:
    """The run's manifest when it names a study and its trial (a sweep's trial run), else None."""
    if not run.run_dir:
        return None
    try:
        manifest = RunDir(run.run_dir).read_manifest()
    except GymGuiError:  # a damaged manifest: the run opens without the tab, its other tabs say why
        return None
    return manifest if manifest.optuna_db and manifest.optuna_study else None


class OptunaTab(RunTab):
    """The run's study (``optuna_db``, ``optuna_study`` of its manifest) in a :class:`StudyWidget`."""

    title = "Optuna"

    def __init__(self, link: DaemonLink, parent: QWidget | None = None) -> None:
        super().__init__(link, parent)
        self.study = StudyWidget(Home(link.home))
        self.run_requested = self.study.run_requested
        self.train_requested = self.study.train_requested
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.study)

    def attach(self, run: RunRecord) -> None:
        super().attach(run)
        manifest = trial_manifest(run)
        if manifest is None or manifest.optuna_db is None or manifest.optuna_study is None:
            self.study.title.setText("This run is not a trial of a sweep.")
            return
        self.study.show_study(manifest.optuna_db, manifest.optuna_study, manifest.optuna_trial)

    def detach(self) -> None:
        self.study.stop()
        super().detach()
