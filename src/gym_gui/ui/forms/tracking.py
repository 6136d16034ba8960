"""The tracking box: Weights & Biases, over a TrackingModel."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtWidgets import QComboBox, QFormLayout, QGroupBox, QLineEdit, QWidget

from gym_gui.ui.forms.sections import WANDB_MODES, TrackingModel
from gym_gui.ui.forms.widgets import bind


class TrackingBox(QGroupBox):
    """Where a run's metrics go besides gym_gui's storage; the W&B key is never saved or shown."""

    def __init__(
        self, tracking: TrackingModel, changed: Callable[[], None], parent: QWidget | None = None
    ) -> None:
        """Show ``tracking`` (edited in place); ``changed`` after every edit."""
        super().__init__("Tracking", parent)
        self.tracking = tracking
        self.wandb_mode_combo = QComboBox()
        self.wandb_mode_combo.addItems(list(WANDB_MODES))
        self.wandb_project_edit = QLineEdit()
        self.wandb_project_edit.setPlaceholderText("cleanRL")
        self.wandb_entity_edit = QLineEdit()
        self.wandb_entity_edit.setPlaceholderText("your user or team")
        self.wandb_run_name_edit = QLineEdit()
        self.wandb_run_name_edit.setPlaceholderText("default: the run id")
        self.wandb_server_edit = QLineEdit()
        self.wandb_server_edit.setPlaceholderText("default: W&B's cloud (or WANDB_BASE_URL)")
        self.wandb_server_edit.setToolTip("A self-hosted W&B server, e.g. http://wandb.lab:8080")
        self.wandb_key_edit = QLineEdit()
        self.wandb_key_edit.setObjectName("wandbApiKey")
        self.wandb_key_edit.setEchoMode(QLineEdit.EchoMode.Password)
        self.wandb_key_edit.setPlaceholderText("default: WANDB_API_KEY or `wandb login`; never saved")
        self.wandb_key_edit.setToolTip(
            "For online mode. Empty: the key W&B's own tools use (WANDB_API_KEY, else a `wandb login`). "
            "Handed to this run's worker in its environment only; never written to disk or shown."
        )
        rows = QFormLayout(self)
        rows.addRow("W&&B", self.wandb_mode_combo)
        rows.addRow("W&&B project", self.wandb_project_edit)
        rows.addRow("W&&B entity", self.wandb_entity_edit)
        rows.addRow("W&&B run name", self.wandb_run_name_edit)
        rows.addRow("W&&B server", self.wandb_server_edit)
        rows.addRow("W&&B API key", self.wandb_key_edit)
        self._shows = [
            bind(widget, tracking, name, changed)
            for widget, name in (
                (self.wandb_mode_combo, "wandb_mode"),
                (self.wandb_project_edit, "wandb_project"),
                (self.wandb_entity_edit, "wandb_entity"),
                (self.wandb_run_name_edit, "wandb_run_name"),
                (self.wandb_server_edit, "wandb_server"),
                (self.wandb_key_edit, "wandb_api_key"),
            )
        ]

    def refresh(self) -> None:
        for show in self._shows:
            show()
        self.enable_dependents()

    def enable_dependents(self) -> None:
        tracking = self.tracking
        for widget in (
            self.wandb_project_edit,
            self.wandb_entity_edit,
            self.wandb_run_name_edit,
            self.wandb_server_edit,
        ):
            widget.setEnabled(tracking.tracked)
        self.wandb_key_edit.setEnabled(tracking.wandb_mode == "online")
