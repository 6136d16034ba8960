"""Training forms: the CleanRL form generated from a script's own arguments, and the random-baseline form."""

from __future__ import annotations

import contextlib
import json
import logging
import math
import re
import shlex
from collections.abc import Callable
from typing import Any

from gym_gui_sdk import trainer_pb2 as pb
from PySide6.QtCore import QCoreApplication, Qt, QTimer, Signal
from PySide6.QtGui import QFontDatabase, QStandardItem, QStandardItemModel
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QProgressBar,
    QPushButton,
    QScrollArea,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from gym_gui.core import wandb_auth
from gym_gui.core.config import REDACTED, RunConfig, parse_run_config
from gym_gui.core.envs import ENV_CATALOG
from gym_gui.core.errors import ConfigError, GymGuiError
from gym_gui.core.records import WorkerDescription
from gym_gui.core.states import RunState
from gym_gui.core.workers import Launch
from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.run_dir import RunDir
from gym_gui.storage.telemetry import TelemetryReader
from gym_gui.ui.daemon_link import DaemonLink, TelemetrySubscription
from gym_gui.ui.settings import SecretNotStored, Settings
from gym_gui.workers import worker_catalog

log = logging.getLogger(__name__)

# Flags gym_gui sets from the common fields (daemon/launchers.py CleanRLLauncher._script_argv); the daemon
# refuses them as parameters, so the form never offers them twice.
MAPPED_FLAGS = frozenset(
    {
        "exp-name",
        "env-id",
        "seed",
        "total-timesteps",
        "cuda",
        "torch-deterministic",
        "track",
        "wandb-project-name",
        "wandb-entity",
        "capture-video",
    }
)
WANDB_MODES = ("disabled", "offline", "online")
INVALID_STYLE = "border: 2px solid #d32f2f;"
SEED_MAX = 2**31 - 1  # QSpinBox holds an int32; RunConfig allows up to 2**32 - 1
_INSTALL_EVENT = re.compile(
    r"installing worker bundle (?P<bundle>\S+): (?P<step>\d+)/(?P<total>\d+) (?P<what>.*)"
)


# ------------------------------------------------------------------ values typed by hand


def parse_int(text: str) -> int:
    """An int as people type it: ``128``, ``500_000``, ``1e6`` (a whole number).

    Raises:
        ValueError: with the reason shown next to the field.
    """
    cleaned = text.strip().replace("_", "")
    try:
        return int(cleaned)
    except ValueError:
        pass
    try:
        number = float(cleaned)
    except ValueError:
        raise ValueError(f"expected a whole number, got {text.strip()!r}") from None
    if not number.is_integer():
        raise ValueError(f"expected a whole number, got {text.strip()!r}")
    return int(number)


def parse_float(text: str) -> float:
    """A float, scientific notation included (``2.5e-4``).

    Raises:
        ValueError: with the reason shown next to the field.
    """
    try:
        value = float(text.strip().replace("_", ""))
    except ValueError:
        raise ValueError(f"expected a number such as 0.00025 or 2.5e-4, got {text.strip()!r}") from None
    if math.isnan(value):
        raise ValueError("expected a number, got NaN")
    return value


def _parse_scalar(kind: str, text: str) -> Any:
    if kind == "int":
        return parse_int(text)
    if kind == "float":
        return parse_float(text)
    if kind == "bool":
        lowered = text.strip().lower()
        if lowered in ("true", "1", "yes", "on"):
            return True
        if lowered in ("false", "0", "no", "off"):
            return False
        raise ValueError(f"expected true or false, got {text.strip()!r}")
    return text


def _display(value: Any) -> str:
    """A default as pre-filled text (None: empty, lists space-separated)."""
    if value is None:
        return ""
    if isinstance(value, list):
        return " ".join(_display(item) for item in value)
    return str(value)


def _mark(widget: QWidget, error: str, help_text: str = "") -> None:
    """Show a field as invalid (red border, the reason as tooltip) or as fine again."""
    # Restyling re-polishes the widget: only touch it when the verdict changes.
    if widget.property("invalidReason") == error and widget.property("invalid") is not None:
        return
    widget.setProperty("invalid", bool(error))
    widget.setProperty("invalidReason", error)
    widget.setStyleSheet(INVALID_STYLE if error else "")
    widget.setToolTip(f"{error}\n\n{help_text}".strip() if error else help_text)


def _monospace() -> Any:
    return QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)


# ------------------------------------------------------------------ one script argument


class ParamEditor:
    """The editor of one script argument, chosen by its declared type.

    int and float are line edits validated as typed (so ``1e6`` and an empty "script default" work),
    str a line edit, bool a checkbox, choices a combo, lists a line edit of space-separated items.
    """

    def __init__(self, param: dict[str, Any], on_change: Callable[[], None]) -> None:
        self.param = param
        self.name: str = param["name"]
        self.kind: str = param.get("type") or "str"
        self.default: Any = param.get("default")
        self.required = bool(param.get("required"))
        self.help: str = param.get("help") or ""
        choices = param.get("choices")
        self.choices: list[Any] | None = list(choices) if choices else None
        self.widget: QWidget
        if self.kind == "bool":
            box = QCheckBox()
            box.setChecked(bool(self.default))
            box.toggled.connect(lambda _on: on_change())
            self.widget = box
        elif self.choices is not None and not self.kind.startswith("list["):
            combo = QComboBox()
            if self.default not in self.choices:
                combo.addItem("(script default)", None)
            for choice in self.choices:
                combo.addItem(str(choice), choice)
            combo.setCurrentIndex(max(combo.findData(self.default), 0))
            combo.currentIndexChanged.connect(lambda _i: on_change())
            self.widget = combo
        else:
            edit = QLineEdit(_display(self.default))
            if self.default is None:
                edit.setPlaceholderText("required" if self.required else "script default: none")
            edit.textChanged.connect(lambda _t: on_change())
            self.widget = edit
        self.widget.setObjectName(f"param:{self.name}")
        self.widget.setToolTip(self.help)

    # -------------------------------------------------------- values

    def value(self) -> Any:
        """The typed value, or None for "the script's default".

        Raises:
            ValueError: the reason the typed text is not a value of this argument.
        """
        widget = self.widget
        if isinstance(widget, QCheckBox):
            checked = widget.isChecked()
            style = self.param.get("bool_style")
            # A store_true flag that defaults to True has no command-line form for False.
            if style == "store_true" and bool(self.default) and not checked:
                raise ValueError(f"{self.param['flag']} cannot be turned off: the script has no flag for it")
            if style == "store_false" and not bool(self.default) and checked:
                raise ValueError(f"{self.param['flag']} cannot be turned on: the script has no flag for it")
            return checked
        if isinstance(widget, QComboBox):
            return widget.currentData()
        assert isinstance(widget, QLineEdit)
        text = widget.text().strip()
        if not text:
            if self.required:
                raise ValueError("a value is required")
            return None
        if self.kind.startswith("list[") and self.kind.endswith("]"):
            items = [item for item in re.split(r"[,\s]+", text) if item]
            values = [_parse_scalar(self.kind[5:-1], item) for item in items]
            for item in values:
                if self.choices and item not in self.choices:
                    raise ValueError(f"{item!r} is not one of {', '.join(map(str, self.choices))}")
            return values
        return _parse_scalar(self.kind, text)

    def error(self) -> str:
        try:
            self.value()
        except ValueError as exc:
            return str(exc)
        return ""

    def _default_value(self) -> Any:
        if self.default is None:
            return None
        if self.kind == "float":
            return float(self.default)
        if self.kind == "bool":
            return bool(self.default)
        if self.kind.startswith("list[") and isinstance(self.default, list):
            return [_parse_scalar(self.kind[5:-1], str(v)) for v in self.default]
        return self.default

    def changed_value(self) -> tuple[bool, Any]:
        """(whether the value differs from the script's default, the value); raises as value() does."""
        value = self.value()
        if value is None:
            return False, None
        try:
            default = self._default_value()
        except ValueError:  # a default the form cannot parse: anything given counts as a change
            return True, value
        return value != default, value

    # -------------------------------------------------------- saved state

    def raw(self) -> Any:
        """What the field shows, as JSON (saved in the settings, even when not valid yet)."""
        widget = self.widget
        if isinstance(widget, QCheckBox):
            return widget.isChecked()
        if isinstance(widget, QComboBox):
            return widget.currentData()
        assert isinstance(widget, QLineEdit)
        return widget.text()

    def is_pristine(self) -> bool:
        widget = self.widget
        if isinstance(widget, QCheckBox):
            return widget.isChecked() == bool(self.default)
        if isinstance(widget, QComboBox):
            return widget.currentData() == self.default
        assert isinstance(widget, QLineEdit)
        return widget.text() == _display(self.default)

    def set_raw(self, raw: Any) -> None:
        widget = self.widget
        if isinstance(widget, QCheckBox):
            widget.setChecked(bool(raw))
        elif isinstance(widget, QComboBox):
            index = widget.findData(raw)
            if index >= 0:
                widget.setCurrentIndex(index)
        elif isinstance(widget, QLineEdit):
            widget.setText(raw if isinstance(raw, str) else _display(raw))


# ------------------------------------------------------------------ the common part of every form


class RunForm(QWidget):
    """What every training form has: validation, Submit through the daemon, remembered values.

    Subclasses build their fields, implement :meth:`config`, :meth:`form_values` and
    :meth:`restore_values`, and call :meth:`_changed` whenever a field changes.
    """

    worker_kind = ""
    submit_requested = Signal(object, object)  # RunConfig, secret env (dict)
    run_submitted = Signal(str)  # run id
    submit_failed = Signal(str)  # the daemon's (or the config's) one-line message

    def __init__(
        self, link: DaemonLink, settings: Settings | None = None, parent: QWidget | None = None
    ) -> None:
        super().__init__(parent)
        self.link = link
        self.settings = settings if settings is not None else Settings(link.home)
        self._submitting = False
        self._restoring = False
        self.error_label = QLabel()
        self.error_label.setObjectName("formError")
        self.error_label.setWordWrap(True)
        self.error_label.setStyleSheet("color: #c62828;")
        self.error_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.error_label.hide()
        self.status_label = QLabel()
        self.status_label.setObjectName("formStatus")
        self.status_label.setWordWrap(True)
        self.status_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.submit_button = QPushButton("Submit")
        self.submit_button.setObjectName("submitRun")
        self.submit_button.clicked.connect(self.submit)
        self._save_timer = QTimer(self)
        self._save_timer.setSingleShot(True)
        self._save_timer.setInterval(400)  # one write per burst of typing
        self._save_timer.timeout.connect(self.save_settings)
        app = QCoreApplication.instance()
        if app is not None:  # edits made in the last moments before quitting are kept too
            app.aboutToQuit.connect(self.save_settings)

    # -------------------------------------------------------- for subclasses

    def config(self) -> RunConfig:
        """The run this form describes.

        Raises:
            ConfigError: naming the field that is not valid.
        """
        raise NotImplementedError

    def secret_env(self) -> dict[str, str]:
        """Secrets for the worker's environment only (never stored, never part of the config)."""
        return {}

    def form_values(self) -> dict[str, Any]:
        """The fields' values to remember (JSON-able, never a secret)."""
        raise NotImplementedError

    def restore_values(self, values: dict[str, Any]) -> None:
        """Put remembered values back into the fields (unknown or bad entries are skipped)."""
        raise NotImplementedError

    def invalid_fields(self) -> dict[str, str]:
        """Field name → why it is not valid; marks each field as it goes."""
        return {}

    def can_submit(self) -> bool:
        return True

    # -------------------------------------------------------- shared behaviour

    def _changed(self) -> None:
        if self._restoring:
            return
        self._validate()
        self._save_timer.start()

    def _validate(self) -> None:
        invalid = self.invalid_fields()
        self.submit_button.setEnabled(not invalid and not self._submitting and self.can_submit())
        self.submit_button.setToolTip(
            "Fix the marked fields first: " + "; ".join(f"{k}: {v}" for k, v in invalid.items())
            if invalid
            else "Start the run (Ctrl+Return)"
        )

    def _show_error(self, message: str) -> None:
        self.error_label.setText(message)
        self.error_label.setVisible(bool(message))

    def submit(self) -> None:
        """Validate, emit :attr:`submit_requested`, and submit through the daemon (off the GUI thread)."""
        if self._submitting:
            return
        self._validate()
        if not self.submit_button.isEnabled():
            return
        try:
            config = self.config()
        except ConfigError as exc:
            self._show_error(str(exc))
            self.submit_failed.emit(str(exc))
            return
        secrets = self.secret_env()
        self._show_error("")
        self.save_settings()
        self.submit_requested.emit(config, secrets)
        self._submitting = True
        self._validate()
        self.status_label.setText("submitting…")

        def submit(client: DaemonClient) -> str:
            record, _token = client.submit(config, secrets)
            return record.run_id

        self.link.call(submit, lambda run_id: self._submitted(run_id, config), self._failed)

    def _submitted(self, run_id: str, config: RunConfig) -> None:
        self._submitting = False
        self._validate()
        self.status_label.setText(f"submitted {run_id}" + (" (dry run)" if config.dry_run else ""))
        self.run_submitted.emit(run_id)
        self._after_submit(run_id, config)

    def _after_submit(self, run_id: str, config: RunConfig) -> None:
        """A subclass's follow-up of a submitted run."""

    def _failed(self, message: str) -> None:
        self._submitting = False
        self._validate()
        self.status_label.setText("")
        self._show_error(message)
        self.submit_failed.emit(message)

    def save_settings(self) -> None:
        self._save_timer.stop()
        try:
            self.settings.set_form_values(self.worker_kind, self.form_values())
        except (SecretNotStored, TypeError) as exc:  # a bug to fix, never a reason to lose the form
            log.error("form values of %s not saved: %s", self.worker_kind, exc)

    def restore_settings(self) -> None:
        values = self.settings.form_values(self.worker_kind)
        if not values:
            return
        self._restoring = True
        try:
            self.restore_values(values)
        finally:
            self._restoring = False


def _env_combo(extra: list[str] | None = None) -> QComboBox:
    combo = QComboBox()
    combo.setEditable(True)  # any registered gymnasium id may be typed; the daemon checks it
    combo.setObjectName("envId")
    for env_id in [*(extra or []), *ENV_CATALOG]:
        if combo.findText(env_id) < 0:
            combo.addItem(env_id)
    combo.setInsertPolicy(QComboBox.InsertPolicy.NoInsert)
    return combo


def _set_combo_text(combo: QComboBox, text: str) -> None:
    index = combo.findText(text)
    if index >= 0:
        combo.setCurrentIndex(index)
    else:
        combo.setEditText(text)


def _script_python(script: str) -> str:
    """The interpreter that runs a script: the venv holding it (…/lib/pythonX.Y/site-packages/…)."""
    marker = "/lib/python"
    if marker in script:
        return script.split(marker, 1)[0] + "/bin/python"
    return "python"


def _read_dry_run(run_dir: str) -> dict[str, Any]:
    reader = TelemetryReader(RunDir(run_dir).telemetry_path)
    try:
        events = [event for event in reader.events() if event.kind == "dry-run"]
    finally:
        reader.close()
    if not events:
        return {}
    data = json.loads(events[-1].data)
    return data if isinstance(data, dict) else {}


# ------------------------------------------------------------------ CleanRL


class CleanRLForm(RunForm):
    """A CleanRL training form built from the chosen script's own argument definitions.

    The daemon lists the scripts (non-runnable ones are shown disabled, their reason as tooltip)
    and describes the chosen one's arguments; the "Common" group holds what gym_gui maps onto the
    script (env, seed, budget, GPU, tracking, video) and the "Algorithm parameters" group one
    editor per remaining argument. Only parameters changed from the script's default go into
    ``RunConfig.params``. The W&B API key is passed as ``secret_env`` only and never saved.
    """

    described = Signal()  # the chosen algorithm's arguments are shown

    def __init__(
        self,
        kind: str,
        link: DaemonLink,
        settings: Settings | None = None,
        parent: QWidget | None = None,
    ) -> None:
        self.worker_kind = kind
        super().__init__(link, settings, parent)
        self.description: dict[str, Any] | None = None  # the chosen script's arguments (arguments_json)
        self.algorithms: list[dict[str, Any]] = []
        self.bundle_installed: bool | None = None
        self._editors: dict[str, ParamEditor] = {}
        self._saved_params: dict[str, dict[str, Any]] = {}  # algorithm → parameter name → raw value
        self._defaults_from = ""  # the algorithm whose env and budget defaults the common fields hold
        self._wanted_algorithm = "ppo"
        self._generation = 0
        self._loading = False
        self._install: TelemetrySubscription | None = None
        self._install_run = ""
        self._dry_runs: set[str] = set()
        self._build()
        self.restore_settings()
        link.connection_changed.connect(self._connection)
        link.run_updated.connect(self._run_updated)
        self._validate()
        self._update_preview()
        if link.connected:
            self.reload()
        else:
            self.status_label.setText("waiting for the daemon…")

    # -------------------------------------------------------- layout

    def _build(self) -> None:
        self.algorithm_combo = QComboBox()
        self.algorithm_combo.setObjectName("algorithm")
        self._algorithm_model = QStandardItemModel(self.algorithm_combo)
        self.algorithm_combo.setModel(self._algorithm_model)
        self.algorithm_combo.currentIndexChanged.connect(self._algorithm_chosen)
        self.bundle_note = QLabel()
        self.bundle_note.setWordWrap(True)
        self.bundle_note.hide()
        self.install_progress = QProgressBar()
        self.install_progress.setObjectName("bundleInstall")
        self.install_progress.setRange(0, 0)  # busy until the daemon reports steps
        self.install_progress.hide()

        self.env_combo = _env_combo()
        self.seed_spin = QSpinBox()
        self.seed_spin.setRange(0, SEED_MAX)
        self.seed_spin.setValue(1)  # CleanRL's own default seed
        self.timesteps_edit = QLineEdit("500000")
        self.timesteps_edit.setObjectName("totalTimesteps")
        self.gpu_check = QCheckBox("GPU")
        self.gpu_check.setToolTip(
            "Use a GPU when torch in the worker's bundle sees one; without one the run goes on the CPU "
            "with a warning (the daemon checks at launch)."
        )
        self.deterministic_check = QCheckBox("deterministic")
        self.deterministic_check.setChecked(True)
        self.deterministic_check.setToolTip("Deterministic cuDNN kernels (CleanRL's --torch-deterministic).")
        self.gpu_mandatory_check = QCheckBox("mandatory")
        self.gpu_mandatory_check.setToolTip("Fail before launch when no GPU is available.")
        self.tensorboard_check = QCheckBox("TensorBoard")
        self.tensorboard_check.setChecked(True)
        self.wandb_mode_combo = QComboBox()
        self.wandb_mode_combo.addItems(list(WANDB_MODES))
        self.wandb_project_edit = QLineEdit()
        self.wandb_project_edit.setPlaceholderText("cleanRL")
        self.wandb_entity_edit = QLineEdit()
        self.wandb_entity_edit.setPlaceholderText("your user or team")
        self.wandb_run_name_edit = QLineEdit()
        self.wandb_run_name_edit.setPlaceholderText("default: the run id")
        self.wandb_key_edit = QLineEdit()
        self.wandb_key_edit.setObjectName("wandbApiKey")
        self.wandb_key_edit.setEchoMode(QLineEdit.EchoMode.Password)
        self.wandb_key_edit.setPlaceholderText("only for online mode; never saved")
        self.wandb_key_edit.setToolTip(
            "Handed to this run's worker in its environment only; never written to disk or shown."
        )
        self.capture_video_check = QCheckBox("Capture video")
        self.checkpoint_every_edit = QLineEdit()
        self.checkpoint_every_edit.setObjectName("checkpointEvery")
        self.checkpoint_every_edit.setPlaceholderText("final model only")
        self.notes_edit = QPlainTextEdit()
        self.notes_edit.setPlaceholderText("kept with the run")
        self.notes_edit.setMaximumHeight(60)
        self.dry_run_check = QCheckBox("Dry run (resolve the command, launch nothing)")
        self.preview = QPlainTextEdit()
        self.preview.setObjectName("commandPreview")
        self.preview.setReadOnly(True)
        self.preview.setFont(_monospace())
        self.preview.setMaximumHeight(90)
        self.dry_run_output = QPlainTextEdit()
        self.dry_run_output.setObjectName("dryRunOutput")
        self.dry_run_output.setReadOnly(True)
        self.dry_run_output.setFont(_monospace())
        self.dry_run_output.setMaximumHeight(90)
        self.dry_run_output.hide()

        gpu_row = QHBoxLayout()
        gpu_row.addWidget(self.gpu_check)
        gpu_row.addWidget(self.gpu_mandatory_check)
        gpu_row.addWidget(self.deterministic_check)
        gpu_row.addStretch(1)
        common = QGroupBox("Common")
        form = QFormLayout(common)
        form.addRow("Environment", self.env_combo)
        form.addRow("Seed", self.seed_spin)
        form.addRow("Total timesteps", self.timesteps_edit)
        form.addRow("Resources", gpu_row)
        form.addRow("", self.tensorboard_check)
        form.addRow("W&&B", self.wandb_mode_combo)
        form.addRow("W&&B project", self.wandb_project_edit)
        form.addRow("W&&B entity", self.wandb_entity_edit)
        form.addRow("W&&B run name", self.wandb_run_name_edit)
        form.addRow("W&&B API key", self.wandb_key_edit)
        form.addRow("", self.capture_video_check)
        form.addRow("Checkpoint every", self.checkpoint_every_edit)
        form.addRow("Notes", self.notes_edit)

        self.params_box = QGroupBox("Algorithm parameters")
        self.params_layout = QFormLayout(self.params_box)
        self.params_placeholder = QLabel("Loading the script's arguments…")
        self.params_placeholder.setWordWrap(True)
        self.params_layout.addRow(self.params_placeholder)

        inner = QWidget()
        inner_layout = QVBoxLayout(inner)
        algo_row = QFormLayout()
        algo_row.addRow("Algorithm", self.algorithm_combo)
        inner_layout.addLayout(algo_row)
        inner_layout.addWidget(self.bundle_note)
        inner_layout.addWidget(self.install_progress)
        inner_layout.addWidget(common)
        inner_layout.addWidget(self.params_box)
        inner_layout.addStretch(1)
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setWidget(inner)

        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(scroll, 1)
        layout.addWidget(QLabel("Command"))
        layout.addWidget(self.preview)
        layout.addWidget(self.dry_run_output)
        layout.addWidget(self.dry_run_check)
        layout.addWidget(self.error_label)
        layout.addWidget(self.status_label)
        layout.addWidget(self.submit_button)

        for edit in (
            self.timesteps_edit,
            self.wandb_project_edit,
            self.wandb_entity_edit,
            self.wandb_run_name_edit,
            self.wandb_key_edit,
            self.checkpoint_every_edit,
        ):
            edit.textChanged.connect(lambda _t: self._changed())
        for box in (
            self.gpu_check,
            self.gpu_mandatory_check,
            self.deterministic_check,
            self.tensorboard_check,
            self.capture_video_check,
            self.dry_run_check,
        ):
            box.toggled.connect(lambda _on: self._changed())
        self.env_combo.currentTextChanged.connect(lambda _t: self._changed())
        self.seed_spin.valueChanged.connect(lambda _v: self._changed())
        self.wandb_mode_combo.currentIndexChanged.connect(lambda _i: self._changed())
        self.notes_edit.textChanged.connect(self._changed)
        self._enable_dependents()

    def _enable_dependents(self) -> None:
        self.gpu_mandatory_check.setEnabled(self.gpu_check.isChecked())
        tracked = self.wandb_mode_combo.currentText() != "disabled"
        for widget in (self.wandb_project_edit, self.wandb_entity_edit, self.wandb_run_name_edit):
            widget.setEnabled(tracked)
        self.wandb_key_edit.setEnabled(self.wandb_mode_combo.currentText() == "online")

    # -------------------------------------------------------- talking to the daemon

    def _connection(self, connected: bool, _message: str) -> None:
        if connected and self.description is None and not self._loading:
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
        self.params_placeholder.setText("The script's arguments could not be read.")
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
        self._show_error("")
        self.status_label.setText("")
        model = self._algorithm_model
        self.algorithm_combo.blockSignals(True)
        model.clear()
        if not description.bundle_installed:
            # Without the bundle there is no script to read; the daemon installs it when a run needs it.
            self.algorithm_combo.setEditable(True)
            self.algorithm_combo.setEditText(self._wanted_algorithm)
            self.bundle_note.setText(
                f"The {description.bundle} bundle will be installed on first use (a few minutes; "
                "the progress shows here). The script's own parameters appear once it is installed."
            )
            self.bundle_note.show()
            self.params_placeholder.setText("Parameters appear once the bundle is installed.")
            self._loading = False
            self.algorithm_combo.blockSignals(False)
            self._validate()
            self._update_preview()
            return
        self.algorithm_combo.setEditable(False)
        self.bundle_note.hide()
        chosen = -1
        for info in self.algorithms:
            item = QStandardItem(info["name"])
            item.setData(info["name"], Qt.ItemDataRole.UserRole)
            if not info.get("runnable", True):
                item.setEnabled(False)
                item.setToolTip(f"cannot run here: {info.get('reason', '')}")
            else:
                item.setToolTip(f"{info.get('env_family', '')} · default env {info.get('default_env', '')}")
            model.appendRow(item)
            if info.get("runnable", True) and (chosen < 0 or info["name"] == self._wanted_algorithm):
                chosen = model.rowCount() - 1
        self.algorithm_combo.setCurrentIndex(chosen)
        self.algorithm_combo.blockSignals(False)
        if chosen < 0:
            self._loading = False
            self._show_error("no CleanRL script can run in this bundle")
            self._validate()
            return
        self._describe(self.algorithm())

    def _algorithm_chosen(self, _index: int) -> None:
        name = self.algorithm()
        if not name or self._restoring:
            return
        self._wanted_algorithm = name
        if self.bundle_installed:
            self._describe(name)
        else:
            self._changed()

    def _describe(self, algorithm: str) -> None:
        self._generation += 1
        generation = self._generation
        self._loading = True
        self._remember_params()  # what was typed for the previous script comes back with it
        self.description = None
        self._validate()
        self.params_placeholder.setText(f"Reading {algorithm}'s own arguments…")
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
        self.description = arguments
        self._build_params(arguments["params"])
        self._restoring = True
        try:
            if self._defaults_from != algorithm:
                self._apply_script_defaults(algorithm, arguments["params"])
            for name, raw in self._saved_params.get(algorithm, {}).items():
                if name in self._editors:
                    self._editors[name].set_raw(raw)
        finally:
            self._restoring = False
        self._show_error("")
        self._validate()
        self._update_preview()
        self.described.emit()

    def _apply_script_defaults(self, algorithm: str, params: list[dict[str, Any]]) -> None:
        """A newly chosen script brings its own env and budget; values restored for it are kept."""
        by_name = {param["name"]: param for param in params}
        info = next((a for a in self.algorithms if a["name"] == algorithm), {})
        env = info.get("default_env") or (by_name.get("env-id") or {}).get("default")
        if env:
            if self.env_combo.findText(env) < 0:
                self.env_combo.insertItem(0, env)
            _set_combo_text(self.env_combo, env)
        steps = (by_name.get("total-timesteps") or {}).get("default")
        if isinstance(steps, int) and steps > 0:
            self.timesteps_edit.setText(str(steps))
        seed = (by_name.get("seed") or {}).get("default")
        if isinstance(seed, int) and 0 <= seed <= SEED_MAX:
            self.seed_spin.setValue(seed)
        self._defaults_from = algorithm

    def _build_params(self, params: list[dict[str, Any]]) -> None:
        while self.params_layout.rowCount():
            self.params_layout.removeRow(0)
        self._editors = {}
        for param in params:
            if param["name"] in MAPPED_FLAGS:
                continue
            editor = ParamEditor(param, self._changed)
            self._editors[editor.name] = editor
            label = QLabel(editor.name)
            label.setToolTip(editor.help)
            self.params_layout.addRow(label, editor.widget)
        self.params_placeholder = QLabel(
            "This script has no parameters besides the common ones." if not self._editors else ""
        )
        self.params_placeholder.setVisible(not self._editors)
        self.params_layout.addRow(self.params_placeholder)

    def _remember_params(self) -> None:
        if self.description is None:
            return
        algorithm = self.description.get("algo", "")
        self._saved_params[algorithm] = {
            name: editor.raw() for name, editor in self._editors.items() if not editor.is_pristine()
        }

    # -------------------------------------------------------- fields

    @property
    def ready(self) -> bool:
        """Whether the form can describe a run: the script's arguments are shown (or the bundle is missing)."""
        return self.description is not None or self.bundle_installed is False

    def algorithm(self) -> str:
        if self.algorithm_combo.isEditable():
            return self.algorithm_combo.currentText().strip()
        data = self.algorithm_combo.currentData(Qt.ItemDataRole.UserRole)
        return str(data) if data else ""

    def set_algorithm(self, name: str) -> None:
        """Choose a script (its arguments are asked for again)."""
        self._wanted_algorithm = name
        for row in range(self._algorithm_model.rowCount()):
            item = self._algorithm_model.item(row)
            if item is not None and item.data(Qt.ItemDataRole.UserRole) == name and item.isEnabled():
                self.algorithm_combo.setCurrentIndex(row)
                return
        if self.algorithm_combo.isEditable():
            self.algorithm_combo.setEditText(name)

    def set_env(self, env_id: str) -> None:
        _set_combo_text(self.env_combo, env_id)

    def param_names(self) -> list[str]:
        """The script arguments with an editor, in the script's order."""
        return list(self._editors)

    def param_editor(self, name: str) -> QWidget | None:
        editor = self._editors.get(name)
        return editor.widget if editor is not None else None

    def can_submit(self) -> bool:
        return self.ready and not self._loading and bool(self.algorithm())

    def invalid_fields(self) -> dict[str, str]:
        self._enable_dependents()
        invalid: dict[str, str] = {}
        checks: list[tuple[str, QWidget, str, str]] = []
        env = self.env_combo.currentText().strip()
        checks.append(("env_id", self.env_combo, "" if env else "choose an environment", ""))
        try:
            steps = parse_int(self.timesteps_edit.text())
            error = "" if steps > 0 else "must be at least 1"
        except ValueError as exc:
            error = str(exc)
        checks.append(("budget.timesteps", self.timesteps_edit, error, "Environment steps to train for."))
        every = self.checkpoint_every_edit.text().strip()
        error = ""
        if every:
            try:
                error = "" if parse_int(every) > 0 else "must be at least 1"
            except ValueError as exc:
                error = str(exc)
        checks.append(
            ("checkpoints.every_steps", self.checkpoint_every_edit, error, "Save a checkpoint every N steps.")
        )
        for field, widget, error, help_text in checks:
            _mark(widget, error, help_text)
            if error:
                invalid[field] = error
        for name, editor in self._editors.items():
            error = editor.error()
            _mark(editor.widget, error, editor.help)
            if error:
                invalid[f"params.{name}"] = error
        return invalid

    def _changed(self) -> None:
        if self._restoring:
            return
        super()._changed()
        self._update_preview()

    def params(self) -> dict[str, Any]:
        """Parameters changed from the script's defaults, by the script's own names.

        Raises:
            ConfigError: naming the first parameter whose value is not valid.
        """
        result: dict[str, Any] = {}
        for name, editor in self._editors.items():
            try:
                changed, value = editor.changed_value()
            except ValueError as exc:
                raise ConfigError(f"field 'params.{name}': {exc}") from None
            if changed:
                result[name] = value
        return result

    def config(self) -> RunConfig:
        invalid = self.invalid_fields()
        if invalid:
            field, reason = next(iter(invalid.items()))
            raise ConfigError(f"field '{field}': {reason}")
        every = self.checkpoint_every_edit.text().strip()
        mode = self.wandb_mode_combo.currentText()
        tracked = mode != "disabled"
        data: dict[str, Any] = {
            "worker": self.worker_kind,
            "env_id": self.env_combo.currentText().strip(),
            "seed": self.seed_spin.value(),
            "budget": {"timesteps": parse_int(self.timesteps_edit.text())},
            "algorithm": self.algorithm() or None,
            "params": self.params(),
            "checkpoints": {"every_steps": parse_int(every) if every else None},
            "tracking": {
                "tensorboard": self.tensorboard_check.isChecked(),
                "wandb_mode": mode,
                "wandb_project": (self.wandb_project_edit.text().strip() or None) if tracked else None,
                "wandb_entity": (self.wandb_entity_edit.text().strip() or None) if tracked else None,
                "wandb_run_name": (self.wandb_run_name_edit.text().strip() or None) if tracked else None,
                "capture_video": self.capture_video_check.isChecked(),
            },
            "resources": {
                "gpu": self.gpu_check.isChecked(),
                "gpu_mandatory": self.gpu_check.isChecked() and self.gpu_mandatory_check.isChecked(),
                "torch_deterministic": self.deterministic_check.isChecked(),
            },
            "notes": self.notes_edit.toPlainText(),
            "dry_run": self.dry_run_check.isChecked(),
        }
        return parse_run_config(data)

    def secret_env(self) -> dict[str, str]:
        key = self.wandb_key_edit.text().strip() or wandb_auth.api_key()
        if key and self.wandb_mode_combo.currentText() != "disabled":
            return {"WANDB_API_KEY": key}
        return {}

    # -------------------------------------------------------- command preview

    def _mapped_values(self) -> dict[str, Any]:
        tracked = self.wandb_mode_combo.currentText() != "disabled"
        mapped: dict[str, Any] = {
            "exp-name": self.algorithm(),
            "env-id": self.env_combo.currentText().strip(),
            "cuda": self.gpu_check.isChecked(),
            "torch-deterministic": self.deterministic_check.isChecked(),
            "track": tracked,
            "capture-video": self.capture_video_check.isChecked(),
            "seed": self.seed_spin.value(),
        }
        with contextlib.suppress(ValueError):  # shown as invalid; the preview leaves it out
            mapped["total-timesteps"] = parse_int(self.timesteps_edit.text())
        if tracked and self.wandb_project_edit.text().strip():
            mapped["wandb-project-name"] = self.wandb_project_edit.text().strip()
        if tracked and self.wandb_entity_edit.text().strip():
            mapped["wandb-entity"] = self.wandb_entity_edit.text().strip()
        return mapped

    def command_argv(self) -> list[str]:
        """The script's command line as the daemon will build it (the same flag styles as
        ``gym_gui_cleanrl_worker.describe.build_argv``); parameters not valid yet are left out."""
        if self.description is None:
            return ["python", f"{self.algorithm() or '<script>'}.py"]
        values = {name: value for name, value in self._mapped_values().items()}
        for name, editor in self._editors.items():
            try:
                changed, value = editor.changed_value()
            except ValueError:
                continue
            if changed:
                values[name] = value
        script = str(self.description.get("path", ""))
        argv = [_script_python(script), script]
        for param in self.description["params"]:
            name = param["name"]
            value = values.get(name)
            if value is None:
                continue
            flag, style = param["flag"], param.get("bool_style")
            if param["type"] == "bool":
                if style in ("store_true", "store_false"):
                    if bool(value) == (style == "store_true"):
                        argv.append(flag)
                elif style == "tyro":
                    head, dot, last = flag.lstrip("-").rpartition(".")
                    argv.append(flag if value else f"--{head}{dot}no-{last}")
                else:
                    argv += [flag, "True" if value else "False"]
            elif isinstance(value, list):
                argv += [flag, *(repr(v) if isinstance(v, float) else str(v) for v in value)]
            else:
                argv += [flag, repr(value) if isinstance(value, float) else str(value)]
        return argv

    def preview_text(self) -> str:
        """What will run, secrets redacted."""
        prefix = " ".join(f"{name}={REDACTED}" for name in sorted(self.secret_env()))
        command = shlex.join(self.command_argv())
        lines = [f"{prefix} {command}".strip()]
        if self.description is not None and self.invalid_fields():
            lines.insert(0, "# fix the marked fields; their values are left out below")
        every = self.checkpoint_every_edit.text().strip()
        if every:
            lines.append(f"# gym_gui saves a checkpoint every {every} steps besides the final model")
        return "\n".join(lines)

    def _update_preview(self) -> None:
        text = self.preview_text()
        if self.preview.toPlainText() != text:
            self.preview.setPlainText(text)

    # -------------------------------------------------------- remembered values

    def form_values(self) -> dict[str, Any]:
        self._remember_params()
        return {
            "algorithm": self.algorithm(),
            "defaults_from": self._defaults_from,
            "env_id": self.env_combo.currentText().strip(),
            "seed": self.seed_spin.value(),
            "total_timesteps": self.timesteps_edit.text(),
            "gpu": self.gpu_check.isChecked(),
            "gpu_mandatory": self.gpu_mandatory_check.isChecked(),
            "torch_deterministic": self.deterministic_check.isChecked(),
            "tensorboard": self.tensorboard_check.isChecked(),
            "wandb_mode": self.wandb_mode_combo.currentText(),
            "wandb_project": self.wandb_project_edit.text(),
            "wandb_entity": self.wandb_entity_edit.text(),
            "wandb_run_name": self.wandb_run_name_edit.text(),
            "capture_video": self.capture_video_check.isChecked(),
            "checkpoint_every": self.checkpoint_every_edit.text(),
            "notes": self.notes_edit.toPlainText(),
            "params": {algo: dict(values) for algo, values in self._saved_params.items() if values},
        }

    def restore_values(self, values: dict[str, Any]) -> None:
        def text(key: str) -> str | None:
            value = values.get(key)
            return value if isinstance(value, str) else None

        def flag(key: str, box: QCheckBox) -> None:
            if isinstance(values.get(key), bool):
                box.setChecked(values[key])

        if text("algorithm"):
            self._wanted_algorithm = values["algorithm"]
        self._defaults_from = text("defaults_from") or ""
        if text("env_id"):
            self.set_env(values["env_id"])
        seed = values.get("seed")
        if isinstance(seed, int) and 0 <= seed <= SEED_MAX:
            self.seed_spin.setValue(seed)
        for key, edit in (
            ("total_timesteps", self.timesteps_edit),
            ("wandb_project", self.wandb_project_edit),
            ("wandb_entity", self.wandb_entity_edit),
            ("wandb_run_name", self.wandb_run_name_edit),
            ("checkpoint_every", self.checkpoint_every_edit),
        ):
            value = text(key)
            if value is not None:
                edit.setText(value)
        for key, box in (
            ("gpu", self.gpu_check),
            ("gpu_mandatory", self.gpu_mandatory_check),
            ("torch_deterministic", self.deterministic_check),
            ("tensorboard", self.tensorboard_check),
            ("capture_video", self.capture_video_check),
        ):
            flag(key, box)
        if text("wandb_mode") in WANDB_MODES:
            self.wandb_mode_combo.setCurrentText(values["wandb_mode"])
        if text("notes") is not None:
            self.notes_edit.setPlainText(values["notes"])
        params = values.get("params")
        if isinstance(params, dict):
            self._saved_params = {
                str(algo): dict(entries) for algo, entries in params.items() if isinstance(entries, dict)
            }

    # -------------------------------------------------------- after submit

    def _after_submit(self, run_id: str, config: RunConfig) -> None:
        if config.dry_run:
            self._dry_runs.add(run_id)
        if self.bundle_installed is False:
            self._watch_install(run_id)

    def _watch_install(self, run_id: str) -> None:
        """Show the daemon's progress installing the bundle this run waits for."""
        self._stop_install_watch()
        self.install_progress.setRange(0, 0)
        self.install_progress.setFormat("installing the cleanrl bundle…")
        self.install_progress.show()
        self._install_run = run_id
        subscription = self.link.subscribe(run_id, credits=1)
        if subscription is None:
            return
        self._install = subscription
        subscription.worker_event.connect(self._install_event)

    def _install_event(self, event: pb.WorkerEvent) -> None:
        match = _INSTALL_EVENT.match(event.message)
        if match is None:
            return
        step, total = int(match["step"]), int(match["total"])
        self.install_progress.setRange(0, max(total, 1))
        self.install_progress.setValue(step)
        self.install_progress.setFormat(f"{step}/{total} {match['what']}")

    def _stop_install_watch(self) -> None:
        if self._install is not None:
            self._install.close()
            self._install = None
        self._install_run = ""

    def _run_updated(self, run: pb.RunInfo) -> None:
        if run.run_id == self._install_run and run.state != RunState.QUEUED.value:
            # The bundle is there (or failed): the run has left the queue. Read the scripts now.
            self._stop_install_watch()
            self.install_progress.hide()
            if run.state == RunState.FAILED.value:
                self._show_error(run.reason)
            self.reload()
        if run.run_id in self._dry_runs and RunState(run.state).terminal:
            self._dry_runs.discard(run.run_id)
            if run.state != RunState.COMPLETED.value:
                self._show_error(f"dry run {run.run_id}: {run.reason}")
                return
            self.link.call(
                lambda _client: _read_dry_run(run.run_dir),
                self._show_dry_run,
                lambda message: self._show_error(f"dry run {run.run_id}: {message}"),
            )

    def _show_dry_run(self, data: dict[str, Any]) -> None:
        command = data.get("script_command") or data.get("argv") or []
        lines = ["# resolved by the daemon (dry run, nothing launched)", shlex.join(command)]
        lines += [f"{key}={value}" for key, value in sorted((data.get("env") or {}).items())]
        self.dry_run_output.setPlainText("\n".join(lines))
        self.dry_run_output.show()

    def closeEvent(self, event: Any) -> None:
        self._stop_install_watch()
        super().closeEvent(event)


# ------------------------------------------------------------------ any worker kind


class WorkerForm(RunForm):
    """The form of a worker kind from its plugin: environment, seed, budget, render rate, and the
    parameters the plugin describes (``parameters`` in its DescribeWorker answer: name, type,
    default, help, choices — the shape CleanRL script arguments have), sent as ``params``."""

    def __init__(
        self,
        kind: str,
        link: DaemonLink,
        settings: Settings | None = None,
        parent: QWidget | None = None,
    ) -> None:
        self.worker_kind = kind
        super().__init__(link, settings, parent)
        spec = worker_catalog().spec(kind)
        self.env_combo = _env_combo()
        _set_combo_text(self.env_combo, "FrozenLake-v1")
        self.seed_spin = QSpinBox()
        self.seed_spin.setRange(0, SEED_MAX)
        self.budget_kind_combo = QComboBox()
        self.budget_kind_combo.addItems(["episodes", "timesteps"])
        self.budget_spin = QSpinBox()
        self.budget_spin.setObjectName("budget")
        self.budget_spin.setRange(1, 2**31 - 1)
        self.budget_spin.setValue(100)
        self.render_fps_spin = QDoubleSpinBox()
        self.render_fps_spin.setRange(0.0, 240.0)
        self.render_fps_spin.setDecimals(1)
        self.render_fps_spin.setValue(10.0)
        self.render_fps_spin.setToolTip("Encoded frames per second for pixel environments (0: none).")
        self.dry_run_check = QCheckBox("Dry run")
        self._editors: dict[str, ParamEditor] = {}
        self._saved_params: dict[str, Any] = {}

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
        self.params_box = QGroupBox("Parameters")
        self.params_form = QFormLayout(self.params_box)
        self.params_box.hide()
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(box)
        layout.addWidget(self.params_box)
        layout.addWidget(self.error_label)
        layout.addWidget(self.status_label)
        layout.addWidget(self.submit_button)
        layout.addStretch(1)

        self.restore_settings()
        self.env_combo.currentTextChanged.connect(lambda _t: self._changed())
        self.seed_spin.valueChanged.connect(lambda _v: self._changed())
        self.budget_spin.valueChanged.connect(lambda _v: self._changed())
        self.budget_kind_combo.currentIndexChanged.connect(lambda _i: self._changed())
        self.render_fps_spin.valueChanged.connect(lambda _v: self._changed())
        self.dry_run_check.toggled.connect(lambda _on: self._changed())
        self._validate()
        self.link.call(
            lambda client: client.describe_worker(kind),
            self._described,
            lambda message: self._show_error(f"the daemon could not describe {spec.display_name}: {message}"),
        )

    def _described(self, description: WorkerDescription) -> None:
        params = description.details.get("parameters") or []
        for param in params:
            editor = ParamEditor(param, self._changed)
            self._editors[editor.name] = editor
            self.params_form.addRow(editor.name, editor.widget)
            if editor.name in self._saved_params:
                self._restoring = True
                try:
                    editor.set_raw(self._saved_params[editor.name])
                finally:
                    self._restoring = False
        self.params_box.setVisible(bool(params))
        self._validate()

    def param_names(self) -> list[str]:
        return list(self._editors)

    def param_editor(self, name: str) -> QWidget | None:
        editor = self._editors.get(name)
        return editor.widget if editor is not None else None

    def set_env(self, env_id: str) -> None:
        _set_combo_text(self.env_combo, env_id)

    def invalid_fields(self) -> dict[str, str]:
        error = "" if self.env_combo.currentText().strip() else "choose an environment"
        _mark(self.env_combo, error)
        invalid = {"env_id": error} if error else {}
        for name, editor in self._editors.items():
            problem = editor.error()
            _mark(editor.widget, problem, editor.help)
            if problem:
                invalid[f"params.{name}"] = problem
        return invalid

    def params(self) -> dict[str, Any]:
        """The parameters that differ from the plugin's defaults."""
        values: dict[str, Any] = {}
        for name, editor in self._editors.items():
            changed, value = editor.changed_value()
            if changed:
                values[name] = value
        return values

    def config(self) -> RunConfig:
        invalid = self.invalid_fields()
        if invalid:
            field, reason = next(iter(invalid.items()))
            raise ConfigError(f"field '{field}': {reason}")
        return parse_run_config(
            {
                "worker": self.worker_kind,
                "env_id": self.env_combo.currentText().strip(),
                "seed": self.seed_spin.value(),
                "budget": {self.budget_kind_combo.currentText(): self.budget_spin.value()},
                "params": self.params(),
                "telemetry": {"render_fps": self.render_fps_spin.value()},
                "dry_run": self.dry_run_check.isChecked(),
            }
        )

    def form_values(self) -> dict[str, Any]:
        return {
            "env_id": self.env_combo.currentText().strip(),
            "seed": self.seed_spin.value(),
            "budget_kind": self.budget_kind_combo.currentText(),
            "budget": self.budget_spin.value(),
            "render_fps": self.render_fps_spin.value(),
            "params": {**self._saved_params, **{n: e.raw() for n, e in self._editors.items()}},
        }

    def restore_values(self, values: dict[str, Any]) -> None:
        if isinstance(values.get("env_id"), str) and values["env_id"]:
            self.set_env(values["env_id"])
        if isinstance(values.get("seed"), int) and 0 <= values["seed"] <= SEED_MAX:
            self.seed_spin.setValue(values["seed"])
        if values.get("budget_kind") in ("episodes", "timesteps"):
            self.budget_kind_combo.setCurrentText(values["budget_kind"])
        if isinstance(values.get("budget"), int) and values["budget"] > 0:
            self.budget_spin.setValue(values["budget"])
        if isinstance(values.get("render_fps"), (int, float)):
            self.render_fps_spin.setValue(float(values["render_fps"]))
        if isinstance(values.get("params"), dict):
            # Kept until the plugin's description arrives and builds the editors.
            self._saved_params = dict(values["params"])


# ------------------------------------------------------------------ by worker kind

# The forms a plugin may ask for by name (WorkerPlugin.form); "worker" is the generated one.
_FORMS: dict[str, type[CleanRLForm] | type[WorkerForm]] = {"scripts": CleanRLForm, "worker": WorkerForm}


def form_for(worker_kind: str, link: DaemonLink, settings: Settings | None = None) -> QWidget | None:
    """The "Train new" form of a worker kind, or None when the kind has none (client-driven or
    unavailable kinds)."""
    try:
        spec = worker_catalog().spec(worker_kind)
        if spec.launch is not Launch.DAEMON or not spec.available:
            return None
        return _FORMS[worker_catalog().plugin(worker_kind).form](worker_kind, link, settings)
    except GymGuiError as exc:  # e.g. an unreadable home: no form rather than no window
        log.error("no %s form: %s", worker_kind, exc)
        return None
