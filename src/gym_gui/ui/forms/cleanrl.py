"""CleanRLForm: a CleanRL training form built from the chosen script's own argument definitions."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFormLayout,
    QGridLayout,
    QGroupBox,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from gym_gui.core.config import RunConfig
from gym_gui.core.errors import ConfigError
from gym_gui.core.records import LaunchPreview, RunRecord, WorkerDescription
from gym_gui.core.states import RunState
from gym_gui.protocol.client import DaemonClient
from gym_gui.ui.daemon_link import DaemonLink
from gym_gui.ui.forms.base import RunForm
from gym_gui.ui.forms.model import SEED_MAX, CleanRLModel
from gym_gui.ui.forms.params import Params
from gym_gui.ui.forms.preview import CommandPreview, plan_text
from gym_gui.ui.forms.scripts import ScriptPicker
from gym_gui.ui.forms.tracking import TrackingBox
from gym_gui.ui.forms.widgets import (
    ExecutorRow,
    ParamEditors,
    bind,
    env_combo,
    mark,
    monospace,
    scrolled,
    set_combo_text,
    show_env_choices,
)
from gym_gui.ui.presenters import offers_trained_model
from gym_gui.ui.settings import Settings

START_FROM_TIP = (
    "Start training from another run's final model (ppo and dqn families, the same environment): "
    "a finished run of this kind with a saved model, or empty for new weights"
)


class CleanRLForm(RunForm):
    """A CleanRL training form over a :class:`CleanRLModel`.

    The daemon lists the scripts (non-runnable ones are shown disabled, their reason as tooltip)
    and describes the chosen one's arguments; the "Common" group holds what gym_gui maps onto the
    script (env, seed, budget, GPU, checkpoints), the "Tracking" group TensorBoard, W&B and video,
    and the "Algorithm parameters" group one editor per remaining argument. Only parameters
    changed from the script's default go into ``RunConfig.params``. The W&B API key is passed as
    ``secret_env`` only and never saved. The command shown is the daemon's (PreviewRun).
    """

    described = Signal()  # the chosen algorithm's arguments are shown
    model: CleanRLModel

    def __init__(
        self,
        kind: str,
        link: DaemonLink,
        settings: Settings | None = None,
        parent: QWidget | None = None,
    ) -> None:
        self.worker_kind = kind
        super().__init__(CleanRLModel(kind), link, settings, parent)
        self.algorithms: list[dict[str, Any]] = []
        self.bundle_installed: bool | None = None
        self._generation = 0
        self._loading = False
        self._pending_prefill: tuple[dict[str, Any], str] | None = None
        self._build()
        self.restore_settings()
        link.connection_changed.connect(self._connection)
        link.run_updated.connect(self._run_updated)
        self._validate()
        self.preview.schedule()
        if link.connected:
            self._list_trained()
            self.reload()
        else:
            self.status_label.setText("waiting for the daemon…")

    # -------------------------------------------------------- layout

    def _build(self) -> None:
        model = self.model
        self.picker = ScriptPicker()
        self.picker.chosen.connect(self._algorithm_chosen)
        self.bundle_note = self.picker.bundle_note
        self.install_progress = self.picker.install_progress

        self.env_combo = env_combo()
        self.env_note = QLabel()
        self.env_note.setObjectName("envNote")
        self.env_note.setWordWrap(True)
        self.seed_spin = QSpinBox()
        self.seed_spin.setRange(0, SEED_MAX)
        self.timesteps_edit = QLineEdit()
        self.timesteps_edit.setObjectName("totalTimesteps")
        self.gpu_check = QCheckBox("GPU")
        self.gpu_check.setToolTip(
            "Use a GPU when torch in the worker's bundle sees one; without one the run goes on the CPU "
            "with a warning (the daemon checks at launch)."
        )
        self.deterministic_check = QCheckBox("deterministic")
        self.deterministic_check.setToolTip("Deterministic cuDNN kernels (CleanRL's --torch-deterministic).")
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
        self.dry_run_check = QCheckBox("Dry run (resolve the command, launch nothing)")
        self.dry_run_output = QPlainTextEdit()
        self.dry_run_output.setObjectName("dryRunOutput")
        self.dry_run_output.setReadOnly(True)
        self.dry_run_output.setFont(monospace())
        self.dry_run_output.setMaximumHeight(90)
        self.dry_run_output.hide()

        self.tracking = TrackingBox(model.tracking, self._changed)
        # The tracking fields by the names the form has always had.
        self.wandb_mode_combo = self.tracking.wandb_mode_combo
        self.wandb_project_edit = self.tracking.wandb_project_edit
        self.wandb_entity_edit = self.tracking.wandb_entity_edit
        self.wandb_run_name_edit = self.tracking.wandb_run_name_edit
        self.wandb_key_edit = self.tracking.wandb_key_edit
        self.capture_video_check = self.tracking.capture_video_check
        self.params_box = ParamEditors("Algorithm parameters", "Loading the script's arguments…")
        self.preview = CommandPreview(self.link, self._preview_request)

        gpu_row = QGridLayout()  # two lines: the GPU box names what the bundle has, which can be long
        gpu_row.addWidget(self.gpu_check, 0, 0, 1, 3)
        gpu_row.addWidget(self.gpu_mandatory_check, 1, 0)
        gpu_row.addWidget(self.deterministic_check, 1, 1)
        gpu_row.setColumnStretch(2, 1)
        common = QGroupBox("Common")
        form = self.common_rows = QFormLayout(common)
        form.addRow("Environment", self.env_combo)
        form.addRow("", self.env_note)
        form.setRowVisible(self.env_note, False)  # shown when the envs are not known
        form.addRow("Seed", self.seed_spin)
        form.addRow("Total timesteps", self.timesteps_edit)
        form.addRow("Resources", gpu_row)
        self.executor_row = ExecutorRow()
        form.addRow("Runs on", self.executor_row)
        form.addRow("Checkpoint every", self.checkpoint_every_edit)
        form.addRow("Start from", self.start_from_combo)
        form.addRow("Notes", self.notes_edit)

        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(scrolled(self.picker, common, self.tracking, self.params_box), 1)
        layout.addWidget(self.preview)
        layout.addWidget(self.dry_run_output)
        layout.addWidget(self.dry_run_check)
        layout.addWidget(self.error_label)
        layout.addWidget(self.status_label)
        layout.addWidget(self.submit_button)

        self._shows = [
            bind(self.env_combo, model, "env_id", self._changed),
            bind(self.seed_spin, model, "seed", self._changed),
            bind(self.timesteps_edit, model, "total_timesteps", self._changed),
            bind(self.gpu_check, model, "gpu", self._changed),
            bind(self.gpu_mandatory_check, model, "gpu_mandatory", self._changed),
            bind(self.deterministic_check, model, "torch_deterministic", self._changed),
            bind(self.checkpoint_every_edit, model, "checkpoint_every", self._changed),
            bind(self.start_from_combo, model, "warm_start", self._changed),
            bind(self.notes_edit, model, "notes", self._changed),
            bind(self.dry_run_check, model, "dry_run", self._changed),
            *self.executor_row.bind(model, self._changed),
        ]

    def refresh(self) -> None:
        for show in self._shows:
            show()
        self.tracking.refresh()
        self.params_box.refresh()
        self._enable_dependents()

    def mark(self, errors: dict[str, str]) -> None:
        mark(self.env_combo, errors.get("env_id", ""))
        mark(self.timesteps_edit, errors.get("budget.timesteps", ""), "Environment steps to train for.")
        mark(
            self.checkpoint_every_edit,
            errors.get("checkpoints.every_steps", ""),
            "Save a checkpoint every N steps.",
        )
        mark(self.start_from_combo, errors.get("warm_start.run_id", ""), START_FROM_TIP)
        self.executor_row.mark(errors)
        self.params_box.mark(errors)

    def _enable_dependents(self) -> None:
        self.gpu_mandatory_check.setEnabled(self.model.gpu)
        self.tracking.enable_dependents()

    def _changed(self) -> None:
        if self._restoring:
            return
        self._enable_dependents()
        super()._changed()
        self.preview.schedule()

    # -------------------------------------------------------- talking to the daemon

    def _connection(self, connected: bool, _message: str) -> None:
        if connected:
            self._list_trained()
        if connected and self.model.script is None and not self._loading:
            self.reload()

    def reload(self) -> None:
        """Ask the daemon again for the scripts and the chosen one's arguments."""
        self._generation += 1
        generation = self._generation
        self._loading = True
        self.status_label.setText("asking the daemon for the CleanRL scripts…")
        self.link.call(
            lambda client: client.describe_worker(self.worker_kind),
            lambda description: self._listed(generation, description),
            lambda message: self._describe_failed(generation, message),
        )

    def _describe_failed(self, generation: int, message: str) -> None:
        if generation != self._generation:
            return
        self._loading = False
        self.status_label.setText("")
        self._show_error(message)
        self.params_box.say("The script's arguments could not be read.")
        self._validate()

    def _listed(self, generation: int, description: WorkerDescription) -> None:
        if generation != self._generation:
            return
        self.bundle_installed = description.bundle_installed
        if description.bundle_installed:
            # Say up front what the daemon will find at launch.
            self.gpu_check.setText(
                "GPU"
                if description.details.get("gpu_available")
                else "GPU (none in the bundle: CPU fallback)"
            )
        self.algorithms = list(description.details.get("algorithms") or [])
        self.model.mapped = dict(description.details.get("mapped") or {})
        self._show_error("")
        self.status_label.setText("")
        if not description.bundle_installed:
            # Without the bundle there is no script to read; the daemon installs it when a run needs it.
            self.picker.show_missing_bundle(description.bundle, self.model.algorithm)
            self._show_envs(
                None,
                f"Which environments a script trains on is known once the {description.bundle} bundle is "
                f"installed: gym-gui bundles install {description.bundle} (or the first run installs it).",
            )
            self.params_box.say("Parameters appear once the bundle is installed.")
            self._loading = False
            self._validate()
            self.preview.schedule()
            return
        chosen = self.picker.show_scripts(self.algorithms, self.model.algorithm)
        if not chosen:
            self._loading = False
            self._show_error("no CleanRL script can run in this bundle")
            self._validate()
            return
        self._describe(chosen)

    def _algorithm_chosen(self, name: str) -> None:
        if self._restoring:
            return
        if self.bundle_installed:
            self._describe(name)
        else:
            self.model.algorithm = name
            self._changed()

    def _describe(self, algorithm: str) -> None:
        self._generation += 1
        generation = self._generation
        self._loading = True
        self.model.forget_script()  # what was typed for the previous script comes back with it
        self.model.algorithm = algorithm
        self.params_box.show_params(Params(), self._changed, f"Reading {algorithm}'s own arguments…")
        self._validate()
        self.link.call(
            lambda client: client.describe_worker(self.worker_kind, algorithm=algorithm),
            lambda description: self._described(generation, algorithm, description),
            lambda message: self._describe_failed(generation, message),
        )

    def _described(self, generation: int, algorithm: str, description: WorkerDescription) -> None:
        if generation != self._generation:
            return
        self._loading = False
        arguments = dict(description.details.get("arguments") or {})
        if "params" not in arguments:
            self._show_error(f"{algorithm}: {arguments.get('error', 'the daemon described no arguments')}")
            self._validate()
            return
        info = next((a for a in self.algorithms if a["name"] == algorithm), {})
        answer = description.details.get("envs") or {}
        envs = answer.get("envs")
        self.model.use_script(algorithm, arguments, info.get("default_env") or "", envs)
        self._show_envs(
            envs,
            answer.get("error")
            or f"{algorithm} makes its environments with {info.get('env_family') or 'its own library'}, "
            "which gym_gui cannot list: the daemon checks the id typed here.",
        )
        self.params_box.show_params(
            self.model.params, self._changed, "This script has no parameters besides the common ones."
        )
        self._show_model()
        self._show_error("")
        self._validate()
        self.preview.schedule()
        self.described.emit()
        if self._pending_prefill is not None and algorithm == self.model.algorithm:
            params, origin = self._pending_prefill
            self._pending_prefill = None
            self._prefill_done(self.model.apply_params(params), origin)

    def _apply_prefill(self, params: dict[str, Any], origin: str) -> None:
        # The parameters are the chosen script's: a config naming another script waits for its description.
        wanted = self.model.algorithm
        shown = (self.model.script or {}).get("algo")
        if shown == wanted and not self._loading:
            self._prefill_done(self.model.apply_params(params), origin)
            return
        if self.bundle_installed is False:  # no script to read yet: nothing can take them
            self._prefill_done(list(params), origin)
            return
        self._pending_prefill = (params, origin)
        self.status_label.setText(f"reading {wanted}'s arguments to fill them from {origin}…")
        if self.bundle_installed and self.picker.algorithm() != wanted:
            self.picker.set_algorithm(wanted)  # comes back through _algorithm_chosen → _described
        elif self.bundle_installed and not self._loading:
            self._describe(wanted)

    # -------------------------------------------------------- fields

    @property
    def description(self) -> dict[str, Any] | None:
        """The chosen script's arguments as the daemon described them (None while they are read)."""
        return self.model.script

    @property
    def ready(self) -> bool:
        """Whether the form can describe a run: the script's arguments are shown (or the bundle is missing)."""
        return self.model.script is not None or self.bundle_installed is False

    def algorithm(self) -> str:
        return self.model.algorithm.strip()

    def set_algorithm(self, name: str) -> None:
        """Choose a script (its arguments are asked for again)."""
        self.picker.set_algorithm(name)

    def set_env(self, env_id: str) -> None:
        """Choose an environment as the user could (one the script trains on, while that is known)."""
        set_combo_text(self.env_combo, env_id)

    def _show_envs(self, envs: list[dict[str, str]] | None, unknown: str) -> None:
        """Offer the environments the script trains on (the rest greyed with why), or say why that is
        not known and take any id typed."""
        show_env_choices(self.env_combo, envs)
        if envs is None and self.env_combo.findText(self.model.env_id) < 0:
            self.env_combo.insertItem(0, self.model.env_id)  # the script's own env is one to offer
        self.env_note.setText(unknown if envs is None else "")
        self.common_rows.setRowVisible(self.env_note, envs is None)
        self._show_model()

    def param_names(self) -> list[str]:
        """The script arguments with an editor, in the script's order."""
        return self.params_box.names()

    def param_editor(self, name: str) -> QWidget | None:
        return self.params_box.editor_widget(name)

    def can_submit(self) -> bool:
        return self.ready and not self._loading and bool(self.algorithm())

    # -------------------------------------------------------- command preview

    def _preview_request(self) -> tuple[RunConfig, dict[str, str]] | str:
        if self.bundle_installed is False:
            return "# the command is resolved once the bundle is installed"
        if self.model.script is None:
            return "# waiting for the script's arguments"
        if self.model.errors():
            return "# fix the marked fields to see the command"
        try:
            return self.config(), self.secret_env()
        except ConfigError as exc:
            return f"# {exc}"

    def _show_dry_run(self, plan: LaunchPreview) -> None:
        lines = ["# resolved by the daemon (dry run, nothing launched)", plan_text(plan), f"# in {plan.cwd}"]
        lines += [f"{key}={value}" for key, value in sorted(plan.env.items())]
        self.dry_run_output.setPlainText("\n".join(lines))
        self.dry_run_output.show()

    # -------------------------------------------------------- the bundle's install

    def _after_submit(self, run_id: str, config: RunConfig) -> None:
        if self.bundle_installed is False:
            self.picker.watch_install(self.link, run_id)

    def _list_trained(self) -> None:
        """Offer, under "Start from", the finished runs of this kind with a saved model (read off the
        GUI thread: it reads their manifests); runs that finish later arrive by :meth:`_run_updated`."""
        kind = self.worker_kind

        def trained(client: DaemonClient) -> list[str]:
            return [r.run_id for r in client.list_runs() if r.worker == kind and offers_trained_model(r)]

        self.link.call(trained, self._offer_start, lambda _message: None)

    def _offer_start(self, run_ids: list[str]) -> None:
        for run_id in run_ids:
            if self.start_from_combo.findText(run_id) < 0:
                self.start_from_combo.addItem(run_id)

    def _run_updated(self, run: RunRecord) -> None:
        if run.worker == self.worker_kind and run.state.terminal and offers_trained_model(run):
            self._offer_start([run.run_id])
        if run.run_id == self.picker.install_run and run.state is not RunState.QUEUED:
            # The bundle is there (or failed): the run has left the queue. Read the scripts now.
            self.picker.stop_install_watch(hide=True)
            if run.state is RunState.FAILED:
                self._show_error(run.reason)
            self.reload()

    def closeEvent(self, event: Any) -> None:
        self.picker.stop_install_watch()
        super().closeEvent(event)
