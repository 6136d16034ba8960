"""Steps of a multi-agent env name their agent and episodes carry each agent's return, through the SDK
and a real daemon into storage; the ingest holds each agent to its own end, and a batch of a single
agent's steps carries no agent column."""

from __future__ import annotations

from collections.abc import Iterator

import grpc
import pytest
from gym_gui_sdk import trainer_pb2 as pb
from gym_gui_sdk.worker import WorkerSession

from gym_gui.core.records import StepBatch
from gym_gui.core.states import RunState
from gym_gui.protocol import convert
from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.home import Home
from gym_gui.storage.run_dir import RunDir
from gym_gui.storage.telemetry import TelemetryReader
from tests.daemon.test_faults import human_run, publish_raw, started, steps
from tests.fixtures import SHARED_BUNDLES
from tests.support import module_daemon


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[DaemonClient, Home]]:
    with module_daemon(tmp_path_factory.mktemp("agents_home"), SHARED_BUNDLES, []) as d:
        yield d


def test_a_turn_based_game_stores_each_seats_turns_and_returns(daemon: tuple[DaemonClient, Home]) -> None:
    client, home = daemon
    run_id, token = human_run(client)
    session = WorkerSession(client.info.address, run_id, token, batch_steps=4)  # a game spans batches
    session.start()
    session.started("none")
    seats = ["player_0", "player_1"] * 3
    # player_1's last move (step 4) ends its part; player_0's winning move (step 5) comes after it.
    for step, seat in enumerate(seats[:4]):
        session.step(0, step, 0.0, False, False, str(step), "0", agent=seat)
    session.steps(
        [0, 0], [4, 5], [-1.0, 1.0], [True, True], [False, False], ["4", "5"], ["0", "0"], agent=seats[4:]
    )
    session.episode(
        0, steps=6, total_reward=0.0, terminated=True, truncated=False, started_at=1.0,
        agent_returns=[("player_0", 1.0), ("player_1", -1.0)],
    )  # fmt: skip
    session.finish()
    final = client.wait_for_end(run_id, timeout=60)
    assert final.state is RunState.COMPLETED, final.reason

    reader = TelemetryReader(RunDir(home.run_dir(run_id)).telemetry_path)
    try:
        assert [(s.step, s.agent, s.action) for s in reader.steps(0)] == [
            (step, seat, str(step)) for step, seat in enumerate(seats)
        ]
        assert reader.episode(0).agent_returns == (("player_0", 1.0), ("player_1", -1.0))
    finally:
        reader.close()


def test_a_batch_of_a_single_agents_steps_carries_no_agent_column_and_a_viewer_reads_the_agents() -> None:
    session = WorkerSession("127.0.0.1:1", "run", "token")  # not started: the batch is taken by hand
    session.step(0, 0, 0.0, False, False, "1", "0")
    session.episode(0, 1, 0.0, True, False, 1.0)
    plain = session._batch.take()
    assert (
        plain is not None and list(plain.steps.agent) == [] and len(convert.step_rows(plain.steps)[0]) == 10
    )
    assert convert.episode_record(plain.steps.episodes[0]).agent_returns == ()
    session.step(1, 0, 0.0, False, False, "1", "0")
    session.step(1, 1, 0.0, False, False, "1", "0", agent="player_1", actor="operator")
    session.episode(1, 2, 0.0, True, False, 1.0, agent_returns=[("player_1", -1.0), ("player_0", 1.0)])
    mixed = session._batch.take()
    assert mixed is not None and list(mixed.steps.agent) == ["", "player_1"]
    # What a viewer (Live, `gym-gui watch`) makes of the batch the daemon passes on: each row ends
    # with who acted and its agent.
    seen = convert.telemetry_event(pb.TelemetryEvent(steps=mixed.steps))
    assert isinstance(seen, StepBatch)
    assert [row[10:] for row in seen.rows] == [("", "", ""), ("operator", "", "player_1")]
    summary = convert.episode_record(mixed.steps.episodes[0])
    assert summary.agent_returns == (("player_1", -1.0), ("player_0", 1.0))
    with pytest.raises(ValueError, match="each agent once"):
        session.episode(0, 3, 0.0, True, False, 1.0, agent_returns=[("a", 1.0), ("a", 2.0)])
    with pytest.raises(TypeError, match="agent must be text"):
        session.step(2, 0, 0.0, False, False, "1", "0", agent=0)  # type: ignore[arg-type]


def seated(
    seq: int, episode: int, indices: list[int], agents: list[str], ends: list[bool]
) -> pb.WorkerMessage:
    message = steps(seq, episode, indices)
    message.steps.agent.extend(agents)
    del message.steps.terminated[:]
    message.steps.terminated.extend(ends)
    return message


def summary(seq: int, length: int, returns: list[tuple[str, float]]) -> pb.WorkerMessage:
    agent_returns = [pb.AgentReturn(agent=a, total_reward=r) for a, r in returns]
    return pb.WorkerMessage(
        seq=seq, episode=pb.Episode(episode=0, steps=length, terminated=True, agent_returns=agent_returns)
    )


BAD_STREAMS = {
    "step 2 of episode 0 is agent 'a''s, after its last step": [
        started(1),
        seated(2, 0, [0, 1, 2], ["a", "b", "a"], [True, False, False]),
    ],
    "episode 0's summary gives no return for agent 'b', whose steps were sent": [
        started(1),
        seated(2, 0, [0, 1], ["a", "b"], [True, True]),
        summary(3, 2, [("a", 1.0)]),
    ],
    "step batch columns differ in length: step=2, agent=1": [
        started(1),
        seated(2, 0, [0, 1], ["a"], [False] * 2),
    ],
}


@pytest.mark.parametrize("reason", list(BAD_STREAMS))
def test_an_agent_out_of_turn_fails_the_run_naming_it(daemon: tuple[DaemonClient, Home], reason: str) -> None:
    client, _home = daemon
    run_id, token = human_run(client)
    error = publish_raw(client, run_id, token, BAD_STREAMS[reason])
    assert error is not None and error.code() == grpc.StatusCode.INVALID_ARGUMENT
    final = client.wait_for_end(run_id, timeout=30)
    assert final.state is RunState.FAILED
    assert reason in final.reason
