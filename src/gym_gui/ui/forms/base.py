"""RunForm: what every training form has — a model, validation, Submit through the daemon, remembered values."""

from __future__ import annotations

import logging
from typing import Any

from PySide6.QtCore import QCoreApplication, Qt, QTimer, Signal
from PySide6.QtWidgets import QLabel, QPushButton, QWidget

from gym_gui.core.config import RunConfig
from gym_gui.core.errors import ConfigError
from gym_gui.core.records import LaunchPreview, RunRecord
from gym_gui.protocol.client import DaemonClient
from gym_gui.ui.daemon_link import DaemonLink
from gym_gui.ui.forms.model import RunModel
from gym_gui.ui.settings import SecretNotStored, Settings

log = logging.getLogger(__name__)


class RunForm(QWidget):
    """A view over a :class:`RunModel`: the fields write into ``self.model``, which decides what is
    valid, what the run is and what is remembered.

    Subclasses build their fields over the model, implement :meth:`refresh` (show the model in
    the fields) and :meth:`mark` (show its errors on them), and call :meth:`_changed` whenever a
    field changes.
    """

    worker_kind = ""
    submit_requested = Signal(object, object)  # RunConfig, secret env (dict)
    run_submitted = Signal(str)  # run id
    submit_failed = Signal(str)  # the daemon's (or the config's) one-line message
    prefilled = Signal(list)  # a prefill is shown; the names no field took (reported, not dropped)

    def __init__(
        self,
        model: RunModel,
        link: DaemonLink,
        settings: Settings | None = None,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.model = model
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

    def refresh(self) -> None:
        """Show the model in the fields (after it changed other than by an edit)."""
        raise NotImplementedError

    def mark(self, errors: dict[str, str]) -> None:
        """Mark the fields ``errors`` names as invalid (with the reason) and the others as fine."""
        raise NotImplementedError

    def can_submit(self) -> bool:
        return True

    # -------------------------------------------------------- the model

    def config(self) -> RunConfig:
        """The run this form describes.

        Raises:
            ConfigError: naming the field that is not valid.
        """
        return self.model.to_config()

    def secret_env(self) -> dict[str, str]:
        """Secrets for the worker's environment only (never stored, never part of the config)."""
        return self.model.secret_env()

    def invalid_fields(self) -> dict[str, str]:
        """Field name → why it is not valid; marks each field as it goes."""
        errors = self.model.errors()
        self.mark(errors)
        return errors

    def _show_model(self) -> None:
        self._restoring = True
        try:
            self.refresh()
        finally:
            self._restoring = False

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
        if config.dry_run:
            # The daemon resolves a dry run before it replies: its plan comes back with it.
            self.link.call(
                lambda client: client.dry_run(config, secrets),
                lambda reply: self._dry_run_done(config, *reply),
                self._failed,
            )
            return

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

    def _dry_run_done(self, config: RunConfig, record: RunRecord, plan: LaunchPreview | None) -> None:
        self._submitted(record.run_id, config)
        if plan is None:
            self._show_error(f"dry run {record.run_id}: {record.reason}")
        else:
            self._show_dry_run(plan)

    def _after_submit(self, run_id: str, config: RunConfig) -> None:
        """A subclass's follow-up of a submitted run."""

    def _show_dry_run(self, plan: LaunchPreview) -> None:
        """A subclass's display of a dry run's plan (the status line says it was submitted)."""

    def _failed(self, message: str) -> None:
        self._submitting = False
        self._validate()
        self.status_label.setText("")
        self._show_error(message)
        self.submit_failed.emit(message)

    @property
    def settings_key(self) -> str:
        """Under which name the form's values are remembered: its kind's (a sweep's base run keeps its own)."""
        return self.worker_kind

    def save_settings(self) -> None:
        self._save_timer.stop()
        try:
            self.settings.set_form_values(self.settings_key, self.model.values())
        except (SecretNotStored, TypeError) as exc:  # a bug to fix, never a reason to lose the form
            log.error("form values of %s not saved: %s", self.settings_key, exc)

    def prefill(self, config: dict[str, Any] | None, params: dict[str, Any], origin: str) -> None:
        """Fill the form for a follow-up run: ``config`` (a RunConfig's JSON form, e.g. a study's base
        config) as a remembered form is restored, then ``params`` over its own parameters (by flag or
        destination name). ``origin`` says where they came from, in the status line. Emits
        :attr:`prefilled` with the names no field took once the fields show them."""
        if config:
            self.model.take_config(config)
        merged = {**((config or {}).get("params") or {}), **params}
        self._apply_prefill(merged, origin)

    def _apply_prefill(self, params: dict[str, Any], origin: str) -> None:
        """Put ``params`` into the fields (a subclass waits until its parameters are described)."""
        self._prefill_done(self.model.apply_params(params), origin)

    def _prefill_done(self, unknown: list[str], origin: str) -> None:
        self._show_model()
        self._show_error(f"not in this form, left out: {', '.join(unknown)}" if unknown else "")
        self.status_label.setText(f"filled from {origin}: check the budget, then Submit")
        self._changed()
        self.prefilled.emit(unknown)

    def restore_settings(self) -> None:
        """Take the remembered values back into the model and show them."""
        values = self.settings.form_values(self.settings_key)
        if values:
            self.model.restore(values)
        self._show_model()
