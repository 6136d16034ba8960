"""The run registry (registry.sqlite): one row per run and its state history, and the sweeps."""

from __future__ import annotations

import builtins
import json
import logging
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from gym_gui.core.errors import ConfigError, DiskFull, RunNotFound, StorageError, SweepNotFound
from gym_gui.core.ids import validate_run_id
from gym_gui.core.records import RunRecord, StateTransition, SweepRecord
from gym_gui.core.run_query import RunPage, RunQuery
from gym_gui.core.states import RunState, SweepState, check_transition
from gym_gui.storage.database import (
    BUSY_TIMEOUT_MS,
    apply_migrations,
    configure,
    enable_wal,
    refuse_newer,
    rollback,
)
from gym_gui.storage.registry_schema import MIGRATIONS, RUN_COLUMNS, SWEEP_COLUMNS, run_record, sweep_record
from gym_gui.storage.space import SpaceReserve, disk_full, is_disk_full

logger = logging.getLogger(__name__)

T = TypeVar("T")


class RunRegistry:
    """The registry of runs in ``registry.sqlite``: their current row and every state change.

    Safe to share between threads: each thread gets its own SQLite connection (a connection
    is never used from two threads), and every read-modify-write runs under ``BEGIN
    IMMEDIATE`` so concurrent transitions of one run serialize instead of overwriting each
    other. Several processes may open the same file (WAL mode, busy timeout).
    """

    def __init__(self, path: Path, reserve: SpaceReserve | None = None) -> None:
        """Open (creating and migrating if needed) the registry at ``path``.

        Args:
            reserve: space on the registry's filesystem to give back when a write finds the disk
                full (the daemon's); without one, such a write raises ``DiskFull``.

        Raises:
            StorageError: when the file cannot be opened or has a newer schema than this code.
        """
        self._path = Path(path)
        self._reserve = reserve
        self._local = threading.local()
        self._path.parent.mkdir(parents=True, exist_ok=True)
        conn = self._open(migrate=True)
        self._local.conn = conn

    @property
    def path(self) -> Path:
        return self._path

    @property
    def reserve(self) -> SpaceReserve | None:
        """The space this registry gives back to record a write on a full disk, if it was given one."""
        return self._reserve

    def _open(self, *, migrate: bool) -> sqlite3.Connection:
        try:
            conn = sqlite3.connect(self._path, isolation_level=None, timeout=BUSY_TIMEOUT_MS / 1000)
        except sqlite3.Error as exc:
            raise StorageError(f"run registry {self._path}: cannot open it: {exc}") from exc
        try:
            conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            if migrate:
                refuse_newer(conn, self._path, len(MIGRATIONS), "run registry")
                enable_wal(conn, self._path, "run registry")
            configure(conn)
            if migrate:
                apply_migrations(conn, MIGRATIONS, self._path, "run registry")
        except BaseException as exc:
            conn.close()
            if isinstance(exc, sqlite3.Error):
                raise StorageError(f"run registry {self._path}: cannot open it: {exc}") from exc
            raise
        return conn

    def _conn(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._open(migrate=False)
            self._local.conn = conn
        return conn

    def _write(self, body: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``body`` in one write transaction that holds the write lock from its first statement.

        When the disk is full and the registry has a space reserve, the reserve is released and
        the transaction tried once more: the registry records a run's end even on a full disk.

        Raises:
            DiskFull: the disk is full (and no reserve was left to release); nothing was written.
        """
        try:
            return self._transaction(body)
        except DiskFull:
            if self._reserve is None or not self._reserve.release():
                raise
        return self._transaction(body)

    def _transaction(self, body: Callable[[sqlite3.Connection], T]) -> T:
        conn = self._conn()
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            if is_disk_full(exc):
                raise self._full() from exc
            raise StorageError(f"run registry {self._path}: could not lock it for writing: {exc}") from exc
        try:
            result = body(conn)
            conn.execute("COMMIT")
        except BaseException as exc:
            rollback(conn)
            if is_disk_full(exc):
                raise self._full() from exc
            if isinstance(exc, sqlite3.Error) and not isinstance(exc, sqlite3.IntegrityError):
                raise StorageError(f"run registry {self._path}: could not write: {exc}") from exc
            raise
        return result

    def _full(self) -> DiskFull:
        return disk_full(self._path, "the run registry is as it was")

    def _read(self, sql: str, params: Sequence[object] = ()) -> builtins.list[tuple[Any, ...]]:
        try:
            return self._conn().execute(sql, params).fetchall()
        except sqlite3.Error as exc:
            raise StorageError(f"run registry {self._path}: read failed: {exc}") from exc

    @staticmethod
    def _not_found(run_id: str) -> RunNotFound:
        return RunNotFound(f"no run with id {run_id!r}; `gym-gui runs --all` lists the known runs")

    def create(self, record: RunRecord, reason: str = "submitted") -> None:
        """Insert a new run and its first history entry (no previous state → ``record.state``).

        Raises:
            InvalidRunId: when ``record.run_id`` is not a safe run id.
            StorageError: when a run with that id already exists (nothing is changed).
        """
        validate_run_id(record.run_id)
        state = RunState(record.state)

        def insert(conn: sqlite3.Connection) -> None:
            try:
                conn.execute(
                    f"INSERT INTO runs ({RUN_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        record.run_id,
                        record.worker,
                        record.env_id,
                        record.lane,
                        state.value,
                        record.created_at,
                        record.started_at,
                        record.ended_at,
                        record.exit_code,
                        record.reason or reason,
                        int(record.archived),
                        record.pid,
                        record.sweep_id,
                        record.trial,
                    ),
                )
            except sqlite3.IntegrityError as exc:
                raise StorageError(
                    f"run registry {self._path}: a run with id {record.run_id!r} already exists"
                ) from exc
            conn.execute(
                "INSERT INTO state_history (run_id, from_state, to_state, time, reason) VALUES (?, NULL, ?, ?, ?)",
                (record.run_id, state.value, record.created_at, reason),
            )

        self._write(insert)

    def get(self, run_id: str) -> RunRecord:
        """The current row of ``run_id``.

        Raises:
            RunNotFound: naming the id.
        """
        rows = self._read(f"SELECT {RUN_COLUMNS} FROM runs WHERE run_id = ?", (run_id,))
        if not rows:
            raise self._not_found(run_id)
        return run_record(rows[0])

    def exists(self, run_id: str) -> bool:
        """Whether a run with this id is registered (archived runs included)."""
        return bool(self._read("SELECT 1 FROM runs WHERE run_id = ?", (run_id,)))

    def list(self, include_archived: bool = False) -> builtins.list[RunRecord]:
        """All runs, oldest first (by ``created_at``, then ``run_id``); archived ones only if asked."""
        where = "" if include_archived else "WHERE archived = 0"
        rows = self._read(f"SELECT {RUN_COLUMNS} FROM runs {where} ORDER BY created_at, run_id")
        return [run_record(row) for row in rows]

    def page(self, query: RunQuery) -> RunPage:
        """The runs ``query`` asks for, one page, and how many match it on every page.

        The filters, the order and the page are SQLite's (indexed on the creation order): a page
        reads its own rows, however many runs the registry holds.

        Raises:
            ConfigError: ``query.after`` is not a cursor a page gave.
        """
        where, params = _filters(query)
        total = self._read(f"SELECT COUNT(*) FROM runs {_where(where)}", params)[0][0]
        column = _SORT_COLUMNS[query.sort]
        order = "DESC" if query.descending else "ASC"
        if query.after:
            where = [*where, f"({column}, run_id) {'<' if query.descending else '>'} (?, ?)"]
            params = [*params, *_cursor(query.after)]
        sql = f"SELECT {RUN_COLUMNS} FROM runs {_where(where)} ORDER BY {column} {order}, run_id {order}"
        if query.limit:
            # One row past the page says whether another page follows.
            sql += f" LIMIT {query.limit + 1}"
        records = [run_record(row) for row in self._read(sql, params)]
        if not query.limit or len(records) <= query.limit:
            return RunPage(records, total)
        records = records[: query.limit]
        last = records[-1]
        return RunPage(records, total, json.dumps([_SORT_KEYS[query.sort](last), last.run_id]))

    def transition(
        self,
        run_id: str,
        to_state: RunState,
        reason: str = "",
        *,
        exit_code: int | None = None,
        at: float | None = None,
    ) -> StateTransition:
        """Move ``run_id`` to ``to_state`` atomically and record the change in its history.

        The current state is read and checked against the run model under the write lock,
        so two threads racing to end the same run cannot both succeed. ``reason`` replaces
        the run's reason; ``exit_code``, when given, is stored (an earlier one is kept
        otherwise). ``started_at`` is set the first time the run enters RUNNING; entering a
        terminal state sets ``ended_at`` and clears ``pid``.

        Args:
            at: the time of the change (default: now), e.g. when reconciling after the fact.

        Raises:
            RunNotFound: naming the id.
            IllegalTransition: when the run model does not allow the change (nothing is written).
            DiskFull: the disk is full and no space reserve was left to release (nothing is written).
        """
        target = RunState(to_state)
        now = time.time() if at is None else at

        def change(conn: sqlite3.Connection) -> RunState:
            row = conn.execute("SELECT state FROM runs WHERE run_id = ?", (run_id,)).fetchone()
            if row is None:
                raise self._not_found(run_id)
            current = RunState(row[0])
            check_transition(current, target)
            conn.execute(
                """
                UPDATE runs SET
                    state = ?,
                    reason = ?,
                    exit_code = COALESCE(?, exit_code),
                    started_at = CASE WHEN ? AND started_at IS NULL THEN ? ELSE started_at END,
                    ended_at = CASE WHEN ? THEN ? ELSE ended_at END,
                    pid = CASE WHEN ? THEN NULL ELSE pid END
                WHERE run_id = ?
                """,
                (
                    target.value,
                    reason,
                    exit_code,
                    target is RunState.RUNNING,
                    now,
                    target.terminal,
                    now,
                    target.terminal,
                    run_id,
                ),
            )
            conn.execute(
                "INSERT INTO state_history (run_id, from_state, to_state, time, reason) VALUES (?, ?, ?, ?, ?)",
                (run_id, current.value, target.value, now, reason),
            )
            return current

        current = self._write(change)
        logger.debug("run %s: %s -> %s (%s)", run_id, current.value, target.value, reason)
        return StateTransition(run_id=run_id, from_state=current, to_state=target, time=now, reason=reason)

    def history(self, run_id: str) -> builtins.list[StateTransition]:
        """Every state change of ``run_id``, first (its creation) to last.

        Raises:
            RunNotFound: naming the id.
        """
        rows = self._read(
            "SELECT from_state, to_state, time, reason FROM state_history WHERE run_id = ? ORDER BY id",
            (run_id,),
        )
        if not rows and not self.exists(run_id):
            raise self._not_found(run_id)
        return [
            StateTransition(
                run_id=run_id,
                from_state=None if from_state is None else RunState(from_state),
                to_state=RunState(to_state),
                time=at,
                reason=reason,
            )
            for from_state, to_state, at, reason in rows
        ]

    def _update(self, run_id: str, sql: str, params: Sequence[object]) -> None:
        def update(conn: sqlite3.Connection) -> None:
            if conn.execute(sql, (*params, run_id)).rowcount == 0:
                raise self._not_found(run_id)

        self._write(update)

    def set_archived(self, run_id: str, archived: bool) -> RunRecord:
        """Set the archive flag (archived runs are left out of :meth:`list` by default).

        Returns:
            The updated row.

        Raises:
            RunNotFound: naming the id.
        """
        self._update(run_id, "UPDATE runs SET archived = ? WHERE run_id = ?", (int(archived),))
        return self.get(run_id)

    def set_process(self, run_id: str, pid: int | None) -> None:
        """Record the worker's process id (``None`` once no process exists).

        Raises:
            RunNotFound: naming the id.
        """
        self._update(run_id, "UPDATE runs SET pid = ? WHERE run_id = ?", (pid,))

    def set_token_hash(self, run_id: str, token_hash: str) -> None:
        """Store the hash of the run's worker token (the token itself is never stored).

        Raises:
            RunNotFound: naming the id.
        """
        self._update(run_id, "UPDATE runs SET token_hash = ? WHERE run_id = ?", (token_hash,))

    def token_hash(self, run_id: str) -> str | None:
        """The stored token hash of ``run_id``, or ``None`` when none was set.

        Raises:
            RunNotFound: naming the id.
        """
        rows = self._read("SELECT token_hash FROM runs WHERE run_id = ?", (run_id,))
        if not rows:
            raise self._not_found(run_id)
        value: str | None = rows[0][0]
        return value

    def delete(self, run_id: str) -> None:
        """Remove the run's row and its history. Whether the run may be deleted is the caller's call.

        Raises:
            RunNotFound: naming the id.
        """

        def remove(conn: sqlite3.Connection) -> None:
            if conn.execute("DELETE FROM runs WHERE run_id = ?", (run_id,)).rowcount == 0:
                raise self._not_found(run_id)
            conn.execute("DELETE FROM state_history WHERE run_id = ?", (run_id,))

        self._write(remove)

    def in_states(self, *states: RunState) -> builtins.list[RunRecord]:
        """Runs (archived included) whose state is one of ``states``, oldest first."""
        if not states:
            return []
        values = [RunState(state).value for state in states]
        marks = ", ".join("?" * len(values))
        rows = self._read(
            f"SELECT {RUN_COLUMNS} FROM runs WHERE state IN ({marks}) ORDER BY created_at, run_id", values
        )
        return [run_record(row) for row in rows]

    def counts_by_state(self, include_archived: bool = True) -> dict[str, int]:
        """Number of runs per state value (e.g. ``{"RUNNING": 2}``); states with no run are absent."""
        where = "" if include_archived else "WHERE archived = 0"
        rows = self._read(f"SELECT state, COUNT(*) FROM runs {where} GROUP BY state ORDER BY state")
        return {state: count for state, count in rows}

    # ------------------------------------------------------------ sweeps

    def create_sweep(self, record: SweepRecord) -> None:
        """Insert a new sweep.

        Raises:
            StorageError: a sweep with that id already exists (nothing is changed).
        """

        def insert(conn: sqlite3.Connection) -> None:
            try:
                conn.execute(
                    f"INSERT INTO sweeps ({SWEEP_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        record.sweep_id,
                        record.name,
                        record.state.value,
                        record.directory,
                        record.storage,
                        record.study,
                        record.spec,
                        record.created_at,
                        record.ended_at,
                        record.reason,
                    ),
                )
            except sqlite3.IntegrityError as exc:
                raise StorageError(
                    f"run registry {self._path}: a sweep with id {record.sweep_id!r} already exists"
                ) from exc

        self._write(insert)

    def sweep(self, sweep_id: str) -> SweepRecord:
        """The row of ``sweep_id``.

        Raises:
            SweepNotFound: naming the id.
        """
        rows = self._read(f"SELECT {SWEEP_COLUMNS} FROM sweeps WHERE sweep_id = ?", (sweep_id,))
        if not rows:
            raise SweepNotFound(f"no sweep with id {sweep_id!r}; `gym-gui sweep show` lists the sweeps")
        return sweep_record(rows[0])

    def sweeps(self, *states: str) -> builtins.list[SweepRecord]:
        """Every sweep (or those in ``states``), oldest first."""
        where = f"WHERE state IN ({', '.join('?' * len(states))})" if states else ""
        rows = self._read(f"SELECT {SWEEP_COLUMNS} FROM sweeps {where} ORDER BY created_at, sweep_id", states)
        return [sweep_record(row) for row in rows]

    def set_sweep_state(self, sweep_id: str, state: SweepState, reason: str = "") -> SweepRecord:
        """Record a sweep's state (an end stamps ``ended_at``); returns its row.

        Raises:
            SweepNotFound: naming the id.
        """
        ended = time.time() if state.ended else None

        def update(conn: sqlite3.Connection) -> None:
            changed = conn.execute(
                "UPDATE sweeps SET state = ?, reason = ?, ended_at = COALESCE(?, ended_at) WHERE sweep_id = ?",
                (state.value, reason, ended, sweep_id),
            ).rowcount
            if changed == 0:
                raise SweepNotFound(f"no sweep with id {sweep_id!r}; `gym-gui sweep show` lists the sweeps")

        self._write(update)
        return self.sweep(sweep_id)

    def sweep_runs(self, sweep_id: str) -> builtins.list[RunRecord]:
        """The runs of a sweep, by trial and then creation."""
        rows = self._read(
            f"SELECT {RUN_COLUMNS} FROM runs WHERE sweep_id = ? ORDER BY trial, created_at, run_id",
            (sweep_id,),
        )
        return [run_record(row) for row in rows]

    def sweep_taken(self, sweep_id: str) -> bool:
        return bool(self._read("SELECT 1 FROM sweeps WHERE sweep_id = ?", (sweep_id,)))

    def close(self) -> None:
        """Close the calling thread's connection (another call reopens one)."""
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is not None:
            self._local.conn = None
            conn.close()


# What each order of a listing sorts on (RUN_SORTS), as a column and as a record's value.
_SORT_COLUMNS = {
    "created": "created_at",
    "worker": "worker",
    "env": "env_id",
    "state": "state",
    "sweep": "sweep_id",
    "run": "run_id",
}
_SORT_KEYS: dict[str, Callable[[RunRecord], object]] = {
    "created": lambda run: run.created_at,
    "worker": lambda run: run.worker,
    "env": lambda run: run.env_id,
    "state": lambda run: run.state.value,
    "sweep": lambda run: run.sweep_id,
    "run": lambda run: run.run_id,
}


def _filters(query: RunQuery) -> tuple[builtins.list[str], builtins.list[object]]:
    """The conditions (joined by AND) and their parameters of ``query``'s filters."""
    where: builtins.list[str] = []
    params: builtins.list[object] = []
    if not query.include_archived:
        where.append("archived = 0")
    if query.states:
        where.append(f"state IN ({', '.join('?' * len(query.states))})")
        params.extend(state.value for state in query.states)
    for column, value in (("worker", query.worker), ("env_id", query.env_id), ("sweep_id", query.sweep_id)):
        if value:
            where.append(f"{column} = ?")
            params.append(value)
    if query.text:
        # LIKE ignores ASCII case; the text's own % and _ are matched as themselves.
        pattern = "%" + query.text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        columns = ("run_id", "worker", "env_id", "sweep_id", "reason")
        where.append("(" + " OR ".join(f"{column} LIKE ? ESCAPE '\\'" for column in columns) + ")")
        params.extend([pattern] * len(columns))
    return where, params


def _where(conditions: builtins.list[str]) -> str:
    return f"WHERE {' AND '.join(conditions)}" if conditions else ""


def _cursor(after: str) -> tuple[object, str]:
    """The sort value and run id of the last run of the page before, from its ``next``."""
    try:
        key, run_id = json.loads(after)
    except (ValueError, TypeError):
        raise ConfigError(f"after: {after!r} is not the cursor of a page (a page's `next`)") from None
    if not isinstance(key, str | int | float) or not isinstance(run_id, str):
        raise ConfigError(f"after: {after!r} is not the cursor of a page (a page's `next`)")
    return key, run_id
