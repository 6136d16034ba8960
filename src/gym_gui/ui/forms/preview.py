"""The command preview: what a run of the form's config would execute, as the daemon resolves it."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import QLabel, QPlainTextEdit, QVBoxLayout, QWidget

from gym_gui.core.config import RunConfig
from gym_gui.core.records import LaunchPreview
from gym_gui.ui.daemon_link import DaemonLink
from gym_gui.ui.forms.widgets import monospace

PREVIEW_DELAY_MS = 300  # the preview is asked for once typing pauses this long


def plan_text(plan: LaunchPreview) -> str:
    """A resolved plan as the forms show it: the command as typed, then what the run would be warned about."""
    return "\n".join([plan.display, *(f"# warning: {warning}" for warning in plan.warnings)])


class CommandPreview(QWidget):
    """The command a run of the form's config would execute, as the daemon resolves it (PreviewRun).

    It is asked for again once typing pauses (:data:`PREVIEW_DELAY_MS`), off the GUI thread; an answer
    to an older request is dropped. ``request`` returns the config and secrets to preview, or a note
    saying why there is nothing to ask yet. The daemon's refusal (its validate) shows beneath it.
    """

    shown = Signal()  # an answer, a refusal or a note is on display

    def __init__(
        self,
        link: DaemonLink,
        request: Callable[[], tuple[RunConfig, dict[str, str]] | str],
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.link = link
        self._request = request
        self._generation = 0
        self.plan: LaunchPreview | None = None
        self.edit = QPlainTextEdit()
        self.edit.setObjectName("commandPreview")
        self.edit.setReadOnly(True)
        self.edit.setFont(monospace())
        self.edit.setMaximumHeight(90)
        self.error_label = QLabel()
        self.error_label.setObjectName("previewError")
        self.error_label.setWordWrap(True)
        self.error_label.setStyleSheet("color: #c62828;")
        self.error_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.error_label.hide()
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(PREVIEW_DELAY_MS)
        self._timer.timeout.connect(self.refresh)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(QLabel("Command"))
        layout.addWidget(self.edit)
        layout.addWidget(self.error_label)

    def text(self) -> str:
        return self.edit.toPlainText()

    def error(self) -> str:
        return self.error_label.text() if self.error_label.isVisibleTo(self) else ""

    def schedule(self) -> None:
        """Ask again once the fields stop changing."""
        self._timer.start()

    def refresh(self) -> None:
        """Ask the daemon now."""
        self._timer.stop()
        self._generation += 1
        generation = self._generation
        wanted = self._request()
        if isinstance(wanted, str):
            self._show(None, wanted, "")
            return
        config, secrets = wanted
        self.link.call(
            lambda client: client.preview(config, secrets),
            lambda plan: self._answered(generation, plan),
            lambda message: self._refused(generation, message),
        )

    def _answered(self, generation: int, plan: LaunchPreview) -> None:
        if generation == self._generation:
            self._show(plan, plan_text(plan), "")

    def _refused(self, generation: int, message: str) -> None:
        if generation == self._generation:
            self._show(None, "", message)

    def _show(self, plan: LaunchPreview | None, text: str, error: str) -> None:
        self.plan = plan
        if self.edit.toPlainText() != text:
            self.edit.setPlainText(text)
        self.error_label.setText(error)
        self.error_label.setVisible(bool(error))
        self.shown.emit()
