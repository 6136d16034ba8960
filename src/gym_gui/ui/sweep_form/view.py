"""SweepDialog: Run ▸ Start sweep… — a base run in the generated run form, then the space, objective,
sampler, pruner and counts; Start sends the spec to the daemon, Save spec… writes its file."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QFileDialog,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSplitter,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from gym_gui.core.errors import ConfigError
from gym_gui.core.files import write_atomically
from gym_gui.core.records import SweepRecord
from gym_gui.core.workers import Launch
from gym_gui.sweeps.spec import AGGREGATES, SweepSpec
from gym_gui.ui.daemon_link import DaemonLink
from gym_gui.ui.forms.form import GeneratedForm
from gym_gui.ui.forms.widgets import bind, mark, scrolled
from gym_gui.ui.settings import Settings
from gym_gui.ui.sweep_form.model import (
    DIRECTIONS,
    SAMPLERS,
    SweepModel,
    fields_named,
    spec_text,
)
from gym_gui.ui.sweep_form.space import SpaceEditor
from gym_gui.workers import worker_catalog

PRUNERS = ("none", "median", "successive_halving", "hyperband")


def sweep_kinds() -> list[tuple[str, str]]:
    """(kind, roster name) of every kind whose runs the daemon launches: those a sweep can play."""
    return [
        (entry.kind, entry.display_name)
        for entry in worker_catalog().roster()
        if entry.available and entry.spec is not None and entry.spec.launch is Launch.DAEMON
    ]


class BaseRunForm(GeneratedForm):
    """A kind's generated run form as a sweep's base run: no Submit, no dry run, no secrets (a sweep's
    trials take none), its values remembered apart from the kind's training form."""

    def __init__(self, kind: str, link: DaemonLink, settings: Settings | None = None) -> None:
        super().__init__(kind, link, settings)
        self.submit_button.hide()
        self.dry_run_check.hide()
        for edit in self.rows.secret_edits.values():
            self.rows.form_rows.setRowVisible(edit, False)

    @property
    def settings_key(self) -> str:
        return f"sweep/{self.worker_kind}"


class SweepDialog(QDialog):
    """The sweep form. Left, the base run: a worker kind and its :class:`BaseRunForm`. Right, the
    search over a :class:`SweepModel`: the space (a row per parameter the base run's form describes),
    the objective, the sampler, the pruner and its options, trials, parallel, seeds and a name.

    :meth:`start` checks the spec as `gym-gui sweep start` does and sends it to the daemon (off the GUI
    thread); :meth:`save_spec` writes the file that command takes. A message names the field.
    """

    sweep_started = Signal(object)  # SweepRecord

    def __init__(
        self,
        link: DaemonLink,
        settings: Settings | None = None,
        kind: str = "",
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.setWindowTitle("Start a sweep")
        self.link = link
        self.settings = settings if settings is not None else Settings(link.home)
        self.model = SweepModel()
        self.forms: dict[str, BaseRunForm] = {}
        self.submitted: SweepSpec | None = None  # the last spec sent to the daemon
        self._starting = False

        self.kind_combo = QComboBox()
        self.kind_combo.setObjectName("sweepWorker")
        for name, display_name in sweep_kinds():
            self.kind_combo.addItem(display_name, name)
        self.form_stack = QStackedWidget()
        base = QGroupBox("Base run (every trial starts from it)")
        base_layout = QVBoxLayout(base)
        base_layout.addWidget(self.kind_combo)
        base_layout.addWidget(self.form_stack, 1)

        self.space = SpaceEditor()
        self._shows: list[Callable[[], None]] = []
        search = scrolled(self.space, self._objective_box(), self._search_box())
        split = QSplitter(Qt.Orientation.Horizontal)
        split.addWidget(base)
        split.addWidget(search)
        split.setSizes([520, 680])  # the run form's rows need about what the control dock gives them

        self.error_label = QLabel()
        self.error_label.setObjectName("sweepError")
        self.error_label.setWordWrap(True)
        self.error_label.setStyleSheet("color: #c62828;")
        self.error_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.error_label.hide()
        self.status_label = QLabel()
        self.status_label.setObjectName("sweepStatus")
        self.status_label.setWordWrap(True)
        self.status_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.save_button = QPushButton("Save spec…")
        self.save_button.setToolTip("Write the spec `gym-gui sweep start FILE` takes (YAML or JSON)")
        self.save_button.clicked.connect(self.save_spec_as)
        self.start_button = QPushButton("Start sweep")
        self.start_button.setObjectName("startSweep")
        self.start_button.setDefault(True)
        self.start_button.clicked.connect(self.start)
        close = QPushButton("Close")
        close.clicked.connect(self.close)
        buttons = QHBoxLayout()
        buttons.addWidget(self.save_button)
        buttons.addStretch(1)
        buttons.addWidget(self.start_button)
        buttons.addWidget(close)
        layout = QVBoxLayout(self)
        layout.addWidget(split, 1)
        layout.addWidget(self.error_label)
        layout.addWidget(self.status_label)
        layout.addLayout(buttons)
        self.resize(1200, 800)

        self.kind_combo.currentIndexChanged.connect(lambda _index: self._show_kind())
        if kind and self.kind_combo.findData(kind) >= 0:
            self.kind_combo.setCurrentIndex(self.kind_combo.findData(kind))
        self._show_kind()

    # -------------------------------------------------------- the search fields

    def _objective_box(self) -> QGroupBox:
        model = self.model
        self.metric_combo = QComboBox()
        self.metric_combo.setObjectName("sweepMetric")
        self.metric_combo.setEditable(True)
        self.metric_combo.addItem(model.metric)
        self.metric_combo.setToolTip(
            "The metric of a trial's run it is judged on (its tag, as Charts lists it)"
        )
        self.aggregate_combo = QComboBox()
        self.aggregate_combo.addItems(list(AGGREGATES))
        self.aggregate_combo.setToolTip(
            "last_mean: the mean of the last `window` points; mean, max, min of all; last: the last point"
        )
        self.window_edit = QLineEdit()
        self.direction_combo = QComboBox()
        self.direction_combo.addItems(list(DIRECTIONS))
        box = QGroupBox("Objective")
        form = QFormLayout(box)
        form.addRow("Metric", self.metric_combo)
        form.addRow("Aggregate", self.aggregate_combo)
        form.addRow("Window", self.window_edit)
        form.addRow("Direction", self.direction_combo)
        self._shows += [
            bind(self.metric_combo, model, "metric", self._changed),
            bind(self.aggregate_combo, model, "aggregate", self._changed),
            bind(self.window_edit, model, "window", self._changed),
            bind(self.direction_combo, model, "direction", self._changed),
        ]
        return box

    def _search_box(self) -> QGroupBox:
        model = self.model
        self.sampler_combo = QComboBox()
        self.sampler_combo.addItems(list(SAMPLERS))
        self.sampler_combo.setToolTip("grid plays every combination of choices and stepped ranges")
        self.sampler_seed_edit = QLineEdit()
        self.sampler_seed_edit.setPlaceholderText("none (a new draw each time)")
        self.pruner_combo = QComboBox()
        self.pruner_combo.setObjectName("sweepPruner")
        self.pruner_combo.addItems(list(PRUNERS))
        self.pruner_options = QWidget()
        self.pruner_form = QFormLayout(self.pruner_options)
        self.pruner_form.setContentsMargins(0, 0, 0, 0)
        self.option_edits: dict[str, QLineEdit] = {}
        self.trials_edit, self.parallel_edit, self.seeds_edit = QLineEdit(), QLineEdit(), QLineEdit()
        self.trials_edit.setObjectName("sweepTrials")
        self.parallel_edit.setToolTip("Trials played at once (never more than the daemon's --max-concurrent)")
        self.seeds_edit.setToolTip(
            "Runs per trial, seeds counting up from the base run's; their mean is the value"
        )
        self.name_edit = QLineEdit()
        self.name_edit.setObjectName("sweepName")
        self.name_edit.setPlaceholderText("default: its algorithm (or worker) and environment")
        box = QGroupBox("Search")
        form = QFormLayout(box)
        form.addRow("Sampler", self.sampler_combo)
        form.addRow("Sampler seed", self.sampler_seed_edit)
        form.addRow("Pruner", self.pruner_combo)
        form.addRow("", self.pruner_options)
        form.addRow("Trials", self.trials_edit)
        form.addRow("Parallel", self.parallel_edit)
        form.addRow("Seeds per trial", self.seeds_edit)
        form.addRow("Name", self.name_edit)
        self._shows += [
            bind(self.sampler_combo, model, "sampler", self._changed),
            bind(self.sampler_seed_edit, model, "sampler_seed", self._changed),
            bind(self.pruner_combo, model, "pruner", self._pruner_chosen),
            bind(self.trials_edit, model, "trials", self._changed),
            bind(self.parallel_edit, model, "parallel", self._changed),
            bind(self.seeds_edit, model, "seeds", self._changed),
            bind(self.name_edit, model, "name", self._changed),
        ]
        for show in self._shows:
            show()
        self._show_pruner_options()
        return box

    def _pruner_chosen(self) -> None:
        self._show_pruner_options()
        self._changed()

    def _show_pruner_options(self) -> None:
        """A field per option of the chosen pruner, holding what was typed or its default."""
        while self.pruner_form.rowCount():
            self.pruner_form.removeRow(0)
        self.option_edits = {}
        for option in self.model.pruner_fields():
            edit = QLineEdit(self.model.pruner_option(option))
            edit.setObjectName(f"pruner:{option}")
            if option == "report_steps":
                edit.setPlaceholderText("a tenth of the budget")
                edit.setToolTip("Every how many steps a trial's objective so far is reported to the pruner")
            edit.textChanged.connect(lambda text, option=option: self._option_typed(option, text))
            self.option_edits[option] = edit
            self.pruner_form.addRow(option, edit)
        self.pruner_options.setVisible(bool(self.option_edits))

    def _option_typed(self, option: str, text: str) -> None:
        self.model.pruner_options[option] = text
        self._changed()

    # -------------------------------------------------------- the base run

    @property
    def form(self) -> BaseRunForm | None:
        """The base run's form (of the chosen kind), None when no kind can be swept."""
        return self.forms.get(self.kind_combo.currentData() or "")

    def _show_kind(self) -> None:
        """Show the chosen kind's form (built the first time it is chosen) and its parameters."""
        kind = self.kind_combo.currentData()
        if not kind:
            self.space.say("No worker kind the daemon launches is installed.")
            return
        if kind not in self.forms:
            made = self.forms[kind] = BaseRunForm(kind, self.link, self.settings)
            made.described.connect(lambda form=made: self._described(form))
            self.form_stack.addWidget(made)
        form = self.forms[kind]
        self.form_stack.setCurrentWidget(form)
        # The objective starts at the kind's returns, unless one was typed for another kind's.
        returns = {worker_catalog().return_metric(k) for k in self.forms} | {""}
        if self.model.metric.strip() in returns:
            self.model.metric = worker_catalog().return_metric(kind)
            self.metric_combo.setCurrentText(self.model.metric)
        if form.description is None:
            self.space.show_entries({}, self._changed)
            self.space.say(f"Reading the parameters of {form.spec.display_name}…")
        else:
            self._described(form)

    def _described(self, form: BaseRunForm) -> None:
        """The form's parameters are known (again): offer those a sweep can search."""
        if form is not self.form or form.description is None:
            return
        self.model.take_form(form.description)
        self.space.show_entries(self.model.entries, self._changed)
        self._changed()

    # -------------------------------------------------------- validation

    def _changed(self) -> None:
        self.window_edit.setEnabled(self.model.aggregate == "last_mean")
        self._mark(self.model.errors())

    def _mark(self, errors: dict[str, str]) -> None:
        self.space.mark(errors)
        mark(self.metric_combo, errors.get("objective.metric", ""))
        mark(self.window_edit, errors.get("objective.window", ""))
        mark(self.sampler_seed_edit, errors.get("sampler.seed", ""))
        mark(self.sampler_combo, errors.get("sampler", ""))
        mark(self.pruner_combo, errors.get("pruner", ""))
        for option, edit in self.option_edits.items():
            mark(edit, errors.get(f"pruner.{option}", ""))
        for key, edit in (
            ("trials", self.trials_edit),
            ("parallel", self.parallel_edit),
            ("seeds", self.seeds_edit),
            ("name", self.name_edit),
        ):
            mark(edit, errors.get(key, ""))

    def _show_error(self, message: str) -> None:
        self.error_label.setText(message)
        self.error_label.setVisible(bool(message))

    def spec(self) -> SweepSpec | None:
        """The sweep the form describes, checked as `gym-gui sweep start` checks a file; None, with the
        message shown (naming the field) and the fields marked, when it is not valid."""
        form = self.form
        if form is None:
            self._show_error("no worker kind to sweep")
            return None
        if not form.can_submit() or form.description is None:
            self._show_error(f"the parameters of {form.spec.display_name} are still being read")
            return None
        try:
            config = form.config()
        except ConfigError as exc:
            form.invalid_fields()
            self._show_error(f"base run: {exc}")
            return None
        try:
            spec = self.model.to_spec(config)
        except ConfigError as exc:
            message = str(exc)
            self._mark({**self.model.errors(), **dict.fromkeys(fields_named(message), message)})
            self._show_error(message)
            return None
        self._show_error("")
        return spec

    # -------------------------------------------------------- start, save

    def start(self) -> None:
        """Check the spec and start the sweep through the daemon (off the GUI thread)."""
        if self._starting:
            return
        spec = self.spec()
        if spec is None:
            return
        text = spec.model_dump_json()
        self._starting = True
        self.start_button.setEnabled(False)
        self.status_label.setText("starting the sweep…")
        self.submitted = spec
        self.link.call(lambda client: client.start_sweep(text), self._started, self._failed)

    def _started(self, record: SweepRecord) -> None:
        self._starting = False
        self.start_button.setEnabled(True)
        self.status_label.setText(
            f"sweep {record.sweep_id} started: study {record.study} in {record.storage}; "
            "its trials appear in the runs table"
        )
        self.sweep_started.emit(record)

    def _failed(self, message: str) -> None:
        self._starting = False
        self.start_button.setEnabled(True)
        self.status_label.setText("")
        self._mark({**self.model.errors(), **dict.fromkeys(fields_named(message), message)})
        self._show_error(message)

    def save_spec_as(self) -> None:
        """Save spec…: ask where, then :meth:`save_spec`."""
        spec = self.spec()
        if spec is None:
            return
        path, _filter = QFileDialog.getSaveFileName(
            self,
            "Save the sweep spec",
            str(Path.cwd() / f"{spec.label()}.yaml"),
            "YAML (*.yaml *.yml);;JSON (*.json)",
        )
        if path:
            self.save_spec(Path(path))

    def save_spec(self, path: Path) -> SweepSpec | None:
        """Write the spec to ``path`` (YAML by its suffix .yaml / .yml, JSON otherwise), the file
        `gym-gui sweep start` takes; the spec written, or None when it is not valid or cannot be written
        (the message shown)."""
        spec = self.spec()
        if spec is None:
            return None
        try:
            write_atomically(path, spec_text(spec, yaml_file=path.suffix.lower() in (".yaml", ".yml")))
        except OSError as exc:
            self._show_error(f"cannot write {path}: {exc}")
            return None
        self.status_label.setText(f"saved {path}: gym-gui sweep start {path}")
        return spec
