"""A local web tool (TensorBoard, optuna-dashboard) served on loopback and shown in the window.

``LocalServer`` is the process: started with an argument list in its own session on a free
127.0.0.1 port, waited on until it answers HTTP, stopped with its process group, and killed at
exit whatever happens. ``LocalWebPage`` is the widget: it launches a server off the GUI thread,
embeds its page in a QWebEngineView (retrying a load that failed on a busy machine) or, where
QtWebEngine must not start, says where it is and offers it in the browser.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import signal
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QCoreApplication, Qt, QTimer, QUrl
from PySide6.QtGui import QDesktopServices
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QStackedWidget, QVBoxLayout, QWidget

from gym_gui.core.errors import GymGuiError
from gym_gui.ui.background import Background

log = logging.getLogger(__name__)

READY_TIMEOUT = 90.0  # a cold TensorBoard imports TensorFlow's stubs and scans the logdir
# A page load can fail on a loaded machine although the server answers (a request timed out while
# the server was busy): the embedded view tries again this many times, backing off.
PAGE_LOAD_RETRIES = 5
# A load that neither finishes nor fails (its renderer died, a request hung) counts as failed after this.
PAGE_LOAD_WAIT_MS = 30_000
STOP_GRACE = 5.0
LOG_TAIL_LINES = 12

# Every server this process started, so none outlives it even when Qt never gets to say goodbye.
_LIVE: set[subprocess.Popen[bytes]] = set()
_LIVE_LOCK = threading.Lock()


class LocalServerError(GymGuiError):
    """A local web server could not be started or did not answer; the message says why and where its log is."""


def _kill_all() -> None:
    with _LIVE_LOCK:
        processes = list(_LIVE)
    for process in processes:
        _signal_group(process, signal.SIGKILL)


atexit.register(_kill_all)


def _signal_group(process: subprocess.Popen[bytes], sig: signal.Signals) -> None:
    # The server leads its own session (start_new_session), so its group holds it and any helper
    # (TensorBoard's Rust data server) it spawned.
    if process.poll() is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, sig)


def free_port() -> int:
    """A TCP port on 127.0.0.1 nobody listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class LocalServer:
    """One web server process on loopback.

    ``command(port)`` is its argument list (never a shell string); the server must listen on
    127.0.0.1 at that port. Its output goes to ``log_path``, after the command line as ``shown``
    writes each argument (a database URL without its password).
    """

    def __init__(
        self,
        name: str,
        command: Callable[[int], list[str]],
        log_path: Path,
        shown: Callable[[str], str] = str,
    ) -> None:
        self.name = name
        self.command = command
        self.log_path = log_path
        self.shown = shown
        self.port = 0
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    def start(self) -> subprocess.Popen[bytes]:
        self.port = free_port()
        argv = self.command(self.port)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        # The app venv's PYTHONPATH must not leak packages into another interpreter (a bundle's).
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
        with open(self.log_path, "ab") as log_file:
            log_file.write(f"\n$ {' '.join(map(self.shown, argv))}\n".encode())
            log_file.flush()
            self.process = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=log_file,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                env=env,
                cwd=str(self.log_path.parent),
            )
        with _LIVE_LOCK:
            _LIVE.add(self.process)
        return self.process

    def wait_ready(self, timeout: float = READY_TIMEOUT, cancelled: threading.Event | None = None) -> None:
        """Block until the server answers HTTP (call it off the GUI thread).

        Raises:
            LocalServerError: the process exited, or did not answer within ``timeout`` seconds.
        """
        process = self.process
        if process is None:
            raise LocalServerError(f"{self.name} was not started")
        deadline = time.monotonic() + timeout
        while True:
            if cancelled is not None and cancelled.is_set():
                raise LocalServerError(f"{self.name} start was abandoned (its view closed)")
            code = process.poll()
            if code is not None:
                raise LocalServerError(
                    f"{self.name} exited with code {code} before answering; its log {self.log_path} ends:\n"
                    + self.log_tail()
                )
            try:
                with urllib.request.urlopen(self.url, timeout=2.0) as response:
                    if response.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                pass
            if time.monotonic() > deadline:
                raise LocalServerError(
                    f"{self.name} did not answer on {self.url} within {timeout:.0f} s; see {self.log_path}"
                )
            time.sleep(0.25)

    def log_tail(self) -> str:
        try:
            lines = self.log_path.read_text(errors="replace").splitlines()
        except OSError:
            return "(no log)"
        return "\n".join(lines[-LOG_TAIL_LINES:])

    def stop(self, grace: float = STOP_GRACE) -> None:
        """Terminate the server's process group, wait up to ``grace`` seconds, then kill it (blocks)."""
        process = self.process
        if process is None:
            return
        _signal_group(process, signal.SIGTERM)
        try:
            process.wait(grace)
        except subprocess.TimeoutExpired:
            _signal_group(process, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(grace)
        with _LIVE_LOCK:
            _LIVE.discard(process)


def _web_view_class() -> type[QWidget] | None:
    """QWebEngineView (PySide6-Addons, a dependency); None where this Qt was built without it."""
    try:
        from PySide6.QtWebEngineWidgets import QWebEngineView
    except ImportError:
        return None
    return QWebEngineView


def embedding_blocked(name: str) -> str | None:
    """Why QtWebEngine must not start in this process to show ``name``, or None.

    Chromium aborts the whole process when it runs as root with its sandbox on ("Running as root
    without --no-sandbox is not supported"), as in many containers; turning the sandbox off is
    left to the user: what the page shows is a loopback server, but the choice is theirs.
    """
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return None
    if os.environ.get("QTWEBENGINE_DISABLE_SANDBOX") or "--no-sandbox" in os.environ.get(
        "QTWEBENGINE_CHROMIUM_FLAGS", ""
    ):
        return None
    return (
        "QtWebEngine does not run as root with its sandbox on: set QTWEBENGINE_DISABLE_SANDBOX=1 "
        f"to see {name} inside this window."
    )


class LocalWebPage(QWidget):
    """A local server's page: started on request, embedded or linked, stopped on :meth:`stop` and at exit.

    :meth:`start` takes a ``launch`` callable run off the GUI thread that builds and starts a
    :class:`LocalServer` (or raises a GymGuiError whose message is shown); ``Try again`` calls it
    anew. ``about`` says what the server serves, in the messages.
    """

    def __init__(self, name: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.name = name
        self.server: LocalServer | None = None
        self.url: str | None = None
        self.ready = False  # the server answers
        self.page_loaded = False  # the embedded view has loaded its page
        self._load_failures = 0
        self._launch: Callable[[], LocalServer] | None = None
        self._about = ""
        self._cancel = threading.Event()
        self._background = Background(self, name=f"{name}-server")

        self.message = QLabel("")
        self.message.setWordWrap(True)
        self.message.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.open_button = QPushButton("Open in browser")
        self.open_button.setVisible(False)
        self.open_button.clicked.connect(self.open_in_browser)
        self.restart_button = QPushButton("Try again")
        self.restart_button.setVisible(False)
        self.restart_button.clicked.connect(self._restart)
        buttons = QHBoxLayout()
        buttons.addWidget(self.open_button)
        buttons.addWidget(self.restart_button)
        buttons.addStretch(1)
        info = QWidget()
        info_layout = QVBoxLayout(info)
        info_layout.addWidget(self.message)
        info_layout.addLayout(buttons)
        info_layout.addStretch(1)
        self.pages = QStackedWidget()
        self.pages.addWidget(info)
        self.web_view: QWidget | None = None
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.pages)

        app = QCoreApplication.instance()
        if app is not None:
            app.aboutToQuit.connect(self._stop_now)

    @property
    def process(self) -> subprocess.Popen[bytes] | None:
        """The running server's process (None before it is started)."""
        return None if self.server is None else self.server.process

    def say(self, text: str) -> None:
        """Show ``text`` where the page will be (before a start, or when there is nothing to serve)."""
        self.pages.setCurrentIndex(0)
        self.message.setText(text)

    # ------------------------------------------------------------ the server

    def start(self, launch: Callable[[], LocalServer], about: str = "") -> None:
        """Stop any server shown, then launch one (off the GUI thread) and show its page once it answers."""
        self.stop()
        self._launch = launch
        self._about = about
        self.restart_button.setVisible(False)
        self.message.setText(f"Starting {self.name}…")
        cancelled = self._cancel

        def started() -> LocalServer:
            server = launch()
            if cancelled.is_set():  # the view let go while we launched
                server.stop()
                raise LocalServerError(f"{self.name} start was abandoned (its view closed)")
            return server

        self._background.run(
            started,
            lambda server: self._launched(cancelled, server),
            lambda message: None if cancelled.is_set() else self._failed(message),
            name=f"{self.name}-start",
        )

    def stop(self) -> None:
        """Stop the server (off the GUI thread) and forget its page."""
        self._cancel.set()
        self._cancel = threading.Event()
        server, self.server = self.server, None
        if server is not None:
            self._background.run(server.stop, name=f"{self.name}-stop")
        self.url = None
        self.ready = False
        self.page_loaded = False
        self._load_failures = 0
        self.open_button.setVisible(False)
        self.restart_button.setVisible(False)
        self.pages.setCurrentIndex(0)
        if self.web_view is not None:
            self.pages.removeWidget(self.web_view)
            self.web_view.deleteLater()
            self.web_view = None

    def _launched(self, cancelled: threading.Event, server: LocalServer) -> None:
        if cancelled.is_set():
            self._background.run(server.stop, name=f"{self.name}-stop")
            return
        self.server = server
        self.message.setText(f"Waiting for {self.name} on {server.url}{self._about}…")
        self._background.run(
            lambda: server.wait_ready(cancelled=cancelled),
            lambda _none: self._ready(cancelled, server),
            lambda message: None if cancelled.is_set() else self._failed(message),
            name=f"{self.name}-ready",
        )

    def _ready(self, cancelled: threading.Event, server: LocalServer) -> None:
        if cancelled.is_set() or server is not self.server:
            return
        self.url = server.url
        self.ready = True
        view_class = _web_view_class()
        blocked = embedding_blocked(self.name) if view_class is not None else None
        if view_class is not None and blocked is None:
            view = view_class()
            view.loadFinished.connect(lambda ok, view=view: self._page_finished(view, ok))  # type: ignore[attr-defined]
            view.page().renderProcessTerminated.connect(  # type: ignore[attr-defined]
                lambda *_args, view=view: self._page_finished(view, False)
            )
            self.web_view = view
            self.pages.addWidget(view)
            self.pages.setCurrentWidget(view)
            view.setUrl(QUrl(server.url))  # type: ignore[attr-defined]
            self._watch_load(view)
            return
        self.message.setText(
            f"{self.name} is at {server.url}{self._about}; its log is {server.log_path}.\n"
            + (blocked or "This Qt has no QtWebEngine (PySide6-Addons) to show it inside this window.")
        )
        self.open_button.setVisible(True)

    def _page_finished(self, view: QWidget, ok: bool) -> None:
        if view is not self.web_view:
            return  # a view of a server stopped since
        if ok:
            self.page_loaded = True
            return
        self._load_failures += 1
        if self._load_failures <= PAGE_LOAD_RETRIES:
            log.info(
                "%s page at %s did not load (try %d); loading again", self.name, self.url, self._load_failures
            )
            QTimer.singleShot(1000 * self._load_failures, lambda: self._reload(view))
            return
        self.pages.setCurrentIndex(0)
        self.message.setText(
            f"{self.name} answers at {self.url} but its page did not load here after "
            f"{self._load_failures} tries; open it in the browser or try again."
        )
        self.open_button.setVisible(True)
        self.restart_button.setVisible(True)

    def _reload(self, view: QWidget) -> None:
        if view is self.web_view and not self.page_loaded:
            view.reload()  # type: ignore[attr-defined]
            self._watch_load(view)

    def _watch_load(self, view: QWidget) -> None:
        """Count the current load as failed if it has not finished in PAGE_LOAD_WAIT_MS."""
        attempt = self._load_failures

        def overdue() -> None:
            if view is self.web_view and not self.page_loaded and self._load_failures == attempt:
                log.info("%s page at %s did not finish loading; loading again", self.name, self.url)
                self._page_finished(view, False)

        QTimer.singleShot(PAGE_LOAD_WAIT_MS, overdue)

    def _failed(self, message: str) -> None:
        self.pages.setCurrentIndex(0)
        self.message.setText(message)
        self.restart_button.setVisible(True)

    def _restart(self) -> None:
        if self._launch is not None:
            self.start(self._launch, self._about)

    def open_in_browser(self) -> None:
        if self.url:
            QDesktopServices.openUrl(QUrl(self.url))

    def _stop_now(self) -> None:
        # The application is quitting: no event loop will deliver a background result any more.
        self._cancel.set()
        server, self.server = self.server, None
        if server is not None:
            server.stop(grace=2.0)
