"""Start-up marks for bench/cold_start.py: with GYM_GUI_START_TIMES set, a window says on stderr when
it is first painted and when it is connected to its daemon; without it, nothing is said."""

from __future__ import annotations

import os
import sys
import time

from PySide6.QtCore import QEvent, QObject

VARIABLE = "GYM_GUI_START_TIMES"
PREFIX = "gym_gui start:"


def wanted() -> bool:
    """True when this process was asked for its start-up marks."""
    return bool(os.environ.get(VARIABLE))


def mark(event: str) -> None:
    """Say ``event`` happened now: ``gym_gui start: EVENT SECONDS``, SECONDS on the system-wide
    monotonic clock (a bench subtracts its own reading taken before it started this process)."""
    print(f"{PREFIX} {event} {time.monotonic():.6f}", file=sys.stderr, flush=True)


class _FirstPaint(QObject):
    """Marks ``shown`` at the window's first paint (drawn, not only asked to show), then removes itself."""

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.Paint:
            watched.removeEventFilter(self)
            mark("shown")
        return False


def mark_first_paint(window: QObject) -> None:
    """Mark ``shown`` when ``window`` is first painted, if the marks are wanted."""
    if wanted():
        watcher = _FirstPaint(window)  # the window owns it
        window.installEventFilter(watcher)
