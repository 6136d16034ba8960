"""The run form of each worker kind: the one generated form, for the kinds the daemon launches."""

from __future__ import annotations

import logging

from PySide6.QtWidgets import QWidget

from gym_gui.core.errors import GymGuiError
from gym_gui.core.workers import Launch
from gym_gui.ui.daemon_link import DaemonLink
from gym_gui.ui.forms.form import GeneratedForm
from gym_gui.ui.settings import Settings
from gym_gui.workers import worker_catalog

log = logging.getLogger(__name__)


def form_for(worker_kind: str, link: DaemonLink, settings: Settings | None = None) -> QWidget | None:
    """The "Train new" form of a worker kind, or None when the kind has none (client-driven or
    unavailable kinds)."""
    try:
        spec = worker_catalog().spec(worker_kind)
        if spec.launch is not Launch.DAEMON or not spec.available:
            return None
        return GeneratedForm(worker_kind, link, settings)
    except GymGuiError as exc:  # e.g. an unreadable home: no form rather than no window
        log.error("no %s form: %s", worker_kind, exc)
        return None
