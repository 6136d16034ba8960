"""A run's telemetry database (a file of its run directory): its schema and migrations, opening it, inserting rows."""

from __future__ import annotations

import functools
import sqlite3
from collections.abc import Sequence
from itertools import chain
from pathlib import Path
from typing import Any

from gym_gui.core.errors import StorageError
from gym_gui.core.records import ACTOR_COLUMNS, AGENT_COLUMNS, STEP_COLUMNS
from gym_gui.storage.database import (
    BUSY_TIMEOUT_MS,
    Migration,
    apply_migrations,
    configure,
    enable_wal,
    refuse_newer,
    sql_migration,
)
from gym_gui.storage.space import disk_full, is_disk_full

# What error messages call the file.
TELEMETRY_DATABASE = "telemetry database"

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
    sql_migration(
        # Who acted at each step (ACTOR_COLUMNS). Adding a column with a default rewrites no row: a
        # step stored before reads "" for both, as does one of the runs whose steps do not say.
        "ALTER TABLE steps ADD COLUMN actor TEXT NOT NULL DEFAULT ''",
        "ALTER TABLE steps ADD COLUMN proposed_action TEXT NOT NULL DEFAULT ''",
        # Only the steps that say who acted: empty for most runs (an insert of theirs adds nothing to
        # it), and what the intervention counts read instead of every step's row.
        "CREATE INDEX steps_actor ON steps (episode, step, actor) WHERE actor != ''",
    ),
    sql_migration(
        # The agent of each step in a multi-agent env (AGENT_COLUMNS), and each agent's return of an
        # episode as a JSON list of [agent, return] in the env's agent order (decision 0049). As
        # above, no row is rewritten: what was stored reads "" and [] (one implicit agent).
        "ALTER TABLE steps ADD COLUMN agent TEXT NOT NULL DEFAULT ''",
        "ALTER TABLE episodes ADD COLUMN agent_returns TEXT NOT NULL DEFAULT '[]'",
    ),
]
SCHEMA_VERSION = len(MIGRATIONS)
# The version from which the steps table has ACTOR_COLUMNS (a reader reads "" for them before it).
ACTORS_SINCE = 2
# The version from which steps have AGENT_COLUMNS and episodes agent_returns ("" and [] before it).
AGENTS_SINCE = 3

# The tables the writer appends to, with the columns it fills (its rows' tuples follow this order).
STEP_TABLE = ("steps", STEP_COLUMNS)
ACTOR_STEP_TABLE = ("steps", STEP_COLUMNS + ACTOR_COLUMNS)  # the rows of steps that say who acted
AGENT_STEP_TABLE = ("steps", STEP_COLUMNS + ACTOR_COLUMNS + AGENT_COLUMNS)  # ... that name their agent
EPISODE_TABLE = (
    "episodes",
    (
        "episode",
        "seed",
        "steps",
        "total_reward",
        "terminated",
        "truncated",
        "started_at",
        "ended_at",
        "info",
        "agent_returns",
    ),
)
METRIC_TABLE = ("metrics", ("tag", "step", "wall_time", "value"))
EVENT_TABLE = ("events", ("time", "kind", "level", "message", "data"))
ARTIFACT_TABLE = ("artifacts", ("kind", "path", "step", "meta"))
# Rows one INSERT statement carries. Python's sqlite3 lets go of the GIL around every statement
# step and must take it back after, waiting for whichever thread holds it: with a statement a row,
# four runs' writer threads in one daemon spent their time handing the GIL over, row by row (four
# threads inserting 200k rows each: 40k rows/s together, against 119k for one thread alone; with
# 64 rows a statement 180k). 64 measured best of 16 to 256 (a longer statement costs more to bind).
ROWS_PER_STATEMENT = 64
UPSERT_META = (
    "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value"
)


def open_telemetry_db(path: Path, *, readonly: bool = False) -> sqlite3.Connection:
    """Open a run's telemetry database in autocommit mode (``isolation_level=None``).

    Read-write: creates the file if missing, switches it to WAL and runs any pending
    migrations. Read-only (``mode=ro``): never creates or migrates anything; a file of an older
    version opens as it is (a run stored before an upgrade), its reader reading what that version
    holds (see :data:`ACTORS_SINCE`).

    Raises:
        StorageError: the file has a newer schema than this code (it is not changed); or,
            read-only, the file is missing or not initialised (version 0).
    """
    path = Path(path)
    target = len(MIGRATIONS)
    try:
        if readonly:
            if not path.is_file():
                raise StorageError(
                    f"{TELEMETRY_DATABASE} {path} does not exist: the run has stored no telemetry yet"
                )
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
            raise disk_full(path, f"the {TELEMETRY_DATABASE} cannot be created") from exc
        if isinstance(exc, OSError):
            raise
        raise StorageError(f"{TELEMETRY_DATABASE} {path}: cannot open it: {exc}") from exc
    try:
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        found = refuse_newer(conn, path, target, TELEMETRY_DATABASE)
        if readonly:
            if found == 0:
                raise StorageError(
                    f"{TELEMETRY_DATABASE} {path} has schema version 0, older than {target}: it is not "
                    "initialised yet (its writer, the daemon's, creates the tables when the run starts)"
                )
        else:
            enable_wal(conn, path, TELEMETRY_DATABASE)
            configure(conn)
            apply_migrations(conn, MIGRATIONS, path, TELEMETRY_DATABASE)
    except BaseException as exc:
        conn.close()
        if is_disk_full(exc):
            raise disk_full(path, f"the {TELEMETRY_DATABASE} cannot be set up") from exc
        if isinstance(exc, sqlite3.Error):
            raise StorageError(f"{TELEMETRY_DATABASE} {path}: cannot open it: {exc}") from exc
        raise
    return conn


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
