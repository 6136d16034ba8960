"""Publish…: a finished run's model or a dataset sent to the Hugging Face Hub from the window, with the
command line's fields, a progress bar following the publisher's stages, and its outcome in one line."""

from __future__ import annotations

from collections.abc import Callable
from html import escape
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QCloseEvent
from PySide6.QtWidgets import (
    QCheckBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QLabel,
    QLineEdit,
    QProgressBar,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from gym_gui.core.errors import GymGuiError
from gym_gui.datasets import DatasetStore
from gym_gui.protocol.client import DaemonClient
from gym_gui.ui.background import Background
from gym_gui.ui.daemon_link import DaemonLink

if TYPE_CHECKING:
    from gym_gui.hub.publish import PublishProgress

# The progress bar's range: the publisher's fraction done, in thousandths.
BAR_STEPS = 1000
# gym-gui publish's default --episodes.
DEFAULT_EPISODES = 10

# What a publish does off the GUI thread: (repo, private, episodes, tell progress) -> (what it says,
# the repository's URL); raises a GymGuiError whose message is the one line shown.
Publisher = Callable[[str, bool, int, Callable[["PublishProgress"], None]], tuple[str, str]]


def token_refusal(doing: str) -> str:
    """Why ``doing`` cannot start for want of a Hugging Face token (empty when the client has one),
    saying where one goes: the window never asks for one nor keeps it."""
    from gym_gui.hub.publish import require_token  # huggingface_hub only once Publish… is asked for

    try:
        require_token(doing)
    except GymGuiError as exc:
        return str(exc)
    return ""


class PublishDialog(QDialog):
    """The fields of ``gym-gui publish`` (repository ORG/NAME, private, episodes) or of
    ``gym-gui dataset push`` (repository, private); Publish runs the same publisher as the command off
    the GUI thread, its stages driving the progress bar; the outcome is one line: the error, or the
    published repository's URL. The token is huggingface_hub's (HF_TOKEN or its stored login): when
    there is none the line says where to put one and Publish stays disabled.
    """

    published = Signal(str)  # the repository's URL

    def __init__(
        self,
        title: str,
        subject: str,
        publisher: Publisher,
        doing: str,
        episodes: bool,
        repo_hint: str,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.setObjectName("publishDialog")
        self.setWindowTitle(title)
        self._publisher = publisher
        self._background = Background(self, workers=1, name="publish")
        self.busy = False
        self.repo_url = ""

        self.repo_edit = QLineEdit()
        self.repo_edit.setObjectName("publishRepo")
        self.repo_edit.setPlaceholderText(repo_hint)
        self.private_check = QCheckBox("Create the repository private")
        self.private_check.setObjectName("publishPrivate")
        self.episodes_spin = QSpinBox()
        self.episodes_spin.setObjectName("publishEpisodes")
        self.episodes_spin.setRange(1, 100_000)
        self.episodes_spin.setValue(DEFAULT_EPISODES)
        self.episodes_spin.setToolTip("Episodes the model plays now, for the card's mean ± std return")
        self.progress_bar = QProgressBar()
        self.progress_bar.setObjectName("publishProgress")
        self.progress_bar.setRange(0, BAR_STEPS)
        self.progress_bar.setValue(0)
        self.stage_label = QLabel()
        self.stage_label.setObjectName("publishStage")
        self.result_label = QLabel()
        self.result_label.setObjectName("publishResult")
        self.result_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextBrowserInteraction)
        self.result_label.setOpenExternalLinks(True)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        self.publish_button = QPushButton("Publish")
        self.publish_button.setObjectName("publishButton")
        self.buttons.addButton(self.publish_button, QDialogButtonBox.ButtonRole.ActionRole)
        self.buttons.rejected.connect(self.reject)
        self.publish_button.clicked.connect(self.publish)

        form = QFormLayout()
        form.addRow("Repository", self.repo_edit)
        form.addRow("", self.private_check)
        if episodes:
            form.addRow("Episodes", self.episodes_spin)
        else:
            self.episodes_spin.hide()
        layout = QVBoxLayout(self)
        heading = QLabel(subject)
        heading.setWordWrap(True)
        layout.addWidget(heading)
        layout.addLayout(form)
        layout.addWidget(self.progress_bar)
        layout.addWidget(self.stage_label)
        layout.addWidget(self.result_label)
        layout.addWidget(self.buttons)

        refusal = token_refusal(doing)
        self.publish_button.setEnabled(not refusal)
        if refusal:
            self._error(refusal)

    # ------------------------------------------------------------ publishing

    def publish(self) -> None:
        """Publish with the fields as they are (off the GUI thread); a bad repository is refused here."""
        from gym_gui.hub.publish import check_repo_id

        if self.busy:
            return
        repo = self.repo_edit.text().strip()
        try:
            check_repo_id(repo)
        except GymGuiError as exc:
            self._error(str(exc))
            return
        private, episodes = self.private_check.isChecked(), self.episodes_spin.value()
        self._set_busy(True)
        self.result_label.clear()
        self.progress_bar.setValue(0)
        background, publisher = self._background, self._publisher

        def work() -> tuple[str, str]:
            return publisher(repo, private, episodes, lambda step: background.post(self._progress, step))

        self._background.run(work, self._done, self._failed, name="publish")

    def _progress(self, progress: PublishProgress) -> None:
        self.progress_bar.setValue(round(progress.fraction * BAR_STEPS))
        self.stage_label.setText(progress.text)

    def _done(self, outcome: tuple[str, str]) -> None:
        text, url = outcome
        self._set_busy(False)
        self.repo_url = url
        self.progress_bar.setValue(BAR_STEPS)
        self.stage_label.setText(text)
        self.result_label.setStyleSheet("")
        self.result_label.setText(f'published: <a href="{escape(url)}">{escape(url)}</a>')
        self.published.emit(url)

    def _failed(self, message: str) -> None:
        self._set_busy(False)
        self.progress_bar.setValue(0)
        self.stage_label.clear()
        self._error(message)

    def _error(self, message: str) -> None:
        line = message.strip().splitlines()[0] if message.strip() else "failed"
        self.result_label.setStyleSheet("color: #c62828;")
        self.result_label.setTextFormat(Qt.TextFormat.PlainText)
        self.result_label.setText(line)
        self.result_label.setToolTip(line)

    def _set_busy(self, busy: bool) -> None:
        self.busy = busy
        self.result_label.setTextFormat(Qt.TextFormat.AutoText)
        for widget in (self.publish_button, self.repo_edit, self.private_check, self.episodes_spin):
            widget.setEnabled(not busy)
        # A publish cannot be taken back half-way: the dialog stays until it has ended.
        self.buttons.button(QDialogButtonBox.StandardButton.Close).setEnabled(not busy)

    def reject(self) -> None:
        if not self.busy:
            super().reject()

    def closeEvent(self, event: QCloseEvent) -> None:
        if self.busy:
            event.ignore()
            return
        self._background.shutdown()
        super().closeEvent(event)


def publish_run_dialog(link: DaemonLink, run_id: str, parent: QWidget | None = None) -> PublishDialog:
    """Publish… for completed run ``run_id``: its model evaluated now and published as ``gym-gui
    publish`` does, through the window's daemon connection."""

    def publisher(
        repo: str, private: bool, episodes: int, progress: Callable[[PublishProgress], None]
    ) -> tuple[str, str]:
        from gym_gui.hub.publish import publish_run

        client: DaemonClient | None = link.client
        if client is None:
            raise GymGuiError("not connected to the gym_gui daemon")
        done = publish_run(client, run_id, repo, private=private, episodes=episodes, progress=progress)
        replay = "" if done.has_replay else f" (no replay: {done.replay})"
        return done.text() + replay, done.repo_url

    return PublishDialog(
        f"Publish {run_id}",
        f"Publish the model of {run_id} to the Hugging Face Hub: it plays the episodes now for the "
        "card's return, then its model, card, curves and a replay go up in one commit.",
        publisher,
        "publish",
        episodes=True,
        repo_hint="ORG/NAME",
        parent=parent,
    )


def publish_dataset_dialog(store: DatasetStore, name: str, parent: QWidget | None = None) -> PublishDialog:
    """Publish… for dataset ``name``: pushed as ``gym-gui dataset push`` does, in Minari's Hub layout."""
    namespace = name.partition("/")[0] if "/" in name else "NAMESPACE"

    def publisher(
        repo: str, private: bool, _episodes: int, progress: Callable[[PublishProgress], None]
    ) -> tuple[str, str]:
        from gym_gui.hub.datasets import push_dataset

        done = push_dataset(store, name, repo, private, progress)
        return f"dataset {name} pushed to {repo} — {done.commit_url}", done.repo_url

    return PublishDialog(
        f"Publish {name}",
        f"Publish dataset {name} to the Hugging Face Hub in the layout Minari's own remote reads: the "
        f"repository is ORG/{namespace}, its namespace.",
        publisher,
        "dataset push",
        episodes=False,
        repo_hint=f"ORG/{namespace}",
        parent=parent,
    )
