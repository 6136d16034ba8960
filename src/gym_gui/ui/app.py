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


def build_window(home: Home) -> tuple[MainWindow, DaemonLink]:
    """The main window linked to the daemon of ``home`` (started on demand)."""
    link = DaemonLink(home.root)
    window = MainWindow(link, Settings(home.root))
    link.connect_daemon()
    return window, link


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    # QtWebEngine (the TensorBoard tab) shares OpenGL contexts with the window: set before the app exists.
    QCoreApplication.setAttribute(Qt.ApplicationAttribute.AA_ShareOpenGLContexts)
    app = QApplication.instance() or QApplication(argv if argv is not None else sys.argv)
    app.setApplicationName("gym_gui")
    home = Home().ensure()
    window, _link = build_window(home)
    window.show()
    # Let Ctrl+C in the terminal close the window (Qt's loop would otherwise swallow it).
    signal.signal(signal.SIGINT, lambda *_: window.close())
    heartbeat = QTimer()
    heartbeat.start(250)
    heartbeat.timeout.connect(lambda: None)
    return app.exec()
