"""The cockpit application: `gym-gui` with no arguments (and `python -m gym_gui`) opens this window."""

from __future__ import annotations

import logging
import signal
import sys

from PySide6.QtCore import QCoreApplication, Qt, QTimer
from PySide6.QtWidgets import QApplication

from gym_gui.storage.home import Home
from gym_gui.ui.daemon_link import DaemonLink
from gym_gui.ui.main_window import MainWindow
from gym_gui.ui.settings import Settings
from gym_gui.ui.start_times import mark, mark_first_paint, wanted


def build_window(home: Home) -> tuple[MainWindow, DaemonLink]:
    """The main window linked to the daemon of ``home`` (started on demand)."""
    link = DaemonLink(home.root)
    # Connecting (starting a daemon on a fresh home) goes on off the GUI thread while the window is
    # built: the daemon's start overlaps the window's. Its answer reaches the window's slots from the
    # event loop, once they are connected.
    link.connect_daemon()
    window = MainWindow(link, Settings(home.root))
    return window, link


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    # QtWebEngine (the TensorBoard tab) shares OpenGL contexts with the window: set before the app exists.
    QCoreApplication.setAttribute(Qt.ApplicationAttribute.AA_ShareOpenGLContexts)
    app = QApplication.instance() or QApplication(argv if argv is not None else sys.argv)
    app.setApplicationName("gym_gui")
    home = Home().ensure()
    window, link = build_window(home)
    mark_first_paint(window)
    if wanted():
        link.connection_changed.connect(lambda up, _address: mark("connected") if up else None)
    window.show()
    # Let Ctrl+C in the terminal close the window (Qt's loop would otherwise swallow it).
    signal.signal(signal.SIGINT, lambda *_: window.close())
    heartbeat = QTimer()
    heartbeat.start(250)
    heartbeat.timeout.connect(lambda: None)
    return app.exec()
