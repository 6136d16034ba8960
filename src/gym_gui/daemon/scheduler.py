"""Scheduling: the supervision loop's tick, and which queued runs start (in order, within the limit)."""

from __future__ import annotations

import logging
import threading
import time

from gym_gui.core.processes import wait_exit
from gym_gui.core.states import RunState
from gym_gui.core.workers import Launch
from gym_gui.daemon.disk import DiskWatch
from gym_gui.daemon.ending import Ending
from gym_gui.daemon.launching import Launching
from gym_gui.daemon.live import LiveRuns, SupervisorSettings

log = logging.getLogger(__name__)


class Scheduler:
    """Ticks every ``tick_seconds`` on a thread of its own (and whenever a caller asks for a tick).

    A tick looks at the disk (``DiskWatch.check``) and at every live run once (``Ending.check``),
    then starts QUEUED runs in creation order while fewer than ``max_concurrent`` daemon-launched
    workers are active. A run whose bundle is missing waits, queued, while it installs; one that
    would start while the disk is nearly full fails, not launched.
    """

    def __init__(
        self,
        runs: LiveRuns,
        launching: Launching,
        ending: Ending,
        disk: DiskWatch,
        settings: SupervisorSettings,
    ) -> None:
        self.runs = runs
        self.launching = launching
        self.ending = ending
        self.disk = disk
        self.settings = settings
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start_loop(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="gym-gui-supervisor", daemon=True)
        self._thread.start()

    def stop_loop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)

    def tick_at_exit(self, pid: int, timeout: float) -> None:
        """Tick as soon as the local process ``pid`` ends (within ``timeout``), on a thread of its own:
        a worker whose stream closed is about to exit, and its run ends then, not at the next tick."""

        def watch() -> None:
            if wait_exit(pid, timeout) and not self._stop.is_set():
                try:
                    self.tick()
                except Exception:  # as in the loop: a failed tick is logged, the next one comes
                    log.exception("supervisor tick failed")

        threading.Thread(target=watch, name=f"gym-gui-exit-{pid}", daemon=True).start()

    def _loop(self) -> None:
        while not self._stop.wait(self.settings.tick_seconds):
            try:
                self.tick()
            except Exception:  # the loop must outlive any one run's trouble
                log.exception("supervisor tick failed")

    def tick(self) -> None:
        """One pass: finish ended runs (again, for an end not recorded yet), enforce heartbeats and
        cancel grace, start queued runs."""
        with self.runs.lock:
            self.disk.check()
            now = time.monotonic()
            for run in self.runs.all():
                try:
                    self.ending.check(run, now)
                except Exception:  # one run's trouble must not keep the others from being looked at
                    log.exception("run %s: checking it failed", run.run_id)
            self._start_queued()

    def _start_queued(self) -> None:
        active = sum(
            1
            for run in self.runs.all()
            if run.spec.launch is Launch.DAEMON
            and not run.finalized
            and (run.launching or run.process or run.orphan_pid)
        )
        for record in self.runs.registry.in_states(RunState.QUEUED):
            if active >= self.settings.max_concurrent:
                return
            run = self.runs.get(record.run_id)
            if run is None or run.launching or run.finalized or run.spec.launch is not Launch.DAEMON:
                continue
            if not self.launching.bundle_ready(run, then=self.tick):
                continue
            refusal = self.disk.refusal()
            if refusal:
                self.ending.finish(run, RunState.FAILED, f"not launched: {refusal}")
                continue
            self.launching.begin(run, "launching worker")
            active += 1
