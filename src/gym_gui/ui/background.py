"""Background: the one way the window runs work off the GUI thread and gets the result back on it."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from PySide6.QtCore import QObject, Qt, Signal, Slot

from gym_gui.core.errors import GymGuiError

log = logging.getLogger(__name__)


def error_text(exc: BaseException) -> str:
    """What a view shows for a failed call: the message of a user-facing error, else its type too."""
    if isinstance(exc, GymGuiError | OSError):
        return str(exc)
    return f"{type(exc).__name__}: {exc}"


class _Gate:
    """An on/off switch under a lock; a plain Python object, so Qt can call ``close`` while
    destroying the QObjects around it (a slot on a QObject being destroyed cannot be found)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.open = True

    def close(self, *_: Any) -> None:
        with self.lock:
            self.open = False


class Background(QObject):
    """Runs callables on a small thread pool and hands results to callbacks on the GUI thread.

    The owner is the Qt parent: once it is deleted, results still on their way are dropped
    instead of reaching a dead widget. A callback always runs from the event loop, never inside
    :meth:`run` or :meth:`post`: work that finishes before ``run`` returns (a busy machine may
    let the pool finish it before the GUI thread resumes) is handed over like any other. Daemon calls, storage reads, subprocesses and HTTP polls
    go through here so the GUI thread never waits on them.
    """

    _done = Signal(object, object)  # callback, value

    def __init__(self, owner: QObject | None = None, workers: int = 4, name: str = "background") -> None:
        super().__init__(owner)
        self._name = name
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix=name)
        # Queued even when emitted on the GUI thread: ``Future.add_done_callback`` calls back at once,
        # on the caller's thread, for work already done, and a direct call would then re-enter the
        # caller (the seat's calls saw their own step finish inside the call that started it).
        self._done.connect(self._deliver, Qt.ConnectionType.QueuedConnection)
        # A pool thread must not emit while this object is being destroyed (that crashes in Qt, not
        # in Python): the owner's ``destroyed`` comes before its children are deleted, and closes
        # the gate under the lock every emit holds.
        self._gate = _Gate()
        if owner is not None:
            owner.destroyed.connect(self._gate.close)

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
        with self._gate.lock:
            if not self._gate.open:
                return
            try:
                self._done.emit(callback, value)
            except RuntimeError:  # the owner was deleted meanwhile
                return

    def shutdown(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)

    @Slot(object, object)
    def _deliver(self, callback: Callable[[Any], None], value: Any) -> None:
        try:
            callback(value)
        except Exception:  # a view's bug must not take the window down
            log.exception("%s: callback failed", self._name)
