"""The Optuna tab: the study a sweep's trial run belongs to, its own trial highlighted, and Stop for the sweep."""

from __future__ import annotations

from PySide6.QtCore import QTimer
from PySide6.QtGui import QHideEvent, QShowEvent
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget

from gym_gui.core.errors import GymGuiError
from gym_gui.core.records import RunRecord, SweepRecord
from gym_gui.core.states import SweepState
from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.home import Home
from gym_gui.storage.run_dir import Manifest, RunDir
from gym_gui.ui.daemon_link import DaemonLink
from gym_gui.ui.study.view import REFRESH_MS, StudyWidget
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
    """The run's study (``optuna_db``, ``optuna_study`` of its manifest) in a :class:`StudyWidget`.

    Above it, for a run this home's daemon plays as a sweep's trial (``sweep_id``), the sweep's state
    and **Stop sweep** (``gym-gui sweep stop``: no new trials, the running trials' runs cancelled),
    enabled while the sweep runs. The state is read again every few seconds while the tab is shown,
    until the sweep has ended.
    """

    title = "Optuna"

    def __init__(self, link: DaemonLink, parent: QWidget | None = None) -> None:
        super().__init__(link, parent)
        self.study = StudyWidget(Home(link.home))
        self.run_requested = self.study.run_requested
        self.train_requested = self.study.train_requested
        self.sweep: SweepRecord | None = None  # the sweep's row as last read
        self._generation = 0
        self._reading = False
        self.sweep_label = QLabel()
        self.sweep_label.setObjectName("sweepState")
        self.sweep_label.setWordWrap(True)
        self.stop_button = QPushButton("Stop sweep")
        self.stop_button.setObjectName("stopSweep")
        self.stop_button.setToolTip(
            "No new trials; the running trials' runs are cancelled (gym-gui sweep stop)"
        )
        self.stop_button.setEnabled(False)
        self.stop_button.clicked.connect(self.stop_sweep)
        self.sweep_row = QWidget()
        row = QHBoxLayout(self.sweep_row)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.sweep_label, 1)
        row.addWidget(self.stop_button)
        self.sweep_row.hide()
        self._timer = QTimer(self)
        self._timer.setInterval(REFRESH_MS)
        self._timer.timeout.connect(self.read_sweep)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.sweep_row)
        layout.addWidget(self.study, 1)

    def attach(self, run: RunRecord) -> None:
        super().attach(run)
        manifest = trial_manifest(run)
        if manifest is None or manifest.optuna_db is None or manifest.optuna_study is None:
            self.study.title.setText("This run is not a trial of a sweep.")
            return
        self.study.show_study(manifest.optuna_db, manifest.optuna_study, manifest.optuna_trial)
        if run.sweep_id:
            self.sweep_row.show()
            self.sweep_label.setText(f"sweep {run.sweep_id}: reading its state…")
            self.read_sweep()
            if self.isVisible():
                self._timer.start()

    def detach(self) -> None:
        self._generation += 1
        self._reading = False
        self._timer.stop()
        self.study.stop()
        super().detach()

    def showEvent(self, event: QShowEvent) -> None:
        super().showEvent(event)
        if self.run is not None and self.run.sweep_id and not (self.sweep and self.sweep.state.ended):
            self._timer.start()
            self.read_sweep()

    def hideEvent(self, event: QHideEvent) -> None:
        super().hideEvent(event)
        self._timer.stop()

    # ------------------------------------------------------------ the sweep

    def read_sweep(self) -> None:
        """Ask the daemon for the sweep's row (off the GUI thread); one read at a time."""
        sweep_id = self.run.sweep_id if self.run is not None else ""
        if not sweep_id or self._reading:
            return
        self._reading = True
        generation = self._generation

        def row(client: DaemonClient) -> SweepRecord:
            # The registry's rows, not GetSweep: that one reads the study too, which the view below reads.
            found = next((r for r in client.list_sweeps() if r.sweep_id == sweep_id), None)
            if found is None:
                raise GymGuiError(f"sweep {sweep_id} is not in this daemon's registry")
            return found

        self.link.call(
            row,
            lambda record: self._answered(generation, record, reading=True),
            lambda message: self._answered(generation, message, reading=True),
        )

    def stop_sweep(self) -> None:
        """Stop the sweep (as ``gym-gui sweep stop``); its state follows."""
        sweep_id = self.run.sweep_id if self.run is not None else ""
        if not sweep_id:
            return
        self.stop_button.setEnabled(False)
        self.sweep_label.setText(f"sweep {sweep_id}: stopping…")
        generation = self._generation
        self.link.call(
            lambda client: client.stop_sweep(sweep_id),
            lambda record: self._answered(generation, record),
            lambda message: self._answered(generation, message),
        )

    def _answered(self, generation: int, answer: SweepRecord | str, reading: bool = False) -> None:
        """Show the sweep's row as the daemon answered it, or its message (in red) above the last row."""
        if generation != self._generation:
            return
        if reading:
            self._reading = False
        if isinstance(answer, str):
            self.sweep_label.setStyleSheet("color: #c62828;")
            self.sweep_label.setText(answer)
            if not reading:  # the stop was refused (the sweep ended meanwhile?): read where it is
                self.read_sweep()
        else:
            self.sweep = answer
            reason = f": {answer.reason}" if answer.reason else ""
            self.sweep_label.setStyleSheet("")
            self.sweep_label.setText(f"sweep {answer.sweep_id}: {answer.state.value}{reason}")
            if answer.state.ended:
                self._timer.stop()
        self.stop_button.setEnabled(self.sweep is not None and self.sweep.state is SweepState.RUNNING)
