"""The training form of each worker kind, as its plugin asks for it by name."""

from __future__ import annotations

import logging

from PySide6.QtWidgets import QWidget

from gym_gui.core.errors import GymGuiError
from gym_gui.core.workers import Launch
from gym_gui.ui.daemon_link import DaemonLink
from gym_gui.ui.forms.cleanrl import CleanRLForm
from gym_gui.ui.forms.worker import WorkerForm
from gym_gui.ui.settings import Settings
from gym_gui.workers import worker_catalog

log = logging.getLogger(__name__)

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
