"""RunTab: what every tab of a selected run is — a widget that attaches to a run and lets go of it."""

from __future__ import annotations

from PySide6.QtWidgets import QWidget

from gym_gui.core.records import RunRecord
from gym_gui.ui.daemon_link import DaemonLink


class RunTab(QWidget):
    """A tab of the selected run.

    ``attach`` is called once when the run is selected: the tab starts its feeds (a telemetry
    subscription, a timer, a server) and loads what storage already holds. ``detach`` is called
    when another run is selected or the window closes: the tab stops everything it started.
    ``run_changed`` is called whenever the run's row changes (state, reason).
    """

    title = "Tab"

    def __init__(self, link: DaemonLink, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.link = link
        self.run: RunRecord | None = None

    def attach(self, run: RunRecord) -> None:
        self.run = run

    def run_changed(self, run: RunRecord) -> None:
        self.run = run

    def detach(self) -> None:
        self.run = None
