"""DaemonLink: the window's connection to the daemon — every call off the GUI thread, results as Qt signals."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, Signal

from gym_gui.core.errors import GymGuiError
from gym_gui.core.records import (
    EpisodeRecord,
    EventRecord,
    MetricBatch,
    Resumed,
    RunRemoved,
    RunUpdated,
    Starved,
    StateTransition,
    StepBatch,
)
from gym_gui.protocol.client import DaemonClient, TelemetryStream
from gym_gui.storage.home import Home
from gym_gui.ui.background import Background

log = logging.getLogger(__name__)

# The newest runs the window starts with (its watch's snapshot, the runs table's first page); older
# ones come a page at a time as the table is scrolled: a home of 10,000 runs opens as one of 100.
RUNS_PAGE = 100


class TelemetrySubscription(QObject):
    """One run's live telemetry as Qt signals, delivered on the GUI thread.

    Step batches are lossy: the subscription holds a credit window and grants one credit back
    each time the view calls :meth:`consumed` after drawing, so a slow view makes the daemon
    coalesce (latest frame wins) instead of piling up. Episodes, metrics and state changes
    always arrive.
    """

    steps = Signal(object)  # StepBatch
    episode = Signal(object)  # EpisodeRecord
    metrics = Signal(object)  # MetricBatch
    state = Signal(object)  # StateTransition
    worker_event = Signal(object)  # EventRecord
    starved = Signal(bool)  # True on STARVED, False on RESUMED
    ended = Signal()

    def __init__(self, client: DaemonClient, run_id: str, credits: int = 4) -> None:
        super().__init__()
        self.run_id = run_id
        self._stream: TelemetryStream = client.subscribe(run_id, credits=credits)
        self._thread = threading.Thread(target=self._pump, name=f"subscription-{run_id}", daemon=True)

    def start(self) -> None:
        """Deliver the events: called once the view's slots are connected (what is emitted before
        reaches no one, and a finished run's one state change comes at once)."""
        self._thread.start()

    def _pump(self) -> None:
        try:
            for event in self._stream:
                if isinstance(event, StepBatch):
                    self.steps.emit(event)
                elif isinstance(event, EpisodeRecord):
                    self.episode.emit(event)
                elif isinstance(event, MetricBatch):
                    self.metrics.emit(event)
                elif isinstance(event, StateTransition):
                    self.state.emit(event)
                elif isinstance(event, EventRecord):
                    self.worker_event.emit(event)
                elif isinstance(event, Starved):
                    self.starved.emit(True)
                elif isinstance(event, Resumed):
                    self.starved.emit(False)
        except GymGuiError as exc:
            log.info("subscription to %s ended: %s", self.run_id, exc)
        except RuntimeError:  # the Qt object went away while the stream still ran
            return
        try:
            self.ended.emit()
        except RuntimeError:
            return

    def consumed(self, credits: int = 1) -> None:
        """The view has drawn what it got: let ``credits`` more step batches come."""
        self._stream.grant(credits)

    def close(self) -> None:
        self._stream.close()


class DaemonLink(QObject):
    """Owns the DaemonClient of the window.

    - ``call(fn, on_done, on_error)`` runs ``fn(client)`` on a worker thread and hands the result
      to ``on_done`` (or the error message to ``on_error``) on the GUI thread.
    - The runs table is kept current from a WatchRuns stream (``run_updated`` / ``run_removed``).
    - When the daemon goes away, ``connection_changed(False, message)`` fires, everything shown
      stays, and the link reconnects (starting a daemon) on :meth:`reconnect`.
    """

    connection_changed = Signal(bool, str)
    run_updated = Signal(object)  # RunRecord
    run_removed = Signal(str)
    error = Signal(str)

    def __init__(self, home: Path, autostart: bool = True) -> None:
        super().__init__()
        self.home = home
        self.autostart = autostart
        self.client: DaemonClient | None = None
        self._background = Background(self, workers=4, name="daemon-call")
        self._watch_thread: threading.Thread | None = None
        self._closing = False
        self._watch_generation = 0

    # ------------------------------------------------------------ connection

    def connect_daemon(self) -> None:
        """Connect (starting a daemon when none answers) without blocking the GUI."""

        def connected(client: DaemonClient) -> None:
            self.client = client
            self.connection_changed.emit(True, client.info.address)
            # A running daemon keeps the settings and options it started with: say so when this
            # window's or the home's differ.
            try:
                notes = Home(self.home).daemon_differences(client.info)
            except GymGuiError as exc:  # a damaged daemon-options.json: said, the window goes on
                notes = [str(exc)]
            for note in notes:
                self.error.emit(f"warning: {note}")
            self._start_watch()

        self._background.run(
            lambda: DaemonClient.connect(self.home, autostart=self.autostart),
            connected,
            lambda message: self.connection_changed.emit(False, message),
            name="connect",
        )

    reconnect = connect_daemon

    @property
    def connected(self) -> bool:
        return self.client is not None

    def _start_watch(self) -> None:
        self._watch_generation += 1
        generation = self._watch_generation
        client = self.client
        assert client is not None

        def watch() -> None:
            try:
                for event in client.watch_runs(include_archived=True, limit=RUNS_PAGE):
                    if self._closing or generation != self._watch_generation:
                        return
                    if isinstance(event, RunUpdated):
                        self.run_updated.emit(event.record)
                    elif isinstance(event, RunRemoved):
                        self.run_removed.emit(event.run_id)
            except GymGuiError as exc:
                if not self._closing and generation == self._watch_generation:
                    self._background.post(self._lost, str(exc))
            except RuntimeError:
                return

        self._watch_thread = threading.Thread(target=watch, name="watch-runs", daemon=True)
        self._watch_thread.start()

    def _lost(self, message: str) -> None:
        self.client = None
        self.connection_changed.emit(False, message)

    # ------------------------------------------------------------ calls

    def call(
        self,
        fn: Callable[[DaemonClient], Any],
        on_done: Callable[[Any], None] | None = None,
        on_error: Callable[[str], None] | None = None,
    ) -> None:
        """Run ``fn(client)`` off the GUI thread; callbacks run on the GUI thread."""
        client = self.client
        if client is None:
            message = "not connected to the gym_gui daemon"
            (on_error or self.error.emit)(message)
            return

        self._background.run(lambda: fn(client), on_done, on_error or self.error.emit)

    def subscribe(self, run_id: str, credits: int = 4) -> TelemetrySubscription | None:
        if self.client is None:
            return None
        return TelemetrySubscription(self.client, run_id, credits)

    def close(self) -> None:
        self._closing = True
        self._watch_generation += 1
        if self.client is not None:
            self.client.close()
            self.client = None
        self._background.shutdown()
