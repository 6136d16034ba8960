"""A real daemon runs real random-worker runs: completion, storage, state history, bad input."""

from __future__ import annotations

import json
import subprocess
import sys

import grpc
import pytest
from gym_gui_sdk import trainer_pb2 as pb
from gym_gui_sdk import trainer_pb2_grpc as pb_grpc

from gym_gui.core.config import parse_run_config
from gym_gui.core.errors import ConfigError, InvalidRunId, RunBusy, RunNotFound, UnknownEnv
from gym_gui.core.records import RunUpdated
from gym_gui.core.states import RunState
from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.home import Home
from gym_gui.storage.registry import RunRegistry
from gym_gui.storage.run_dir import RunDir
from gym_gui.storage.telemetry import TelemetryReader
from tests.support import files_containing, random_config, wait_until


def test_frozenlake_run_stores_every_episode_and_step(client: DaemonClient, home: Home) -> None:
    record, token = client.submit(random_config(episodes=200))
    assert token == ""  # daemon-launched runs never hand their token to clients
    assert record.run_id.startswith("FrozenLake-v1__random__0__")
    final = client.wait_for_end(record.run_id, timeout=120)
    assert final.state is RunState.COMPLETED, final.reason
    assert final.exit_code == 0

    reader = TelemetryReader(RunDir(home.run_dir(record.run_id)).telemetry_path)
    episodes = reader.episodes()
    assert [e.episode for e in episodes] == list(range(200))
    per_episode = reader.steps_per_episode()
    assert all(per_episode[e.episode] == e.steps for e in episodes)
    assert reader.step_count() == sum(e.steps for e in episodes)
    assert reader.meta("render_kind") == "grid"
    first = reader.steps(0, 0, 1)[0]
    assert first.render is not None and json.loads(first.render)["game"] == "frozenlake"
    assert set(reader.metric_tags()) == {"episode/return", "episode/length"}
    reader.close()

    detail = client.get_run(record.run_id)
    assert [(c.from_state, c.to_state) for c in detail.history] == [
        (None, RunState.QUEUED),
        (RunState.QUEUED, RunState.STARTING),
        (RunState.STARTING, RunState.RUNNING),
        (RunState.RUNNING, RunState.COMPLETED),
    ]
    assert detail.progress.episodes == 200

    files = RunDir(home.run_dir(record.run_id))
    assert files.read_config().budget.episodes == 200
    manifest = files.read_manifest()
    assert manifest.command[-1] == "gym_gui_random_worker"
    assert any(p.startswith("gymnasium==") for p in manifest.environment.packages)
    assert manifest.final_state is RunState.COMPLETED and manifest.ended_at is not None
    assert files.worker_stderr_log.exists()


def test_same_seed_gives_the_same_episodes(client: DaemonClient, home: Home) -> None:
    runs = [client.submit(random_config(episodes=20))[0] for _ in range(2)]
    assert runs[0].run_id != runs[1].run_id  # same second, same seed: still unique
    returns = []
    for run in runs:
        assert client.wait_for_end(run.run_id, timeout=60).state is RunState.COMPLETED
        reader = TelemetryReader(RunDir(home.run_dir(run.run_id)).telemetry_path)
        returns.append([(e.steps, e.total_reward) for e in reader.episodes()])
        reader.close()
    assert returns[0] == returns[1]


def test_unknown_env_is_rejected_before_anything_starts(client: DaemonClient, home: Home) -> None:
    with pytest.raises(ConfigError, match="FrozenLake-v1"):
        client.submit(random_config("FrozenLke-v1"))
    # A family this machine cannot install: the refusal says why.
    with pytest.raises(ConfigError, match=r"procgen-coinrun-v0.*needs numpy < 2"):
        client.submit(random_config("procgen-coinrun-v0"))
    assert client.list_runs(include_archived=True) == []
    assert list(home.runs_dir.iterdir()) == []


@pytest.mark.parametrize(
    ("config_json", "field"),
    [
        ('{"worker": "random", "env_id": "FrozenLake-v1", "budget": {"episodes": 1}, "colour": 1}', "colour"),
        (
            '{"worker": "random", "env_id": "FrozenLake-v1", "budget": {"episodes": "many"}}',
            "budget.episodes",
        ),
        ('{"worker": "random", "env_id": "FrozenLake-v1", "budget": {}}', "budget"),
        ('{"worker": "robot", "env_id": "FrozenLake-v1", "budget": {"episodes": 1}}', "worker"),
        ('{"worker": "random", "env_id": "FrozenLake-v1", "budget": {"episodes": 1}, "seed": -1}', "seed"),
        ('{"worker": "random", "env_id": "FrozenLake-v1", ', "JSON"),
    ],
)
def test_bad_config_names_the_field(client: DaemonClient, config_json: str, field: str) -> None:
    with pytest.raises(ConfigError) as info:
        client.submit_json(config_json)
    assert field in str(info.value)


@pytest.mark.parametrize("bad_id", ["../registry", "a/b", "..", ".hidden", ""])
def test_run_ids_from_outside_are_validated(client: DaemonClient, bad_id: str) -> None:
    for call in (client.get_run, client.cancel, client.delete):
        with pytest.raises((ConfigError, InvalidRunId)):
            call(bad_id)


def test_unknown_run_is_not_found(client: DaemonClient) -> None:
    with pytest.raises(RunNotFound):
        client.get_run("CartPole-v1__random__0__1")


def test_dry_run_launches_nothing(client: DaemonClient, home: Home, registry: RunRegistry) -> None:
    record, plan = client.dry_run(random_config(), {"SERVICE_API_KEY": "hush-5d1c"})
    # The reply comes once the plan is resolved: the run has ended and the plan is in it.
    assert (record.state, record.reason) == (RunState.COMPLETED, "dry-run")
    assert plan is not None and plan.run_id == record.run_id
    assert plan.argv[-2:] == ["-m", "gym_gui_random_worker"]
    assert plan.cwd == str(home.run_dir(record.run_id))
    assert plan.env["SERVICE_API_KEY"] == "***" and plan.env["GYM_GUI_RUN_TOKEN"] == "***"
    assert registry.get(record.run_id).pid is None
    # The run keeps its record of the dry run, the same plan as the reply.
    reader = TelemetryReader(RunDir(home.run_dir(record.run_id)).telemetry_path)
    event = next(e for e in reader.events() if e.kind == "dry-run")
    data = json.loads(event.data)
    assert (data["argv"], data["env"], data["display"]) == (plan.argv, plan.env, plan.display)
    assert reader.step_count() == 0
    reader.close()
    assert not files_containing(home.root, b"hush-5d1c")


def test_preview_resolves_the_command_and_stores_nothing(client: DaemonClient, home: Home) -> None:
    plan = client.preview(random_config(), {"SERVICE_API_KEY": "hush-5d1c"})
    assert plan.argv[-2:] == ["-m", "gym_gui_random_worker"]
    # As a user would type it: gym_gui's interpreter is `python`, secrets are ***.
    assert plan.display == "SERVICE_API_KEY=*** python -m gym_gui_random_worker"
    assert plan.run_id.startswith("FrozenLake-v1__random__0__")
    assert plan.env["GYM_GUI_RUN_ID"] == plan.run_id and plan.env["GYM_GUI_RUN_TOKEN"] == "***"
    assert plan.cwd == str(home.run_dir(plan.run_id))
    assert "hush-5d1c" not in repr(plan)
    assert client.list_runs() == [] and list(home.runs_dir.iterdir()) == []
    assert not files_containing(home.root, b"hush-5d1c")

    # What submit would refuse, the preview refuses with the same message.
    with pytest.raises((ConfigError, UnknownEnv), match="NoSuchEnv-v0"):
        client.preview(random_config("NoSuchEnv-v0"))
    with pytest.raises(ConfigError, match="cannot be launched by the daemon"):
        client.preview(random_config().model_copy(update={"worker": "human"}))
    assert client.list_runs() == []


def test_delete_is_refused_while_running_then_allowed(client: DaemonClient, home: Home) -> None:
    record, _ = client.submit(random_config("CartPole-v1", timesteps=10_000_000))
    wait_until(lambda: client.get_run(record.run_id).record.state == "RUNNING", 60, "the run to start")
    with pytest.raises(RunBusy, match="cancel it"):
        client.delete(record.run_id)
    assert home.run_dir(record.run_id).exists()
    client.cancel(record.run_id)
    final = client.wait_for_end(record.run_id, timeout=60)
    assert final.state is RunState.CANCELLED
    reader = TelemetryReader(RunDir(home.run_dir(record.run_id)).telemetry_path)
    assert reader.step_count() > 0  # what the run produced before the cancel is kept
    reader.close()
    client.delete(record.run_id)
    assert not home.run_dir(record.run_id).exists()
    assert all(r.run_id != record.run_id for r in client.list_runs(include_archived=True))


def test_archive_hides_a_run_from_the_default_listing(client: DaemonClient) -> None:
    record, _ = client.submit(random_config(episodes=1))
    client.wait_for_end(record.run_id, timeout=60)
    client.archive(record.run_id)
    assert [r.run_id for r in client.list_runs()] == []
    assert [r.run_id for r in client.list_runs(include_archived=True)] == [record.run_id]
    client.archive(record.run_id, archived=False)
    assert [r.run_id for r in client.list_runs()] == [record.run_id]


def test_calls_without_the_token_are_unauthenticated(client: DaemonClient) -> None:
    channel = grpc.insecure_channel(client.info.address)
    stub = pb_grpc.TrainerServiceStub(channel)
    workers = pb_grpc.WorkerServiceStub(channel)
    for metadata in ([], [("authorization", "Bearer not-the-token")]):
        with pytest.raises(grpc.RpcError) as info:
            stub.GetHealth(pb.HealthRequest(), metadata=metadata, timeout=10)
        assert info.value.code() == grpc.StatusCode.UNAUTHENTICATED
        with pytest.raises(grpc.RpcError) as info:
            stub.ListRuns(pb.ListRunsRequest(), metadata=metadata, timeout=10)
        assert info.value.code() == grpc.StatusCode.UNAUTHENTICATED
        with pytest.raises(grpc.RpcError) as info:
            list(stub.WatchRuns(pb.WatchRunsRequest(), metadata=metadata, timeout=10))
        assert info.value.code() == grpc.StatusCode.UNAUTHENTICATED
        with pytest.raises(grpc.RpcError) as info:
            workers.RegisterWorker(
                pb.RegisterWorkerRequest(run_id="x", run_token="y"), metadata=metadata, timeout=10
            )
        assert info.value.code() == grpc.StatusCode.UNAUTHENTICATED
    channel.close()


def test_daemon_listens_on_loopback_and_keeps_its_token_private(client: DaemonClient, home: Home) -> None:
    assert client.info.address.startswith("127.0.0.1:")
    assert home.daemon_json.stat().st_mode & 0o777 == 0o600


def test_a_second_daemon_says_where_the_first_is(client: DaemonClient, home: Home) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "gym_gui.daemon", "--home", str(home.root)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 3
    assert client.info.address in result.stderr
    assert str(client.info.pid) in result.stderr
    # The first daemon still serves.
    assert client.health().pid == client.info.pid


def test_health_reports_runs_by_state(client: DaemonClient) -> None:
    record, _ = client.submit(random_config(episodes=2))
    client.wait_for_end(record.run_id, timeout=60)
    health = client.health()
    assert dict(health.runs_by_state) == {"COMPLETED": 1}
    assert health.log_path.endswith("daemon.log")


def test_clients_start_the_daemon_once(home: Home, client: DaemonClient) -> None:
    second = DaemonClient.connect(home.root)
    assert second.info.pid == client.info.pid
    second.close()


def test_a_crashing_worker_fails_with_its_exit_code_and_stderr_tail(client: DaemonClient) -> None:
    # An argument FrozenLake takes, with a value it has no map for: the worker fails making the env.
    config = random_config().model_copy(update={"env_kwargs": {"map_name": "9x9"}})
    record, _ = client.submit(config)
    final = client.wait_for_end(record.run_id, timeout=60)
    assert final.state is RunState.FAILED
    assert final.exit_code == 1
    assert final.reason.startswith("exit code 1:")
    assert "9x9" in final.reason  # the worker's own error, from its stderr


def test_watching_one_run_starts_with_that_runs_snapshot_among_many(client: DaemonClient) -> None:
    human = parse_run_config({"worker": "human", "env_id": "CartPole-v1", "budget": {"episodes": 1}})
    runs = [client.submit(human)[0].run_id for _ in range(3)]  # the daemon starts no process for these
    client.archive(runs[2])

    for run_id, include_archived in ((runs[1], False), (runs[2], True)):
        events = client.watch_runs(run_id=run_id, include_archived=include_archived)
        first = next(events)
        events.close()  # type: ignore[attr-defined]
        assert isinstance(first, RunUpdated) and first.snapshot
        assert (
            first.record.run_id == run_id and first.record.state is RunState.STARTING
        )  # awaiting its player
        assert first.record.archived is include_archived
