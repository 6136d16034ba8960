"""The storage path is lossless: when storage falls behind, gRPC flow control holds the worker back."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence

import pytest
from gym_gui_sdk.worker import WorkerSession

from gym_gui.core.config import parse_run_config
from gym_gui.core.records import StepRow
from gym_gui.core.states import RunState
from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.home import Home
from gym_gui.storage.run_dir import RunDir
from gym_gui.storage.telemetry import TelemetryReader
from gym_gui.storage.telemetry_writer import TelemetryWriter
from tests.support import in_process_daemon as daemon_in_this_process


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
