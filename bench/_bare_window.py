"""The reference of bench/cold_start.py: a bare PySide6 window with one widget, marked when first painted
as the cockpit's window is (gym_gui.ui.start_times, which imports only PySide6)."""

from __future__ import annotations

import sys

from PySide6.QtWidgets import QApplication, QLabel, QMainWindow

from gym_gui.ui.start_times import mark_first_paint


def main() -> int:
    app = QApplication(sys.argv)
    window = QMainWindow()
    window.setCentralWidget(QLabel("one widget"))
    mark_first_paint(window)
    window.show()
    return app.exec()


if __name__ == "__main__":
    sys.exit(main())
