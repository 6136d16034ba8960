"""WorkerForm: the generated form of any worker kind, over a WorkerModel."""

from __future__ import annotations

from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLineEdit,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from gym_gui.core.config import MAX_RENDER_FPS
from gym_gui.core.records import WorkerDescription
from gym_gui.core.workers import BUDGET_BOUNDS
from gym_gui.ui.daemon_link import DaemonLink
from gym_gui.ui.forms.base import RunForm
from gym_gui.ui.forms.model import SEED_MAX, WorkerModel
from gym_gui.ui.forms.widgets import (
    ExecutorRow,
    ParamEditors,
    bind,
    env_combo,
    mark,
    scrolled,
    set_combo_text,
)
from gym_gui.ui.settings import Settings
from gym_gui.workers import worker_catalog


class WorkerForm(RunForm):
    """The form of a worker kind from its plugin: environment, seed, budget, render rate, the
    parameters the plugin describes (``parameters`` in its DescribeWorker answer: name, type,
    default, help, choices — the shape CleanRL script arguments have), sent as ``params``, and a
    password field per secret the kind takes (``WorkerSpec.secrets``), sent as the run's secrets only.

    The plugin is asked again for the chosen environment (query ``env_id``) whenever it changes, so a
    default may depend on it (the LLM worker's system prompt template is its family's).
    """

    model: WorkerModel

    def __init__(
        self,
        kind: str,
        link: DaemonLink,
        settings: Settings | None = None,
        parent: QWidget | None = None,
    ) -> None:
        self.worker_kind = kind
        spec = worker_catalog().spec(kind)
        model = WorkerModel(kind)
        if spec.default_budget is not None:  # the kind's own starting budget, until the user's comes back
            model.budget_kind, model.budget = spec.default_budget
        super().__init__(model, link, settings, parent)
        self.env_combo = env_combo()
        self.seed_spin = QSpinBox()
        self.seed_spin.setRange(0, SEED_MAX)
        self.budget_kind_combo = QComboBox()
        self.budget_kind_combo.addItems(list(BUDGET_BOUNDS))
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
        self.secret_edits: dict[str, QLineEdit] = {}
        for name in spec.secrets:
            edit = QLineEdit()
            edit.setObjectName(f"secret:{name}")
            edit.setEchoMode(QLineEdit.EchoMode.Password)
            edit.setPlaceholderText(f"default: {name} of gym_gui's environment; never stored")
            edit.setToolTip(
                f"Handed to this run's worker only; empty: {name} as gym_gui's environment holds it"
            )
            self.model.secrets.setdefault(name, "")
            edit.textChanged.connect(lambda text, name=name: self._secret_typed(name, text))
            self.secret_edits[name] = edit
        self._described_env: str | None = None

        budget_row = QHBoxLayout()
        budget_row.addWidget(self.budget_spin, 1)
        budget_row.addWidget(self.budget_kind_combo)
        box = QGroupBox(spec.display_name)
        form = QFormLayout(box)
        form.addRow("Environment", self.env_combo)
        form.addRow("Seed", self.seed_spin)
        form.addRow("Budget", budget_row)
        form.addRow("Render fps", self.render_fps_spin)
        self.executor_row = ExecutorRow()
        form.addRow("Runs on", self.executor_row)
        for name, edit in self.secret_edits.items():
            form.addRow(name, edit)
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
            *self.executor_row.bind(model, self._changed),
        ]
        self.restore_settings()
        self._validate()
        self._describe()

    def _describe(self) -> None:
        """Ask the plugin for its parameters for the chosen environment (once per environment)."""
        env_id = self.model.env_id.strip()
        if env_id == self._described_env:
            return
        self._described_env = env_id
        display_name = worker_catalog().spec(self.worker_kind).display_name
        self.link.call(
            lambda client: client.describe_worker(self.worker_kind, env_id=env_id),
            lambda description: self._described(env_id, description),
            lambda message: self._show_error(f"the daemon could not describe {display_name}: {message}"),
        )

    def _changed(self) -> None:
        super()._changed()
        self._describe()

    def _secret_typed(self, name: str, text: str) -> None:
        self.model.secrets[name] = text
        self._changed()

    def _described(self, env_id: str, description: WorkerDescription) -> None:
        if env_id != self._described_env:
            return  # an answer for an environment since left
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
        self.executor_row.mark(errors)
        self.params_box.mark(errors)

    def param_names(self) -> list[str]:
        return self.params_box.names()

    def param_editor(self, name: str) -> QWidget | None:
        return self.params_box.editor_widget(name)

    def set_env(self, env_id: str) -> None:
        set_combo_text(self.env_combo, env_id)
