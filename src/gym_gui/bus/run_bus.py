"""RunBus: the lossy viewer path — per-subscription credit windows, coalescing, STARVED/RESUMED."""

from __future__ import annotations

import threading
from collections import deque
from dataclasses import dataclass
from typing import Any

# Event kinds that cost a viewer credit and may be coalesced; every other kind is always delivered.
STEPS = "steps"
STARVED = "starved"
RESUMED = "resumed"

# The topic of run-table changes (state changes, archive, delete) for every run.
RUNS_TOPIC = "#runs"


@dataclass(frozen=True)
class BusEvent:
    """One thing a viewer may see: ``kind`` says what ``payload`` is (the bus never looks inside)."""

    run_id: str
    kind: str
    payload: Any
    coalesced: int = 0  # with STARVED/RESUMED: step events replaced so far


class Subscription:
    """A viewer's window on one topic: a run id, or ``RUNS_TOPIC``.

    Step events cost one credit each. With no credit left, a new step event replaces the
    pending one (the latest frame wins) and STARVED is emitted once; when credits are granted
    again the latest step event is delivered, followed by RESUMED. Every other event
    (episodes, metrics, state changes, lifecycle) is delivered whatever the credits.
    """

    def __init__(self, bus: RunBus, run_id: str, credits: int) -> None:
        self.run_id = run_id
        self._bus = bus
        self._credits = credits
        self._queue: deque[BusEvent] = deque()
        self._pending_step: BusEvent | None = None
        self._starved = False
        self.coalesced = 0
        self._cond = threading.Condition()
        self._closed = False

    @property
    def credits(self) -> int:
        with self._cond:
            return self._credits

    @property
    def starved(self) -> bool:
        with self._cond:
            return self._starved

    def grant(self, credits: int) -> None:
        """Give the subscription ``credits`` more step events."""
        if credits <= 0:
            return
        with self._cond:
            self._credits += credits
            if self._pending_step is not None and self._credits > 0:
                self._credits -= 1
                self._queue.append(self._pending_step)
                self._pending_step = None
            if self._starved and self._credits > 0:
                self._starved = False
                self._queue.append(BusEvent(self.run_id, RESUMED, None, self.coalesced))
            self._cond.notify_all()

    def offer(self, event: BusEvent) -> None:
        with self._cond:
            if self._closed:
                return
            if event.kind == STEPS:
                if self._credits > 0:
                    self._credits -= 1
                    self._queue.append(event)
                else:
                    if self._pending_step is not None:
                        self.coalesced += 1
                    self._pending_step = event
                    if not self._starved:
                        self._starved = True
                        self._queue.append(BusEvent(self.run_id, STARVED, None, self.coalesced))
            else:
                self._queue.append(event)
            self._cond.notify_all()

    def get(self, timeout: float | None = None) -> BusEvent | None:
        """The next event, or None when ``timeout`` passed or the subscription closed."""
        with self._cond:
            if not self._queue and not self._closed:
                self._cond.wait(timeout)
            if self._queue:
                return self._queue.popleft()
            return None

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        self._bus._remove(self)


class RunBus:
    """Fan-out of run events to viewers; publishing never blocks the storage path."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._subs: dict[str, list[Subscription]] = {}

    def subscribe(self, run_id: str, credits: int = 0) -> Subscription:
        sub = Subscription(self, run_id, credits)
        with self._lock:
            self._subs.setdefault(run_id, []).append(sub)
        return sub

    def publish(self, run_id: str, kind: str, payload: Any) -> None:
        event = BusEvent(run_id, kind, payload)
        with self._lock:
            targets = list(self._subs.get(run_id, ()))
        for sub in targets:
            sub.offer(event)

    def close_run(self, run_id: str) -> None:
        """Close every subscription to ``run_id`` (its viewers' streams end)."""
        with self._lock:
            subs = list(self._subs.get(run_id, ()))
        for sub in subs:
            sub.close()

    def subscriber_count(self, run_id: str) -> int:
        with self._lock:
            return len(self._subs.get(run_id, ()))

    def _remove(self, sub: Subscription) -> None:
        with self._lock:
            subs = self._subs.get(sub.run_id)
            if subs and sub in subs:
                subs.remove(sub)
                if not subs:
                    del self._subs[sub.run_id]
