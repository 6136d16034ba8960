"""A worker flooding the daemon with large batches cannot take its memory: what one run may hold is
bounded (docs/decisions/0016-memory-a-run-may-hold.md), and the other runs go on."""

from __future__ import annotations

from collections.abc import Iterator

import grpc
from gym_gui_sdk import trainer_pb2 as pb
from gym_gui_sdk.channel import MAX_MESSAGE_BYTES

from gym_gui.core.states import RunState
from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.home import Home
from gym_gui.storage.run_dir import RunDir
from gym_gui.storage.telemetry import TelemetryReader
from tests.daemon.test_faults import human_run, publish_raw, started, steps
from tests.support import random_config

MB = 1024 * 1024
# The documented bound on what one run's stream may add to the daemon's memory.
RUN_MEMORY_BOUND = 256 * MB


def kib(field: str, pid: int) -> int:
    """A memory figure of /proc/<pid>/status, in bytes (VmRSS: now; VmHWM: the peak so far)."""
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise AssertionError(f"no {field} for pid {pid}")


def big_batch(seq: int, first_step: int, steps_in_batch: int, payload_bytes: int) -> pb.WorkerMessage:
    """A step batch of about ``payload_bytes``, in frames."""
    indices = list(range(first_step, first_step + steps_in_batch))
    return steps(seq, 0, indices, render=bytes(payload_bytes // steps_in_batch))


def test_a_flood_of_large_batches_is_held_to_the_runs_bound_and_other_runs_go_on(
    client: DaemonClient, home: Home
) -> None:
    pid = client.info.pid
    other, _ = client.submit(random_config("CartPole-v1", episodes=300))
    run_id, token = human_run(client)
    at_rest = kib("VmRSS", pid)

    # Sixteen batches just under the message limit, as fast as gRPC takes them.
    per_batch = MAX_MESSAGE_BYTES - MB

    def flood() -> Iterator[pb.WorkerMessage]:
        yield started(1)
        for n in range(16):
            yield big_batch(n + 2, n * 8, 8, per_batch)

    error = publish_raw(client, run_id, token, flood())
    assert error is None, error
    peak = kib("VmHWM", pid)
    assert peak - at_rest < RUN_MEMORY_BOUND, (
        f"{(peak - at_rest) / MB:.0f} MB over the resting {at_rest / MB:.0f} MB"
    )

    # Everything sent was stored, and the other run went on to its end.
    reader = TelemetryReader(RunDir(home.run_dir(run_id)).telemetry_path)
    try:
        assert reader.step_count() == 16 * 8
    finally:
        reader.close()
    assert client.wait_for_end(other.run_id, timeout=120).state is RunState.COMPLETED


def test_a_message_over_the_limit_is_refused_and_the_run_fails(client: DaemonClient) -> None:
    pid = client.info.pid
    run_id, token = human_run(client)
    at_rest = kib("VmRSS", pid)
    # The 50 MB batches that once took the daemon to a gigabyte.
    messages = [started(1), *(big_batch(n + 2, n * 4, 4, 50 * MB) for n in range(4))]
    error = publish_raw(client, run_id, token, messages)
    assert error is not None and error.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, error
    assert f"vs. {MAX_MESSAGE_BYTES}" in (error.details() or ""), error.details()
    assert client.wait_for_end(run_id, timeout=60).state is RunState.FAILED
    assert kib("VmHWM", pid) - at_rest < RUN_MEMORY_BOUND
