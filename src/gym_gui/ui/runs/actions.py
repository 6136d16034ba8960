"""The runs table's actions: its button bar and context menu, and what each does to the selected runs
(cancel, pause, resume, checkpoint, re-run, archive, delete, open folder, export, publish), and Prune…."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt, QUrl, Signal
from PySide6.QtGui import QDesktopServices
from PySide6.QtWidgets import QFileDialog, QLabel, QMenu, QMessageBox, QToolBar, QToolButton, QWidget

from gym_gui.core.config import RunConfig
from gym_gui.core.controls import Control
from gym_gui.core.records import RunRecord
from gym_gui.core.rerun import PackageChange
from gym_gui.core.states import RunState
from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.home import Home
from gym_gui.storage.run_dir import RunDir
from gym_gui.ui.background import Background
from gym_gui.ui.capabilities import capabilities_of
from gym_gui.ui.daemon_link import DaemonLink
from gym_gui.ui.publish_dialog import PublishDialog, publish_run_dialog
from gym_gui.ui.run_controls import DESCRIPTIONS, RERUN_DESCRIPTION, refusal, rerun_refusal, send_control
from gym_gui.ui.runs.model import RunsModel
from gym_gui.ui.runs.prune_dialog import PruneDialog
from gym_gui.workers import secrets_from_environment


def _bind(fn: Callable[..., Any], *args: Any) -> Callable[[Any], Any]:
    """``fn(first, *args)`` as a one-argument callable (a client method bound to a run id, a loop-safe
    replacement for lambdas with default arguments)."""

    def call(first: Any) -> Any:
        return fn(first, *args)

    return call


PUBLISH_DESCRIPTION = (
    "Publish the run's model to the Hugging Face Hub: evaluated now, with its card, curves and a replay"
)


def publish_refusal(run: RunRecord) -> str:
    """Why ``run``'s model cannot be published (empty when it can): as ``gym-gui publish``, a completed
    run whose kind evaluates models and which saved one (an evaluation saves none). Reads the run's
    manifest."""
    if run.state is not RunState.COMPLETED:
        return f"{run.run_id} is {run.state.value}: only a completed run's model is published"
    if not capabilities_of(run.worker).evaluation or not run.run_dir:
        return f"{run.worker} runs have no model to publish"
    return "" if RunDir(run.run_dir).saved_models() else f"{run.run_id} saved no model to publish"


def _button(text: str) -> QToolButton:
    """A button of the runs' tool bar: as wide as its text (a push button's style minimum is wider)."""
    button = QToolButton()
    button.setText(text)
    button.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextOnly)
    return button


class RunActions(QWidget):
    """The row actions of :class:`~gym_gui.ui.runs.table.RunsTable`, which is one of these.

    Each action works on the run ids it is given, by default on the table's selected rows (its
    current row for those that take one run); its outcome is said in :attr:`message_label` and
    emitted as :attr:`message`. The table provides the selection and its store of runs
    (:meth:`selected_run_ids`, :meth:`current_run_id`, :meth:`_run_updated`, :meth:`_run_removed`).
    """

    exported = Signal(str, str)  # run id, archive path
    message = Signal(str)  # the outcome of the last action, for a status bar
    comparison_requested = Signal(str)  # a comparison id (an arena session's, a batch's): open its runs
    replay_together_requested = Signal(list)  # run ids: replay them side by side

    def __init__(self, link: DaemonLink, model: RunsModel, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.link = link
        self.model = model
        model.setParent(self)
        self.confirm_delete = True
        # How many selected runs the menu offers to replay together (the window that shows them says).
        self.together_counts = range(0)
        self._files = Background(self, workers=1, name="file-work")

        self.cancel_button = _button("Cancel")
        self.pause_button = _button("Pause")
        self.pause_button.setObjectName("runsPause")
        self.resume_button = _button("Resume")
        self.resume_button.setObjectName("runsResume")
        self.checkpoint_button = _button("Checkpoint")
        self.checkpoint_button.setObjectName("runsCheckpoint")
        # The run controls, enabled from the selected runs' states and their workers' capabilities.
        self.control_buttons = {
            Control.PAUSE: self.pause_button,
            Control.RESUME: self.resume_button,
            Control.CHECKPOINT: self.checkpoint_button,
        }
        self.rerun_button = _button("Re-run")
        self.rerun_button.setObjectName("runsRerun")
        # The confirmation a re-run asks for when the package set differs (None while none is open).
        self.rerun_dialog: QMessageBox | None = None
        self.archive_button = _button("Archive")
        self.delete_button = _button("Delete…")
        self.open_button = _button("Open folder")
        self.export_button = _button("Export…")
        # Not a row action: deletes ended runs by rules (`gym-gui prune`), whatever is selected.
        self.prune_button = _button("Prune…")
        self.prune_button.setObjectName("runsPrune")
        self.prune_button.setToolTip("Delete ended runs by age, state, or all but each sweep's best")
        self.prune_dialog: PruneDialog | None = None
        # The Publish… dialog last opened (None before the first).
        self.publish_window: PublishDialog | None = None
        self.message_label = QLabel()
        self.message_label.setObjectName("runsMessage")
        self.message_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        # The row actions, in the order of the button bar and of the context menu.
        self.action_buttons = (
            self.cancel_button,
            self.pause_button,
            self.resume_button,
            self.checkpoint_button,
            self.rerun_button,
            self.archive_button,
            self.delete_button,
            self.open_button,
            self.export_button,
        )
        # The buttons sit in a tool bar, which folds those that do not fit into its » menu: the runs
        # dock never holds the dock beside it (a run's form) narrow. A long message is cut, in full
        # as its tooltip, for the same reason.
        self.button_bar = QToolBar()
        self.button_bar.setObjectName("runsButtons")
        for button in self.action_buttons:
            self.button_bar.addWidget(button)
        self.button_bar.addSeparator()
        self.button_bar.addWidget(self.prune_button)
        self.message_label.setMinimumWidth(1)

        self.cancel_button.clicked.connect(lambda: self.cancel())
        self.pause_button.clicked.connect(lambda: self.control(Control.PAUSE))
        self.resume_button.clicked.connect(lambda: self.control(Control.RESUME))
        self.checkpoint_button.clicked.connect(lambda: self.control(Control.CHECKPOINT))
        self.rerun_button.clicked.connect(lambda: self.rerun())
        self.archive_button.clicked.connect(self._archive_clicked)
        self.delete_button.clicked.connect(lambda: self.delete())
        self.open_button.clicked.connect(lambda: self.open_folder())
        self.export_button.clicked.connect(lambda: self.export_dialog())
        self.prune_button.clicked.connect(lambda: self.prune())

    # -------------------------------------------------------- what the table provides

    def selected_run_ids(self) -> list[str]:
        raise NotImplementedError

    def current_run_id(self) -> str | None:
        raise NotImplementedError

    def comparison_of(self, run_id: str) -> str:
        """The comparison the run is one side of, "" for none (or not known yet)."""
        raise NotImplementedError

    def _run_updated(self, info: RunRecord) -> None:
        raise NotImplementedError

    def _run_removed(self, run_id: str) -> None:
        raise NotImplementedError

    # -------------------------------------------------------- buttons and menu

    def _targets(self, run_ids: list[str] | None) -> list[str]:
        return list(run_ids) if run_ids is not None else self.selected_run_ids()

    def _update_buttons(self) -> None:
        selected = [info for info in map(self.model.info, self.selected_run_ids()) if info is not None]
        self.cancel_button.setEnabled(any(not info.state.terminal for info in selected))
        for control, button in self.control_buttons.items():
            refusals = [refusal(info, control) for info in selected]
            button.setEnabled(any(not why for why in refusals))
            # One run selected: say why it cannot; several: apply to those that can.
            why = refusals[0] if len(refusals) == 1 else ""
            button.setToolTip(why or DESCRIPTIONS[control])
        why = rerun_refusal(selected[0]) if len(selected) == 1 else "select one run to re-run it"
        self.rerun_button.setEnabled(not why)
        self.rerun_button.setToolTip(why or RERUN_DESCRIPTION)
        self.archive_button.setEnabled(bool(selected))
        self.archive_button.setText(
            "Unarchive" if selected and all(info.archived for info in selected) else "Archive"
        )
        self.delete_button.setEnabled(bool(selected))
        self.open_button.setEnabled(len(selected) == 1)
        self.export_button.setEnabled(len(selected) == 1)

    def context_menu(self) -> QMenu | None:
        """The row actions of the selected runs as a menu (None when nothing is selected)."""
        if not self.selected_run_ids():
            return None
        menu = QMenu(self)
        for button in self.action_buttons:
            action = menu.addAction(button.text())
            action.setEnabled(button.isEnabled())
            action.setToolTip(button.toolTip())
            action.triggered.connect(button.click)
        selected = self.selected_run_ids()
        comparison = self.comparison_of(selected[0]) if len(selected) == 1 else ""
        together = len(selected) in self.together_counts
        menu.addSeparator()
        # Publish… is the menu's only (the button bar keeps to what fits beside the run's form).
        info = self.model.info(selected[0]) if len(selected) == 1 else None
        why = publish_refusal(info) if info is not None else "select one run to publish its model"
        action = menu.addAction("Publish…")
        action.setEnabled(not why)
        action.setToolTip(why or PUBLISH_DESCRIPTION)
        action.triggered.connect(lambda: self.publish())
        if comparison:
            action = menu.addAction("Open its comparison")
            action.setToolTip(
                f"Select every run of comparison {comparison}: Compare overlays them, Replay together "
                "plays them side by side"
            )
            action.triggered.connect(lambda: self.comparison_requested.emit(comparison))
        if together:
            action = menu.addAction("Replay together")
            action.setToolTip("Replay the selected runs side by side: one episode number, one step for all")
            action.triggered.connect(lambda: self.replay_together_requested.emit(selected))
        menu.setToolTipsVisible(True)
        return menu

    # -------------------------------------------------------- actions

    def _error(self, message: str) -> None:
        self._say(message, "color: #c62828;")

    def _note(self, message: str) -> None:
        self._say(message, "")

    def _say(self, message: str, style: str) -> None:
        self.message_label.setStyleSheet(style)
        self.message_label.setText(message)
        self.message_label.setToolTip(message)
        self.message.emit(message)

    def cancel(self, run_ids: list[str] | None = None) -> None:
        """Cancel runs (default: the selected ones that have not ended)."""
        for run_id in self._targets(run_ids):
            self.link.call(_bind(DaemonClient.cancel, run_id), self._cancelled, self._error)

    def _cancelled(self, info: RunRecord) -> None:
        self._note(f"cancelling {info.run_id}")

    def control(self, control: Control, run_ids: list[str] | None = None) -> None:
        """Pause, resume or checkpoint runs (default: the selected ones); runs it does not apply to are skipped."""
        asked = {
            Control.PAUSE: "pausing",
            Control.RESUME: "resuming",
            Control.CHECKPOINT: "checkpoint asked of",
        }
        for run_id in self._targets(run_ids):
            info = self.model.info(run_id)
            if info is None or refusal(info, control):
                continue
            send_control(self.link, run_id, control, _bind(self._controlled, asked[control]), self._error)

    def _controlled(self, info: RunRecord, asked: str) -> None:
        self._note(f"{asked} {info.run_id}")

    def rerun(self, run_id: str | None = None) -> None:
        """Run a run again (default: the current one) with its config and seed. The daemon's preview
        says first how today's package set differs from the one it ran with; a difference is shown
        in :attr:`rerun_dialog` and the re-run starts only once it is confirmed."""
        run_id = run_id or self.current_run_id()
        if not run_id:
            return

        def plan(client: DaemonClient) -> tuple[RunConfig, list[PackageChange]]:
            config = client.rerun_config(run_id)
            return config, client.preview(config, secrets_from_environment(config)).package_changes

        self.link.call(plan, lambda planned: self._rerun_planned(run_id, *planned), self._error)

    def _rerun_planned(self, run_id: str, config: RunConfig, changes: list[PackageChange]) -> None:
        if not changes:
            self._submit_rerun(run_id, config)
            return
        shown = "\n".join(change.text() for change in changes[:20])
        if len(changes) > 20:
            shown += f"\n… and {len(changes) - 20} more"
        dialog = QMessageBox(
            QMessageBox.Icon.Warning,
            "Re-run",
            f"The package set differs from the one {run_id} ran with (old → new):\n\n{shown}\n\n"
            "Re-run with today's packages?",
            QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No,
            self,
        )
        dialog.setObjectName("rerunConfirm")
        dialog.setDefaultButton(QMessageBox.StandardButton.No)

        def answered(result: int) -> None:
            self.rerun_dialog = None
            if result == QMessageBox.StandardButton.Yes:
                self._submit_rerun(run_id, config)
            else:
                self._note(f"not re-run: {len(changes)} packages differ from those {run_id} ran with")

        dialog.finished.connect(answered)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        self.rerun_dialog = dialog
        dialog.open()

    def _submit_rerun(self, run_id: str, config: RunConfig) -> None:
        def submit(client: DaemonClient) -> RunRecord:
            return client.submit(config, secrets_from_environment(config))[0]

        def done(record: RunRecord) -> None:
            self._run_updated(record)
            self._note(f"re-running {run_id} as {record.run_id}")

        self.link.call(submit, done, self._error)

    def _archive_clicked(self) -> None:
        self.set_archived(None, self.archive_button.text() == "Archive")

    def set_archived(self, run_ids: list[str] | None = None, archived: bool = True) -> None:
        """Archive (hidden unless "Archived" is checked) or unarchive runs (default: the selected ones)."""
        for run_id in self._targets(run_ids):
            self.link.call(_bind(DaemonClient.archive, run_id, archived), self._run_updated, self._error)

    def archive(self, run_ids: list[str] | None = None) -> None:
        self.set_archived(run_ids, True)

    def unarchive(self, run_ids: list[str] | None = None) -> None:
        self.set_archived(run_ids, False)

    def delete(self, run_ids: list[str] | None = None, confirm: bool | None = None) -> bool:
        """Delete runs and their directories (default: the selected ones), after asking.

        Args:
            confirm: ask first; None means :attr:`confirm_delete`.

        Returns:
            Whether the deletion was sent to the daemon.
        """
        targets = self._targets(run_ids)
        if not targets:
            return False
        if self.confirm_delete if confirm is None else confirm:
            shown = "\n".join(targets[:10]) + (
                f"\n… and {len(targets) - 10} more" if len(targets) > 10 else ""
            )
            answer = QMessageBox.question(
                self,
                "Delete runs",
                f"Delete {len(targets)} run(s) with their directories? This cannot be undone.\n\n{shown}",
                QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No,
                QMessageBox.StandardButton.No,
            )
            if answer != QMessageBox.StandardButton.Yes:
                return False
        for run_id in targets:
            self.link.call(_bind(DaemonClient.delete, run_id), _bind(self._deleted, run_id), self._error)
        return True

    def prune(self) -> PruneDialog:
        """The Prune… dialog (one, kept with its rules for the table's life); the runs it deletes
        leave the table as the daemon says so."""
        if self.prune_dialog is None:
            self.prune_dialog = PruneDialog(self.link, self)
        self.prune_dialog.show()
        self.prune_dialog.raise_()
        return self.prune_dialog

    def _deleted(self, _result: object, run_id: str) -> None:
        self._run_removed(run_id)
        self._note(f"deleted {run_id}")

    def open_folder(self, run_id: str | None = None) -> bool:
        """Open the run's directory in the desktop's file manager."""
        run_id = run_id or self.current_run_id()
        info = self.model.info(run_id) if run_id else None
        if info is None or not info.run_dir:
            return False
        return QDesktopServices.openUrl(QUrl.fromLocalFile(info.run_dir))

    def export_dialog(self, run_id: str | None = None) -> None:
        """Ask where to write the run's archive, then export it."""
        run_id = run_id or self.current_run_id()
        if not run_id:
            return
        path, _filter = QFileDialog.getSaveFileName(
            self, "Export run", f"{run_id}.tar.gz", "Run archives (*.tar.gz)"
        )
        if path:
            self.export(run_id, Path(path))

    def export(self, run_id: str, path: Path | str) -> None:
        """Write the run's directory as a .tar.gz at ``path`` (off the GUI thread); emits :attr:`exported`."""
        info = self.model.info(run_id)
        if info is None or not info.run_dir:
            self._error(f"no run {run_id} in the table")
            return
        files, target, home = RunDir(info.run_dir), Path(path), Home(self.link.home)

        def done(_none: None) -> None:
            self._note(f"exported {run_id} to {target}")
            self.exported.emit(run_id, str(target))

        self._files.run(
            lambda: files.export(target, home=home), done, lambda m: self._error(f"export failed: {m}")
        )

    def publish(self, run_id: str | None = None) -> PublishDialog | None:
        """Open Publish… for the run (default: the current one): its model to the Hugging Face Hub."""
        run_id = run_id or self.current_run_id()
        info = self.model.info(run_id) if run_id else None
        if info is None:
            return None
        why = publish_refusal(info)
        if why:
            self._error(why)
            return None
        dialog = publish_run_dialog(self.link, info.run_id, self)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.published.connect(lambda url: self._note(f"published {info.run_id} to {url}"))
        self.publish_window = dialog
        dialog.open()
        return dialog

    def closeEvent(self, event: Any) -> None:
        self._files.shutdown()
        super().closeEvent(event)
