"""Per-run telemetry: the batching writer (lossless, blocking, failing loudly), readers and schema versions."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from gym_gui.core.errors import StorageError
from gym_gui.core.records import (
    ACTOR_COLUMNS,
    AGENT_COLUMNS,
    STEP_COLUMNS,
    ArtifactRecord,
    EpisodeRecord,
    EventRecord,
    MetricPoint,
    StepRecord,
    StepRow,
)
from gym_gui.storage import telemetry_schema
from gym_gui.storage.byte_budget import ByteBudget
from gym_gui.storage.database import sql_migration
from gym_gui.storage.telemetry import TelemetryReader
from gym_gui.storage.telemetry_schema import SCHEMA_VERSION, open_telemetry_db
from gym_gui.storage.telemetry_writer import TelemetryWriter
from tests.support import wait_until

WAIT = 30.0  # generous upper bound for conditions that normally hold within milliseconds


def step_rows(episode: int, start: int, stop: int) -> list[StepRow]:
    """Deterministic rows whose content can be recomputed from (episode, step)."""
    return [
        (
            episode,
            step,
            step * 0.5,
            False,
            step % 97 == 96,
            str(step % 4),
            f"[{episode}, {step}]",
            "{}",
            bytes([step % 256]) if step % 3 == 0 else None,
            1000.0 + step,
        )
        for step in range(start, stop)
    ]


def as_record(row: StepRow) -> StepRecord:
    return StepRecord(*row)


def episode_record(n: int, steps: int) -> EpisodeRecord:
    return EpisodeRecord(
        episode=n,
        seed=n + 100,
        steps=steps,
        total_reward=float(n),
        terminated=n % 2 == 0,
        truncated=n % 2 == 1,
        started_at=10.0 * n,
        ended_at=10.0 * n + 5,
        info=json.dumps({"n": n}),
    )


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "runs" / "r1" / "telemetry.sqlite"


@pytest.fixture
def writer(db_path: Path) -> Iterator[TelemetryWriter]:
    w = TelemetryWriter(db_path)
    yield w
    w.close(timeout=WAIT)


def test_ten_thousand_steps_in_batches_are_stored_and_readable(
    writer: TelemetryWriter, db_path: Path
) -> None:
    writer.start()
    lengths = {episode: 500 + 150 * episode for episode in range(10)}  # 500 … 1850, 10_750 in all
    expected: list[StepRow] = []
    for episode, length in lengths.items():
        for start in range(0, length, 256):
            rows = step_rows(episode, start, min(start + 256, length))
            writer.put_steps(rows)
            expected.extend(rows)
        writer.put_episode(episode_record(episode, length))
    assert writer.flush(timeout=WAIT)
    assert writer.error is None
    assert writer.steps_written == len(expected) == sum(lengths.values()) >= 10_000
    assert writer.episodes_written == 10

    reader = TelemetryReader(db_path)
    assert reader.step_count() == len(expected)
    assert reader.steps_per_episode() == lengths
    assert reader.episode_count() == 10
    for summary in reader.episodes():
        assert summary.steps == reader.step_count(summary.episode) == lengths[summary.episode]
    stored = [step for episode in lengths for step in reader.steps(episode)]
    assert stored == [as_record(row) for row in expected]
    assert reader.steps(3, 100, 103) == [as_record(row) for row in step_rows(3, 100, 103)]
    assert reader.step(9, 1849) == as_record(step_rows(9, 1849, 1850)[0])
    reader.close()


def test_episodes_round_trip_and_paging(writer: TelemetryWriter, db_path: Path) -> None:
    writer.start()
    for n in range(7):
        writer.put_episode(episode_record(n, n + 1))
    assert writer.flush(timeout=WAIT)
    reader = TelemetryReader(db_path)
    assert reader.episodes() == [episode_record(n, n + 1) for n in range(7)]
    assert [e.episode for e in reader.episodes(offset=2, limit=3)] == [2, 3, 4]
    assert [e.episode for e in reader.episodes(offset=5)] == [5, 6]
    assert reader.episode(4) == episode_record(4, 5)
    with pytest.raises(StorageError, match="episode 99 is not stored"):
        reader.episode(99)
    with pytest.raises(StorageError, match="step 5 of episode 0 is not stored"):
        reader.step(0, 5)


def test_put_blocks_while_the_queue_is_full(db_path: Path) -> None:
    writer = TelemetryWriter(db_path, max_pending=2)
    writer.put_steps(step_rows(0, 0, 10))
    writer.put_steps(step_rows(0, 10, 20))  # the queue is now full; nothing drains it yet

    returned = threading.Event()
    failures: list[BaseException] = []

    def third_put() -> None:
        try:
            writer.put_steps(step_rows(0, 20, 30))
        except BaseException as exc:
            failures.append(exc)
        returned.set()

    producer = threading.Thread(target=third_put)
    producer.start()
    assert not returned.wait(timeout=0.3), "a put into a full queue must block"
    writer.start()  # the writer drains, which unblocks the producer
    assert returned.wait(timeout=WAIT)
    producer.join(timeout=WAIT)
    assert failures == []
    assert writer.flush(timeout=WAIT)
    assert writer.steps_written == 30
    assert TelemetryReader(db_path).step_count(0) == 30
    assert writer.close(timeout=WAIT)


def test_writers_sharing_a_budget_hold_no_more_together_and_give_back_all_they_held(tmp_path: Path) -> None:
    """A daemon's runs share one ByteBudget (issue 30): a writer waits while the others hold it
    full, in the order asked; what is written, reserved and not put, discarded by a failed writer
    or dropped by a closed one is given back, so the budget never runs dry for good."""
    budget = ByteBudget(limit=100)
    stalled = TelemetryWriter(tmp_path / "stalled.sqlite", budget=budget)  # not started: writes nothing
    stalled.put_steps(step_rows(0, 0, 10), size=80)
    assert budget.used == 80

    waiting = TelemetryWriter(tmp_path / "waiting.sqlite", budget=budget)
    waiting.start()
    reserved = threading.Event()

    def reserve() -> None:
        waiting.reserve(50)  # 80 + 50 > 100: waits for the stalled writer
        reserved.set()

    producer = threading.Thread(target=reserve)
    producer.start()
    stalled.start()  # it writes its rows and gives their bytes back: the reservation goes in
    wait_until(reserved.is_set, WAIT, "the reservation")
    producer.join(WAIT)
    wait_until(lambda: budget.used == 50, WAIT, "the stalled writer's bytes to be given back")

    waiting.put_steps(step_rows(0, 0, 5), size=30)  # taken from the reservation; 20 left reserved
    waiting.release()
    assert waiting.flush(timeout=WAIT)
    assert budget.used == 0

    waiting.reserve(40)
    assert waiting.close(timeout=WAIT)  # a reservation no rows came for
    assert budget.used == 0

    stalled.put_steps(step_rows(0, 0, 1), size=60)  # a repeated step: the writer fails
    with pytest.raises(StorageError, match="UNIQUE"):
        stalled.flush(timeout=WAIT)
    with pytest.raises(StorageError):
        stalled.put_steps(step_rows(1, 0, 1), size=60)
    assert budget.used == 0
    stalled.close(timeout=WAIT)

    never_started = TelemetryWriter(tmp_path / "never.sqlite", budget=budget)
    never_started.put_steps(step_rows(0, 0, 1), size=70)
    assert budget.used == 70
    never_started.close(timeout=WAIT)
    assert budget.used == 0


def test_duplicate_step_fails_the_writer_loudly_and_keeps_committed_rows(
    writer: TelemetryWriter, db_path: Path
) -> None:
    writer.start()
    writer.put_steps(step_rows(0, 0, 100))
    assert writer.flush(timeout=WAIT)

    writer.put_steps(step_rows(0, 100, 110) + step_rows(0, 50, 51))  # step 50 again
    with pytest.raises(StorageError, match="UNIQUE"):
        writer.flush(timeout=WAIT)
    assert isinstance(writer.error, StorageError)
    assert "protocol error" in str(writer.error)
    with pytest.raises(StorageError):
        writer.put_steps(step_rows(1, 0, 1))
    with pytest.raises(StorageError):
        writer.put_episode(episode_record(0, 100))

    reader = TelemetryReader(db_path)
    assert reader.step_count() == 100  # the failed batch was rolled back as a whole
    assert reader.steps(0) == [as_record(row) for row in step_rows(0, 0, 100)]
    assert writer.steps_written == 100
    assert writer.close(timeout=WAIT) is False


def test_a_malformed_row_fails_the_writer_instead_of_killing_it_silently(
    writer: TelemetryWriter, db_path: Path
) -> None:
    writer.start()
    writer.put_steps(step_rows(0, 0, 100))
    assert writer.flush(timeout=WAIT)
    # Rows are bound many to a statement, one after the other: a short row among them must fail
    # the batch, not shift the values of every row after it into the wrong columns.
    bad = step_rows(0, 100, 300)
    bad[150] = bad[150][:3]
    writer.put_steps(bad)
    with pytest.raises(StorageError, match=r"rows for steps must have 10 values .*got rows of 3"):
        writer.flush(timeout=WAIT)
    assert writer.error is not None
    assert writer.close(timeout=WAIT) is False
    reader = TelemetryReader(db_path)
    assert reader.steps(0) == [as_record(row) for row in step_rows(0, 0, 100)]  # the earlier batch, whole
    reader.close()


def test_rows_many_to_a_statement_land_in_their_own_columns(tmp_path: Path) -> None:
    conn = open_telemetry_db(tmp_path / "t.sqlite")
    per = telemetry_schema.ROWS_PER_STATEMENT
    for count in (1, per - 1, per, per + 1, 3 * per + 5):  # a remainder alone, whole statements, both
        conn.execute("DELETE FROM steps")
        rows = step_rows(count, 0, count)
        telemetry_schema.insert_rows(conn, ("steps", STEP_COLUMNS), rows)
        stored = conn.execute(f"SELECT {', '.join(STEP_COLUMNS)} FROM steps ORDER BY step").fetchall()
        assert [as_record(tuple(r)) for r in stored] == [as_record(r) for r in rows]  # type: ignore[arg-type]
    conn.close()


def test_flush_times_out_while_the_database_is_locked(writer: TelemetryWriter, db_path: Path) -> None:
    writer.start()
    blocker = sqlite3.connect(db_path, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")  # hold the write lock: the writer must wait for it
    try:
        writer.put_steps(step_rows(0, 0, 10))
        assert writer.flush(timeout=0.2) is False
    finally:
        blocker.execute("COMMIT")
        blocker.close()
    assert writer.flush(timeout=WAIT) is True
    assert writer.steps_written == 10


def test_reader_follows_a_live_writer(writer: TelemetryWriter, db_path: Path) -> None:
    writer.start()
    reader = TelemetryReader(db_path)
    seen = threading.Event()

    def watch() -> None:
        # Its own thread: the reader opens a separate connection here.
        while reader.step_count() < 5000:
            pass
        seen.set()
        reader.close()

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    for start in range(0, 5000, 500):
        writer.put_steps(step_rows(0, start, start + 500))
    assert seen.wait(timeout=WAIT)
    watcher.join(timeout=WAIT)


def test_reader_seeks_the_middle_of_a_million_step_episode(tmp_path: Path) -> None:
    path = tmp_path / "big.sqlite"
    conn = open_telemetry_db(path)
    n = 1_000_000
    conn.execute("BEGIN")
    conn.executemany(
        telemetry_schema.insert_sql(*telemetry_schema.STEP_TABLE, 1),
        ((0, s, s * 0.5, 0, 0, "0", "[]", "{}", None, float(s)) for s in range(n)),
    )
    conn.execute("COMMIT")
    conn.close()

    reader = TelemetryReader(path)
    middle = reader.steps(0, 500_000, 500_005)
    assert [(s.step, s.reward, s.wall_time) for s in middle] == [
        (s, s * 0.5, float(s)) for s in range(500_000, 500_005)
    ]
    assert reader.step(0, n - 1).step == n - 1
    assert [s.step for s in reader.steps(0, n - 3)] == [n - 3, n - 2, n - 1]
    assert reader.step_count(0) == n
    # "Immediate": the range is a primary-key search, never a scan of the million rows.
    plan = " ".join(
        str(row[-1])
        for row in reader._conn().execute(
            "EXPLAIN QUERY PLAN SELECT * FROM steps WHERE episode = ? AND step >= ? AND step < ? ORDER BY step",
            (0, 500_000, 500_005),
        )
    )
    assert "SEARCH steps USING PRIMARY KEY" in plan
    assert "TEMP B-TREE" not in plan
    reader.close()


def test_last_step_of_an_episode_and_the_latest_render_before_a_step(
    writer: TelemetryWriter, db_path: Path
) -> None:
    writer.start()
    # step_rows stores a render payload on every third step only (like a pixel run's render rate).
    writer.put_steps(step_rows(0, 0, 10))
    writer.put_steps(step_rows(1, 0, 4))
    assert writer.flush(timeout=WAIT)
    reader = TelemetryReader(db_path)
    assert reader.last_step_of(0) == 9
    assert reader.last_step_of(1) == 3
    assert reader.last_step_of(7) is None
    assert reader.last_step_key() == (1, 3)
    assert reader.latest_render(0, 8) == (6, bytes([6]))
    assert reader.latest_render(0, 9) == (9, bytes([9]))
    assert reader.latest_render(0, 0) == (0, bytes([0]))
    assert reader.latest_render(7, 5) is None
    # step_rows' step s earns s / 2: the return so far is the sum up to and including the step.
    assert reader.return_through(0, 3) == 0.0 + 0.5 + 1.0 + 1.5
    assert reader.return_through(0, 50) == sum(s * 0.5 for s in range(10))
    assert reader.return_through(7, 5) == 0.0
    # The lookup walks the primary key backwards from the step; it never scans the episode.
    plan = " ".join(
        str(row[-1])
        for row in reader._conn().execute(
            "EXPLAIN QUERY PLAN SELECT step, render FROM steps WHERE episode = ? AND step <= ? "
            "AND render IS NOT NULL ORDER BY step DESC LIMIT 1",
            (0, 8),
        )
    )
    assert "SEARCH steps USING PRIMARY KEY" in plan and "TEMP B-TREE" not in plan
    reader.close()


def test_step_infos_after_a_key_in_key_order(writer: TelemetryWriter, db_path: Path) -> None:
    writer.start()
    writer.put_steps(step_rows(1, 0, 3))
    writer.put_steps(step_rows(0, 0, 5))
    assert writer.flush(timeout=WAIT)
    reader = TelemetryReader(db_path)
    keys = [(e, s) for e in (0, 1) for s in range(5 if e == 0 else 3)]
    assert [(e, s) for e, s, _info in reader.step_infos()] == keys
    assert [(e, s) for e, s, _info in reader.step_infos(after=(0, 3))] == keys[4:]
    assert [(e, s) for e, s, _info in reader.step_infos(after=(0, 1), limit=2)] == [(0, 2), (0, 3)]
    assert reader.step_infos(after=(1, 2)) == []
    assert reader.step_infos(limit=1) == [(0, 0, "{}")]
    # Only what follows the key is read: a range of the primary key, never a scan of the run.
    plan = " ".join(
        str(row[-1])
        for row in reader._conn().execute(
            "EXPLAIN QUERY PLAN SELECT episode, step, info FROM steps WHERE (episode, step) > (?, ?) "
            "ORDER BY episode, step LIMIT ?",
            (0, 1, 2),
        )
    )
    assert "SEARCH steps USING PRIMARY KEY" in plan and "TEMP B-TREE" not in plan
    reader.close()


def test_metrics_by_tag_and_since_step(writer: TelemetryWriter, db_path: Path) -> None:
    writer.start()
    writer.put_metrics(
        [MetricPoint("charts/episodic_return", step, 1.0 + step, step * 2.0) for step in range(0, 100, 10)]
    )
    writer.put_metrics([MetricPoint("losses/value_loss", step, 2.0, 0.1) for step in range(5)])
    writer.put_metrics([])
    assert writer.flush(timeout=WAIT)
    assert writer.metrics_written == 15

    reader = TelemetryReader(db_path)
    assert reader.metric_tags() == ["charts/episodic_return", "losses/value_loss"]
    # The last point of each tag: its highest step, the last stored of that step (a later write wins).
    assert reader.latest_metrics() == [
        MetricPoint("charts/episodic_return", 90, 91.0, 180.0),
        MetricPoint("losses/value_loss", 4, 2.0, 0.1),
    ]
    assert reader.metric_count() == 15
    assert reader.metric_count("losses/value_loss") == 5
    series = reader.metrics("charts/episodic_return")
    assert [p.step for p in series] == list(range(0, 100, 10))
    assert series[3] == MetricPoint("charts/episodic_return", 30, 31.0, 60.0)
    assert [p.step for p in reader.metrics("charts/episodic_return", since_step=50)] == [60, 70, 80, 90]
    assert [p.step for p in reader.metrics("charts/episodic_return", since_step=50, limit=2)] == [60, 70]
    assert reader.metrics("no/such/tag") == []


def test_events_artifacts_and_meta(writer: TelemetryWriter, db_path: Path) -> None:
    writer.start()
    events = [
        EventRecord(float(i), "lifecycle", "info", f"phase {i}", json.dumps({"i": i})) for i in range(5)
    ]
    for event in events:
        writer.put_event(event)
    writer.put_artifact(ArtifactRecord("checkpoint", "checkpoints/model.pt", 1000, '{"size": 3}'))
    writer.put_artifact(ArtifactRecord("tensorboard", "tensorboard", 0))
    writer.set_meta("render_kind", "grid")
    writer.set_meta("render_kind", "pixels")  # the last value wins
    writer.set_meta("spaces", '{"action": "Discrete(4)"}')
    assert writer.flush(timeout=WAIT)

    reader = TelemetryReader(db_path)
    assert reader.events() == events
    assert reader.events(since_id=3) == events[3:]
    assert reader.artifacts() == [
        ArtifactRecord("checkpoint", "checkpoints/model.pt", 1000, '{"size": 3}'),
        ArtifactRecord("tensorboard", "tensorboard", 0, "{}"),
    ]
    assert reader.meta("render_kind") == "pixels"
    assert reader.meta("spaces") == '{"action": "Discrete(4)"}'
    assert reader.meta("missing") is None


def test_close_is_idempotent_and_refuses_later_puts(db_path: Path) -> None:
    writer = TelemetryWriter(db_path)
    with writer:
        writer.put_steps(step_rows(0, 0, 3))
    assert writer.close(timeout=WAIT)
    assert writer.close(timeout=WAIT)
    assert writer.steps_written == 3
    with pytest.raises(StorageError, match="closed"):
        writer.put_steps(step_rows(0, 3, 4))
    with pytest.raises(StorageError, match="closed"):
        writer.start()
    assert TelemetryReader(db_path).step_count() == 3


def test_flush_of_a_writer_never_started(db_path: Path) -> None:
    writer = TelemetryWriter(db_path)
    assert writer.flush(timeout=0)  # nothing put: nothing to wait for
    writer.put_event(EventRecord(1.0, "k", "info", "m"))
    with pytest.raises(StorageError, match="never started"):
        writer.flush(timeout=WAIT)
    assert writer.close(timeout=WAIT) is False  # the queued event was dropped, and it says so


def test_database_settings(writer: TelemetryWriter, db_path: Path) -> None:
    writer.start()
    assert writer.flush(timeout=WAIT)
    with sqlite3.connect(db_path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        assert conn.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)
        columns = [row[1] for row in conn.execute("PRAGMA table_info(steps)")]
        metric_indexes = [row[1] for row in conn.execute("PRAGMA index_list(metrics)")]
    conn.close()
    assert tuple(columns) == STEP_COLUMNS + ACTOR_COLUMNS + AGENT_COLUMNS
    assert "metrics_tag_step" in metric_indexes


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_newer_schema_is_refused_by_writer_reader_and_opener(tmp_path: Path) -> None:
    path = tmp_path / "telemetry.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE steps (x)")
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.close()
    before = _digest(path)

    for open_it in (
        lambda: open_telemetry_db(path),
        lambda: open_telemetry_db(path, readonly=True),
        lambda: TelemetryReader(path),
    ):
        with pytest.raises(StorageError, match=f"schema version {SCHEMA_VERSION + 1}") as caught:
            open_it()
        assert str(path) in str(caught.value)

    writer = TelemetryWriter(path)
    with pytest.raises(StorageError, match="upgrade gym_gui"):
        writer.start()
    assert isinstance(writer.error, StorageError)
    with pytest.raises(StorageError):
        writer.put_steps(step_rows(0, 0, 1))
    writer.close(timeout=WAIT)
    assert _digest(path) == before
    assert not path.with_name("telemetry.sqlite-wal").exists()


def test_read_only_open_never_creates_or_migrates(tmp_path: Path) -> None:
    missing = tmp_path / "missing.sqlite"
    with pytest.raises(StorageError, match="does not exist"):
        TelemetryReader(missing)
    assert not missing.exists()

    empty = tmp_path / "empty.sqlite"
    sqlite3.connect(empty).close()
    with pytest.raises(StorageError, match="older than"):
        open_telemetry_db(empty, readonly=True)
    conn = sqlite3.connect(empty)
    assert conn.execute("PRAGMA user_version").fetchone() == (0,)
    conn.close()


def test_migrations_run_on_an_older_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Version 0 (an empty file) is brought up to date on open.
    path = tmp_path / "telemetry.sqlite"
    sqlite3.connect(path).close()
    with TelemetryWriter(path) as writer:
        writer.put_steps(step_rows(0, 0, 5))
    assert TelemetryReader(path).step_count() == 5

    # A file at today's version is upgraded by a later migration, keeping its rows.
    newer = [
        *telemetry_schema.MIGRATIONS,
        sql_migration("ALTER TABLE episodes ADD COLUMN note TEXT DEFAULT ''"),
    ]
    monkeypatch.setattr(telemetry_schema, "MIGRATIONS", newer)
    conn = open_telemetry_db(path)
    assert conn.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION + 1,)
    assert "note" in [row[1] for row in conn.execute("PRAGMA table_info(episodes)")]
    assert conn.execute("SELECT COUNT(*) FROM steps").fetchone() == (5,)
    conn.close()
