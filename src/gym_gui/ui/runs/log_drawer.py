"""The log drawer: the tails of the selected run's stdout and stderr, and the events stored about it."""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path
from typing import Any

from PySide6.QtCore import QTimer
from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import QLabel, QPlainTextEdit, QTabWidget, QVBoxLayout, QWidget

from gym_gui.core.errors import GymGuiError
from gym_gui.core.records import EventRecord, RunRecord
from gym_gui.storage.run_dir import RunDir
from gym_gui.storage.telemetry import TelemetryReader
from gym_gui.ui.background import Background
from gym_gui.ui.daemon_link import DaemonLink
from gym_gui.ui.runs.model import REFRESH_MS

log = logging.getLogger(__name__)

LOG_LINES = 200


def tail_lines(path: Path, lines: int = LOG_LINES, max_bytes: int = 512 * 1024) -> str:
    """The last ``lines`` lines of a file, read backwards from its end in blocks (never the whole file)."""
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            end = position = handle.tell()
            data = b""
            while position > 0 and data.count(b"\n") <= lines and end - position < max_bytes:
                size = min(8192, position)
                position -= size
                handle.seek(position)
                data = handle.read(size) + data
    except FileNotFoundError:
        return ""
    parts = data.decode("utf-8", errors="replace").splitlines()
    if position > 0 and parts:
        parts = parts[1:]  # the first line read is most likely cut
    return "\n".join(parts[-lines:])


def event_line(event: EventRecord) -> str:
    """One stored event as the drawer lists it: its time, level and message."""
    return f"{time.strftime('%H:%M:%S', time.localtime(event.time))} {event.level:<7} {event.message}"


def _events_after(path: Path, after: int) -> list[EventRecord]:
    """The run's stored events with an id above ``after`` ([] while it has no telemetry yet)."""
    if not path.exists():
        return []
    try:
        reader = TelemetryReader(path)
    except GymGuiError:
        return []  # not initialised yet: the next refresh finds them
    try:
        return reader.events(after)
    finally:
        reader.close()


class LogDrawer(QWidget):
    """The tails of the selected run's worker output, stdout and stderr (last ~200 lines each).

    Refreshed once a second while the run may still write (a file is re-read only when its size or
    time changed); reads happen on a worker thread.
    """

    def __init__(self, link: DaemonLink | None = None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.run: RunRecord | None = None
        self._files = Background(self, workers=1, name="file-work")
        self._reading = False
        self._seen: dict[str, tuple[int, int]] = {}
        self.title = QLabel("No run selected.")
        self.title.setObjectName("logTitle")
        self.stdout_view = self._text_view("logStdout")
        self.stderr_view = self._text_view("logStderr")
        # What the daemon and the worker said about the run (warnings, a re-run's verdict …).
        self.events_view = self._text_view("logEvents")
        self._events_read = 0  # the id of the last event shown
        self.tabs = QTabWidget()
        self.tabs.addTab(self.stdout_view, "stdout")
        self.tabs.addTab(self.stderr_view, "stderr")
        self.tabs.addTab(self.events_view, "events")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.title)
        layout.addWidget(self.tabs, 1)
        self._timer = QTimer(self)
        self._timer.setInterval(REFRESH_MS)
        self._timer.timeout.connect(self.refresh)
        if link is not None:
            link.run_updated.connect(self.run_changed)

    @staticmethod
    def _text_view(name: str) -> QPlainTextEdit:
        view = QPlainTextEdit()
        view.setObjectName(name)
        view.setReadOnly(True)
        view.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        view.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        return view

    def show_run(self, run: RunRecord | None) -> None:
        """Follow ``run`` (None: show nothing)."""
        self.run = run
        self._seen = {}
        self._events_read = 0
        self.stdout_view.clear()
        self.stderr_view.clear()
        self.events_view.clear()
        if run is None:
            self.title.setText("No run selected.")
            self._timer.stop()
            return
        self.title.setText(f"Logs of {run.run_id}")
        self.refresh()
        if run.state.terminal:
            self._timer.stop()
        else:
            self._timer.start()

    def run_changed(self, run: RunRecord) -> None:
        if self.run is None or run.run_id != self.run.run_id:
            return
        self.run = run
        if run.state.terminal:
            self.refresh()  # what the worker wrote last
            self._timer.stop()

    def clear(self) -> None:
        self.show_run(None)

    def _paths(self) -> tuple[Path, Path, Path] | None:
        if self.run is None or not self.run.run_dir:
            return None
        files = RunDir(self.run.run_dir)
        return files.worker_stdout_log, files.worker_stderr_log, files.telemetry_path

    def refresh(self) -> None:
        """Read the tails again if the files changed (off the GUI thread)."""
        paths = self._paths()
        if paths is None or self._reading:
            return
        run_id = self.run.run_id if self.run is not None else ""
        seen = dict(self._seen)
        events_read = self._events_read
        stdout_path, stderr_path, telemetry_path = paths
        self._reading = True

        def read() -> tuple[dict[str, tuple[tuple[int, int], str]], list[EventRecord]]:
            result = {}
            for name, path in (("stdout", stdout_path), ("stderr", stderr_path)):
                try:
                    stat = path.stat()
                except OSError:
                    continue
                stamp = (stat.st_size, stat.st_mtime_ns)
                if seen.get(name) != stamp:
                    result[name] = (stamp, tail_lines(path))
            return result, _events_after(telemetry_path, events_read)

        def done(read_now: tuple[dict[str, tuple[tuple[int, int], str]], list[EventRecord]]) -> None:
            self._reading = False
            if self.run is None or self.run.run_id != run_id:
                return  # another run was selected meanwhile
            result, events = read_now
            for name, (stamp, text) in result.items():
                self._seen[name] = stamp
                self._set_text(self.stdout_view if name == "stdout" else self.stderr_view, text)
            if events and self._events_read == events_read:
                self._events_read += len(events)  # event ids have no gaps
                for event in events:
                    self.events_view.appendPlainText(event_line(event))

        def failed(message: str) -> None:
            self._reading = False
            log.warning("log tail of %s: %s", run_id, message)

        self._files.run(read, done, failed)

    @staticmethod
    def _set_text(view: QPlainTextEdit, text: str) -> None:
        bar = view.verticalScrollBar()
        at_bottom = bar.value() >= bar.maximum() - 2
        position = bar.value()
        view.setPlainText(text)
        # Follow the tail unless the user scrolled up to read something.
        bar.setValue(bar.maximum() if at_bottom else position)

    def text(self, stream: str = "stdout") -> str:
        """What the drawer shows of ``stream``: stdout, stderr or events."""
        views = {"stdout": self.stdout_view, "stderr": self.stderr_view, "events": self.events_view}
        return views[stream].toPlainText()

    def closeEvent(self, event: Any) -> None:
        self._timer.stop()
        self._files.shutdown()
        super().closeEvent(event)
