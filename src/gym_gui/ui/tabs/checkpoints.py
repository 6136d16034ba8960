"""The Checkpoints tab: a run's saved models with their step, evaluation of one, and the videos it captured."""

from __future__ import annotations

import logging
from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QDoubleSpinBox,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSpinBox,
    QTableWidget,
    QVBoxLayout,
    QWidget,
)

from gym_gui.core.records import RunRecord
from gym_gui.protocol.client import DaemonClient
from gym_gui.ui.artifacts import RunArtifacts, read_artifacts
from gym_gui.ui.background import Background
from gym_gui.ui.daemon_link import DaemonLink
from gym_gui.ui.tables import read_only_item, row_table
from gym_gui.ui.tabs.base import RunTab
from gym_gui.ui.videos import VideosPanel

log = logging.getLogger(__name__)

DEFAULT_EPISODES = 5
DEFAULT_RENDER_FPS = 30.0


def submit_evaluation(
    client: DaemonClient,
    run_id: str,
    checkpoint: str,
    episodes: int,
    render_fps: float,
    real_time: bool,
    env_id: str | None = None,
) -> str:
    """Submit an evaluation run of ``checkpoint`` of ``run_id`` (what `gym-gui eval` submits), on ``env_id``
    (default: the run's; the daemon refuses another before anything is stored); returns its id."""
    config = client.evaluation_config(
        run_id, episodes, checkpoint, render_fps=render_fps, real_time=real_time, env_id=env_id
    )
    record, _ = client.submit(config)
    return record.run_id


class CheckpointsTab(RunTab):
    """The run's saved models and captured videos.

    Evaluate submits a telemetry-lane run that plays the selected model (the same run
    `gym-gui eval RUN --checkpoint PATH` starts) and emits ``evaluation_started(run_id)`` so the
    window can switch to it. Captured videos play in the tab (:class:`VideosPanel`).
    """

    title = "Checkpoints"
    evaluation_started = Signal(str)

    def __init__(self, link: DaemonLink, parent: QWidget | None = None) -> None:
        super().__init__(link, parent)
        self.artifacts: RunArtifacts | None = None
        self._generation = 0
        self._background = Background(self)

        self.models = row_table(["step", "kind", "size", "path"])
        self.models.itemSelectionChanged.connect(self._update_buttons)
        self.models_message = QLabel("No run selected.")
        self.models_message.setWordWrap(True)
        self.episodes = QSpinBox()
        self.episodes.setRange(1, 10_000)
        self.episodes.setValue(DEFAULT_EPISODES)
        self.episodes.setToolTip("Episodes the evaluation plays")
        self.render_fps = QDoubleSpinBox()
        self.render_fps.setRange(0.0, 240.0)
        self.render_fps.setDecimals(0)
        self.render_fps.setValue(DEFAULT_RENDER_FPS)
        self.render_fps.setToolTip("Frames per second stored for the Live and Replay tabs (0: none)")
        self.real_time = QCheckBox("Real time")
        self.real_time.setChecked(True)
        self.real_time.setToolTip(
            "Play at the environment's own frame rate, to watch the agent in the Live tab; "
            "unticked, the evaluation plays as fast as it can"
        )
        self.evaluate_button = QPushButton("Evaluate")
        self.evaluate_button.setToolTip("Play the selected model as a new, replayable run")
        self.evaluate_button.clicked.connect(self.evaluate)
        self.evaluate_status = QLabel("")
        self.evaluate_status.setWordWrap(True)

        self.videos = VideosPanel()

        controls = QHBoxLayout()
        controls.addWidget(QLabel("Episodes"))
        controls.addWidget(self.episodes)
        controls.addWidget(QLabel("Render fps"))
        controls.addWidget(self.render_fps)
        controls.addWidget(self.real_time)
        controls.addWidget(self.evaluate_button)
        controls.addWidget(self.evaluate_status, 1)
        models_box = QGroupBox("Saved models")
        models_layout = QVBoxLayout(models_box)
        models_layout.addWidget(self.models_message)
        models_layout.addWidget(self.models, 1)
        models_layout.addLayout(controls)
        videos_box = QGroupBox("Videos")
        videos_layout = QVBoxLayout(videos_box)
        videos_layout.addWidget(self.videos, 1)
        layout = QVBoxLayout(self)
        layout.addWidget(models_box, 2)
        layout.addWidget(videos_box, 3)
        self._update_buttons()

    # ------------------------------------------------------------ RunTab

    def attach(self, run: RunRecord) -> None:
        super().attach(run)
        self._show(None)
        self.models_message.setText("Reading the run's manifest…")
        self.evaluate_status.setText("")
        self.refresh()

    def run_changed(self, run: RunRecord) -> None:
        super().run_changed(run)
        self.refresh()

    def detach(self) -> None:
        self._generation += 1
        self._show(None)
        self.models_message.setText("No run selected.")
        self.evaluate_status.setText("")
        super().detach()

    def refresh(self) -> None:
        """Re-read the run's manifest (off the GUI thread) and list what it holds."""
        run = self.run
        if run is None:
            return
        self._generation += 1
        generation = self._generation
        run_dir, worker = Path(run.run_dir), run.worker
        self._background.run(
            lambda: read_artifacts(run_dir, worker),
            lambda artifacts: self._show(artifacts) if generation == self._generation else None,
            lambda message: (
                self.models_message.setText(f"The run's manifest could not be read: {message}")
                if generation == self._generation
                else None
            ),
            name=f"checkpoints-{run.run_id}",
        )

    # ------------------------------------------------------------ showing

    def _show(self, artifacts: RunArtifacts | None) -> None:
        selected_model = self.selected_model()
        self.artifacts = artifacts
        self.models.setRowCount(0)
        if artifacts is None:
            self.videos.set_videos(None, [])
        if artifacts is not None:
            for row, model in enumerate(artifacts.models):
                self.models.insertRow(row)
                size = f"{model.size / 1024:,.0f} KiB" if model.exists else "missing"
                self.models.setItem(row, 0, read_only_item(f"{model.step:,}", model.path, align_right=True))
                self.models.setItem(row, 1, read_only_item("final" if model.kind == "model" else model.kind))
                self.models.setItem(row, 2, read_only_item(size, align_right=True))
                self.models.setItem(row, 3, read_only_item(model.path))
            self.videos.set_videos(Path(self.run.run_dir) if self.run else None, artifacts.videos)
            self.models_message.setText(
                f"{len(artifacts.models)} saved model(s)."
                if artifacts.models
                else "No saved model yet: CleanRL runs save their final model when training ends, "
                "and a checkpoint every N steps when the training form asks for it."
            )
            self._reselect(self.models, selected_model)
            if self.models.currentRow() < 0 and artifacts.models:
                # Default to the newest model, the one most often wanted.
                self.models.selectRow(len(artifacts.models) - 1)
        self._update_buttons()

    @staticmethod
    def _reselect(table: QTableWidget, path: str | None) -> None:
        if path is None:
            return
        for row in range(table.rowCount()):
            item = table.item(row, 0)
            if item is not None and item.data(Qt.ItemDataRole.UserRole) == path:
                table.selectRow(row)
                return

    def _update_buttons(self) -> None:
        model = self.selected_model()
        reason = self._evaluate_blocked_reason(model)
        self.evaluate_button.setEnabled(reason is None)
        self.evaluate_button.setToolTip(reason or "Play the selected model as a new, replayable run")

    def _evaluate_blocked_reason(self, model: str | None) -> str | None:
        if self.artifacts is None:
            return "no run selected"
        if self.artifacts.evaluable is not None:
            return self.artifacts.evaluable
        if model is None:
            return "select a saved model"
        found = next((m for m in self.artifacts.models if m.path == model), None)
        if found is None or not found.exists:
            return f"{model} is not on disk"
        return None

    # ------------------------------------------------------------ selection

    def selected_model(self) -> str | None:
        """The selected model's path inside the run directory."""
        return self._selected(self.models)

    def selected_video(self) -> str | None:
        return self.videos.selected_video()

    def select_model(self, path: str) -> None:
        self._reselect(self.models, path)

    def select_video(self, path: str) -> None:
        self.videos.select_video(path)

    @staticmethod
    def _selected(table: QTableWidget) -> str | None:
        rows = table.selectionModel().selectedRows() if table.selectionModel() else []
        if not rows:
            return None
        item = table.item(rows[0].row(), 0)
        return None if item is None else item.data(Qt.ItemDataRole.UserRole)

    # ------------------------------------------------------------ actions

    def evaluate(self) -> None:
        """Submit an evaluation run of the selected model; ``evaluation_started`` fires with its id."""
        run, model = self.run, self.selected_model()
        reason = self._evaluate_blocked_reason(model)
        if run is None or model is None or reason is not None:
            self.evaluate_status.setText(reason or "")
            return
        run_id, episodes, fps = run.run_id, self.episodes.value(), self.render_fps.value()
        real_time = self.real_time.isChecked()
        self.evaluate_button.setEnabled(False)
        self.evaluate_status.setText(f"Starting an evaluation of {model}…")
        self.link.call(
            lambda client: submit_evaluation(client, run_id, model, episodes, fps, real_time),
            self._evaluation_submitted,
            self._evaluation_failed,
        )

    def _evaluation_submitted(self, run_id: str) -> None:
        self.evaluate_status.setText(f"Evaluation {run_id} started.")
        self._update_buttons()
        self.evaluation_started.emit(run_id)

    def _evaluation_failed(self, message: str) -> None:
        self.evaluate_status.setText(f"The evaluation could not start: {message}")
        self._update_buttons()
