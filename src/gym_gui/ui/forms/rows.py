"""The run form's common rows and declared sections: environment, seed, budget, render rate, GPU,
where it runs, checkpoints, warm start, the kind's secrets and notes, tied to a RunModel."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from gym_gui_sdk.contract import EnvChoice, FormSpec, Section
from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QGridLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QSpinBox,
    QWidget,
)

from gym_gui.core.config import MAX_RENDER_FPS
from gym_gui.core.workers import WorkerSpec
from gym_gui.datasets import DatasetCard
from gym_gui.ui.forms.model import SEED_MAX, RunModel
from gym_gui.ui.forms.widgets import (
    ExecutorRow,
    bind,
    env_combo,
    mark,
    monospace,
    set_combo_text,
    show_env_choices,
)

START_FROM_TIP = (
    "Start training from another run's final model (ppo and dqn families, the same environment): "
    "a finished run of this kind with a saved model, or empty for new weights"
)
BUDGET_TIP = "How long the run goes: environment steps or episodes."
DATASET_TIP = "The dataset of the home the run learns from; the run's environment is the dataset's."


class CommonRows(QGroupBox):
    """The rows every kind's form has, and those of the sections its form spec declares (hidden until
    it does): GPU (``resources``), checkpoints (``checkpoints.every_steps``), warm start."""

    def __init__(
        self,
        spec: WorkerSpec,
        model: RunModel,
        changed: Callable[[], None],
        secret_typed: Callable[[str, str], None],
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(spec.display_name, parent)
        self.model = model
        self._changed = changed
        # The home's datasets (Section.DATASETS): name → its environment (None: recorded without one).
        self.dataset_envs: dict[str, str | None] = {}
        self.dataset_combo = QComboBox()
        self.dataset_combo.setObjectName("dataset")
        self.dataset_combo.setPlaceholderText("none in the home: `gym-gui dataset create` makes one")
        self.dataset_combo.setToolTip(DATASET_TIP)
        self.env_combo = env_combo()
        self.env_note = QLabel()
        self.env_note.setObjectName("envNote")
        self.env_note.setWordWrap(True)
        self.seed_spin = QSpinBox()
        self.seed_spin.setRange(0, SEED_MAX)
        self.budget_edit = QLineEdit()
        self.budget_edit.setObjectName("budget")
        self.budget_kind_combo = QComboBox()
        self.budget_kind_combo.setObjectName("budgetKind")
        self.render_fps_spin = QDoubleSpinBox()
        self.render_fps_spin.setRange(0.0, MAX_RENDER_FPS)
        self.render_fps_spin.setDecimals(1)
        self.render_fps_spin.setToolTip("Encoded frames per second for pixel environments (0: none).")
        self.gpu_check = QCheckBox("GPU")
        self.gpu_check.setToolTip(
            "Use a GPU when torch in the worker's bundle sees one; without one the run goes on the CPU "
            "with a warning (the daemon checks at launch)."
        )
        self.gpu_mandatory_check = QCheckBox("mandatory")
        self.gpu_mandatory_check.setToolTip("Fail before launch when no GPU is available.")
        self.checkpoint_every_edit = QLineEdit()
        self.checkpoint_every_edit.setObjectName("checkpointEvery")
        self.checkpoint_every_edit.setPlaceholderText("final model only")
        # A finished run of this kind whose final model training starts from; empty: new weights.
        self.start_from_combo = QComboBox()
        self.start_from_combo.setObjectName("startFrom")
        self.start_from_combo.setEditable(True)
        self.start_from_combo.addItem("")
        line = self.start_from_combo.lineEdit()
        assert line is not None
        line.setPlaceholderText("new weights")
        self.start_from_combo.setToolTip(START_FROM_TIP)
        self.notes_edit = QPlainTextEdit()
        self.notes_edit.setPlaceholderText("kept with the run")
        self.notes_edit.setMaximumHeight(60)
        self.secret_edits: dict[str, QLineEdit] = {}
        for name in spec.secrets:
            edit = QLineEdit()
            edit.setObjectName(f"secret:{name}")
            edit.setEchoMode(QLineEdit.EchoMode.Password)
            edit.setPlaceholderText(f"default: {name} of gym_gui's environment; never stored")
            edit.setToolTip(
                f"Handed to this run's worker only; empty: {name} as gym_gui's environment holds it"
            )
            edit.textChanged.connect(lambda text, name=name: secret_typed(name, text))
            self.secret_edits[name] = edit
        self.dry_run_check = QCheckBox("Dry run (resolve the command, launch nothing)")
        self.dry_run_output = QPlainTextEdit()
        self.dry_run_output.setObjectName("dryRunOutput")
        self.dry_run_output.setReadOnly(True)
        self.dry_run_output.setFont(monospace())
        self.dry_run_output.setMaximumHeight(90)
        self.dry_run_output.hide()
        self.executor_row = ExecutorRow()
        self._lay_out()
        self._shows = [
            bind(self.dataset_combo, model, "dataset", self._dataset_chosen),
            bind(self.env_combo, model, "env_id", changed),
            bind(self.seed_spin, model, "seed", changed),
            bind(self.budget_edit, model, "budget", changed),
            bind(self.budget_kind_combo, model, "budget_kind", changed),
            bind(self.render_fps_spin, model, "render_fps", changed),
            bind(self.gpu_check, model, "resources.gpu", changed),
            bind(self.gpu_mandatory_check, model, "resources.gpu_mandatory", changed),
            bind(self.checkpoint_every_edit, model, "checkpoint_every", changed),
            bind(self.start_from_combo, model, "warm_start", changed),
            bind(self.notes_edit, model, "notes", changed),
            bind(self.dry_run_check, model, "dry_run", changed),
            *self.executor_row.bind(model, changed),
        ]

    def _lay_out(self) -> None:
        budget_row = QHBoxLayout()
        budget_row.addWidget(self.budget_edit, 1)
        budget_row.addWidget(self.budget_kind_combo)
        self.gpu_row = QWidget()
        gpu = QGridLayout(self.gpu_row)  # two lines: the GPU box names what the bundle has, which can be long
        gpu.setContentsMargins(0, 0, 0, 0)
        gpu.addWidget(self.gpu_check, 0, 0, 1, 3)
        gpu.addWidget(self.gpu_mandatory_check, 1, 0)
        gpu.setColumnStretch(1, 1)
        form = self.form_rows = QFormLayout(self)
        form.addRow("Dataset", self.dataset_combo)
        form.addRow("Environment", self.env_combo)
        form.addRow("", self.env_note)
        form.addRow("Seed", self.seed_spin)
        form.addRow("Budget", budget_row)
        form.addRow("Render fps", self.render_fps_spin)
        form.addRow("Resources", self.gpu_row)
        form.addRow("Runs on", self.executor_row)
        form.addRow("Checkpoint every", self.checkpoint_every_edit)
        form.addRow("Start from", self.start_from_combo)
        for name, edit in self.secret_edits.items():
            form.addRow(name, edit)
        form.addRow("Notes", self.notes_edit)
        form.setRowVisible(self.env_note, False)  # shown when the envs are not known
        form.setRowVisible(self.render_fps_spin, self.model.streams_steps)
        self.show_sections(self.model.form)

    def show_sections(self, form: FormSpec) -> None:
        """Show the rows of the sections ``form`` declares, and the budget's bounds it allows."""
        self.form_rows.setRowVisible(self.gpu_row, form.has(Section.GPU))
        self.form_rows.setRowVisible(self.checkpoint_every_edit, form.has(Section.CHECKPOINTS))
        self.form_rows.setRowVisible(self.start_from_combo, form.has(Section.WARM_START))
        self.form_rows.setRowVisible(self.dataset_combo, form.has(Section.DATASETS))
        # A dataset run's environment is its dataset's (the daemon refuses any other).
        self.env_combo.setEnabled(not form.has(Section.DATASETS))
        if [self.budget_kind_combo.itemText(i) for i in range(self.budget_kind_combo.count())] != list(
            form.budget_bounds
        ):
            self.budget_kind_combo.blockSignals(True)
            self.budget_kind_combo.clear()
            self.budget_kind_combo.addItems(list(form.budget_bounds))
            self.budget_kind_combo.blockSignals(False)
        self.budget_kind_combo.setEnabled(len(form.budget_bounds) > 1)
        if form.has(Section.GPU):
            # Say up front what the daemon will find at launch.
            self.gpu_check.setText("GPU" if form.gpu_available else "GPU (none in the bundle: CPU fallback)")

    def refresh(self) -> None:
        for show in self._shows:
            show()

    def mark(self, errors: dict[str, str]) -> None:
        budget = f"budget.{self.model.budget_kind}"
        mark(self.dataset_combo, errors.get("dataset", ""), DATASET_TIP)
        mark(self.env_combo, errors.get("env_id", ""))
        mark(self.budget_edit, errors.get(budget, ""), BUDGET_TIP)
        mark(self.render_fps_spin, errors.get("telemetry.render_fps", ""))
        mark(
            self.checkpoint_every_edit,
            errors.get("checkpoints.every_steps", ""),
            "Save a checkpoint every N steps.",
        )
        mark(self.start_from_combo, errors.get("warm_start.run_id", ""), START_FROM_TIP)
        self.executor_row.mark(errors)

    def enable_dependents(self) -> None:
        self.gpu_mandatory_check.setEnabled(self.model.resources.gpu)

    def show_envs(self, envs: Sequence[EnvChoice] | None, unknown: str) -> None:
        """Offer the environments the variant trains on (the rest greyed with why), or say why that is
        not known and take any id typed."""
        show_env_choices(self.env_combo, envs)
        if envs is None and self.env_combo.findText(self.model.env_id) < 0:
            self.env_combo.insertItem(0, self.model.env_id)  # the variant's own env is one to offer
        self.env_note.setText(unknown if envs is None else "")
        # A dataset run's environment is its dataset's: nothing to say of the others.
        self.form_rows.setRowVisible(self.env_note, envs is None and not self.model.has(Section.DATASETS))

    def offer_datasets(self, cards: Sequence[DatasetCard]) -> None:
        """Offer the home's datasets (each with its environment, episodes and steps as a tip); the
        chosen one stays chosen while it is there."""
        self.dataset_envs = {card.name: card.env_id for card in cards}
        self.dataset_combo.blockSignals(True)
        self.dataset_combo.clear()
        for index, card in enumerate(cards):
            self.dataset_combo.addItem(card.name)
            env = card.env_id or "no environment"
            self.dataset_combo.setItemData(
                index, f"{env}: {card.episodes} episodes, {card.steps} steps", Qt.ItemDataRole.ToolTipRole
            )
        if self.model.dataset not in self.dataset_envs:
            self.model.dataset = cards[0].name if cards else ""
        self.dataset_combo.setCurrentIndex(self.dataset_combo.findText(self.model.dataset))
        self.dataset_combo.blockSignals(False)
        self._dataset_chosen()

    def _dataset_chosen(self) -> None:
        """The run's environment becomes the chosen dataset's."""
        env_id = self.dataset_envs.get(self.model.dataset)
        if env_id and env_id != self.model.env_id:
            self.model.env_id = env_id
            self.set_env(env_id)
        self._changed()

    def set_env(self, env_id: str) -> None:
        set_combo_text(self.env_combo, env_id)

    def offer_start(self, run_ids: list[str]) -> None:
        for run_id in run_ids:
            if self.start_from_combo.findText(run_id) < 0:
                self.start_from_combo.addItem(run_id)
