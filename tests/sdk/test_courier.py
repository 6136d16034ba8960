"""A worker's stream sent by a courier process: everything reaches storage, a SIGTERM to the worker's
process group leaves the courier sending, and a courier that dies is replaced without losing a step."""

from __future__ import annotations

import os
import signal

import numpy as np
from gym_gui_sdk.courier import CourierStream
from gym_gui_sdk.worker import WorkerSession

from gym_gui.core.config import parse_run_config
from gym_gui.core.processes import process_alive
from gym_gui.core.states import RunState
from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.home import Home
from gym_gui.storage.registry import RunRegistry
from gym_gui.storage.run_dir import RunDir
from gym_gui.storage.telemetry import TelemetryReader
from tests.support import random_config, wait_until


def courier_session(client: DaemonClient) -> WorkerSession:
    config = parse_run_config({"worker": "human", "env_id": "FrozenLake-v1", "budget": {"episodes": 1}})
    record, token = client.submit(config)
    session = WorkerSession(client.info.address, record.run_id, token, batch_steps=100, courier=True)
    session.start()
    session.started("none")
    return session


def courier_pid(session: WorkerSession) -> int:
    stream = session._stream
    assert isinstance(stream, CourierStream)
    pid = stream.pid
    assert pid is not None and pid != os.getpid() and process_alive(pid)
    return pid


def play(session: WorkerSession, steps: range) -> None:
    for i in steps:
        session.step(
            0, i, float(i), False, False, str(i % 4), np.array([i, -i], dtype=np.int64), f'{{"i":{i}}}'
        )


def stored_steps(home: Home, session: WorkerSession) -> list[tuple[int, str, str]]:
    reader = TelemetryReader(RunDir(home.run_dir(session.run_id)).telemetry_path)
    try:
        return [(row.step, row.observation, row.info) for row in reader.steps(0)]
    finally:
        reader.close()


def finish(client: DaemonClient, session: WorkerSession, steps: int) -> None:
    session.episode(0, steps=steps, total_reward=0.0, terminated=True, truncated=False, started_at=0.0)
    session.finish()
    final = client.wait_for_end(session.run_id, timeout=60)
    assert final.state is RunState.COMPLETED, final.reason


def expected(steps: int) -> list[tuple[int, str, str]]:
    return [(i, f"[{i},{-i}]", f'{{"i":{i}}}') for i in range(steps)]


def test_a_courier_sends_every_step_in_order_and_exits_after_the_session_finishes(
    client: DaemonClient, home: Home
) -> None:
    session = courier_session(client)
    pid = courier_pid(session)
    play(session, range(2500))  # 25 batches
    finish(client, session, 2500)
    assert stored_steps(home, session) == expected(2500)
    assert session.reconnects == 0
    wait_until(lambda: not process_alive(pid), 30, "the courier to exit once its stream ended")


def test_a_sigterm_to_the_courier_leaves_it_sending_until_the_worker_ends_its_stream(
    client: DaemonClient, home: Home
) -> None:
    # The daemon stops a run with SIGTERM to the worker's process group, the courier included: the
    # worker then sends its last steps and ends its stream through that same courier.
    session = courier_session(client)
    pid = courier_pid(session)
    play(session, range(300))
    os.kill(pid, signal.SIGTERM)
    play(session, range(300, 600))
    finish(client, session, 600)
    assert stored_steps(home, session) == expected(600)
    assert session.reconnects == 0


def children(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as stat:
                    parent = int(stat.read().rsplit(") ", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            if parent == pid:
                found.append(int(entry))
    return found


def couriers_of(pid: int) -> list[int]:
    def is_courier(child: int) -> bool:
        try:
            with open(f"/proc/{child}/cmdline", "rb") as cmdline:
                return b"gym_gui_sdk.courier" in cmdline.read()
        except OSError:
            return False

    return [child for child in children(pid) if is_courier(child) and process_alive(child)]


def test_a_worker_whose_courier_is_killed_starts_another_and_loses_no_step(
    client: DaemonClient, home: Home, registry: RunRegistry
) -> None:
    budget = 30_000
    record, _ = client.submit(random_config("CartPole-v1", timesteps=budget))
    wait_until(lambda: client.get_run(record.run_id).progress.steps > 2000, 60, "steps to be stored")
    worker = registry.get(record.run_id).pid
    assert worker is not None
    [first] = wait_until(lambda: couriers_of(worker), 10, "the worker's courier")
    os.kill(first, signal.SIGKILL)
    final = client.wait_for_end(record.run_id, timeout=120)
    assert final.state is RunState.COMPLETED, final.reason
    reader = TelemetryReader(RunDir(home.run_dir(record.run_id)).telemetry_path)
    try:
        assert reader.step_count() == budget
        per_episode = reader.steps_per_episode()
        assert all(per_episode[e.episode] == e.steps for e in reader.episodes())
    finally:
        reader.close()
    log = RunDir(home.run_dir(record.run_id)).worker_stderr_log.read_text()
    assert "stream to the daemon broke (UNAVAILABLE: the courier process ended)" in log
