"""Per-run telemetry (the database of a run directory): its schema, the one batching writer thread, and readers."""

from __future__ import annotations

import functools
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
    STEP_COLUMNS,
    ArtifactRecord,
    EpisodeRecord,
    EventRecord,
    MetricPoint,
    StepRecord,
    StepRow,
)
from gym_gui.storage.registry import (
    BUSY_TIMEOUT_MS,
    Migration,
    apply_migrations,
    configure,
    enable_wal,
    refuse_newer,
    rollback,
    sql_migration,
)
from gym_gui.storage.space import disk_full, is_disk_full

logger = logging.getLogger(__name__)

_WHAT = "telemetry database"

MIGRATIONS: list[Migration] = [
    sql_migration(
        # Keyed by (episode, step) without a rowid: the table *is* the primary-key B-tree, so
        # seeking to any step of a huge episode is one index descent and rows are stored in order.
        """
        CREATE TABLE steps (
            episode     INTEGER NOT NULL,
            step        INTEGER NOT NULL,
            reward      REAL NOT NULL,
            terminated  INTEGER NOT NULL,
            truncated   INTEGER NOT NULL,
            action      TEXT NOT NULL,
            observation TEXT NOT NULL,
            info        TEXT NOT NULL,
            render      BLOB,
            wall_time   REAL NOT NULL,
            PRIMARY KEY (episode, step)
        ) WITHOUT ROWID
        """,
        """
        CREATE TABLE episodes (
            episode      INTEGER PRIMARY KEY,
            seed         INTEGER,
            steps        INTEGER NOT NULL,
            total_reward REAL NOT NULL,
            terminated   INTEGER NOT NULL,
            truncated    INTEGER NOT NULL,
            started_at   REAL NOT NULL,
            ended_at     REAL NOT NULL,
            info         TEXT NOT NULL DEFAULT '{}'
        )
        """,
        """
        CREATE TABLE metrics (
            tag       TEXT NOT NULL,
            step      INTEGER NOT NULL,
            wall_time REAL NOT NULL,
            value     REAL NOT NULL
        )
        """,
        "CREATE INDEX metrics_tag_step ON metrics (tag, step)",
        """
        CREATE TABLE events (
            id      INTEGER PRIMARY KEY AUTOINCREMENT,
            time    REAL NOT NULL,
            kind    TEXT NOT NULL,
            level   TEXT NOT NULL,
            message TEXT NOT NULL,
            data    TEXT NOT NULL DEFAULT '{}'
        )
        """,
        """
        CREATE TABLE artifacts (
            id   INTEGER PRIMARY KEY AUTOINCREMENT,
            kind TEXT NOT NULL,
            path TEXT NOT NULL,
            step INTEGER NOT NULL,
            meta TEXT NOT NULL DEFAULT '{}'
        )
        """,
        "CREATE TABLE meta (key TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL)",
    ),
]
SCHEMA_VERSION = len(MIGRATIONS)

# The tables the writer appends to, with the columns it fills (its rows' tuples follow this order).
_STEP_TABLE = ("steps", STEP_COLUMNS)
_EPISODE_TABLE = (
    "episodes",
    ("episode", "seed", "steps", "total_reward", "terminated", "truncated", "started_at", "ended_at", "info"),
)
_METRIC_TABLE = ("metrics", ("tag", "step", "wall_time", "value"))
_EVENT_TABLE = ("events", ("time", "kind", "level", "message", "data"))
_ARTIFACT_TABLE = ("artifacts", ("kind", "path", "step", "meta"))
# Rows one INSERT statement carries. Python's sqlite3 lets go of the GIL around every statement
# step and must take it back after, waiting for whichever thread holds it: with a statement a row,
# four runs' writer threads in one daemon spent their time handing the GIL over, row by row (four
# threads inserting 200k rows each: 40k rows/s together, against 119k for one thread alone; with
# 64 rows a statement 180k). 64 measured best of 16 to 256 (a longer statement costs more to bind).
ROWS_PER_STATEMENT = 64
_UPSERT_META = (
    "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value"
)

_STEP_SELECT = f"SELECT {', '.join(STEP_COLUMNS)} FROM steps"
# The metric CleanRL's scripts log each finished episode's return under (the analytics lane stores
# no episodes table rows, only this series).
EPISODIC_RETURN = "charts/episodic_return"
# A run's final return is the mean of this many of its last episodic returns.
FINAL_RETURN_EPISODES = 20
_EPISODE_SELECT = "SELECT episode, seed, steps, total_reward, terminated, truncated, started_at, ended_at, info FROM episodes"


def open_telemetry_db(path: Path, *, readonly: bool = False) -> sqlite3.Connection:
    """Open a run's telemetry database in autocommit mode (``isolation_level=None``).

    Read-write: creates the file if missing, switches it to WAL and runs any pending
    migrations. Read-only (``mode=ro``): never creates or migrates anything.

    Raises:
        StorageError: the file has a newer schema than this code (it is not changed); or,
            read-only, the file is missing or not yet at :data:`SCHEMA_VERSION`.
    """
    path = Path(path)
    target = len(MIGRATIONS)
    try:
        if readonly:
            if not path.is_file():
                raise StorageError(f"{_WHAT} {path} does not exist: the run has stored no telemetry yet")
            conn = sqlite3.connect(
                path.resolve().as_uri() + "?mode=ro",
                uri=True,
                isolation_level=None,
                timeout=BUSY_TIMEOUT_MS / 1000,
            )
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(path, isolation_level=None, timeout=BUSY_TIMEOUT_MS / 1000)
    except (sqlite3.Error, OSError) as exc:
        if is_disk_full(exc):
            raise disk_full(path, f"the {_WHAT} cannot be created") from exc
        if isinstance(exc, OSError):
            raise
        raise StorageError(f"{_WHAT} {path}: cannot open it: {exc}") from exc
    try:
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        found = refuse_newer(conn, path, target, _WHAT)
        if readonly:
            if found < target:
                raise StorageError(
                    f"{_WHAT} {path} has schema version {found}, older than {target}; it is not "
                    "initialised yet, or open it once for writing (the daemon does) to upgrade it"
                )
        else:
            enable_wal(conn, path, _WHAT)
            configure(conn)
            apply_migrations(conn, MIGRATIONS, path, _WHAT)
    except BaseException as exc:
        conn.close()
        if is_disk_full(exc):
            raise disk_full(path, f"the {_WHAT} cannot be set up") from exc
        if isinstance(exc, sqlite3.Error):
            raise StorageError(f"{_WHAT} {path}: cannot open it: {exc}") from exc
        raise
    return conn


# Kinds of queued items. The payload is already in the shape executemany wants, so the writer
# thread does no per-row work.
_STEPS, _EPISODE, _METRICS, _EVENT, _ARTIFACT, _META, _STOP = range(7)
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

    def __init__(self, path: Path, max_pending: int = 64, max_pending_bytes: int = MAX_PENDING_BYTES) -> None:
        """Prepare a writer for ``path``; nothing is opened until :meth:`start`.

        Args:
            max_pending: how many ``put_*`` calls may wait in the queue before the next blocks.
            max_pending_bytes: how many bytes of step rows (as their callers count them) may wait
                before the next ``put_steps`` blocks; one batch alone always goes in.
        """
        if max_pending < 1:
            raise ValueError(f"max_pending must be at least 1, got {max_pending}")
        self._path = Path(path)
        self._max_pending = max_pending
        self._max_pending_bytes = max_pending_bytes
        self._pending_bytes = 0  # of step rows queued and not yet written (guarded by _cv)
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
        """Queue step rows (tuples in :data:`~gym_gui.core.records.STEP_COLUMNS` order).

        Blocks while the queue is full, or while ``size`` (the bytes the rows hold, e.g. the size of
        the message they came in) would take the bytes waiting past ``max_pending_bytes``.

        Raises:
            StorageError: when the writer has failed or is closed.
        """
        if rows:
            self._put(_STEPS, rows, size)

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
        with self._cv:
            self._raise_if_unusable()
            if size:
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
            # Counted before it is queued: flush() relies on every queued item being counted.
            self._enqueued += 1
        self._queue.put((kind, payload, size))
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
        dropped = 0
        while True:
            try:
                kind, _, _ = self._queue.get_nowait()
            except queue.Empty:
                return dropped
            if kind != _STOP:
                dropped += 1

    def _fail(self, error: StorageError) -> None:
        logger.error("%s", error)
        with self._cv:
            if self._error is None:
                self._error = error

    def _run(self) -> None:
        conn: sqlite3.Connection | None = None
        try:
            conn = open_telemetry_db(self._path)
        except StorageError as exc:
            self._fail(exc)
        except Exception as exc:
            self._fail(StorageError(f"{_WHAT} {self._path}: cannot open it: {exc}"))
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
            # After a failure items are discarded but still counted, so no put or flush waits forever.
            with self._cv:
                self._done += count
                self._pending_bytes -= sum(size for _, _, size in items)
                self._cv.notify_all()
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
                            f"{_WHAT} {self._path}: a queued item was rejected: {exc}{hint}; everything "
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
        episodes: list[tuple[Any, ...]] = []
        metrics: list[list[tuple[Any, ...]]] = []
        events: list[tuple[Any, ...]] = []
        artifacts: list[tuple[Any, ...]] = []
        meta: list[tuple[str, str]] = []
        for kind, payload, _ in items:
            if kind == _STEPS:
                steps.append(payload)
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
                insert_rows(conn, _STEP_TABLE, list(chain.from_iterable(steps)))
            if episodes:
                insert_rows(conn, _EPISODE_TABLE, episodes)
            if metrics:
                insert_rows(conn, _METRIC_TABLE, list(chain.from_iterable(metrics)))
            if events:
                insert_rows(conn, _EVENT_TABLE, events)
            if artifacts:
                insert_rows(conn, _ARTIFACT_TABLE, artifacts)
            if meta:
                conn.executemany(_UPSERT_META, meta)
            conn.execute("COMMIT")
        except BaseException:
            rollback(conn)
            raise
        return sum(map(len, steps)), len(episodes), sum(map(len, metrics))


@functools.cache
def insert_sql(table: str, columns: tuple[str, ...], rows: int) -> str:
    """``INSERT INTO table (columns) VALUES (?, …), …`` with ``rows`` rows of placeholders."""
    row = f"({', '.join('?' * len(columns))})"
    return f"INSERT INTO {table} ({', '.join(columns)}) VALUES {', '.join([row] * rows)}"


def insert_rows(
    conn: sqlite3.Connection, table: tuple[str, tuple[str, ...]], rows: Sequence[Sequence[Any]]
) -> None:
    """Insert ``rows`` (each a value per column, in ``table``'s column order) into ``table``, given as
    ``(name, columns)``, :data:`ROWS_PER_STATEMENT` rows a statement. Every row is stored as it is:
    this is ``executemany`` with fewer statement steps, not a merge of rows.

    Raises:
        sqlite3.ProgrammingError: a row does not have one value per column (checked before anything
            is inserted, since the rows' values are bound one after the other).
    """
    name, columns = table
    width = len(columns)
    lengths = set(map(len, rows))
    if lengths - {width}:
        raise sqlite3.ProgrammingError(
            f"rows for {name} must have {width} values ({', '.join(columns)}); got rows of "
            f"{', '.join(map(str, sorted(lengths - {width})))}"
        )
    values = list(chain.from_iterable(rows))
    per = ROWS_PER_STATEMENT * width
    whole = len(values) - len(values) % per
    if whole:
        conn.executemany(
            insert_sql(name, columns, ROWS_PER_STATEMENT),
            [values[start : start + per] for start in range(0, whole, per)],
        )
    if whole < len(values):
        conn.execute(insert_sql(name, columns, (len(values) - whole) // width), values[whole:])


def _again(error: StorageError) -> StorageError:
    """A fresh exception of the same kind as the writer's failure (DiskFull stays DiskFull), chained to it."""
    again = DiskFull(str(error)) if isinstance(error, DiskFull) else StorageError(str(error))
    again.__cause__ = error
    return again


class TelemetryReader:
    """Read-only access to one run's telemetry, safe to use while the writer writes (WAL).

    Each thread gets its own read-only connection. Every query sees what was committed
    when it started.
    """

    def __init__(self, path: Path) -> None:
        """Open ``path`` read-only for the calling thread.

        Raises:
            StorageError: when the file is missing, not initialised, or of a newer schema.
        """
        self._path = Path(path)
        self._local = threading.local()
        self._conn()

    @property
    def path(self) -> Path:
        return self._path

    def _conn(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = open_telemetry_db(self._path, readonly=True)
            self._local.conn = conn
        return conn

    def _rows(self, sql: str, params: Sequence[object] = ()) -> list[tuple[Any, ...]]:
        try:
            return self._conn().execute(sql, params).fetchall()
        except sqlite3.Error as exc:
            raise StorageError(f"{_WHAT} {self._path}: read failed: {exc}") from exc

    def _scalar(self, sql: str, params: Sequence[object] = ()) -> Any:
        return self._rows(sql, params)[0][0]

    @staticmethod
    def _episode(row: tuple[Any, ...]) -> EpisodeRecord:
        episode, seed, steps, total_reward, terminated, truncated, started_at, ended_at, info = row
        return EpisodeRecord(
            episode=episode,
            seed=seed,
            steps=steps,
            total_reward=total_reward,
            terminated=bool(terminated),
            truncated=bool(truncated),
            started_at=started_at,
            ended_at=ended_at,
            info=info,
        )

    @staticmethod
    def _step(row: tuple[Any, ...]) -> StepRecord:
        episode, step, reward, terminated, truncated, action, observation, info, render, wall_time = row
        return StepRecord(
            episode,
            step,
            reward,
            bool(terminated),
            bool(truncated),
            action,
            observation,
            info,
            render,
            wall_time,
        )

    def episodes(self, offset: int = 0, limit: int | None = None) -> list[EpisodeRecord]:
        """Episode summaries in episode order, skipping ``offset`` and returning at most ``limit``."""
        rows = self._rows(
            f"{_EPISODE_SELECT} ORDER BY episode LIMIT ? OFFSET ?", (-1 if limit is None else limit, offset)
        )
        return [self._episode(row) for row in rows]

    def episode(self, n: int) -> EpisodeRecord:
        """The summary of episode ``n``.

        Raises:
            StorageError: naming the episode when it is not stored (yet).
        """
        rows = self._rows(f"{_EPISODE_SELECT} WHERE episode = ?", (n,))
        if not rows:
            raise StorageError(
                f"{_WHAT} {self._path}: episode {n} is not stored (it may not have ended yet); "
                f"{self.episode_count()} episodes are"
            )
        return self._episode(rows[0])

    def episode_count(self) -> int:
        """Number of stored episode summaries."""
        return int(self._scalar("SELECT COUNT(*) FROM episodes"))

    def episodic_returns(self, last: int | None = None) -> list[float]:
        """Every finished episode's return, in order (with ``last``, only the last ``last``): the stored
        episodes' (a telemetry-lane run), else the points of :data:`EPISODIC_RETURN` (a CleanRL run
        stores no episodes), in step order and, within a step, in the order they were stored (the
        order the script printed them)."""
        limit = -1 if last is None else last
        rows = self._rows("SELECT total_reward FROM episodes ORDER BY episode DESC LIMIT ?", (limit,))
        if not rows:
            rows = self._rows(
                "SELECT value FROM metrics WHERE tag = ? ORDER BY step DESC, rowid DESC LIMIT ?",
                (EPISODIC_RETURN, limit),
            )
        return [float(value) for (value,) in reversed(rows)]

    def steps(self, episode: int, start: int = 0, stop: int | None = None) -> list[StepRecord]:
        """Steps ``start <= step < stop`` of ``episode`` in step order (a primary-key range: immediate)."""
        if stop is None:
            rows = self._rows(
                f"{_STEP_SELECT} WHERE episode = ? AND step >= ? ORDER BY step", (episode, start)
            )
        else:
            rows = self._rows(
                f"{_STEP_SELECT} WHERE episode = ? AND step >= ? AND step < ? ORDER BY step",
                (episode, start, stop),
            )
        return [self._step(row) for row in rows]

    def step(self, episode: int, step: int) -> StepRecord:
        """One step.

        Raises:
            StorageError: naming the episode and step when it is not stored.
        """
        rows = self._rows(f"{_STEP_SELECT} WHERE episode = ? AND step = ?", (episode, step))
        if not rows:
            raise StorageError(f"{_WHAT} {self._path}: step {step} of episode {episode} is not stored")
        return self._step(rows[0])

    def step_infos(self, after: tuple[int, int] | None = None, limit: int = -1) -> list[tuple[int, int, str]]:
        """``(episode, step, info)`` of the steps after the key ``after`` (all when None), in key order.

        At most ``limit`` rows (-1: no limit). A range of the primary key: a view that follows a
        run reads only what is new since its last read, however long the run.
        """
        if after is None:
            rows = self._rows(
                "SELECT episode, step, info FROM steps ORDER BY episode, step LIMIT ?", (limit,)
            )
        else:
            rows = self._rows(
                "SELECT episode, step, info FROM steps WHERE (episode, step) > (?, ?) "
                "ORDER BY episode, step LIMIT ?",
                (after[0], after[1], limit),
            )
        return [(episode, step, info) for episode, step, info in rows]

    def step_count(self, episode: int | None = None) -> int:
        """Number of stored steps, of one episode or of the whole run."""
        if episode is None:
            return int(self._scalar("SELECT COUNT(*) FROM steps"))
        return int(self._scalar("SELECT COUNT(*) FROM steps WHERE episode = ?", (episode,)))

    def steps_per_episode(self) -> dict[int, int]:
        """Stored steps of each episode that has any, by episode number."""
        return dict(self._rows("SELECT episode, COUNT(*) FROM steps GROUP BY episode ORDER BY episode"))

    def last_step_key(self) -> tuple[int, int] | None:
        """The largest stored ``(episode, step)``, or None when no step is stored."""
        rows = self._rows("SELECT episode, step FROM steps ORDER BY episode DESC, step DESC LIMIT 1")
        return (rows[0][0], rows[0][1]) if rows else None

    def last_step_of(self, episode: int) -> int | None:
        """The largest stored step of ``episode``, or None when it has none.

        MAX over the ``(episode, step)`` primary key: one index descent, whatever the episode's length.
        """
        value = self._scalar("SELECT MAX(step) FROM steps WHERE episode = ?", (episode,))
        return None if value is None else int(value)

    def latest_render(self, episode: int, step: int) -> tuple[int, bytes] | None:
        """The newest render payload stored at or before ``step`` of ``episode``, with its step; None when none is.

        Pixel runs store frames only at their render rate: this is the frame to show for a step
        without one. One backwards walk of the primary key from ``step``.
        """
        rows = self._rows(
            "SELECT step, render FROM steps WHERE episode = ? AND step <= ? AND render IS NOT NULL "
            "ORDER BY step DESC LIMIT 1",
            (episode, step),
        )
        if not rows or not isinstance(rows[0][1], bytes):
            return None
        return int(rows[0][0]), rows[0][1]

    def last_episode(self) -> int | None:
        """The largest stored episode number, or None when no episode is stored."""
        rows = self._rows("SELECT MAX(episode) FROM episodes")
        return rows[0][0] if rows else None

    def has_episode(self, episode: int) -> bool:
        """Whether the summary of ``episode`` is stored."""
        return bool(self._rows("SELECT 1 FROM episodes WHERE episode = ?", (episode,)))

    def has_metric(self, tag: str, step: int, value: float) -> bool:
        """Whether a point of ``tag`` at ``step`` with ``value`` is stored (the (tag, step) index)."""
        return bool(
            self._rows("SELECT 1 FROM metrics WHERE tag = ? AND step = ? AND value = ?", (tag, step, value))
        )

    def metric_high_water(self) -> dict[str, int]:
        """The largest stored step of each metric tag."""
        return dict(self._rows("SELECT tag, MAX(step) FROM metrics GROUP BY tag"))

    def metric_tags(self) -> list[str]:
        """The distinct metric tags, sorted."""
        return [tag for (tag,) in self._rows("SELECT DISTINCT tag FROM metrics ORDER BY tag")]

    def metrics(self, tag: str, since_step: int | None = None, limit: int | None = None) -> list[MetricPoint]:
        """The series of ``tag`` in step order; with ``since_step``, only points at steps after it."""
        lower = "" if since_step is None else "AND step > ?"
        params: list[object] = [tag] if since_step is None else [tag, since_step]
        params.append(-1 if limit is None else limit)
        rows = self._rows(
            f"SELECT tag, step, wall_time, value FROM metrics WHERE tag = ? {lower} ORDER BY step, rowid LIMIT ?",
            params,
        )
        return [MetricPoint(tag, step, wall_time, value) for tag, step, wall_time, value in rows]

    def final_return(self, last: int = FINAL_RETURN_EPISODES) -> tuple[float, int] | None:
        """The mean of the run's last ``last`` episodic returns (:meth:`episodic_returns`) and how many
        there were; None with none."""
        returns = self.episodic_returns(last)
        return (sum(returns) / len(returns), len(returns)) if returns else None

    def metric_count(self, tag: str | None = None) -> int:
        """Number of stored metric points, of one tag or of all."""
        if tag is None:
            return int(self._scalar("SELECT COUNT(*) FROM metrics"))
        return int(self._scalar("SELECT COUNT(*) FROM metrics WHERE tag = ?", (tag,)))

    def events(self, since_id: int = 0) -> list[EventRecord]:
        """Events with id greater than ``since_id``, oldest first.

        Event ids are 1, 2, 3, … with no gaps (events are never deleted and a rolled-back
        batch gives its ids back), so ``since_id`` is the number of events already seen.
        """
        rows = self._rows(
            "SELECT time, kind, level, message, data FROM events WHERE id > ? ORDER BY id", (since_id,)
        )
        return [EventRecord(*row) for row in rows]

    def artifacts(self) -> list[ArtifactRecord]:
        """Registered artifacts in the order they were registered."""
        rows = self._rows("SELECT kind, path, step, meta FROM artifacts ORDER BY id")
        return [ArtifactRecord(*row) for row in rows]

    def meta(self, key: str) -> str | None:
        """The value stored under ``key`` (e.g. ``render_kind``), or ``None``."""
        rows = self._rows("SELECT value FROM meta WHERE key = ?", (key,))
        return None if not rows else str(rows[0][0])

    def close(self) -> None:
        """Close the calling thread's connection (another call reopens one)."""
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is not None:
            self._local.conn = None
            conn.close()
