"""The storage path is lossless: when storage falls behind, gRPC flow control holds the worker back."""

from __future__ import annotations

import shutil
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from typing import Any

import grpc
import pytest
from gym_gui_sdk import trainer_pb2 as pb
from gym_gui_sdk.channel import MAX_MESSAGE_BYTES
from gym_gui_sdk.worker import WorkerSession

from gym_gui.core.config import parse_run_config
from gym_gui.core.records import StepRow
from gym_gui.core.states import RunState
from gym_gui.daemon.ending import Ending
from gym_gui.daemon.live import LiveRun, SupervisorSettings
from gym_gui.protocol import convert
from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.byte_budget import MAX_INFLIGHT_BYTES
from gym_gui.storage.home import Home
from gym_gui.storage.run_dir import RunDir
from gym_gui.storage.telemetry import TelemetryReader
from gym_gui.storage.telemetry_writer import TelemetryWriter
from tests.daemon.test_faults import completed, human_run, publish_raw, started, steps
from tests.daemon.test_memory import MB, big_batch
from tests.support import in_process_daemon as daemon_in_this_process
from tests.support import wait_until, wait_until_stable


@pytest.fixture
def stalled_storage(monkeypatch: pytest.MonkeyPatch) -> threading.Event:
    """Storage that takes no step rows until the returned event is set (a disk that stalls)."""
    gate = threading.Event()
    original = TelemetryWriter.put_steps

    def put_steps(self: TelemetryWriter, rows: Sequence[StepRow], size: int = 0) -> None:
        gate.wait(120)
        original(self, rows, size)

    monkeypatch.setattr(TelemetryWriter, "put_steps", put_steps)
    return gate


@pytest.fixture
def in_process_daemon(home: Home) -> Iterator[DaemonClient]:
    with daemon_in_this_process(home) as client:
        yield client


def test_a_stalled_store_holds_the_worker_back_and_loses_nothing(
    in_process_daemon: DaemonClient, home: Home, stalled_storage: threading.Event
) -> None:
    client = in_process_daemon
    config = parse_run_config({"worker": "human", "env_id": "FrozenLake-v1", "budget": {"episodes": 1}})
    record, token = client.submit(config)
    session = WorkerSession(client.info.address, record.run_id, token, batch_steps=50)
    session.start()
    session.started("none")
    total = 20_000
    observation = f'"{"x" * 998}"'  # fat steps (a JSON string): more than every buffer on the way holds
    sent = 0
    done = threading.Event()

    def produce() -> None:
        nonlocal sent
        for i in range(total):
            session.step(0, i, 0.0, i == total - 1, False, "0", observation)
            sent = i + 1
        session.episode(0, steps=total, total_reward=0.0, terminated=True, truncated=False, started_at=0.0)
        done.set()

    producer = threading.Thread(target=produce, daemon=True)
    producer.start()
    # While storage takes nothing, the worker cannot get all its steps out.
    assert not done.wait(5)
    assert sent < total
    stalled_at = sent
    stalled_storage.set()
    assert done.wait(120)
    assert stalled_at < total
    session.finish()
    final = client.wait_for_end(record.run_id, timeout=60)
    assert final.state is RunState.COMPLETED
    reader = TelemetryReader(RunDir(home.run_dir(record.run_id)).telemetry_path)
    assert reader.step_count() == total
    assert [s.step for s in reader.steps(0, total - 3)] == [total - 3, total - 2, total - 1]
    reader.close()


@pytest.fixture
def stalled_disk(monkeypatch: pytest.MonkeyPatch) -> threading.Event:
    """Storage whose writers take what is queued but write nothing until the returned event is set."""
    gate = threading.Event()
    original = TelemetryWriter._transaction

    def transaction(conn: sqlite3.Connection, items: list[tuple[int, Any, int]]) -> tuple[int, int, int]:
        gate.wait(120)
        return original(conn, items)

    monkeypatch.setattr(TelemetryWriter, "_transaction", staticmethod(transaction))
    return gate


def test_a_stalled_store_holds_every_runs_flood_back_together_to_the_daemons_bound(
    in_process_daemon: DaemonClient,
    home: Home,
    stalled_disk: threading.Event,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue 30: sixteen runs' streams of 7 MB batches took the daemon from 94 MB to 1.4 GB, each run
    holding its own 16 MiB of batches waiting. Together they now hold at most MAX_INFLIGHT_BYTES;
    every other batch waits in its worker (gRPC's flow control), and nothing is lost."""
    client = in_process_daemon
    held = [0]  # bytes of step batches handed to storage (none written while the disk stalls)
    lock = threading.Lock()
    original = TelemetryWriter.put_steps

    def put_steps(self: TelemetryWriter, rows: Sequence[StepRow], size: int = 0) -> None:
        original(self, rows, size)
        with lock:
            held[0] += size

    monkeypatch.setattr(TelemetryWriter, "put_steps", put_steps)
    runs = [human_run(client) for _ in range(16)]
    batches, per_batch = 4, MAX_MESSAGE_BYTES - MB

    def flood() -> Iterator[pb.WorkerMessage]:
        yield started(1)
        for n in range(batches):
            yield big_batch(n + 2, n * 8, 8, per_batch)
        yield completed(batches + 2)

    errors: list[grpc.RpcError | None] = []
    workers = [
        threading.Thread(target=lambda run=run: errors.append(publish_raw(client, *run, flood())))
        for run in runs
    ]
    for worker in workers:
        worker.start()
    try:
        wait_until(lambda: held[0], 60, "a batch to reach storage")
        stalled = wait_until_stable(lambda: held[0], interval=1.0, timeout=120, what="the bytes held")
        assert stalled <= MAX_INFLIGHT_BYTES, f"{stalled / MB:.0f} MB of batches held by the runs together"
    finally:
        stalled_disk.set()
        for worker in workers:
            worker.join(120)
    assert errors == [None] * len(runs), errors
    for run_id, _token in runs:
        assert client.wait_for_end(run_id, timeout=60).state is RunState.COMPLETED
        reader = TelemetryReader(RunDir(home.run_dir(run_id)).telemetry_path)
        try:
            assert reader.step_count() == batches * 8
        finally:
            reader.close()


@pytest.fixture
def held_ingest(monkeypatch: pytest.MonkeyPatch) -> tuple[threading.Event, threading.Event]:
    """The daemon's ingest held inside its first step batch (a batch that takes long to take in: a
    large one on a loaded machine): (entered, release)."""
    entered, release = threading.Event(), threading.Event()
    original = convert.step_rows

    def step_rows(batch: pb.StepBatch, **options: bool) -> list[StepRow]:
        if not entered.is_set():
            entered.set()
            release.wait(120)
        return original(batch, **options)

    monkeypatch.setattr(convert, "step_rows", step_rows)
    return entered, release


@pytest.fixture
def looks(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """How long each run had been silent (no message from its worker) when the supervisor looked."""
    silences: list[float] = []
    original = Ending.check

    def check(self: Ending, run: LiveRun, now: float) -> None:
        silences.append(now - run.last_seen)
        original(self, run, now)

    monkeypatch.setattr(Ending, "check", check)
    return silences


def test_a_message_the_daemon_is_still_taking_in_counts_as_life(
    home: Home, held_ingest: tuple[threading.Event, threading.Event], looks: list[float]
) -> None:
    """Issue 30: well-formed runs among a flood failed "heartbeat lost" while the daemon was still
    taking in their first batch. The silence that fails a run is its worker's, never the daemon's."""
    entered, release = held_ingest
    settings = SupervisorSettings(heartbeat_timeout=1.0)
    with daemon_in_this_process(home, settings) as client:
        run_id, token = human_run(client)
        errors: list[grpc.RpcError | None] = []
        messages = [started(1), steps(2, 0, [0, 1]), completed(3)]
        worker = threading.Thread(target=lambda: errors.append(publish_raw(client, run_id, token, messages)))
        worker.start()
        try:
            assert entered.wait(30)
            # The supervisor looked at the run after longer than the heartbeat timeout without a message.
            wait_until(lambda: max(looks, default=0.0) > settings.heartbeat_timeout, 30, "a late look")
        finally:
            release.set()
            worker.join(60)
        assert errors == [None], errors
        final = client.wait_for_end(run_id, timeout=30)
        assert final.state is RunState.COMPLETED, final.reason


@pytest.mark.parametrize("held", ["taking in a batch", "before its next batch"])
def test_a_run_that_ends_under_its_stream_ends_the_stream_saying_why(
    home: Home, request: pytest.FixtureRequest, held: str
) -> None:
    """Issue 30: a run whose end was recorded while its stream was still being taken in hit
    ``assert writer is not None`` in the ingest at the stream's next batch, and the worker heard
    INVALID_ARGUMENT with an empty reason. The run's end is made here while the daemon takes in a
    batch (held inside it), or while the worker holds its next one back: either way the stream
    ends saying that the run ended, and why."""
    holding = held == "before its next batch"
    if holding:
        entered, release = threading.Event(), threading.Event()
    else:
        entered, release = request.getfixturevalue("held_ingest")

    def stream() -> Iterator[pb.WorkerMessage]:
        yield from (started(1), steps(2, 0, [0, 1]))
        if holding:
            entered.set()
            release.wait(120)
        yield from (steps(3, 0, [2]), completed(4))

    with daemon_in_this_process(home) as client:
        run_id, token = human_run(client)
        errors: list[grpc.RpcError | None] = []
        worker = threading.Thread(target=lambda: errors.append(publish_raw(client, run_id, token, stream())))
        worker.start()
        try:
            assert entered.wait(30)
            shutil.rmtree(home.run_dir(run_id))  # its files gone: the run ends at the supervisor's next look
            final = client.wait_for_end(run_id, timeout=30)
        finally:
            release.set()
            worker.join(60)
        assert final.state is RunState.FAILED and "was removed while the run was live" in final.reason
        [error] = errors
        assert error is not None and error.code() == grpc.StatusCode.FAILED_PRECONDITION, error
        assert f"run {run_id} ended (FAILED: run directory" in (error.details() or ""), error.details()
