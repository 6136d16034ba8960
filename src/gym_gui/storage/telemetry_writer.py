"""The one writer of a run's telemetry database: a thread that batches what it is given into transactions."""

from __future__ import annotations

import json
import logging
import queue
import sqlite3
import threading
import time
from collections.abc import Sequence
from itertools import chain
from pathlib import Path
from typing import Any

from gym_gui.core.errors import DiskFull, StorageError
from gym_gui.core.records import (
    ArtifactRecord,
    EpisodeRecord,
    EventRecord,
    MetricPoint,
    StepRow,
)
from gym_gui.storage.byte_budget import ByteBudget
from gym_gui.storage.database import rollback
from gym_gui.storage.space import disk_full, is_disk_full
from gym_gui.storage.telemetry_schema import (
    ACTOR_STEP_TABLE,
    AGENT_STEP_TABLE,
    ARTIFACT_TABLE,
    EPISODE_TABLE,
    EVENT_TABLE,
    METRIC_TABLE,
    STEP_TABLE,
    TELEMETRY_DATABASE,
    UPSERT_META,
    insert_rows,
    open_telemetry_db,
)

logger = logging.getLogger(__name__)

# Kinds of queued items. The payload is already in the shape executemany wants, so the writer
# thread does no per-row work.
_STEPS, _ACTOR_STEPS, _AGENT_STEPS, _EPISODE, _METRICS, _EVENT, _ARTIFACT, _META, _STOP = range(9)
# The kind of queued steps by the width of their rows (each width a table's columns).
_STEP_KINDS = {
    len(STEP_TABLE[1]): _STEPS,
    len(ACTOR_STEP_TABLE[1]): _ACTOR_STEPS,
    len(AGENT_STEP_TABLE[1]): _AGENT_STEPS,
}
# Bytes of step rows one writer may hold queued (see TelemetryWriter.put_steps): with the message
# size limit (gym_gui_sdk.channel.MAX_MESSAGE_BYTES), what bounds the memory one run takes.
MAX_PENDING_BYTES = 16 * 1024 * 1024


class TelemetryWriter:
    """The single writer of one run's telemetry database, running on its own thread.

    Every ``put_*`` enqueues into a bounded queue and **blocks while it is full**: that is how
    a slow disk slows the producer (and through gRPC flow control, the worker) instead of
    dropping data. The thread takes everything queued, writes it in one transaction
    (``executemany`` per table), commits, and counts it done.

    A write that fails (e.g. a repeated ``(episode, step)``, which is a protocol error) rolls
    back its whole transaction; rows committed earlier stay intact. The failure is kept in
    :attr:`error` and every later ``put_*`` and :meth:`flush` raises it: the writer never
    fails silently and never half-writes.

    Rows passed to ``put_*`` are kept by reference until written: do not mutate them.
    """

    def __init__(
        self,
        path: Path,
        max_pending: int = 64,
        max_pending_bytes: int = MAX_PENDING_BYTES,
        budget: ByteBudget | None = None,
    ) -> None:
        """Prepare a writer for ``path``; nothing is opened until :meth:`start`.

        Args:
            max_pending: how many ``put_*`` calls may wait in the queue before the next blocks.
            max_pending_bytes: how many bytes of step rows (as their callers count them) may wait
                before the next ``put_steps`` blocks; one batch alone always goes in.
            budget: the bytes this writer's step rows share with other writers' (a daemon's runs):
                the next ``put_steps`` also waits while it has no room.
        """
        if max_pending < 1:
            raise ValueError(f"max_pending must be at least 1, got {max_pending}")
        self._path = Path(path)
        self._max_pending = max_pending
        self._max_pending_bytes = max_pending_bytes
        self._budget = budget
        # Bytes of step rows held: queued and not yet written, or reserved (guarded by _cv).
        self._pending_bytes = 0
        self._reserved = 0  # of those, reserved for the next put_steps (guarded by _cv)
        self._queue: queue.Queue[tuple[int, Any, int]] = queue.Queue(maxsize=max_pending)
        self._cv = threading.Condition()
        self._enqueued = 0  # put_* calls admitted (guarded by _cv)
        self._done = 0  # of those, committed or discarded after a failure (guarded by _cv)
        self._error: StorageError | None = None
        self._closing = False
        self._stopped = False
        self._stop_sent = False
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._steps_written = 0
        self._episodes_written = 0
        self._metrics_written = 0

    def __enter__(self) -> TelemetryWriter:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @property
    def path(self) -> Path:
        return self._path

    @property
    def error(self) -> StorageError | None:
        """Why the writer stopped accepting data, or ``None`` while it is healthy."""
        return self._error

    @property
    def steps_written(self) -> int:
        """Steps committed to disk so far."""
        return self._steps_written

    @property
    def episodes_written(self) -> int:
        """Episodes committed to disk so far."""
        return self._episodes_written

    @property
    def metrics_written(self) -> int:
        """Metric points committed to disk so far."""
        return self._metrics_written

    def start(self) -> None:
        """Start the writer thread, which opens (creates, migrates) the database.

        Calling it again while running does nothing.

        Raises:
            StorageError: when the database cannot be opened (then the writer is failed),
                or the writer was closed.
        """
        with self._cv:
            if self._closing:
                raise StorageError(f"telemetry writer for {self._path} is closed; create a new one")
            if self._thread is not None:
                return
            self._thread = threading.Thread(
                target=self._run, name=f"telemetry-writer:{self._path.parent.name}", daemon=True
            )
            self._thread.start()
        self._ready.wait()
        if self._error is not None:
            raise _again(self._error)

    def put_steps(self, rows: Sequence[StepRow], size: int = 0) -> None:
        """Queue step rows (tuples in :data:`~gym_gui.core.records.STEP_COLUMNS` order, each followed
        by its ``ACTOR_COLUMNS`` when the rows say who acted, then by its ``AGENT_COLUMNS`` when they
        name their agents: one width for all of ``rows``).

        Blocks while the queue is full, or while ``size`` (the bytes the rows hold, e.g. the size of
        the message they came in) would take the bytes waiting past ``max_pending_bytes``, or past
        the shared budget's room; bytes held by :meth:`reserve` count first.

        Raises:
            StorageError: when the writer has failed or is closed.
        """
        if not rows:
            return
        with self._cv:
            reserved = min(size, self._reserved)
            self._reserved -= reserved
        try:
            self._hold(size - reserved)
        except StorageError:
            self._give_back(reserved)
            raise
        self._put(_STEP_KINDS[len(rows[0])], rows, size)

    def reserve(self, size: int) -> None:
        """Hold ``size`` bytes for step rows not made yet (a message's, before it is taken apart), so
        the memory it is about to take waits for room as its rows would: the next :meth:`put_steps`
        counts them first, and :meth:`release` gives back what it did not take.

        Raises:
            StorageError: when the writer has failed or is closed (nothing is held).
        """
        self._hold(size)
        with self._cv:
            self._reserved += size

    def release(self) -> None:
        """Give back the bytes :meth:`reserve` held that no :meth:`put_steps` took."""
        with self._cv:
            size, self._reserved = self._reserved, 0
        self._give_back(size)

    def _hold(self, size: int) -> None:
        """Wait for room for ``size`` bytes of step rows (this writer's, then its budget's) and hold them.

        Raises:
            StorageError: when the writer has failed or is closed (nothing is held).
        """
        if not size:
            return
        with self._cv:
            self._raise_if_unusable()
            # What one run holds in memory stays bounded however large its batches are.
            self._cv.wait_for(
                lambda: (
                    self._pending_bytes == 0
                    or self._pending_bytes + size <= self._max_pending_bytes
                    or self._error is not None
                    or self._stopped
                )
            )
            self._raise_if_unusable()
            self._pending_bytes += size
        # And what every run holds together, whatever each one's own bound allows.
        if self._budget is not None and not self._budget.take(size, self._unusable):
            with self._cv:
                self._pending_bytes -= size
                self._cv.notify_all()
                self._raise_if_unusable()

    def _give_back(self, size: int) -> None:
        """Bytes held for step rows are free again (written, discarded, or never put)."""
        if not size:
            return
        with self._cv:
            self._pending_bytes -= size
            self._cv.notify_all()
        if self._budget is not None:
            self._budget.give(size)

    def _wake_budget(self) -> None:
        """Have a producer waiting for the shared budget's room look again: this writer failed or
        closed, so it gives up."""
        if self._budget is not None:
            self._budget.wake()

    def _unusable(self) -> bool:
        return self._error is not None or self._closing or self._stopped

    def put_episode(self, episode: EpisodeRecord) -> None:
        """Queue an episode summary. Blocks while the queue is full.

        Raises:
            StorageError: when the writer has failed or is closed.
        """
        e = episode
        self._put(
            _EPISODE,
            (
                e.episode,
                e.seed,
                e.steps,
                e.total_reward,
                int(e.terminated),
                int(e.truncated),
                e.started_at,
                e.ended_at,
                e.info,
                json.dumps(e.agent_returns),
            ),
        )

    def put_metrics(self, points: Sequence[MetricPoint]) -> None:
        """Queue scalar metric points. Blocks while the queue is full.

        Raises:
            StorageError: when the writer has failed or is closed.
        """
        if points:
            self._put(_METRICS, [(p.tag, p.step, p.wall_time, p.value) for p in points])

    def put_event(self, event: EventRecord) -> None:
        """Queue an event. Blocks while the queue is full.

        Raises:
            StorageError: when the writer has failed or is closed.
        """
        self._put(_EVENT, (event.time, event.kind, event.level, event.message, event.data))

    def put_artifact(self, artifact: ArtifactRecord) -> None:
        """Queue an artifact registration. Blocks while the queue is full.

        Raises:
            StorageError: when the writer has failed or is closed.
        """
        self._put(_ARTIFACT, (artifact.kind, artifact.path, artifact.step, artifact.meta))

    def set_meta(self, key: str, value: str) -> None:
        """Queue setting ``meta[key] = value`` (replacing an earlier value). Blocks while the queue is full.

        Raises:
            StorageError: when the writer has failed or is closed.
        """
        self._put(_META, (key, value))

    def _put(self, kind: int, payload: Any, size: int = 0) -> None:
        """Queue ``payload``, whose ``size`` bytes of step rows are held (:meth:`_hold`): given back
        once it is written or discarded, or here when it cannot be queued."""
        with self._cv:
            try:
                self._raise_if_unusable()
            except StorageError:
                unusable = True
            else:
                unusable = False
                # Counted before it is queued: flush() relies on every queued item being counted.
                self._enqueued += 1
        if unusable:
            self._give_back(size)
            self._raise_if_unusable()
        self._queue.put((kind, payload, size))
        with self._cv:
            stopped = self._stopped
        if stopped:  # the writer thread is gone: nothing queued now is ever written
            self._discard_queued()
        with self._cv:
            if self._error is not None or self._stopped:
                self._raise_if_unusable()

    def _raise_if_unusable(self) -> None:
        if self._error is not None:
            raise _again(self._error)
        if self._closing or self._stopped:
            raise StorageError(f"telemetry writer for {self._path} is closed; nothing more can be stored")

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until everything put so far is committed.

        Returns:
            True when it is; False when ``timeout`` (seconds) passed first or the writer
            thread has stopped with items left.

        Raises:
            StorageError: when the writer has failed (what was put since was not stored),
                or it was never started but holds queued items.
        """
        with self._cv:
            target = self._enqueued
            if self._thread is None and self._done < target:
                raise StorageError(
                    f"telemetry writer for {self._path} holds unwritten data but was never started; call start()"
                )
            self._cv.wait_for(lambda: self._done >= target or self._stopped, timeout)
            flushed = self._done >= target
        if self._error is not None:
            raise _again(self._error)
        return flushed

    def close(self, timeout: float | None = 30.0) -> bool:
        """Flush, then stop the writer thread and close its connection. Safe to call again.

        Never raises for a failed writer: check :attr:`error`.

        Returns:
            True when everything put was committed and the thread stopped within ``timeout``.
        """
        deadline = None if timeout is None else time.monotonic() + timeout

        def remaining() -> float | None:
            return None if deadline is None else max(0.0, deadline - time.monotonic())

        with self._cv:
            self._closing = True
            thread = self._thread
        self._wake_budget()
        self.release()  # a reservation no rows will come for
        if thread is None:
            dropped = self._discard_queued()
            with self._cv:
                self._stopped = True
                self._cv.notify_all()
            if dropped:
                logger.warning(
                    "telemetry writer for %s closed before start: %d items dropped", self._path, dropped
                )
            return dropped == 0
        try:
            flushed = self.flush(remaining())
        except StorageError:
            flushed = False
        if not self._stop_sent:
            try:
                self._queue.put((_STOP, None, 0), timeout=remaining())
                self._stop_sent = True
            except queue.Full:
                logger.warning("telemetry writer for %s did not stop within %ss", self._path, timeout)
                return False
        thread.join(remaining())
        if thread.is_alive():
            logger.warning("telemetry writer for %s did not stop within %ss", self._path, timeout)
            return False
        return flushed and self._error is None

    def _discard_queued(self) -> int:
        """Drop what is queued (the writer thread will never write it); returns how many items."""
        dropped = freed = 0
        while True:
            try:
                kind, _, size = self._queue.get_nowait()
            except queue.Empty:
                break
            if kind != _STOP:
                dropped += 1
                freed += size
        self._give_back(freed)
        return dropped

    def _fail(self, error: StorageError) -> None:
        logger.error("%s", error)
        with self._cv:
            if self._error is None:
                self._error = error
        self._wake_budget()

    def _run(self) -> None:
        conn: sqlite3.Connection | None = None
        try:
            conn = open_telemetry_db(self._path)
        except StorageError as exc:
            self._fail(exc)
        except Exception as exc:
            self._fail(StorageError(f"{TELEMETRY_DATABASE} {self._path}: cannot open it: {exc}"))
        finally:
            self._ready.set()
        try:
            self._loop(conn)
        except BaseException as exc:  # the thread must never die without saying why
            self._fail(StorageError(f"telemetry writer for {self._path} stopped unexpectedly: {exc!r}"))
            raise
        finally:
            if conn is not None:
                conn.close()
            with self._cv:
                self._stopped = True
                self._cv.notify_all()
            self._discard_queued()  # left by a thread that died: its held bytes are free
            self._wake_budget()

    def _loop(self, conn: sqlite3.Connection | None) -> None:
        get, get_nowait = self._queue.get, self._queue.get_nowait
        # Bound one transaction so a producer that keeps pace with the drain cannot grow it forever.
        most = 2 * self._max_pending
        stopping = False
        while True:
            items = [get()]
            try:
                while len(items) < most:
                    items.append(get_nowait())
            except queue.Empty:
                pass
            count = len(items)
            for kind, _, _ in items:
                if kind == _STOP:
                    stopping = True
                    count -= 1
            if conn is not None and self._error is None:
                self._write(conn, items)
            freed = sum(size for _, _, size in items)
            items.clear()  # not held while the next get() waits: their bytes are given back now
            # After a failure items are discarded but still counted, so no put or flush waits forever.
            with self._cv:
                self._done += count
                self._cv.notify_all()
            self._give_back(freed)
            if stopping and self._queue.empty():
                return

    def _write(self, conn: sqlite3.Connection, items: list[tuple[int, Any, int]]) -> None:
        try:
            counts = self._transaction(conn, items)
        except Exception as exc:
            if is_disk_full(exc):
                # Nothing of this batch is stored; item by item would only fill the disk to the last byte.
                self._fail(
                    disk_full(
                        self._path,
                        "everything committed before is stored, and this writer accepts no more data",
                    )
                )
                return
            # One bad item must not take the good ones drained with it: store item by item, in
            # order, up to the bad one, which fails the writer naming what was wrong.
            counts = (0, 0, 0)
            for item in items:
                try:
                    one = self._transaction(conn, [item])
                except Exception as exc:
                    self._count(*counts)
                    if is_disk_full(exc):
                        self._fail(
                            disk_full(
                                self._path,
                                "everything queued before it is stored, and this writer accepts no more data",
                            )
                        )
                        return
                    duplicate = isinstance(exc, sqlite3.IntegrityError) and "UNIQUE" in str(exc)
                    hint = (
                        " (a repeated (episode, step) or episode number is a protocol error)"
                        if duplicate
                        else ""
                    )
                    self._fail(
                        StorageError(
                            f"{TELEMETRY_DATABASE} {self._path}: a queued item was rejected: {exc}{hint}; everything "
                            "queued before it is stored, and this writer accepts no more data"
                        )
                    )
                    return
                counts = (counts[0] + one[0], counts[1] + one[1], counts[2] + one[2])
        self._count(*counts)

    def _count(self, steps: int, episodes: int, metrics: int) -> None:
        with self._cv:
            self._steps_written += steps
            self._episodes_written += episodes
            self._metrics_written += metrics

    @staticmethod
    def _transaction(conn: sqlite3.Connection, items: list[tuple[int, Any, int]]) -> tuple[int, int, int]:
        """Write ``items`` in one transaction (one executemany per table); returns what was stored."""
        steps: list[Sequence[StepRow]] = []
        actor_steps: list[Sequence[StepRow]] = []
        agent_steps: list[Sequence[StepRow]] = []
        episodes: list[tuple[Any, ...]] = []
        metrics: list[list[tuple[Any, ...]]] = []
        events: list[tuple[Any, ...]] = []
        artifacts: list[tuple[Any, ...]] = []
        meta: list[tuple[str, str]] = []
        for kind, payload, _ in items:
            if kind == _STEPS:
                steps.append(payload)
            elif kind == _ACTOR_STEPS:
                actor_steps.append(payload)
            elif kind == _AGENT_STEPS:
                agent_steps.append(payload)
            elif kind == _EPISODE:
                episodes.append(payload)
            elif kind == _METRICS:
                metrics.append(payload)
            elif kind == _EVENT:
                events.append(payload)
            elif kind == _ARTIFACT:
                artifacts.append(payload)
            elif kind == _META:
                meta.append(payload)
        conn.execute("BEGIN IMMEDIATE")
        try:
            if steps:
                insert_rows(conn, STEP_TABLE, list(chain.from_iterable(steps)))
            if actor_steps:
                insert_rows(conn, ACTOR_STEP_TABLE, list(chain.from_iterable(actor_steps)))
            if agent_steps:
                insert_rows(conn, AGENT_STEP_TABLE, list(chain.from_iterable(agent_steps)))
            if episodes:
                insert_rows(conn, EPISODE_TABLE, episodes)
            if metrics:
                insert_rows(conn, METRIC_TABLE, list(chain.from_iterable(metrics)))
            if events:
                insert_rows(conn, EVENT_TABLE, events)
            if artifacts:
                insert_rows(conn, ARTIFACT_TABLE, artifacts)
            if meta:
                conn.executemany(UPSERT_META, meta)
            conn.execute("COMMIT")
        except BaseException:
            rollback(conn)
            raise
        stored = sum(map(len, steps)) + sum(map(len, actor_steps)) + sum(map(len, agent_steps))
        return stored, len(episodes), sum(map(len, metrics))


def _again(error: StorageError) -> StorageError:
    """A fresh exception of the same kind as the writer's failure (DiskFull stays DiskFull), chained to it."""
    again = DiskFull(str(error)) if isinstance(error, DiskFull) else StorageError(str(error))
    again.__cause__ = error
    return again
