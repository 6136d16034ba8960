"""The left dock: Human | Agent, then what that mode needs — Human: the environment picker with its Game
Info; Agent: the worker roster and its form (whose environment field is the run's one choice)."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QButtonGroup,
    QComboBox,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListView,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QRadioButton,
    QSpinBox,
    QStackedWidget,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from gym_gui.core.workers import Launch
from gym_gui.envs.catalog import catalog_by_family, env_doc, env_family, family_installed
from gym_gui.ui.combos import fit_to_layout
from gym_gui.ui.daemon_link import DaemonLink
from gym_gui.ui.env_install import FamilyInstaller
from gym_gui.ui.presenters import presenter_for
from gym_gui.workers import worker_catalog

HUMAN, AGENT = "human", "agent"


class EnvPicker(QWidget):
    """Environments grouped by family, a filter box over them, and the selected one's Game Info (its
    Markdown doc). Atari lists every game ale-py registers, or only its install line without it."""

    env_changed = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.filter = QLineEdit()
        self.filter.setObjectName("envFilter")
        self.filter.setPlaceholderText("Filter by name or id (Enter picks the first)")
        self.filter.setClearButtonEnabled(True)
        self.combo = QComboBox()
        self.combo.setObjectName("envPicker")
        self.combo.setMaxVisibleItems(20)
        fit_to_layout(self.combo, 16)  # the dock's width, not its longest line's
        self.list_view = QListView()  # the combo's list, whose rows the filter hides
        self.combo.setView(self.list_view)
        # Each row's family and the text a filter matches (an entry's title and id, lower case; ""
        # for a family's heading and install line, shown while one of its entries is).
        self._lines: list[tuple[str, str]] = []
        self._fill()
        self.installer = FamilyInstaller()
        self.installer.installed.connect(self._family_installed)
        self.info = QTextBrowser()
        self.info.setObjectName("gameInfo")
        self.info.setOpenExternalLinks(True)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.filter)
        layout.addWidget(self.combo)
        layout.addWidget(self.installer)
        layout.addWidget(self.info, 1)
        self.combo.currentIndexChanged.connect(self._changed)
        self.filter.textChanged.connect(self._filter)
        self.filter.returnPressed.connect(self._pick_first)

    def _fill(self) -> None:
        """List every family: its entries when installed, else its install line."""
        for name, entries in catalog_by_family().items():
            family = env_family(name)
            installed = family_installed(name)
            if installed and not entries:
                continue
            self._add_line(f"— {family.title} —", name)
            if not installed:
                # Its entries cannot be made here: the family says how to install it, or why it cannot be.
                self._add_line(f"not installed: {family.install_hint}", name)
                continue
            for entry in entries:
                self.combo.addItem(entry.env_id, entry.env_id)
                self.combo.setItemData(self.combo.count() - 1, entry.title, Qt.ItemDataRole.ToolTipRole)
                self._lines.append((name, f"{entry.title} {entry.env_id}".lower()))

    def _family_installed(self, _name: str) -> None:
        """A family was just installed: list its entries, keeping the env chosen and the filter."""
        chosen = self.env_id
        self.combo.blockSignals(True)
        try:
            self.combo.clear()
            self._lines.clear()
            self._fill()
            self.set_env(chosen)
        finally:
            self.combo.blockSignals(False)
        self._filter(self.filter.text())

    def _add_line(self, text: str, family: str) -> None:
        self.combo.addItem(text)
        line = self.combo.model().item(self.combo.count() - 1)  # type: ignore[attr-defined]
        line.setEnabled(False)
        self._lines.append((family, ""))

    @property
    def env_id(self) -> str:
        return str(self.combo.currentData() or "")

    def set_env(self, env_id: str) -> None:
        index = self.combo.findData(env_id)
        if index >= 0:
            self.combo.setCurrentIndex(index)

    def matches(self) -> list[str]:
        """The env ids the filter leaves in the list, in its order."""
        return [
            str(self.combo.itemData(row))
            for row, (_family, text) in enumerate(self._lines)
            if text and not self.list_view.isRowHidden(row)
        ]

    def _filter(self, text: str) -> None:
        needle = text.strip().lower()
        found = {family for family, row_text in self._lines if row_text and needle in row_text}
        for row, (family, row_text) in enumerate(self._lines):
            shown = needle in row_text if row_text else not needle or family in found
            self.list_view.setRowHidden(row, not shown)

    def _pick_first(self) -> None:
        found = self.matches()
        if found and self.env_id not in found:
            self.set_env(found[0])

    def _changed(self, _index: int) -> None:
        env_id = self.env_id
        if not env_id:
            return
        try:
            self.info.setMarkdown(env_doc(env_id))
        except KeyError:
            self.info.setPlainText(env_id)
        self.env_changed.emit(env_id)


class Roster(QListWidget):
    """The worker roster: every installed worker plugin in its order; kinds that cannot run yet and
    plugins that are broken are greyed with the reason."""

    worker_changed = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("roster")
        for entry in worker_catalog().roster():
            item = QListWidgetItem(entry.display_name)
            item.setData(Qt.ItemDataRole.UserRole, entry.kind)
            if entry.spec is not None:
                about = f" — {entry.spec.description}" if entry.spec.description else ""
                item.setToolTip(f"{entry.display_name}: {entry.spec.lane.value} lane{about}")
            if not entry.available:
                item.setFlags(item.flags() & ~Qt.ItemFlag.ItemIsEnabled & ~Qt.ItemFlag.ItemIsSelectable)
                item.setToolTip(f"{entry.display_name} is unavailable: {entry.reason}")
                item.setText(f"{entry.display_name} ({'broken' if entry.spec is None else 'unavailable'})")
            self.addItem(item)
        # Every kind in view at once: the roster never scrolls, the form below it takes the rest.
        self.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        rows = sum(self.sizeHintForRow(row) for row in range(self.count()))
        self.setFixedHeight(rows + 2 * self.frameWidth())
        self.currentItemChanged.connect(self._changed)

    def kind(self) -> str:
        item = self.currentItem()
        return str(item.data(Qt.ItemDataRole.UserRole)) if item else ""

    def select(self, kind: str) -> None:
        for row in range(self.count()):
            item = self.item(row)
            if item.data(Qt.ItemDataRole.UserRole) == kind and item.flags() & Qt.ItemFlag.ItemIsEnabled:
                self.setCurrentRow(row)
                return

    def display_names(self) -> list[str]:
        return [self.item(row).text() for row in range(self.count())]

    def _changed(self, current: QListWidgetItem | None, _previous: QListWidgetItem | None) -> None:
        if current is not None:
            self.worker_changed.emit(str(current.data(Qt.ItemDataRole.UserRole)))


class UseTrainedPanel(QWidget):
    """Pick a finished training run with a saved model and watch its agent play.

    Only runs with a model file are offered (the window checks through the run's directory); with
    none, the panel says so instead of offering a run that cannot be evaluated.
    """

    evaluate_requested = Signal(str, int)  # run id, episodes

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.runs = QComboBox()
        self.runs.setObjectName("trainedRuns")
        self.episodes = QSpinBox()
        self.episodes.setRange(1, 1000)
        self.episodes.setValue(5)
        self.button = QPushButton("Watch it play")
        self.button.setObjectName("watchTrained")
        self.empty = QLabel(
            "No finished training run with a saved model yet. Train one (a worker that saves models, "
            "such as the CleanRL Worker) and it is offered here."
        )
        self.empty.setObjectName("noTrainedRuns")
        self.empty.setWordWrap(True)
        layout = QVBoxLayout(self)
        layout.addWidget(QLabel("Trained run"))
        layout.addWidget(self.empty)
        layout.addWidget(self.runs)
        row = QHBoxLayout()
        row.addWidget(QLabel("Episodes"))
        row.addWidget(self.episodes)
        layout.addLayout(row)
        layout.addWidget(self.button)
        layout.addStretch(1)
        self.button.clicked.connect(self._evaluate)
        self._update()

    def offer(self, run_id: str) -> None:
        """List ``run_id`` (a finished run with a saved model) first."""
        if self.runs.findText(run_id) < 0:
            self.runs.insertItem(0, run_id)
            self.runs.setCurrentIndex(0)
        self._update()

    def withdraw(self, run_id: str) -> None:
        """Stop offering ``run_id`` (deleted)."""
        index = self.runs.findText(run_id)
        if index >= 0:
            self.runs.removeItem(index)
        self._update()

    def offered(self) -> list[str]:
        return [self.runs.itemText(i) for i in range(self.runs.count())]

    def _update(self) -> None:
        some = self.runs.count() > 0
        self.empty.setVisible(not some)
        self.runs.setVisible(some)
        self.button.setEnabled(some)

    def _evaluate(self) -> None:
        if self.runs.currentText():
            self.evaluate_requested.emit(self.runs.currentText(), self.episodes.value())


class ControlPanel(QWidget):
    """Everything on the left: what to play or train, and how.

    One page per mode, so one environment choice is on screen at a time: in Human mode the picker
    (what the centre plays), in Agent mode the form's own field (what the run trains on, among the
    environments its worker can run). The Agent page gives the form all the height the roster leaves.
    """

    mode_changed = Signal(str)
    env_changed = Signal(str)
    worker_changed = Signal(str)

    def __init__(self, link: DaemonLink, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.link = link
        self.human = QRadioButton("Human")
        self.agent = QRadioButton("Agent")
        self.human.setChecked(True)
        modes = QButtonGroup(self)
        modes.addButton(self.human)
        modes.addButton(self.agent)
        mode_row = QHBoxLayout()
        mode_row.addWidget(self.human)
        mode_row.addWidget(self.agent)

        self.env_picker = EnvPicker()
        env_box = QGroupBox("Environment")
        QVBoxLayout(env_box).addWidget(self.env_picker)

        self.roster = Roster()
        self.train_new = QRadioButton("Train new")
        self.use_trained = QRadioButton("Use trained")
        self.train_new.setChecked(True)
        train_modes = QButtonGroup(self)
        train_modes.addButton(self.train_new)
        train_modes.addButton(self.use_trained)
        train_row = QHBoxLayout()
        train_row.addWidget(self.train_new)
        train_row.addWidget(self.use_trained)
        self.forms = QStackedWidget()
        self.no_form = QLabel("Choose a worker.")
        self.no_form.setWordWrap(True)
        # At the top, where a form starts.
        self.no_form.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        self.forms.addWidget(self.no_form)
        self.trained = UseTrainedPanel()
        self.forms.addWidget(self.trained)
        self._forms: dict[str, QWidget] = {}

        self.agent_box = QWidget()
        self.agent_box.setObjectName("agentPage")
        agent_layout = QVBoxLayout(self.agent_box)
        agent_layout.setContentsMargins(0, 0, 0, 0)
        agent_layout.addWidget(self.roster)
        agent_layout.addLayout(train_row)
        agent_layout.addWidget(self.forms, 1)

        self.env_box = env_box
        self.pages = QStackedWidget()
        self.pages.setObjectName("controlPages")
        self.pages.addWidget(env_box)
        self.pages.addWidget(self.agent_box)

        layout = QVBoxLayout(self)
        layout.addLayout(mode_row)
        layout.addWidget(self.pages, 1)

        self.human.toggled.connect(self._mode)
        self.env_picker.env_changed.connect(self.env_changed)
        self.roster.worker_changed.connect(self._worker)
        self.train_new.toggled.connect(lambda _on: self._show_form())
        self._mode(True)

    @property
    def mode(self) -> str:
        return HUMAN if self.human.isChecked() else AGENT

    def set_mode(self, mode: str) -> None:
        (self.human if mode == HUMAN else self.agent).setChecked(True)

    def _mode(self, _checked: bool) -> None:
        self.pages.setCurrentWidget(self.agent_box if self.mode == AGENT else self.env_box)
        self.mode_changed.emit(self.mode)

    def _worker(self, kind: str) -> None:
        self.worker_changed.emit(kind)
        self._show_form()

    def form(self, kind: str) -> QWidget | None:
        """The form of ``kind``, built once from what the daemon says about it."""
        if kind not in self._forms:
            form = presenter_for(kind).form(self.link)
            if form is None:
                return None
            self._forms[kind] = form
            self.forms.addWidget(form)
        return self._forms[kind]

    def show_form(self, kind: str) -> QWidget | None:
        """Agent mode, Train new, ``kind`` chosen in the roster: its form shown and returned (None for a
        kind without one)."""
        self.set_mode(AGENT)
        self.train_new.setChecked(True)
        if kind and self.roster.kind() != kind:
            self.roster.select(kind)
        self._show_form()
        return self.form(kind) if kind else None

    @staticmethod
    def _no_form_text(kind: str) -> str:
        if not kind:
            return "Choose a worker."
        spec = presenter_for(kind).spec
        if spec.launch is Launch.CLIENT:
            return f"{spec.display_name} plays in the centre view: switch to Human mode (Hybrid and Agent seat an operator)."
        return f"{spec.display_name} has no training form."

    def _show_form(self) -> None:
        kind = self.roster.kind()
        if self.use_trained.isChecked():
            self.forms.setCurrentWidget(self.trained)
            return
        form = self.form(kind) if kind else None
        if form is None:
            self.no_form.setText(self._no_form_text(kind))
            self.forms.setCurrentWidget(self.no_form)
        else:
            self.forms.setCurrentWidget(form)
