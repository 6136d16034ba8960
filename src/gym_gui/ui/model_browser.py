"""The checkpoint browser: every saved model of the home by environment and algorithm, the actions on one, importing."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import QModelIndex, Qt, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPushButton,
    QSpinBox,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from gym_gui.core.records import RunRecord
from gym_gui.envs.catalog import catalog as env_catalog
from gym_gui.storage.model_index import DigestCache, ModelEntry, gather_models, group_models, load_refusal
from gym_gui.ui.background import Background
from gym_gui.ui.daemon_link import DaemonLink
from gym_gui.ui.forms.model import FollowUp
from gym_gui.ui.tabs.checkpoints import DEFAULT_EPISODES, DEFAULT_RENDER_FPS, submit_evaluation
from gym_gui.workers import worker_catalog

log = logging.getLogger(__name__)

COLUMNS = ("model", "step", "final return", "size", "sha256", "run")
_KEY = Qt.ItemDataRole.UserRole


@dataclass(frozen=True)
class ModelAction:
    """One thing the browser does with the selected model: a button, enabled while a model is selected."""

    name: str
    label: str
    tooltip: str
    run: Callable[[ModelEntry], None]


class ModelBrowser(QWidget):
    """Saved models across all runs of the home: a tree env id → worker / algorithm → models.

    Each model shows its step, its run's final return (mean of the last episodic returns), its size
    and its sha256 (hashed off the GUI thread, once per file version: :class:`DigestCache`). Selecting
    a model checks it (:func:`load_refusal`); a model that is gone or changed since it was saved is
    refused with the reason and the selection returns to the previous one, on which the actions keep
    acting. ``evaluation_started(run_id)`` fires when Evaluate started a run, for the window to follow.
    """

    evaluation_started = Signal(str)
    imported = Signal(str)  # the run id of an imported model
    train_requested = Signal(object)  # a FollowUp: the training form filled to start from the model

    def __init__(
        self, link: DaemonLink, runs: Callable[[], list[RunRecord]], parent: QWidget | None = None
    ) -> None:
        super().__init__(parent)
        self.link = link
        self._runs = runs
        self.digests = DigestCache()
        self._background = Background(self, workers=2, name="model-browser")
        self._generation = 0
        self._entries: dict[tuple[str, str], ModelEntry] = {}
        self._items: dict[tuple[str, str], QTreeWidgetItem] = {}
        self.selected: ModelEntry | None = None  # the model the actions act on (checked when chosen)
        self._checking: tuple[str, str] | None = None

        self.tree = QTreeWidget()
        self.tree.setObjectName("modelTree")
        self.tree.setColumnCount(len(COLUMNS))
        self.tree.setHeaderLabels(list(COLUMNS))
        self.tree.header().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.tree.currentItemChanged.connect(self._current_changed)
        self.message = QLabel("")
        self.message.setWordWrap(True)
        self.refresh_button = QPushButton("Refresh")
        self.refresh_button.clicked.connect(self.refresh)
        self.import_button = QPushButton("Import model…")
        self.import_button.setToolTip("Store a model file from disk as a run of its own, after loading it")
        self.import_button.clicked.connect(self.open_import)

        self.episodes = QSpinBox()
        self.episodes.setRange(1, 10_000)
        self.episodes.setValue(DEFAULT_EPISODES)
        self.episodes.setToolTip("Episodes an evaluation plays")
        self.env = QComboBox()
        self.env.setEditable(True)
        self.env.addItems(sorted(env_catalog()))
        self.env.setToolTip("The environment to play: the model's own (the daemon refuses any other)")
        self.details = QLabel("No model selected.")
        self.details.setWordWrap(True)
        self.details.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.status = QLabel("")
        self.status.setWordWrap(True)

        # The actions on the selected model, in button order: one more is one line here.
        self.model_actions = (
            ModelAction(
                "evaluate",
                "Evaluate",
                "Play the model as a new, replayable run (watch it live)",
                self.evaluate,
            ),
            ModelAction(
                "train",
                "Train from this",
                "Fill the training form for a new run that starts from this model (a warm start)",
                self.train_from,
            ),
        )
        self.buttons: dict[str, QPushButton] = {}
        action_row = QHBoxLayout()
        action_row.addWidget(QLabel("Episodes"))
        action_row.addWidget(self.episodes)
        action_row.addWidget(QLabel("Env"))
        action_row.addWidget(self.env, 1)
        for action in self.model_actions:
            button = QPushButton(action.label)
            button.setToolTip(action.tooltip)
            button.clicked.connect(lambda _=False, act=action: self._act(act))
            self.buttons[action.name] = button
            action_row.addWidget(button)

        top = QHBoxLayout()
        top.addWidget(self.refresh_button)
        top.addWidget(self.import_button)
        top.addStretch(1)
        layout = QVBoxLayout(self)
        layout.addLayout(top)
        layout.addWidget(self.message)
        layout.addWidget(self.tree, 1)
        layout.addWidget(self.details)
        layout.addLayout(action_row)
        layout.addWidget(self.status)
        self._update_actions()

    # ------------------------------------------------------------ reading

    def refresh(self) -> None:
        """Gather the models of every run the window knows and hash them (off the GUI thread)."""
        self._generation += 1
        generation = self._generation
        runs = self._runs()
        digests = self.digests

        def gather() -> list[ModelEntry]:
            entries = gather_models(runs, worker_catalog().return_metric)
            for entry in entries:
                if entry.model.exists:
                    try:
                        digests.digest(entry.file)
                    except OSError as exc:  # shown as unreadable when selected
                        log.warning("%s not hashed: %s", entry.file, exc)
            return entries

        self.message.setText("Reading the runs' saved models…")
        self._background.run(
            gather,
            lambda entries: self._show(entries) if generation == self._generation else None,
            lambda message: self.message.setText(f"The saved models could not be read: {message}"),
            name="model-browser-gather",
        )

    def run_changed(self, run: RunRecord) -> None:
        """A run's row changed: a run that ended may have saved models, so list again (when shown)."""
        if run.state.terminal and self.isVisible():
            self.refresh()

    def _show(self, entries: list[ModelEntry]) -> None:
        self._entries = {entry.key: entry for entry in entries}
        if self.selected is not None:
            self.selected = self._entries.get(self.selected.key)
        self.tree.blockSignals(True)
        self.tree.clear()
        self._items = {}
        for env_id, groups in group_models(entries).items():
            env_item = QTreeWidgetItem([env_id])
            self.tree.addTopLevelItem(env_item)
            for group, models in groups.items():
                group_item = QTreeWidgetItem([group])
                env_item.addChild(group_item)
                for entry in models:
                    self._items[entry.key] = self._item(entry)
                    group_item.addChild(self._items[entry.key])
        self.tree.expandAll()
        self.tree.blockSignals(False)
        self._set_current(self.selected.key if self.selected is not None else None)
        runs = len({entry.run_id for entry in entries})
        self.message.setText(
            f"{len(entries)} saved model(s) of {runs} run(s)."
            if entries
            else "No saved model yet: CleanRL runs save their final model when training ends; "
            "Import model… takes one from disk."
        )
        self._update_actions()

    def _item(self, entry: ModelEntry) -> QTreeWidgetItem:
        model = entry.model
        digest = self.digests.known(entry.file) if model.exists else None
        final = "-" if entry.final_return is None else f"{entry.final_return:.6g}"
        item = QTreeWidgetItem(
            [
                model.path.rsplit("/", 1)[-1],
                f"{model.step:,}",
                final,
                f"{model.size / 1024:,.1f} KiB" if model.exists else "missing",
                digest[:12] if digest else "",
                entry.run_id,
            ]
        )
        item.setData(0, _KEY, entry.key)
        item.setToolTip(0, model.path)
        item.setToolTip(
            2,
            f"mean of the run's last {entry.returns} episodic returns"
            if entry.returns
            else "no returns stored",
        )
        item.setToolTip(4, digest or "")
        for column in (1, 2, 3):
            item.setTextAlignment(column, Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        return item

    def _find(self, key: tuple[str, str]) -> QTreeWidgetItem | None:
        return self._items.get(key)

    def _set_current(self, key: tuple[str, str] | None) -> None:
        """Move the tree's current row to ``key``'s model (none: no row), telling no one."""
        item = self._items.get(key) if key is not None else None
        self.tree.blockSignals(True)
        if item is not None:
            self.tree.setCurrentItem(item)
        else:
            self.tree.setCurrentIndex(QModelIndex())
        self.tree.blockSignals(False)

    def item_for(self, run_id: str, path: str) -> QTreeWidgetItem | None:
        """The tree's row of the model ``path`` of ``run_id`` (None when it is not listed)."""
        return self._find((run_id, path))

    def entries(self) -> list[ModelEntry]:
        return list(self._entries.values())

    # ------------------------------------------------------------ selection

    def select(self, run_id: str, path: str) -> None:
        """Select a model as a click would (it is checked before the actions take it)."""
        item = self._find((run_id, path))
        if item is not None:
            self.tree.setCurrentItem(item)

    def _current_changed(self, current: QTreeWidgetItem | None, _previous: QTreeWidgetItem | None) -> None:
        key = tuple(current.data(0, _KEY) or ()) if current is not None else ()
        entry = self._entries.get(key) if len(key) == 2 else None
        if entry is None or (self.selected is not None and entry.key == self.selected.key):
            return
        self._checking = entry.key
        self.status.setText(f"Checking {entry.model.path} of {entry.run_id}…")
        digests = self.digests
        self._background.run(
            lambda: load_refusal(entry, digests),
            lambda refusal: self._checked(entry, refusal),
            lambda message: self._checked(entry, message),
            name="model-browser-check",
        )

    def _checked(self, entry: ModelEntry, refusal: str | None) -> None:
        if self._checking != entry.key:
            return  # another model was chosen meanwhile
        self._checking = None
        if refusal is None:
            self.selected = entry
            self.status.setText("")
            item = self._find(entry.key)
            digest = self.digests.known(entry.file)
            if item is not None and digest:
                item.setText(4, digest[:12])
                item.setToolTip(4, digest)
            self.env.setCurrentText(entry.env_id)
        else:
            kept = (
                f"; still selected: {self.selected.model.path} of {self.selected.run_id}"
                if self.selected
                else ""
            )
            self.status.setText(f"Cannot load it: {refusal}{kept}")
            self._set_current(self.selected.key if self.selected is not None else None)
        self._update_actions()

    def _update_actions(self) -> None:
        entry = self.selected
        if entry is None:
            self.details.setText("No model selected.")
        else:
            origin = f"; imported from {entry.imported_from}" if entry.imported_from else ""
            self.details.setText(
                f"{entry.model.path} of run {entry.run_id} ({entry.group} on {entry.env_id}), "
                f"saved at step {entry.model.step:,}{origin}"
            )
        for button in self.buttons.values():
            button.setEnabled(entry is not None)

    def _act(self, action: ModelAction) -> None:
        if self.selected is not None:
            action.run(self.selected)

    # ------------------------------------------------------------ actions

    def evaluate(self, entry: ModelEntry) -> None:
        """Start an evaluation of ``entry`` on the chosen environment, played in real time to be watched."""
        run_id, path, episodes = entry.run_id, entry.model.path, self.episodes.value()
        env_id = self.env.currentText().strip() or entry.env_id
        self.status.setText(f"Starting an evaluation of {path} of {run_id} on {env_id}…")
        self.link.call(
            lambda client: submit_evaluation(
                client, run_id, path, episodes, DEFAULT_RENDER_FPS, True, env_id
            ),
            self._evaluation_submitted,
            lambda message: self.status.setText(f"The evaluation was refused: {message}"),
        )

    def train_from(self, entry: ModelEntry) -> None:
        """Ask for the training form of the model's worker, filled to start from it: its algorithm and
        environment, and the model as the warm start (the daemon refuses one its script cannot load)."""
        config = {
            "worker": entry.worker,
            "algorithm": entry.algorithm,
            "env_id": entry.env_id,
            "warm_start": {"run_id": entry.run_id, "checkpoint": entry.model.path},
        }
        self.train_requested.emit(FollowUp(config, {}, f"the model {entry.model.path} of {entry.run_id}"))
        self.status.setText(f"The training form starts from {entry.model.path} of {entry.run_id}.")

    def _evaluation_submitted(self, run_id: str) -> None:
        self.status.setText(f"Evaluation {run_id} started.")
        self.evaluation_started.emit(run_id)

    # ------------------------------------------------------------ importing

    def open_import(self) -> None:
        """Ask for a file and what it is, then import it."""
        dialog = ImportModelDialog(self)
        if dialog.exec() == QDialog.DialogCode.Accepted:
            self.import_model(*dialog.request())

    def import_model(self, path: str, worker: str, algorithm: str, env_id: str) -> None:
        """Have the daemon check and store the file as a run of its own; the browser lists it once stored."""
        self.status.setText(f"Importing {path} (loading it as a {algorithm} model for {env_id})…")
        self.link.call(
            lambda client: client.import_model(path, worker, algorithm, env_id),
            self._imported,
            lambda message: self.status.setText(f"The import was refused: {message}"),
        )

    def _imported(self, record: RunRecord) -> None:
        self.status.setText(f"Imported as run {record.run_id}.")
        self.imported.emit(record.run_id)
        self.refresh()


class ImportModelDialog(QDialog):
    """Which file to import and what it is: the worker kind, its algorithm and the environment."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Import a model")
        self.file = QLineEdit()
        self.file.setPlaceholderText("a model file, e.g. final.cleanrl_model")
        browse = QPushButton("Browse…")
        browse.clicked.connect(self._browse)
        self.worker = QComboBox()
        catalog = worker_catalog()
        for plugin in catalog.plugins():
            if plugin.spec.capabilities.evaluation:
                self.worker.addItem(plugin.spec.display_name, plugin.spec.kind)
        # The kind whose runs are chosen by algorithm, as the CLI's default.
        self.worker.setCurrentIndex(max(self.worker.findData(catalog.scripts_kind()), 0))
        self.algorithm = QLineEdit("ppo")
        self.env = QComboBox()
        self.env.setEditable(True)
        self.env.addItems(sorted(env_catalog()))
        self.env.setCurrentText("CartPole-v1")
        file_row = QHBoxLayout()
        file_row.addWidget(self.file, 1)
        file_row.addWidget(browse)
        form = QFormLayout(self)
        form.addRow("File", file_row)
        form.addRow("Worker", self.worker)
        form.addRow("Algorithm", self.algorithm)
        form.addRow("Environment", self.env)
        buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel
        )
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        form.addRow(buttons)

    def _browse(self) -> None:
        path, _filter = QFileDialog.getOpenFileName(self, "Model file", str(Path.home()))
        if path:
            self.file.setText(path)

    def request(self) -> tuple[str, str, str, str]:
        """(absolute path, worker kind, algorithm, env id) as entered."""
        path = self.file.text().strip()
        return (
            str(Path(path).expanduser().absolute()) if path else "",
            str(self.worker.currentData() or ""),
            self.algorithm.text().strip(),
            self.env.currentText().strip(),
        )
