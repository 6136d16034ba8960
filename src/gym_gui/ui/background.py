"""Background: the one way the window runs work off the GUI thread and gets the result back on it."""

from __future__ import annotations

import logging
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import shiboken6
from PySide6.QtCore import QCoreApplication, QObject, Qt, Signal, Slot

from gym_gui.core.errors import GymGuiError

log = logging.getLogger(__name__)


def error_text(exc: BaseException) -> str:
    """What a view shows for a failed call: the message of a user-facing error, else its type too."""
    if isinstance(exc, GymGuiError | OSError):
        return str(exc)
    return f"{type(exc).__name__}: {exc}"


class _Dispatcher(QObject):
    """Carries every Background's results to the GUI thread: one per application, living as long as
    it does, so a pool thread never emits on an object Qt may be destroying."""

    done = Signal(object, object, object)  # background, callback, value

    def __init__(self, parent: QObject) -> None:
        super().__init__(parent)
        self.done.connect(self._deliver, Qt.ConnectionType.QueuedConnection)

    @Slot(object, object, object)
    def _deliver(self, background: Background, callback: Callable[[Any], None], value: Any) -> None:
        # On the GUI thread, where widgets are deleted too: a background deleted with its owner
        # since the result was posted drops it, instead of calling into a dead widget.
        if shiboken6.isValid(background):
            background.deliver(callback, value)


_dispatcher: _Dispatcher | None = None


def _the_dispatcher() -> _Dispatcher:
    """The application's dispatcher, made on the GUI thread by the first Background."""
    global _dispatcher
    if _dispatcher is None or not shiboken6.isValid(_dispatcher):
        app = QCoreApplication.instance()
        if app is None:
            raise RuntimeError("a Background needs a QApplication")
        _dispatcher = _Dispatcher(app)
    return _dispatcher


class Background(QObject):
    """Runs callables on a small thread pool and hands results to callbacks on the GUI thread.

    The owner is the Qt parent: once it is deleted, results still on their way are dropped
    instead of reaching a dead widget. A callback always runs from the event loop, never inside
    :meth:`run` or :meth:`post`: work that finishes before ``run`` returns (a busy machine may
    let the pool finish it before the GUI thread resumes) is handed over like any other. Daemon calls, storage reads, subprocesses and HTTP polls
    go through here so the GUI thread never waits on them.
    """

    def __init__(self, owner: QObject | None = None, workers: int = 4, name: str = "background") -> None:
        super().__init__(owner)
        self._name = name
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix=name)
        # Results travel through the application's dispatcher, queued even from the GUI thread:
        # ``Future.add_done_callback`` calls back at once, on the caller's thread, for work already
        # done, and a direct call would then re-enter the caller (the seat's calls saw their own
        # step finish inside the call that started it). No signal of this object is emitted from a
        # pool thread, and nothing is connected to the owner's ``destroyed``: both crashed PySide
        # (a pool thread emitting while Qt destroyed the object; a later ``connect`` after many
        # owners had gone with their ``destroyed`` connected to a plain Python callable).
        self._dispatcher = _the_dispatcher()

    def run(
        self,
        fn: Callable[[], Any],
        on_done: Callable[[Any], None] | None = None,
        on_error: Callable[[str], None] | None = None,
        name: str | None = None,
    ) -> None:
        """Call ``fn()`` on the pool; then ``on_done(result)`` or ``on_error(message)`` on the GUI thread.

        ``name`` says what the work is in the log when it fails.
        """
        what = name or self._name

        def finished(future: Future[Any]) -> None:
            exc = future.exception()
            if exc is None:
                self.post(on_done, future.result())
                return
            if not isinstance(exc, GymGuiError | OSError):
                log.error("%s: %s", what, error_text(exc), exc_info=exc)
            elif on_error is None:
                log.error("%s failed: %s", what, error_text(exc))
            self.post(on_error, error_text(exc))

        try:
            self._pool.submit(fn).add_done_callback(finished)
        except RuntimeError:  # shut down: the owner is going away
            return

    def post(self, callback: Callable[[Any], None] | None, value: Any) -> None:
        """Call ``callback(value)`` on the GUI thread (from any thread)."""
        if callback is None:
            return
        self._dispatcher.done.emit(self, callback, value)

    def shutdown(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)

    def deliver(self, callback: Callable[[Any], None], value: Any) -> None:
        """Call ``callback(value)``: the dispatcher's hand-over, on the GUI thread."""
        try:
            callback(value)
        except Exception:  # a view's bug must not take the window down
            log.exception("%s: callback failed", self._name)
