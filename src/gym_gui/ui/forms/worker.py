"""WorkerForm: the generated form of any worker kind, over a WorkerModel."""

from __future__ import annotations

from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from gym_gui.core.config import MAX_RENDER_FPS
from gym_gui.core.records import WorkerDescription
from gym_gui.ui.daemon_link import DaemonLink
from gym_gui.ui.forms.base import RunForm
from gym_gui.ui.forms.model import BUDGET_KINDS, SEED_MAX, WorkerModel
from gym_gui.ui.forms.widgets import ParamEditors, bind, env_combo, mark, scrolled, set_combo_text
from gym_gui.ui.settings import Settings
from gym_gui.workers import worker_catalog


class WorkerForm(RunForm):
    """The form of a worker kind from its plugin: environment, seed, budget, render rate, and the
    parameters the plugin describes (``parameters`` in its DescribeWorker answer: name, type,
    default, help, choices — the shape CleanRL script arguments have), sent as ``params``."""

    model: WorkerModel

    def __init__(
        self,
        kind: str,
        link: DaemonLink,
        settings: Settings | None = None,
        parent: QWidget | None = None,
    ) -> None:
        self.worker_kind = kind
        super().__init__(WorkerModel(kind), link, settings, parent)
        spec = worker_catalog().spec(kind)
        self.env_combo = env_combo()
        self.seed_spin = QSpinBox()
        self.seed_spin.setRange(0, SEED_MAX)
        self.budget_kind_combo = QComboBox()
        self.budget_kind_combo.addItems(list(BUDGET_KINDS))
        self.budget_spin = QSpinBox()
        self.budget_spin.setObjectName("budget")
        self.budget_spin.setRange(1, SEED_MAX)
        self.render_fps_spin = QDoubleSpinBox()
        self.render_fps_spin.setRange(0.0, MAX_RENDER_FPS)
        self.render_fps_spin.setDecimals(1)
        self.render_fps_spin.setToolTip("Encoded frames per second for pixel environments (0: none).")
        self.dry_run_check = QCheckBox("Dry run")
        self.params_box = ParamEditors("Parameters", "")
        self.params_box.hide()

        budget_row = QHBoxLayout()
        budget_row.addWidget(self.budget_spin, 1)
        budget_row.addWidget(self.budget_kind_combo)
        box = QGroupBox(spec.display_name)
        form = QFormLayout(box)
        form.addRow("Environment", self.env_combo)
        form.addRow("Seed", self.seed_spin)
        form.addRow("Budget", budget_row)
        form.addRow("Render fps", self.render_fps_spin)
        form.addRow("", self.dry_run_check)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(scrolled(box, self.params_box), 1)
        layout.addWidget(self.error_label)
        layout.addWidget(self.status_label)
        layout.addWidget(self.submit_button)

        model = self.model
        self._shows = [
            bind(self.env_combo, model, "env_id", self._changed),
            bind(self.seed_spin, model, "seed", self._changed),
            bind(self.budget_kind_combo, model, "budget_kind", self._changed),
            bind(self.budget_spin, model, "budget", self._changed),
            bind(self.render_fps_spin, model, "render_fps", self._changed),
            bind(self.dry_run_check, model, "dry_run", self._changed),
        ]
        self.restore_settings()
        self._validate()
        self.link.call(
            lambda client: client.describe_worker(kind),
            self._described,
            lambda message: self._show_error(f"the daemon could not describe {spec.display_name}: {message}"),
        )

    def _described(self, description: WorkerDescription) -> None:
        params = description.details.get("parameters") or []
        self.model.use_parameters(params)
        self.params_box.show_params(self.model.params, self._changed)
        self.params_box.setVisible(bool(params))
        self._validate()

    def refresh(self) -> None:
        for show in self._shows:
            show()
        self.params_box.refresh()

    def mark(self, errors: dict[str, str]) -> None:
        mark(self.env_combo, errors.get("env_id", ""))
        self.params_box.mark(errors)

    def param_names(self) -> list[str]:
        return self.params_box.names()

    def param_editor(self, name: str) -> QWidget | None:
        return self.params_box.editor_widget(name)

    def set_env(self, env_id: str) -> None:
        set_combo_text(self.env_combo, env_id)
