"""The run registry: rows, the state machine, history, concurrency and schema versions."""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from gym_gui.core.errors import (
    ConfigError,
    IllegalTransition,
    InvalidRunId,
    RunNotFound,
    StorageError,
    SweepNotFound,
)
from gym_gui.core.records import RunRecord, SweepRecord
from gym_gui.core.run_query import RUN_SORTS, RunQuery, parse_states
from gym_gui.core.states import TRANSITIONS, RunState, SweepState
from gym_gui.storage import registry as registry_module
from gym_gui.storage.database import sql_migration
from gym_gui.storage.registry import RunRegistry
from gym_gui.storage.registry_schema import SCHEMA_VERSION
from tests.support import run_record

MakeRecord = Callable[..., RunRecord]

LEGAL = [(a, b) for a, targets in TRANSITIONS.items() for b in sorted(targets, key=lambda s: s.value)]
ILLEGAL = [(a, b) for a in RunState for b in RunState if b not in TRANSITIONS[a]]


def _raw(path: Path) -> tuple[list[tuple[object, ...]], list[tuple[object, ...]]]:
    with sqlite3.connect(path) as conn:
        runs = conn.execute("SELECT * FROM runs ORDER BY run_id").fetchall()
        history = conn.execute("SELECT * FROM state_history ORDER BY id").fetchall()
    conn.close()
    return runs, history


def test_create_and_get_round_trip(registry: RunRegistry, make_record: MakeRecord) -> None:
    record = make_record(pid=None)
    registry.create(record)
    got = registry.get(record.run_id)
    assert got == RunRecord(
        run_id=record.run_id,
        worker="random",
        env_id="FrozenLake-v1",
        lane="telemetry",
        state=RunState.QUEUED,
        created_at=1_700_000_000.0,
        reason="submitted",
    )
    assert registry.exists(record.run_id)
    [first] = registry.history(record.run_id)
    assert first.from_state is None
    assert first.to_state is RunState.QUEUED
    assert first.time == record.created_at
    assert first.reason == "submitted"


def test_duplicate_id_is_refused_and_nothing_changes(registry: RunRegistry, make_record: MakeRecord) -> None:
    registry.create(make_record())
    before = _raw(registry.path)
    with pytest.raises(StorageError, match="already exists"):
        registry.create(make_record(worker="other"))
    assert _raw(registry.path) == before


def test_create_validates_the_run_id(registry: RunRegistry, make_record: MakeRecord) -> None:
    with pytest.raises(InvalidRunId):
        registry.create(make_record(run_id="../etc"))
    assert registry.list(include_archived=True) == []


def test_unknown_run_is_reported_by_id(registry: RunRegistry) -> None:
    assert not registry.exists("nope")
    for call in (
        lambda: registry.get("nope"),
        lambda: registry.history("nope"),
        lambda: registry.transition("nope", RunState.STARTING),
        lambda: registry.set_archived("nope", True),
        lambda: registry.set_process("nope", 1),
        lambda: registry.set_token_hash("nope", "h"),
        lambda: registry.token_hash("nope"),
        lambda: registry.delete("nope"),
    ):
        with pytest.raises(RunNotFound, match="'nope'"):
            call()


def test_list_orders_by_creation_then_id_and_hides_archived(
    registry: RunRegistry, make_record: MakeRecord
) -> None:
    registry.create(make_record("c", created_at=3.0))
    registry.create(make_record("b", created_at=1.0))
    registry.create(make_record("a", created_at=3.0))
    registry.create(make_record("z", created_at=0.5))
    assert [r.run_id for r in registry.list()] == ["z", "b", "a", "c"]

    archived = registry.set_archived("b", True)
    assert archived.archived is True
    assert [r.run_id for r in registry.list()] == ["z", "a", "c"]
    assert [r.run_id for r in registry.list(include_archived=True)] == ["z", "b", "a", "c"]
    assert registry.set_archived("b", False).archived is False
    assert [r.run_id for r in registry.list()] == ["z", "b", "a", "c"]


def test_pages_follow_one_another_without_overlap_in_every_order(
    registry: RunRegistry, make_record: MakeRecord
) -> None:
    for index in range(7):
        registry.create(
            make_record(f"r{index}", created_at=float(index % 3), worker=("random", "cleanrl")[index % 2])
        )
    registry.set_archived("r6", True)
    for sort in RUN_SORTS:
        for descending in (False, True):
            everything = registry.page(RunQuery(sort=sort, descending=descending))
            assert everything.total == 6 and everything.next == ""
            seen, after = [], ""
            while True:
                page = registry.page(RunQuery(sort=sort, descending=descending, limit=4, after=after))
                assert page.total == 6 and len(page.runs) <= 4
                seen += [run.run_id for run in page.runs]
                if not page.next:
                    break
                after = page.next
            assert seen == [run.run_id for run in everything.runs]
    newest = registry.page(RunQuery(descending=True, limit=2, include_archived=True))
    assert [run.run_id for run in newest.runs] == ["r5", "r2"] and newest.total == 7
    assert [run.run_id for run in registry.page(RunQuery()).runs] == [r.run_id for r in registry.list()]


def test_a_page_is_filtered_by_state_worker_env_sweep_and_text(
    registry: RunRegistry, make_record: MakeRecord
) -> None:
    registry.create(make_record("a", state=RunState.FAILED, reason="CUDA out of memory"))
    registry.create(make_record("b", state=RunState.COMPLETED, worker="cleanrl", env_id="CartPole-v1"))
    registry.create(make_record("c", state=RunState.CANCELLED, sweep_id="s1", trial=0))
    registry.create(make_record("d", state=RunState.COMPLETED, reason="stopped at 100%_done"))

    def ids(**filters: object) -> list[str]:
        page = registry.page(RunQuery(**filters))  # type: ignore[arg-type]
        assert page.total == len(page.runs)
        return [run.run_id for run in page.runs]

    assert ids(states=(RunState.FAILED, RunState.CANCELLED)) == ["a", "c"]
    assert ids(worker="cleanrl") == ids(env_id="CartPole-v1") == ["b"]
    assert ids(sweep_id="s1") == ["c"]
    assert ids(text="cuda OUT") == ["a"]
    assert ids(text="cleanrl", states=(RunState.FAILED,)) == []
    # The text's own % and _ are themselves, not patterns.
    assert ids(text="100%_") == ["d"] and ids(text="t%a") == ids(text="t_100") == []


def test_a_page_refuses_what_is_no_sort_state_limit_or_cursor(registry: RunRegistry) -> None:
    with pytest.raises(ConfigError, match="sort: 'size' is not one of created"):
        RunQuery(sort="size")
    with pytest.raises(ConfigError, match="limit: -1"):
        RunQuery(limit=-1)
    with pytest.raises(ConfigError, match=r"--state: 'DONE' is not a run state .QUEUED"):
        parse_states("failed,DONE", "--state")
    assert parse_states("failed, cancelled,FAILED", "--state") == (RunState.FAILED, RunState.CANCELLED)
    for cursor in ("nope", "[1]", '[{"a": 1}, "r"]'):
        with pytest.raises(ConfigError, match=r"after: .* is not the cursor of a page"):
            registry.page(RunQuery(after=cursor))


def test_delete_removes_row_and_history(registry: RunRegistry, make_record: MakeRecord) -> None:
    registry.create(make_record("keep"))
    registry.create(make_record("gone"))
    registry.transition("gone", RunState.CANCELLED, "user")
    registry.delete("gone")
    assert not registry.exists("gone")
    runs, history = _raw(registry.path)
    assert [row[0] for row in runs] == ["keep"]
    assert {row[1] for row in history} == {"keep"}
    # The id is free again.
    registry.create(make_record("gone"))
    assert len(registry.history("gone")) == 1


@pytest.mark.parametrize(("current", "target"), LEGAL, ids=[f"{a.value}->{b.value}" for a, b in LEGAL])
def test_every_legal_transition(
    registry: RunRegistry, make_record: MakeRecord, current: RunState, target: RunState
) -> None:
    registry.create(make_record("r", state=current, pid=42))
    change = registry.transition("r", target, "because", at=2_000_000_000.0)
    assert change.run_id == "r"
    assert change.from_state is current
    assert change.to_state is target
    assert change.time == 2_000_000_000.0
    assert change.reason == "because"
    record = registry.get("r")
    assert record.state is target
    assert record.reason == "because"
    assert registry.history("r")[-1] == change
    if target.terminal:
        assert record.ended_at == 2_000_000_000.0
        assert record.pid is None
    else:
        assert record.ended_at is None
        assert record.pid == 42
    if target is RunState.RUNNING:
        assert record.started_at == 2_000_000_000.0


@pytest.mark.parametrize(("current", "target"), ILLEGAL, ids=[f"{a.value}->{b.value}" for a, b in ILLEGAL])
def test_every_illegal_transition_writes_nothing(
    registry: RunRegistry, make_record: MakeRecord, current: RunState, target: RunState
) -> None:
    registry.create(make_record("r", state=current))
    before = _raw(registry.path)
    with pytest.raises(IllegalTransition, match=f"from {current.value} to {target.value}"):
        registry.transition("r", target, "nope", exit_code=3)
    assert _raw(registry.path) == before


def test_lifecycle_times_exit_code_and_history(registry: RunRegistry, make_record: MakeRecord) -> None:
    registry.create(make_record("r", created_at=10.0))
    registry.transition("r", RunState.STARTING, "launching", at=11.0)
    registry.set_process("r", 4242)
    registry.transition("r", RunState.RUNNING, "worker registered", at=12.0)
    registry.transition("r", RunState.PAUSED, "user", at=13.0)
    registry.transition("r", RunState.RUNNING, "user", at=14.0)
    running = registry.get("r")
    assert running.started_at == 12.0  # the first time it ran, not the resume
    assert running.ended_at is None
    assert running.pid == 4242
    registry.transition("r", RunState.FAILED, "exit code 3: Traceback …", exit_code=3, at=15.0)

    record = registry.get("r")
    assert record.state is RunState.FAILED
    assert record.exit_code == 3
    assert record.reason == "exit code 3: Traceback …"
    assert (record.created_at, record.started_at, record.ended_at) == (10.0, 12.0, 15.0)
    assert record.pid is None
    assert [(h.from_state, h.to_state, h.time, h.reason) for h in registry.history("r")] == [
        (None, RunState.QUEUED, 10.0, "submitted"),
        (RunState.QUEUED, RunState.STARTING, 11.0, "launching"),
        (RunState.STARTING, RunState.RUNNING, 12.0, "worker registered"),
        (RunState.RUNNING, RunState.PAUSED, 13.0, "user"),
        (RunState.PAUSED, RunState.RUNNING, 14.0, "user"),
        (RunState.RUNNING, RunState.FAILED, 15.0, "exit code 3: Traceback …"),
    ]


def test_transition_defaults_to_now(registry: RunRegistry, make_record: MakeRecord) -> None:
    import time

    registry.create(make_record("r"))
    before = time.time()
    change = registry.transition("r", RunState.CANCELLED)
    assert before <= change.time <= time.time()
    assert registry.get("r").ended_at == change.time


def test_process_token_and_queries(registry: RunRegistry, make_record: MakeRecord) -> None:
    registry.create(make_record("a", created_at=1.0))
    registry.create(make_record("b", created_at=2.0, state=RunState.RUNNING))
    registry.create(make_record("c", created_at=3.0, state=RunState.RUNNING))
    registry.set_archived("c", True)
    assert registry.token_hash("a") is None
    registry.set_token_hash("a", "sha256:abc")
    assert registry.token_hash("a") == "sha256:abc"
    registry.set_process("b", 99)
    assert registry.get("b").pid == 99
    registry.set_process("b", None)
    assert registry.get("b").pid is None

    assert [r.run_id for r in registry.in_states(RunState.RUNNING, RunState.PAUSED)] == ["b", "c"]
    assert [r.run_id for r in registry.in_states(RunState.QUEUED)] == ["a"]
    assert registry.in_states() == []
    assert registry.counts_by_state() == {"QUEUED": 1, "RUNNING": 2}
    assert registry.counts_by_state(include_archived=False) == {"QUEUED": 1, "RUNNING": 1}


def test_concurrent_threads_each_use_their_own_connection(
    registry: RunRegistry, make_record: MakeRecord
) -> None:
    n_threads, runs_per_thread = 8, 15
    for t in range(n_threads):
        for i in range(runs_per_thread):
            registry.create(make_record(f"run-{t}-{i}", created_at=float(t * 100 + i)))
    registry.create(make_record("contested", state=RunState.RUNNING))

    barrier = threading.Barrier(n_threads)
    connections: list[sqlite3.Connection] = []
    outcomes: list[str] = []
    errors: list[BaseException] = []
    lock = threading.Lock()
    ends = [RunState.COMPLETED, RunState.FAILED, RunState.CANCELLED, RunState.LOST]

    def work(t: int) -> None:
        try:
            with lock:
                connections.append(registry._conn())
            barrier.wait(timeout=30)
            for i in range(runs_per_thread):
                run_id = f"run-{t}-{i}"
                for state in (RunState.STARTING, RunState.RUNNING, RunState.PAUSED, RunState.RUNNING):
                    registry.transition(run_id, state, f"t{t}")
                registry.transition(run_id, RunState.COMPLETED, f"t{t}", exit_code=0)
            barrier.wait(timeout=30)
            # Everyone tries to end the same run at once: exactly one may win.
            try:
                registry.transition("contested", ends[t % len(ends)], f"t{t}")
                result = "won"
            except IllegalTransition:
                result = "lost"
            with lock:
                outcomes.append(result)
        except BaseException as exc:
            with lock:
                errors.append(exc)
        finally:
            registry.close()

    threads = [threading.Thread(target=work, args=(t,)) for t in range(n_threads)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
        assert not thread.is_alive()

    assert errors == []
    assert len({id(conn) for conn in connections}) == n_threads
    assert sorted(outcomes) == ["lost"] * (n_threads - 1) + ["won"]
    contested = registry.history("contested")
    assert len(contested) == 2 and contested[-1].to_state.terminal
    for t in range(n_threads):
        for i in range(runs_per_thread):
            run_id = f"run-{t}-{i}"
            record = registry.get(run_id)
            assert record.state is RunState.COMPLETED
            assert record.exit_code == 0
            assert [h.to_state for h in registry.history(run_id)] == [
                RunState.QUEUED,
                RunState.STARTING,
                RunState.RUNNING,
                RunState.PAUSED,
                RunState.RUNNING,
                RunState.COMPLETED,
            ]
    with sqlite3.connect(registry.path) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    conn.close()


def test_two_registries_on_one_file_see_each_other(home_path_registry: Path, make_record: MakeRecord) -> None:
    first, second = RunRegistry(home_path_registry), RunRegistry(home_path_registry)
    first.create(make_record("r"))
    second.transition("r", RunState.STARTING)
    assert first.get("r").state is RunState.STARTING
    first.close()
    second.close()


@pytest.fixture
def home_path_registry(tmp_path: Path) -> Path:
    return tmp_path / "shared" / "registry.sqlite"


def test_wal_mode_and_schema_version(registry: RunRegistry) -> None:
    with sqlite3.connect(registry.path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        assert conn.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)
        indexes = {row[1] for row in conn.execute("PRAGMA index_list(state_history)")}
    conn.close()
    assert "state_history_run_id" in indexes


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_newer_schema_is_refused_and_the_file_untouched(tmp_path: Path) -> None:
    path = tmp_path / "registry.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE runs (run_id TEXT PRIMARY KEY, future_column BLOB)")
        conn.execute("INSERT INTO runs VALUES ('r', x'00')")
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 7}")
    conn.close()
    before, mtime = _digest(path), path.stat().st_mtime_ns

    with pytest.raises(StorageError) as caught:
        RunRegistry(path)
    message = str(caught.value)
    assert str(path) in message
    assert str(SCHEMA_VERSION + 7) in message and str(SCHEMA_VERSION) in message
    assert _digest(path) == before
    assert path.stat().st_mtime_ns == mtime
    assert not path.with_name("registry.sqlite-wal").exists()


def test_an_empty_version_zero_file_is_migrated(tmp_path: Path, make_record: MakeRecord) -> None:
    path = tmp_path / "registry.sqlite"
    sqlite3.connect(path).close()
    reg = RunRegistry(path)
    reg.create(make_record("r"))
    assert reg.get("r").state is RunState.QUEUED
    reg.close()


def test_pending_migrations_run_on_open_and_keep_data(
    tmp_path: Path, make_record: MakeRecord, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "registry.sqlite"
    old = RunRegistry(path)
    old.create(make_record("r"))
    old.close()

    newer = [*registry_module.MIGRATIONS, sql_migration("ALTER TABLE runs ADD COLUMN note TEXT DEFAULT 'x'")]
    monkeypatch.setattr(registry_module, "MIGRATIONS", newer)
    reg = RunRegistry(path)
    assert reg.get("r").run_id == "r"
    reg.close()
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION + 1,)
        assert conn.execute("SELECT note FROM runs").fetchall() == [("x",)]
    conn.close()


def test_a_failing_migration_changes_nothing(
    tmp_path: Path, make_record: MakeRecord, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "registry.sqlite"
    old = RunRegistry(path)
    old.create(make_record("r"))
    old.close()

    newer = [
        *registry_module.MIGRATIONS,
        sql_migration("ALTER TABLE runs ADD COLUMN note TEXT", "THIS IS NOT SQL"),
    ]
    monkeypatch.setattr(registry_module, "MIGRATIONS", newer)
    with pytest.raises(StorageError, match="migration failed, nothing was changed"):
        RunRegistry(path)
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)
        columns = [row[1] for row in conn.execute("PRAGMA table_info(runs)")]
    conn.close()
    assert "note" not in columns


def test_a_registry_of_the_first_schema_gains_sweeps_and_keeps_its_runs(tmp_path: Path) -> None:
    path = tmp_path / "registry.sqlite"
    with sqlite3.connect(path) as conn:
        registry_module.MIGRATIONS[0](conn)
        conn.execute("PRAGMA user_version = 1")
        conn.execute(
            "INSERT INTO runs (run_id, worker, env_id, lane, state, created_at) "
            "VALUES ('old', 'random', 'CartPole-v1', 'telemetry', 'COMPLETED', 1.0)"
        )
    conn.close()
    registry = RunRegistry(path)
    old = registry.get("old")
    assert (old.state, old.sweep_id, old.trial) == (RunState.COMPLETED, "", None)
    sweep = SweepRecord("s1", "ppo", SweepState.RUNNING, "/d", "sqlite:///x", "s1", "{}", 2.0)
    registry.create_sweep(sweep)
    registry.create(run_record("t0", RunState.QUEUED, sweep_id="s1", trial=0))
    assert [(r.run_id, r.trial) for r in registry.sweep_runs("s1")] == [("t0", 0)]
    assert registry.sweeps(SweepState.RUNNING) == [sweep]
    ended = registry.set_sweep_state("s1", SweepState.STOPPED, "stopped by user")
    assert ended.state is SweepState.STOPPED and ended.ended_at is not None
    assert registry.sweeps(SweepState.RUNNING) == []
    with pytest.raises(SweepNotFound, match="no sweep with id 'nope'"):
        registry.sweep("nope")
    registry.close()
