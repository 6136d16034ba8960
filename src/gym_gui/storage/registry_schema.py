"""The run registry's tables (registry.sqlite): their migrations, and how a row becomes a record."""

from __future__ import annotations

from typing import Any

from gym_gui.core.records import RunRecord, SweepRecord
from gym_gui.core.states import RunState, SweepState
from gym_gui.storage.database import Migration, sql_migration

MIGRATIONS: list[Migration] = [
    sql_migration(
        """
        CREATE TABLE runs (
            run_id      TEXT PRIMARY KEY NOT NULL,
            worker      TEXT NOT NULL,
            env_id      TEXT NOT NULL,
            lane        TEXT NOT NULL,
            state       TEXT NOT NULL,
            created_at  REAL NOT NULL,
            started_at  REAL,
            ended_at    REAL,
            exit_code   INTEGER,
            reason      TEXT NOT NULL DEFAULT '',
            archived    INTEGER NOT NULL DEFAULT 0,
            pid         INTEGER,
            token_hash  TEXT
        )
        """,
        """
        CREATE TABLE state_history (
            id          INTEGER PRIMARY KEY AUTOINCREMENT,
            run_id      TEXT NOT NULL,
            from_state  TEXT,
            to_state    TEXT NOT NULL,
            time        REAL NOT NULL,
            reason      TEXT NOT NULL DEFAULT ''
        )
        """,
        "CREATE INDEX state_history_run_id ON state_history (run_id, id)",
        "CREATE INDEX runs_state ON runs (state)",
    ),
    sql_migration(
        """
        CREATE TABLE sweeps (
            sweep_id    TEXT PRIMARY KEY NOT NULL,
            name        TEXT NOT NULL,
            state       TEXT NOT NULL,
            directory   TEXT NOT NULL,
            storage     TEXT NOT NULL,
            study       TEXT NOT NULL,
            spec        TEXT NOT NULL,
            created_at  REAL NOT NULL,
            ended_at    REAL,
            reason      TEXT NOT NULL DEFAULT ''
        )
        """,
        "ALTER TABLE runs ADD COLUMN sweep_id TEXT NOT NULL DEFAULT ''",
        "ALTER TABLE runs ADD COLUMN trial INTEGER",
        "CREATE INDEX runs_sweep ON runs (sweep_id, trial)",
    ),
    # A page of a listing reads only its own rows: newest or oldest first, with or without the
    # archived runs (RunRegistry.page).
    sql_migration(
        "CREATE INDEX runs_created ON runs (created_at, run_id)",
        "CREATE INDEX runs_listing ON runs (archived, created_at, run_id)",
    ),
]
SCHEMA_VERSION = len(MIGRATIONS)

# The columns a run and a sweep are read and written with, in their records' order.
RUN_COLUMNS = (
    "run_id, worker, env_id, lane, state, created_at, started_at, ended_at, exit_code, reason, archived, pid, "
    "sweep_id, trial"
)
SWEEP_COLUMNS = "sweep_id, name, state, directory, storage, study, spec, created_at, ended_at, reason"


def run_record(row: tuple[Any, ...]) -> RunRecord:
    """The run of a row of :data:`RUN_COLUMNS`."""
    (
        run_id,
        worker,
        env_id,
        lane,
        state,
        created_at,
        started_at,
        ended_at,
        exit_code,
        reason,
        archived,
        pid,
        sweep_id,
        trial,
    ) = row
    return RunRecord(
        run_id=run_id,
        worker=worker,
        env_id=env_id,
        lane=lane,
        state=RunState(state),
        created_at=created_at,
        started_at=started_at,
        ended_at=ended_at,
        exit_code=exit_code,
        reason=reason,
        archived=bool(archived),
        pid=pid,
        sweep_id=sweep_id,
        trial=trial,
    )


def sweep_record(row: tuple[Any, ...]) -> SweepRecord:
    """The sweep of a row of :data:`SWEEP_COLUMNS`."""
    sweep_id, name, state, directory, storage, study, spec, created_at, ended_at, reason = row
    return SweepRecord(
        sweep_id=sweep_id,
        name=name,
        state=SweepState(state),
        directory=directory,
        storage=storage,
        study=study,
        spec=spec,
        created_at=created_at,
        ended_at=ended_at,
        reason=reason,
    )
