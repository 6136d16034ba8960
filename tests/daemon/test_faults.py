"""Faults a daemon must survive: misbehaving and killed workers, a killed daemon, silence, overload."""

from __future__ import annotations

import contextlib
import os
import queue
import signal
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import grpc
import pytest
from gym_gui_sdk import trainer_pb2 as pb
from gym_gui_sdk import trainer_pb2_grpc as pb_grpc
from gym_gui_sdk.worker import Phase, WorkerError, WorkerSession

from gym_gui.bus.run_bus import RunBus
from gym_gui.core.config import RunConfig, parse_run_config
from gym_gui.core.processes import process_alive
from gym_gui.core.records import (
    EpisodeRecord,
    Lifecycle,
    Resumed,
    Starved,
    StateTransition,
    StepBatch,
    TelemetryEvent,
)
from gym_gui.core.states import RunState
from gym_gui.daemon.executors import LocalExecutor
from gym_gui.daemon.ingest import StreamIngest
from gym_gui.daemon.supervisor import Supervisor
from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.home import Home
from gym_gui.storage.registry import RunRegistry
from gym_gui.storage.run_dir import RunDir
from gym_gui.storage.telemetry import TelemetryReader
from tests.support import kill_run_workers, random_config, stop_daemon, wait_until


def human_run(client: DaemonClient) -> tuple[str, str]:
    config = parse_run_config({"worker": "human", "env_id": "FrozenLake-v1", "budget": {"episodes": 1}})
    record, token = client.submit(config)
    assert token
    return record.run_id, token


def publish_raw(
    client: DaemonClient, run_id: str, token: str, messages: Iterable[pb.WorkerMessage]
) -> grpc.RpcError | None:
    """Register as the run's worker and send ``messages`` as they are, bypassing the SDK's checks."""
    channel = grpc.insecure_channel(client.info.address)
    stub = pb_grpc.WorkerServiceStub(channel)
    reply = stub.RegisterWorker(
        pb.RegisterWorkerRequest(run_id=run_id, run_token=token, pid=os.getpid()),
        metadata=[("authorization", f"Bearer {token}")],
        timeout=10,
    )
    responses = stub.Publish(
        iter(messages),
        metadata=[("authorization", f"Bearer {reply.session_token}"), ("x-run-id", run_id)],
        timeout=30,
    )
    try:
        list(responses)
    except grpc.RpcError as exc:
        return exc
    finally:
        channel.close()
    return None


def started(seq: int = 1) -> pb.WorkerMessage:
    return pb.WorkerMessage(seq=seq, lifecycle=pb.Lifecycle(phase=Phase.STARTED, render_kind="grid"))


def steps(seq: int, episode: int, indices: list[int], render: bytes = b"") -> pb.WorkerMessage:
    """A step batch of ``indices`` in ``episode``, each step carrying ``render`` as its frame."""
    n = len(indices)
    return pb.WorkerMessage(
        seq=seq,
        steps=pb.StepBatch(
            episode=[episode] * n,
            step=indices,
            reward=[0.0] * n,
            terminated=[False] * n,
            truncated=[False] * n,
            action=["1"] * n,
            observation=["0"] * n,
            info=["{}"] * n,
            render=[render] * n,
            wall_time=[1.0] * n,
        ),
    )


def packed(
    seq: int, data: bytes, dtype: str, shape: list[int], json_too: bool = False, dict_too: bool = False
) -> pb.WorkerMessage:
    """A one-step batch whose observation travels packed (``json_too``: and as JSON text as well;
    ``dict_too``: and as a dict's field)."""
    message = steps(seq, 0, [0])
    batch = message.steps
    if not json_too:
        del batch.observation[:]
    batch.observation_array, batch.observation_dtype = data, dtype
    batch.observation_shape.extend(shape)
    if dict_too:
        batch.observation_fields.add(key="a", dtype=dtype, shape=shape)
    return message


def packed_dicts(seq: int, data: bytes, fields: list[tuple[str, str, list[int]]]) -> pb.WorkerMessage:
    """A one-step batch whose observation travels as a packed dict of ``fields`` (key, dtype, shape)."""
    message = steps(seq, 0, [0])
    batch = message.steps
    del batch.observation[:]
    batch.observation_array = data
    for key, dtype, shape in fields:
        batch.observation_fields.add(key=key, dtype=dtype, shape=shape)
    return message


def acted(seq: int, actor: list[int], proposed_action: list[str]) -> pb.WorkerMessage:
    """A two-step batch saying who acted (the columns as given, of any length)."""
    message = steps(seq, 0, [0, 1])
    message.steps.actor.extend(actor)
    message.steps.proposed_action.extend(proposed_action)
    return message


def episode(seq: int, number: int, length: int, info: str = "{}") -> pb.WorkerMessage:
    """An episode's summary, saying it had ``length`` steps."""
    return pb.WorkerMessage(
        seq=seq, episode=pb.Episode(episode=number, steps=length, info=info, terminated=True)
    )


def completed(seq: int) -> pb.WorkerMessage:
    return pb.WorkerMessage(seq=seq, lifecycle=pb.Lifecycle(phase=Phase.COMPLETED, message="played"))


def with_column(message: pb.WorkerMessage, name: str, values: list[str]) -> pb.WorkerMessage:
    """``message``'s step batch with its column ``name`` (action, observation, info, …) replaced by ``values``."""
    column = getattr(message.steps, name)
    del column[:]
    column.extend(values)
    return message


BAD_STREAMS = {
    "out of order": [started(1), steps(3, 0, [0])],
    "columns differ": [
        started(1),
        pb.WorkerMessage(seq=2, steps=pb.StepBatch(episode=[0, 0], step=[0, 1], reward=[0.0])),
    ],
    "before the worker reported STARTED": [steps(1, 0, [0])],
    "not inside the run directory": [
        started(1),
        pb.WorkerMessage(seq=2, artifact=pb.Artifact(kind="model", path="../../x")),
    ],
    "not valid JSON": [
        started(1),
        pb.WorkerMessage(seq=2, event=pb.WorkerEvent(level="INFO", message="m", data="{oops")),
    ],
    "has no body": [started(1), pb.WorkerMessage(seq=2)],
    "step 1 of episode 0 was sent again": [started(1), steps(2, 0, [0, 1]), steps(3, 0, [1, 2])],
    "step 0 of episode 0 comes after step 1 of episode 0": [started(1), steps(2, 0, [0, 1, 0])],
    "steps 2–4 of episode 0 were never sent (step 5 came after step 1)": [
        started(1),
        steps(2, 0, [0, 1]),
        steps(3, 0, [5]),
        completed(4),
    ],
    "step 2 of episode 3 was never sent (step 3 came after step 1)": [started(1), steps(2, 3, [0, 1, 3])],
    "steps 0–2 of episode 1 were never sent (step 3 came first)": [started(1), steps(2, 1, [3])],
    "step 1 of episode 0: action is not valid JSON": [
        started(1),
        with_column(steps(2, 0, [0, 1]), "action", ["1", "{oops"]),
    ],
    "step 0 of episode 0: observation is not valid JSON": [
        started(1),
        with_column(steps(2, 0, [0]), "observation", ["x" * 10]),
    ],
    "step 0 of episode 2: info is not valid JSON": [started(1), with_column(steps(2, 2, [0]), "info", [""])],
    "step 1 of episode 0: proposed_action is not valid JSON": [started(1), acted(2, [1, 2], ["", "[1,"])],
    "episode 0's info is not valid JSON": [
        started(1),
        steps(2, 0, [0, 1]),
        episode(3, 0, 2, info="{'a': 1}"),
    ],
    "episode 0's summary says 99 steps, but 3 were sent": [
        started(1),
        steps(2, 0, [0, 1, 2]),
        episode(3, 0, 99),
        completed(4),
    ],
    "packed observations: 8 bytes, but 1 of shape [4] and dtype <f4 take 16": [
        started(1),
        packed(2, bytes(8), "<f4", [4]),
    ],
    "packed observations: dtype '|O' is not a plain number type": [started(1), packed(2, bytes(8), "|O", [])],
    "packed observations: 'float99' is not a numpy dtype": [started(1), packed(2, bytes(8), "float99", [])],
    "a step batch has both packed and JSON observations": [
        started(1),
        packed(2, bytes(16), "<f4", [4], json_too=True),
    ],
    "packed observations: 5 bytes, but 1 dicts of fields screen |u1 [2, 2], hp <f4 [1] take 8": [
        started(1),
        packed_dicts(2, bytes(5), [("screen", "|u1", [2, 2]), ("hp", "<f4", [1])]),
    ],
    "packed observations: the fields' keys must be some and distinct, got ['a', 'a']": [
        started(1),
        packed_dicts(2, bytes(2), [("a", "|u1", []), ("a", "|u1", [])]),
    ],
    "a step batch packs its observations both as arrays and as dicts": [
        started(1),
        packed(2, bytes(16), "<f4", [4], dict_too=True),
    ],
    "step batch field actor has value 3; it must be one of 0 not recorded, 1 operator, 2 human": [
        started(1),
        acted(2, [1, 3], ["", ""]),
    ],
    "step batch columns differ in length: step=2, actor=1": [started(1), acted(2, [2], ['"0"', ""])],
    "step batch columns differ in length: step=2, actor=0": [started(1), acted(2, [], ['"0"', ""])],
    "step batch field proposed_action is set on a step whose actor is 0 (not recorded)": [
        started(1),
        acted(2, [0, 1], ['"0"', ""]),
    ],
}


@contextlib.contextmanager
def streams_of_a_run(
    home: Home, registry: RunRegistry, config: RunConfig
) -> Iterator[tuple[str, Callable[[list[pb.WorkerMessage], bool], StreamIngest]]]:
    """A run registered with a supervisor whose loop is not started, and how to send it a stream of
    messages (fresh or resumed) as Publish does: the first stream's end does not end the run, as when
    the worker reconnects to a restarted daemon. Yields the run id and the stream function."""
    bus = RunBus()
    supervisor = Supervisor(home, registry, bus, LocalExecutor(), "127.0.0.1:0")
    record, token, _ = supervisor.submit(config)
    run = supervisor.register(record.run_id, token, os.getpid())

    def stream(messages: list[pb.WorkerMessage], resumed: bool) -> StreamIngest:
        ingest = StreamIngest(supervisor, bus, run, resumed)
        ingest.consume(iter(messages))
        return ingest

    try:
        yield record.run_id, stream
    finally:
        supervisor.stop_loop()
        supervisor.close()


@pytest.mark.parametrize("reason", list(BAD_STREAMS))
def test_malformed_worker_messages_fail_the_run_and_the_daemon_keeps_serving(
    client: DaemonClient, home: Home, reason: str
) -> None:
    run_id, token = human_run(client)
    error = publish_raw(client, run_id, token, BAD_STREAMS[reason])
    assert error is not None and error.code() == grpc.StatusCode.INVALID_ARGUMENT
    final = client.wait_for_end(run_id, timeout=30)
    assert final.state is RunState.FAILED
    assert reason in final.reason
    if reason.startswith("step 1 of episode 0 was sent again"):
        reader = TelemetryReader(RunDir(home.run_dir(run_id)).telemetry_path)
        assert [s.step for s in reader.steps(0)] == [0, 1]  # what was stored before stays intact
        reader.close()
    # The daemon still serves: a good run completes.
    record, _ = client.submit(random_config(episodes=3))
    assert client.wait_for_end(record.run_id, timeout=60).state is RunState.COMPLETED


def test_steps_of_episodes_played_at_once_may_interleave(client: DaemonClient, home: Home) -> None:
    run_id, token = human_run(client)
    done = pb.WorkerMessage(seq=5, lifecycle=pb.Lifecycle(phase=Phase.COMPLETED, message="played"))
    messages = [started(1), steps(2, 0, [0, 1]), steps(3, 1, [0, 1]), steps(4, 0, [2]), done]
    assert publish_raw(client, run_id, token, messages) is None
    assert client.wait_for_end(run_id, timeout=30).state is RunState.COMPLETED
    reader = TelemetryReader(RunDir(home.run_dir(run_id)).telemetry_path)
    try:
        assert reader.steps_per_episode() == {0: 3, 1: 2}
    finally:
        reader.close()


def test_a_stream_opened_again_keeps_what_was_not_stored_of_episodes_played_at_once(
    home: Home, registry: RunRegistry
) -> None:
    """A worker playing two episodes at once had episode 1's steps stored, sent after episode 0's
    first two, when its stream broke. On its next stream it sends again everything unconfirmed:
    what was stored is kept once, and episode 0's steps 2 and 3, never stored, are kept although
    episode 1 is newer. (The supervisor's loop is not started, so the first stream's end does not
    end the run, as when the worker reconnects to a restarted daemon.)"""
    config = parse_run_config({"worker": "human", "env_id": "FrozenLake-v1", "budget": {"episodes": 2}})
    with streams_of_a_run(home, registry, config) as (run_id, stream):
        assert not stream([started(1), steps(2, 0, [0, 1]), steps(3, 1, [0, 1])], resumed=False).violation
        metric = pb.WorkerMessage(
            seq=6, metrics=pb.MetricBatch(metrics=[pb.Metric(tag="m", step=1, value=2.0)])
        )
        again = stream(
            [
                started(1),
                steps(2, 0, [0, 1]),  # stored: dropped
                steps(3, 1, [0, 1]),  # stored: dropped
                steps(4, 0, [2, 3]),  # never stored: kept, though episode 1 is newer
                steps(5, 1, [2]),
                metric,
            ],
            resumed=True,
        )
        assert not again.violation
        reader = TelemetryReader(RunDir(home.run_dir(run_id)).telemetry_path)
        try:
            assert reader.steps_per_episode() == {0: 4, 1: 3}
            assert [(p.step, p.value) for p in reader.metrics("m")] == [(1, 2.0)]
        finally:
            reader.close()


@pytest.mark.parametrize("store_steps", [True, False])
def test_a_stream_opened_again_goes_on_from_where_each_episode_was_and_is_held_to_it(
    home: Home, registry: RunRegistry, store_steps: bool
) -> None:
    """A worker's stream opened again sends what the daemon had not confirmed: its episodes go on
    from the step after the last one stored, not from 0, and a step missing there still fails the
    run. A run that stores no steps cannot say where they were: what comes is taken as it comes."""
    config = parse_run_config(
        {
            "worker": "human",
            "env_id": "FrozenLake-v1",
            "budget": {"episodes": 3},
            "telemetry": {"store_steps": store_steps},
        }
    )
    with streams_of_a_run(home, registry, config) as (_run_id, stream):
        assert not stream([started(1), steps(2, 0, [0, 1]), steps(3, 1, [0, 1])], resumed=False).violation
        again = [started(1), steps(2, 0, [2, 3]), steps(3, 1, [2]), steps(4, 2, [0]), episode(5, 0, 4)]
        assert not stream(again, resumed=True).violation
        gap = stream([started(1), steps(2, 1, [5])], resumed=True).violation
        if store_steps:
            assert gap.startswith("steps 3–4 of episode 1 were never sent (step 5 came after step 2)"), gap
        else:
            assert not gap


def test_a_run_that_stores_no_steps_is_held_to_the_same_order_and_summaries(
    client: DaemonClient, home: Home
) -> None:
    config = parse_run_config(
        {
            "worker": "human",
            "env_id": "FrozenLake-v1",
            "budget": {"episodes": 2},
            "telemetry": {"store_steps": False},
        }
    )
    good, good_token = client.submit(config)
    played = [
        started(1),
        steps(2, 0, [0, 1]),
        steps(3, 1, [0]),
        steps(4, 0, [2]),
        episode(5, 0, 3),
        episode(6, 1, 1),
        completed(7),
    ]
    assert publish_raw(client, good.run_id, good_token, played) is None
    assert client.wait_for_end(good.run_id, timeout=30).state is RunState.COMPLETED
    reader = TelemetryReader(RunDir(home.run_dir(good.run_id)).telemetry_path)
    try:
        assert reader.step_count() == 0
        assert [e.steps for e in reader.episodes()] == [3, 1]
    finally:
        reader.close()

    for messages, reason in (
        ([started(1), steps(2, 0, [0, 1]), steps(3, 0, [5]), completed(4)], "steps 2–4 of episode 0"),
        ([started(1), steps(2, 0, [0, 1]), episode(3, 0, 99), completed(4)], "says 99 steps, but 2"),
    ):
        bad, bad_token = client.submit(config)
        error = publish_raw(client, bad.run_id, bad_token, messages)
        assert error is not None and error.code() == grpc.StatusCode.INVALID_ARGUMENT, error
        final = client.wait_for_end(bad.run_id, timeout=30)
        assert final.state is RunState.FAILED and reason in final.reason, final.reason


def test_a_repeated_step_on_a_stream_kept_open_is_refused_naming_it(client: DaemonClient, home: Home) -> None:
    run_id, token = human_run(client)
    release = threading.Event()

    def kept_open() -> Iterator[pb.WorkerMessage]:
        yield from (started(1), steps(2, 0, [0, 1]), steps(3, 0, [1, 2]))
        release.wait(60)  # the worker sends nothing more, and does not close its stream

    try:
        error = publish_raw(client, run_id, token, kept_open())
    finally:
        release.set()
    assert error is not None and error.code() == grpc.StatusCode.INVALID_ARGUMENT, error
    assert "step 1 of episode 0 was sent again" in (error.details() or "")
    final = client.wait_for_end(run_id, timeout=30)
    assert final.state is RunState.FAILED
    assert final.reason.startswith("step 1 of episode 0 was sent again"), final.reason
    reader = TelemetryReader(RunDir(home.run_dir(run_id)).telemetry_path)
    assert [s.step for s in reader.steps(0)] == [0, 1]
    reader.close()


def test_a_stolen_token_cannot_publish_for_another_run(client: DaemonClient) -> None:
    run_a, token_a = human_run(client)
    run_b, _token_b = human_run(client)
    channel = grpc.insecure_channel(client.info.address)
    stub = pb_grpc.WorkerServiceStub(channel)
    with pytest.raises(grpc.RpcError) as info:
        stub.RegisterWorker(
            pb.RegisterWorkerRequest(run_id=run_b, run_token=token_a),
            metadata=[("authorization", f"Bearer {token_a}")],
            timeout=10,
        )
    assert info.value.code() == grpc.StatusCode.UNAUTHENTICATED
    channel.close()
    assert run_a != run_b


def test_a_client_driven_run_completes_through_the_sdk(client: DaemonClient, home: Home) -> None:
    run_id, token = human_run(client)
    session = WorkerSession(client.info.address, run_id, token)
    registration = session.start()
    assert registration.config["worker"] == "human"
    session.started("grid")
    for i in range(5):
        session.step(0, i, 1.0 if i == 4 else 0.0, i == 4, False, "2", str(i))
    session.episode(0, steps=5, total_reward=1.0, terminated=True, truncated=False, started_at=1.0)
    session.finish()
    final = client.wait_for_end(run_id, timeout=30)
    assert final.state is RunState.COMPLETED
    reader = TelemetryReader(RunDir(home.run_dir(run_id)).telemetry_path)
    assert [s.observation for s in reader.steps(0)] == ["0", "1", "2", "3", "4"]
    assert reader.episode(0).total_reward == 1.0
    reader.close()


@pytest.mark.parametrize("daemon_args", [["--heartbeat-timeout", "2"]])
def test_a_silent_worker_fails_with_heartbeat_lost(client: DaemonClient) -> None:
    run_id, token = human_run(client)
    session = WorkerSession(client.info.address, run_id, token, heartbeat_seconds=3600)
    session.start()
    session.started("grid")
    final = client.wait_for_end(run_id, timeout=30)
    assert final.state is RunState.FAILED
    assert "heartbeat lost" in final.reason
    wait_until(lambda: session.stop_requested.is_set(), 10, "the worker to be told to stop")
    session.close()  # the suite's guard checks that its threads end


def test_a_finish_no_daemon_confirms_fails_and_still_lets_go_of_the_daemon(client: DaemonClient) -> None:
    run_id, token = human_run(client)
    session = WorkerSession(client.info.address, run_id, token, reconnect_seconds=1)
    session.start()
    session.started("grid")
    session.step(0, 0, 0.0, False, False, "0", "0")
    stop_daemon(client)
    with pytest.raises(WorkerError, match="lost the daemon"):
        session.finish(timeout=10)
    # Nothing more to do: the suite's guard checks that the session's threads end.


def _collect(stream: Iterator[TelemetryEvent], into: queue.Queue[TelemetryEvent]) -> None:
    try:
        for event in stream:
            into.put(event)
    except Exception:
        return


def test_kill_9_of_a_worker_fails_the_run_and_keeps_every_step_it_sent(
    client: DaemonClient, home: Home, registry: RunRegistry
) -> None:
    record, _ = client.submit(random_config("CartPole-v1", timesteps=50_000_000))
    stream = client.subscribe(record.run_id, credits=1_000_000)
    events: queue.Queue[TelemetryEvent] = queue.Queue()
    threading.Thread(target=_collect, args=(stream, events), daemon=True).start()
    seen: set[tuple[int, int]] = set()

    def enough_steps() -> bool:
        while not events.empty():
            event = events.get()
            if isinstance(event, StepBatch):
                seen.update((row[0], row[1]) for row in event.rows)
        return len(seen) >= 5000

    wait_until(enough_steps, 60, "5000 steps to reach the viewer")
    pid = registry.get(record.run_id).pid
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    final = client.wait_for_end(record.run_id, timeout=60)
    stream.close()
    enough_steps()
    assert final.state is RunState.FAILED
    assert final.exit_code == -9
    assert "killed by signal 9" in final.reason
    reader = TelemetryReader(RunDir(home.run_dir(record.run_id)).telemetry_path)
    stored = {(s.episode, s.step) for e in reader.steps_per_episode() for s in reader.steps(e)}
    reader.close()
    assert seen <= stored


def test_cancel_stops_the_whole_process_group(client: DaemonClient, registry: RunRegistry) -> None:
    record, _ = client.submit(random_config("CartPole-v1", timesteps=50_000_000))
    wait_until(lambda: client.get_run(record.run_id).record.state == "RUNNING", 60, "the run to start")
    pid = registry.get(record.run_id).pid
    assert pid is not None
    client.cancel(record.run_id)
    final = client.wait_for_end(record.run_id, timeout=60)
    assert final.state is RunState.CANCELLED
    assert final.reason == "cancelled by user"
    wait_until(lambda: not process_alive(pid), 10, "the worker to be gone")


@pytest.mark.parametrize("daemon_args", [["--max-concurrent", "1", "--cancel-grace", "3"]])
def test_concurrency_limit_keeps_the_rest_queued_in_order(client: DaemonClient) -> None:
    runs = [client.submit(random_config("CartPole-v1", timesteps=50_000_000))[0].run_id for _ in range(3)]
    wait_until(lambda: client.get_run(runs[0]).record.state == "RUNNING", 60, "the first run to start")
    assert [client.get_run(r).record.state for r in runs[1:]] == ["QUEUED", "QUEUED"]
    client.cancel(runs[0])
    wait_until(lambda: client.get_run(runs[1]).record.state == "RUNNING", 60, "the second run to start")
    assert client.get_run(runs[2]).record.state == "QUEUED"
    client.cancel(runs[2])  # a queued run is cancelled without ever starting
    assert client.get_run(runs[2]).record.state == "CANCELLED"
    client.cancel(runs[1])
    assert client.wait_for_end(runs[1], timeout=60).state is RunState.CANCELLED


def test_kill_9_of_the_daemon_is_reconciled_by_the_next_one(home: Home, daemon_args: list[str]) -> None:
    client = DaemonClient.connect(home.root, daemon_args=daemon_args)
    registry = RunRegistry(home.registry_path)
    try:
        gone, _ = client.submit(random_config("CartPole-v1", timesteps=50_000_000))
        stalled, _ = client.submit(random_config("CartPole-v1", timesteps=50_000_000))
        for run in (gone, stalled):
            wait_until(
                lambda run=run: client.get_run(run.run_id).record.state == "RUNNING", 60, "runs to start"
            )
        gone_pid = registry.get(gone.run_id).pid
        stalled_pid = registry.get(stalled.run_id).pid
        assert gone_pid and stalled_pid
        os.kill(stalled_pid, signal.SIGSTOP)  # alive, but it will not notice the daemon is gone
        os.kill(client.info.pid, signal.SIGKILL)
        client.close()
        # One worker dies while no daemon watches.
        os.kill(gone_pid, signal.SIGKILL)
        wait_until(lambda: not process_alive(gone_pid), 60, "the orphaned worker to exit")

        client = DaemonClient.connect(home.root, daemon_args=daemon_args)
        lost = client.get_run(gone.run_id).record
        assert lost.state == "LOST"
        assert "vanished" in lost.reason
        assert client.get_run(stalled.run_id).record.state == "RUNNING"  # still alive: kept
        os.kill(stalled_pid, signal.SIGKILL)
        final = client.wait_for_end(stalled.run_id, timeout=60)
        assert final.state is RunState.FAILED
        history = [c.to_state for c in client.get_run(gone.run_id).history]
        assert history == ["QUEUED", "STARTING", "RUNNING", "LOST"]
    finally:
        kill_run_workers(home)
        stop_daemon(client)
        registry.close()


def test_viewer_credits_coalesce_steps_and_report_starved_then_resumed(client: DaemonClient) -> None:
    run_id, token = human_run(client)
    stream = client.subscribe(run_id, credits=1)
    events: queue.Queue[TelemetryEvent] = queue.Queue()
    threading.Thread(target=_collect, args=(stream, events), daemon=True).start()
    first = events.get(timeout=10)
    assert isinstance(first, StateTransition) and first.to_state is RunState.STARTING

    session = WorkerSession(client.info.address, run_id, token, batch_steps=1)
    session.start()
    session.started("grid")
    for i in range(10):
        session.step(0, i, 0.0, i == 9, False, "0", str(i))
    session.episode(0, steps=10, total_reward=0.0, terminated=True, truncated=False, started_at=1.0)

    def next_of(kind: type[Any]) -> Any:
        while True:
            event = events.get(timeout=10)
            if isinstance(event, kind):
                return event
            assert isinstance(event, (StateTransition, Lifecycle, Starved, StepBatch, Resumed)), event

    received: list[type[Any]] = []
    while True:
        event = events.get(timeout=10)
        received.append(type(event))
        if isinstance(event, EpisodeRecord):
            break
    # One credit: one step batch, then STARVED; the episode arrives regardless.
    assert received.count(StepBatch) == 1
    assert Starved in received
    stream.grant(4)
    latest = next_of(StepBatch)
    assert [row[6] for row in latest.rows] == ["9"]  # the latest frame wins
    resumed = next_of(Resumed)
    assert resumed.coalesced == 8
    session.finish()
    assert client.wait_for_end(run_id, timeout=30).state is RunState.COMPLETED
    stream.close()


def test_a_starved_viewer_never_costs_storage_a_step(client: DaemonClient, home: Home) -> None:
    record, _ = client.submit(random_config("CartPole-v1", timesteps=20_000))
    stream = client.subscribe(record.run_id, credits=0)
    final = client.wait_for_end(record.run_id, timeout=120)
    stream.close()
    assert final.state is RunState.COMPLETED
    reader = TelemetryReader(RunDir(home.run_dir(record.run_id)).telemetry_path)
    assert reader.step_count() == 20_000
    assert RunDir(home.run_dir(record.run_id)).read_manifest().final_state is RunState.COMPLETED
    reader.close()


def test_a_live_worker_reattaches_to_a_restarted_daemon_and_loses_nothing(
    home: Home, daemon_args: list[str]
) -> None:
    budget = 200_000
    client = DaemonClient.connect(home.root, daemon_args=daemon_args)
    try:
        record, _ = client.submit(random_config("CartPole-v1", timesteps=budget))
        wait_until(lambda: client.get_run(record.run_id).progress.steps > 2000, 60, "steps to be stored")
        os.kill(client.info.pid, signal.SIGKILL)
        client.close()
        client = DaemonClient.connect(home.root, daemon_args=daemon_args)
        final = client.wait_for_end(record.run_id, timeout=180)
        assert final.state is RunState.COMPLETED, final.reason
        history = [c.to_state for c in client.get_run(record.run_id).history]
        assert history == ["QUEUED", "STARTING", "RUNNING", "COMPLETED"]
        reader = TelemetryReader(RunDir(home.run_dir(record.run_id)).telemetry_path)
        assert reader.step_count() == budget
        per_episode = reader.steps_per_episode()
        episodes = reader.episodes()
        assert [e.episode for e in episodes] == list(range(len(episodes)))
        assert all(per_episode[e.episode] == e.steps for e in episodes)
        reader.close()
    finally:
        kill_run_workers(home)
        stop_daemon(client)
