"""gym_gui's SQLite files: connection settings, WAL, and schema versions with their migrations.

The run registry and each run's telemetry database open theirs with these.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path

from gym_gui.core.errors import StorageError

logger = logging.getLogger(__name__)

BUSY_TIMEOUT_MS = 10_000

# A migration moves a database from version i to i + 1 (its index in the list). It runs inside
# the caller's transaction, so it must not commit (no executescript, which commits first).
Migration = Callable[[sqlite3.Connection], None]


def sql_migration(*statements: str) -> Migration:
    """A migration that runs ``statements`` in order."""

    def run(conn: sqlite3.Connection) -> None:
        for statement in statements:
            conn.execute(statement)

    return run


def schema_version(conn: sqlite3.Connection) -> int:
    """The ``PRAGMA user_version`` of the database behind ``conn``."""
    return int(conn.execute("PRAGMA user_version").fetchone()[0])


def refuse_newer(conn: sqlite3.Connection, path: Path, known: int, what: str) -> int:
    """Return the file's schema version; raise if this code is too old to understand it.

    Call this before anything that could write (even ``journal_mode=WAL`` changes the file).

    Raises:
        StorageError: naming the file, its version and the newest version this code knows.
    """
    found = schema_version(conn)
    if found > known:
        raise StorageError(
            f"{what} {path} has schema version {found}, but this gym_gui knows versions up to {known}; "
            "upgrade gym_gui to open it (the file was not changed)"
        )
    return found


def apply_migrations(
    conn: sqlite3.Connection, migrations: Sequence[Migration], path: Path, what: str
) -> None:
    """Bring the database behind ``conn`` up to ``len(migrations)``, all in one transaction.

    ``conn`` must be in autocommit mode (``isolation_level=None``). Another process migrating
    the same file at the same moment is harmless: the version is read again under the write lock.

    Raises:
        StorageError: when the file is newer than ``migrations``, or a migration fails
            (then nothing was changed).
    """
    target = len(migrations)
    if refuse_newer(conn, path, target, what) == target:
        return
    try:
        conn.execute("BEGIN IMMEDIATE")
    except sqlite3.Error as exc:
        raise StorageError(f"{what} {path}: could not lock it to upgrade its schema: {exc}") from exc
    try:
        current = refuse_newer(conn, path, target, what)
        for version in range(current, target):
            migrations[version](conn)
            logger.info("%s %s: migrated schema %d -> %d", what, path, version, version + 1)
        # PRAGMA does not take parameters; target is an int we computed.
        conn.execute(f"PRAGMA user_version = {int(target)}")
        conn.execute("COMMIT")
    except BaseException as exc:
        rollback(conn)
        if isinstance(exc, StorageError | KeyboardInterrupt | SystemExit):
            raise
        raise StorageError(f"{what} {path}: schema migration failed, nothing was changed: {exc}") from exc


def rollback(conn: sqlite3.Connection) -> None:
    """Roll back the open transaction, if SQLite has not already (it does on some errors, e.g. a full disk).

    Never raises: the error that made the caller roll back is the one to report.
    """
    if conn.in_transaction:
        try:
            conn.execute("ROLLBACK")
        except sqlite3.Error as exc:
            logger.warning("rollback failed: %s", exc)


def configure(conn: sqlite3.Connection) -> None:
    """Per-connection settings every gym_gui database connection uses."""
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    # With WAL, NORMAL is crash-safe for the database (a power cut may lose the last commits,
    # never corrupt); FULL would fsync on every commit.
    conn.execute("PRAGMA synchronous = NORMAL")


def enable_wal(conn: sqlite3.Connection, path: Path, what: str) -> None:
    mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
    if str(mode).lower() != "wal":
        raise StorageError(
            f"{what} {path}: could not switch to WAL journaling (got {mode!r}); "
            "put GYM_GUI_HOME on a local filesystem"
        )
