"""What a client hears when a call goes wrong: invalid input is INVALID_ARGUMENT naming it in one line,
and a failure the daemon did not foresee is INTERNAL with a message, its traceback in the daemon log."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from concurrent import futures
from pathlib import Path
from typing import Any

import grpc
import pytest
from gym_gui_sdk import trainer_pb2 as pb
from gym_gui_sdk import trainer_pb2_grpc as pb_grpc

from gym_gui.core.config import parse_run_config
from gym_gui.core.errors import ConfigError
from gym_gui.core.states import RunState
from gym_gui.daemon.service import handled
from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.home import Home
from tests.support import assert_one_line_error, gym_gui


@pytest.fixture
def trained_run(client: DaemonClient, cleanrl_python: Path) -> str:
    """A CleanRL training run to evaluate (a dry run: its directory is all an evaluation's checks need)."""
    config = parse_run_config(
        {
            "worker": "cleanrl",
            "algorithm": "ppo",
            "env_id": "CartPole-v1",
            "budget": {"timesteps": 1000},
            "dry_run": True,
        }
    )
    record, _ = client.submit(config)
    assert client.wait_for_end(record.run_id, timeout=120).state is RunState.COMPLETED
    return record.run_id


CHECKPOINTS = {
    "a path longer than any": ("checkpoints/" + "a" * 5000, "is 5012 bytes long"),
    "a file name longer than any": ("checkpoints/" + "a" * 300, "has a part of 300 bytes"),
    "a NUL": ("checkpoints/final\x00.cleanrl_model", "holds a control character"),
    "a newline": ("checkpoints/final\n.cleanrl_model", "holds a control character"),
}


@pytest.mark.parametrize("case", list(CHECKPOINTS))
def test_an_evaluations_checkpoint_that_names_no_possible_file_is_invalid_input(
    client: DaemonClient, home: Home, trained_run: str, case: str
) -> None:
    checkpoint, words = CHECKPOINTS[case]
    config = json.loads(client.evaluation_config(trained_run, 1).model_dump_json())
    config["evaluation"]["checkpoint"] = checkpoint
    runs = client.list_runs()
    # The daemon refuses it itself (the JSON as any client may send it).
    with pytest.raises(ConfigError) as refused:
        client.submit_json(json.dumps(config))
    message = str(refused.value)
    assert "field 'evaluation.checkpoint'" in message and words in message
    assert "\n" not in message and len(message) < 400
    assert client.list_runs() == runs
    if "\x00" not in checkpoint:  # an argument cannot hold a NUL
        result = gym_gui("eval", trained_run, "--checkpoint", checkpoint, home=home.root)
        assert_one_line_error(result, "field 'evaluation.checkpoint'", words)


class Failing(pb_grpc.TrainerServiceServicer):
    """A handler with a bug in it, behind the daemon's own handling of errors."""

    @handled
    def GetRun(self, request: pb.RunRef, context: grpc.ServicerContext) -> pb.RunDetail:
        raise RuntimeError(f"no such thing as {request.run_id}")

    @handled
    def WatchRuns(self, request: pb.WatchRunsRequest, context: grpc.ServicerContext) -> Iterator[pb.RunEvent]:
        yield pb.RunEvent(removed="first")
        raise KeyError("a key that was not there")


@pytest.fixture
def failing_server() -> Iterator[pb_grpc.TrainerServiceStub]:
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    pb_grpc.add_TrainerServiceServicer_to_server(Failing(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    try:
        yield pb_grpc.TrainerServiceStub(channel)
    finally:
        channel.close()
        server.stop(None)


def test_a_failure_no_handler_foresaw_is_internal_with_a_message_and_logged_with_its_traceback(
    failing_server: pb_grpc.TrainerServiceStub, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR, logger="gym_gui.daemon.service")
    with pytest.raises(grpc.RpcError) as unary:
        failing_server.GetRun(pb.RunRef(run_id="r1"), timeout=10)
    assert unary.value.code() == grpc.StatusCode.INTERNAL
    assert unary.value.details() == (
        "the daemon failed in GetRun: RuntimeError: no such thing as r1 "
        "(a bug in gym_gui: the daemon's log has the traceback)"
    )

    received: list[Any] = []
    with pytest.raises(grpc.RpcError) as streaming:
        for event in failing_server.WatchRuns(pb.WatchRunsRequest(), timeout=10):
            received.append(event.removed)
    assert received == ["first"]
    assert streaming.value.code() == grpc.StatusCode.INTERNAL
    assert "the daemon failed in WatchRuns: KeyError: 'a key that was not there'" in (
        streaming.value.details() or ""
    )

    logged = [r for r in caplog.records if r.name == "gym_gui.daemon.service"]
    assert [r.getMessage() for r in logged] == ["GetRun failed", "WatchRuns failed"]
    assert all(r.exc_info is not None for r in logged)
