"""The TensorBoard tab: a TensorBoard server on loopback for the run, started on first view and embedded or linked."""

from __future__ import annotations

import subprocess
from pathlib import Path

from PySide6.QtGui import QShowEvent
from PySide6.QtWidgets import QLabel, QPushButton, QVBoxLayout, QWidget

from gym_gui.core.errors import GymGuiError
from gym_gui.core.records import RunRecord
from gym_gui.storage.home import Home
from gym_gui.storage.run_dir import RunDir
from gym_gui.ui.daemon_link import DaemonLink
from gym_gui.ui.local_web import LocalServer, LocalWebPage
from gym_gui.ui.tabs.base import RunTab
from gym_gui.workers import worker_catalog


class TensorBoardError(GymGuiError):
    """TensorBoard could not be started; the message says why and how to fix it."""


def tensorboard_server(python: Path, logdir: Path, log_path: Path) -> LocalServer:
    """A TensorBoard of ``logdir`` run by ``python`` (a bundle's interpreter), not started yet."""

    def command(port: int) -> list[str]:
        return [
            str(python),
            "-m",
            "tensorboard.main",
            "--logdir",
            str(logdir),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
        ]

    return LocalServer("TensorBoard", command, log_path)


class TensorBoardTab(RunTab):
    """TensorBoard for the selected run.

    Nothing starts until the tab is first shown for a run: then the interpreter of a bundle with
    TensorBoard (the run's own, else another kind's: ``WorkerCatalog.tensorboard_bundle``) runs
    ``tensorboard.main`` on a free loopback port, the tab waits (off the GUI thread) until
    it answers, and embeds it (QWebEngineView) or offers it in the browser. The server stops on
    detach and when the application quits (``LocalWebPage``).
    """

    title = "TensorBoard"

    def __init__(self, link: DaemonLink, parent: QWidget | None = None) -> None:
        super().__init__(link, parent)
        self.page = LocalWebPage("TensorBoard")
        self.page.say("No run selected.")
        self._started = False
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.page)

    # What the page shows, under the names callers and tests use.
    @property
    def process(self) -> subprocess.Popen[bytes] | None:
        return self.page.process

    @property
    def url(self) -> str | None:
        return self.page.url

    @property
    def ready(self) -> bool:
        return self.page.ready

    @property
    def page_loaded(self) -> bool:
        return self.page.page_loaded

    @property
    def web_view(self) -> QWidget | None:
        return self.page.web_view

    @property
    def message(self) -> QLabel:
        return self.page.message

    @property
    def open_button(self) -> QPushButton:
        return self.page.open_button

    @property
    def restart_button(self) -> QPushButton:
        return self.page.restart_button

    # ------------------------------------------------------------ RunTab

    def attach(self, run: RunRecord) -> None:
        self.detach()
        super().attach(run)
        self._started = False
        self.page.say("TensorBoard starts when this tab is opened.")
        if self.isVisible():
            self._start()

    def detach(self) -> None:
        self.page.stop()
        self._started = False
        self.page.say("No run selected.")
        super().detach()

    def showEvent(self, event: QShowEvent) -> None:
        super().showEvent(event)
        if self.run is not None and not self._started:
            self._start()

    def _start(self) -> None:
        run = self.run
        assert run is not None
        self._started = True
        files = RunDir(run.run_dir)
        bundles = Home(self.link.home).bundles_dir
        worker = run.worker

        def launch() -> LocalServer:
            # gym_gui's own environment has no TensorBoard: it runs from the run's worker bundle, or
            # another kind's for a kind whose bundle has none (exported event files of a random run).
            status = worker_catalog().tensorboard_bundle(worker, bundles)
            if status is None:
                raise TensorBoardError(
                    f"worker {worker!r} runs in gym_gui's own environment, which has no TensorBoard, "
                    "and no installed worker kind's bundle has one."
                )
            if not status.installed:
                raise TensorBoardError(
                    f"TensorBoard runs from the {status.name} bundle, which is not ready: {status.reason}.\n"
                    f"Install it with `gym-gui bundles install {status.name}`."
                )
            server = tensorboard_server(status.python, files.tensorboard_logdir(), files.tensorboard_log)
            server.start()
            return server

        self.page.start(launch, f" (reading {files.tensorboard_logdir()})")
