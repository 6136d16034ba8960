"""Runs on a real local Ray head through a real daemon: the Ray executor end to end.

Each run is a Ray job whose fixed launcher claims the run's command from the daemon; these tests
check that runs complete with their telemetry, metrics and logs, that a cancel, a killed worker,
a job stopped on the cluster and a head that cannot be reached each end the run as they should,
and that no secret of a run reaches Ray.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from gym_gui.core.config import RunConfig, parse_run_config
from gym_gui.core.states import RunState
from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.home import Home
from gym_gui.storage.run_dir import RunDir
from gym_gui.storage.telemetry import TelemetryReader
from tests.cluster.conftest import RayHead
from tests.fixtures import SHARED_BUNDLES
from tests.support import (
    assert_one_line_error,
    files_containing,
    gym_gui,
    module_daemon,
    non_loopback_ipv4,
    stop_daemon,
    wait_until,
)
from tests.sweeps.test_spec import CONFIG as PPO

SECRET = "gymgui-ray-secret-5b1d7e"


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[DaemonClient, Home]]:
    root = tmp_path_factory.mktemp("ray_home")
    with module_daemon(root, SHARED_BUNDLES, ["--cancel-grace", "10", "--max-concurrent", "4"]) as running:
        yield running


def on_ray(head: RayHead, data: dict[str, Any], **executor: Any) -> RunConfig:
    return parse_run_config({**data, "executor": {"kind": "ray", "ray_address": head.address, **executor}})


def random_run(head: RayHead, episodes: int = 5) -> RunConfig:
    data = {"worker": "random", "env_id": "FrozenLake-v1", "seed": 0, "budget": {"episodes": episodes}}
    return on_ray(head, data)


def job_of(home: Home, run_id: str) -> str:
    manifest = json.loads(RunDir(home.run_dir(run_id)).manifest_path.read_text())
    assert manifest["executor"]["kind"] == "ray", manifest
    return str(manifest["executor"]["job_id"])


def reserved(head: RayHead, job_id: str) -> dict[str, float]:
    """What Ray reserved for a job's entrypoint: the resources of the actor that supervises it."""
    from ray.util.state import list_actors

    actors = list_actors(
        address=head.address, filters=[("name", "=", f"_ray_internal_job_actor_{job_id}")], detail=True
    )
    assert len(actors) == 1, actors
    return dict(actors[0].required_resources)


def process_of(run_id: str, marker: bytes) -> int | None:
    """The process on this node whose environment names ``run_id`` and holds ``marker`` in its
    environment or command line. The worker alone holds the run token; Ray's job supervisor
    (an actor, ``ray::JobSupervisor``) and the launcher get the job's runtime env with the run id."""
    needle = f"GYM_GUI_RUN_ID={run_id}".encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if needle in environ.split(b"\0") and (marker in environ or marker in cmdline):
            return int(entry.name)
    return None


def test_a_random_run_on_ray_completes_with_its_telemetry_and_no_secret_reaches_ray(
    ray_head: RayHead, daemon: tuple[DaemonClient, Home]
) -> None:
    client, home = daemon
    record, _ = client.submit(random_run(ray_head), {"WANDB_API_KEY": SECRET})
    final = client.wait_for_end(record.run_id, timeout=180)
    assert final.state is RunState.COMPLETED, final.reason
    reader = TelemetryReader(RunDir(home.run_dir(record.run_id)).telemetry_path)
    try:
        assert reader.episode_count() == 5
        assert reader.step_count() > 0
    finally:
        reader.close()
    job = ray_head.client.get_job_info(job_of(home, record.run_id))
    assert job.status.value == "SUCCEEDED"
    # The entrypoint is the constant launcher; nothing of the run but its id and a spent claim is Ray's.
    python = shlex.split(job.entrypoint)[0]
    assert job.entrypoint == shlex.join([python, "-m", "gym_gui_sdk.launcher"])
    seen = json.dumps([job.entrypoint, job.runtime_env, job.metadata])
    assert SECRET not in seen
    assert record.run_id in seen
    assert files_containing(ray_head.temp_dir, SECRET.encode()) == []


def test_a_cleanrl_ppo_run_on_ray_stores_its_metrics_and_its_logs_for_the_drawer(
    ray_head: RayHead, daemon: tuple[DaemonClient, Home]
) -> None:
    client, home = daemon
    record, _ = client.submit(on_ray(ray_head, PPO, cpus=1), {"WANDB_API_KEY": SECRET})
    final = client.wait_for_end(record.run_id, timeout=300)
    assert final.state is RunState.COMPLETED, final.reason
    files = RunDir(home.run_dir(record.run_id))
    reader = TelemetryReader(files.telemetry_path)
    try:
        assert reader.metric_count("charts/episodic_return") > 0
    finally:
        reader.close()
    # The launcher wrote the worker's output into the files the window's log drawer reads,
    # and into the job's own logs.
    logged = files.worker_stdout_log.read_text() + files.worker_stderr_log.read_text()
    assert "SPS" in logged or "global_step" in logged, logged[-2000:]
    job_id = job_of(home, record.run_id)
    job_logs = ray_head.client.get_job_logs(job_id)
    assert "SPS" in job_logs or "global_step" in job_logs, job_logs[-2000:]
    assert reserved(ray_head, job_id) == {"CPU": 1.0}
    assert files_containing(ray_head.temp_dir, SECRET.encode()) == []


def test_cancelling_a_ray_run_stops_its_job_and_ends_it_cancelled(
    ray_head: RayHead, daemon: tuple[DaemonClient, Home]
) -> None:
    client, home = daemon
    record, _ = client.submit(random_run(ray_head, episodes=1_000_000))
    client.wait_for_state(record.run_id, RunState.RUNNING, timeout=120)
    client.cancel(record.run_id)
    final = client.wait_for_end(record.run_id, timeout=60)
    assert final.state is RunState.CANCELLED, final.reason
    job_id = job_of(home, record.run_id)
    wait_until(lambda: ray_head.client.get_job_status(job_id).value == "STOPPED", 30, "the job to stop")


def test_a_killed_worker_process_on_the_node_fails_the_run_naming_the_signal(
    ray_head: RayHead, daemon: tuple[DaemonClient, Home]
) -> None:
    client, _home = daemon
    record, _ = client.submit(random_run(ray_head, episodes=1_000_000))
    client.wait_for_state(record.run_id, RunState.RUNNING, timeout=120)
    pid = wait_until(lambda: process_of(record.run_id, b"GYM_GUI_RUN_TOKEN="), 30, "the worker process")
    os.kill(pid, signal.SIGKILL)
    final = client.wait_for_end(record.run_id, timeout=60)
    assert final.state is RunState.FAILED
    assert "killed by signal 9" in final.reason


def test_a_job_whose_ray_supervisor_dies_fails_the_run_with_rays_message(
    ray_head: RayHead, daemon: tuple[DaemonClient, Home]
) -> None:
    client, _home = daemon
    record, _ = client.submit(random_run(ray_head, episodes=1_000_000))
    client.wait_for_state(record.run_id, RunState.RUNNING, timeout=120)
    pid = wait_until(lambda: process_of(record.run_id, b"JobSupervisor"), 30, "the job's supervisor")
    os.kill(pid, signal.SIGKILL)
    final = client.wait_for_end(record.run_id, timeout=60)
    assert final.state is RunState.FAILED
    assert final.reason.startswith("Ray job raysubmit_")
    assert "Job supervisor actor died" in final.reason
    wait_until(lambda: process_of(record.run_id, b"GYM_GUI_RUN_TOKEN=") is None, 30, "the worker to end")


def test_a_job_stopped_on_the_cluster_ends_the_run_cancelled_saying_so(
    ray_head: RayHead, daemon: tuple[DaemonClient, Home]
) -> None:
    client, home = daemon
    record, _ = client.submit(random_run(ray_head, episodes=1_000_000))
    client.wait_for_state(record.run_id, RunState.RUNNING, timeout=120)
    job_id = job_of(home, record.run_id)
    ray = Path(sys.executable).parent / "ray"
    stopped = subprocess.run(
        [str(ray), "job", "stop", "--address", ray_head.address, job_id],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert stopped.returncode == 0, stopped.stderr
    final = client.wait_for_end(record.run_id, timeout=60)
    assert final.state is RunState.CANCELLED
    assert "stopped on the cluster, not by gym_gui" in final.reason


def test_an_unreachable_ray_head_fails_the_run_before_launch_naming_the_address(
    daemon: tuple[DaemonClient, Home],
) -> None:
    client, home = daemon
    nowhere = "http://127.0.0.1:9"
    data = {"worker": "random", "env_id": "FrozenLake-v1", "budget": {"episodes": 1}}
    record, _ = client.submit(parse_run_config({**data, "executor": {"kind": "ray", "ray_address": nowhere}}))
    final = client.wait_for_end(record.run_id, timeout=60)
    assert final.state is RunState.FAILED
    assert final.reason.startswith("not launched: cannot reach the Ray head at http://127.0.0.1:9")
    assert json.loads(RunDir(home.run_dir(record.run_id)).manifest_path.read_text())["executor"] is None


def test_the_train_command_line_runs_on_ray_with_its_resources(
    ray_head: RayHead, daemon: tuple[DaemonClient, Home]
) -> None:
    _client, home = daemon
    result = gym_gui(
        "train", "--worker", "random", "--env", "FrozenLake-v1", "--episodes", "3",
        "--executor", "ray", "--ray-address", ray_head.address, "--cpus", "0.5", "--gpus", "0",
        home=home.root,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    run_id = result.stdout.split()[1]
    assert reserved(ray_head, job_of(home, run_id)) == {"CPU": 0.5}
    refused = gym_gui(
        "train", "--worker", "random", "--env", "FrozenLake-v1", "--episodes", "3", "--executor", "ray",
        home=home.root,
    )  # fmt: skip
    assert_one_line_error(refused, "executor", "ray_address")


def test_a_sweep_started_with_executor_ray_runs_every_trial_on_ray(
    ray_head: RayHead, daemon: tuple[DaemonClient, Home], tmp_path: Path
) -> None:
    client, home = daemon
    spec = tmp_path / "sweep.yaml"
    spec.write_text(
        yaml.safe_dump(
            {
                "config": PPO,
                "space": {"learning-rate": {"type": "float", "low": 1e-4, "high": 1e-2, "log": True}},
                "objective": {"metric": "charts/episodic_return", "aggregate": "last_mean", "window": 20},
                "trials": 2,
                "parallel": 2,
            }
        )
    )
    result = gym_gui(
        "sweep", "start", str(spec), "--executor", "ray", "--ray-address", ray_head.address, "--wait",
        home=home.root, timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    sweep_id = result.stdout.split()[1]
    runs = [run for run in client.list_runs() if run.sweep_id == sweep_id]
    assert len(runs) == 2
    for run in runs:
        assert run.state is RunState.COMPLETED, run.reason
        job_of(home, run.run_id)


def test_a_ray_run_is_adopted_by_a_restarted_daemon_and_still_answers_its_cancel(
    ray_head: RayHead, home: Home, daemon_args: list[str]
) -> None:
    client = DaemonClient.connect(home.root, daemon_args=daemon_args)
    try:
        record, _ = client.submit(random_run(ray_head, episodes=1_000_000))
        wait_until(lambda: client.get_run(record.run_id).progress.steps > 1000, 120, "steps to be stored")
        os.kill(client.info.pid, signal.SIGKILL)
        client.close()
        client = DaemonClient.connect(home.root, daemon_args=daemon_args)
        before = client.get_run(record.run_id).progress.steps
        wait_until(
            lambda: client.get_run(record.run_id).progress.steps > before + 1000,
            120,
            "the worker to reattach",
        )
        client.cancel(record.run_id)
        final = client.wait_for_end(record.run_id, timeout=60)
        assert final.state is RunState.CANCELLED, final.reason
        job_id = job_of(home, record.run_id)
        wait_until(lambda: ray_head.client.get_job_status(job_id).value == "STOPPED", 30, "the job to stop")
    finally:
        stop_daemon(client)


def test_a_ray_run_dials_back_a_daemon_bound_beyond_loopback_over_tls(
    ray_head: RayHead, home: Home, daemon_args: list[str]
) -> None:
    address = non_loopback_ipv4()
    client = DaemonClient.connect(home.root, daemon_args=[*daemon_args, "--host", address])
    try:
        assert client.info.address.startswith(address) and client.info.tls_ca
        record, _ = client.submit(random_run(ray_head), {"WANDB_API_KEY": SECRET})
        final = client.wait_for_end(record.run_id, timeout=180)
        assert final.state is RunState.COMPLETED, final.reason
        job = ray_head.client.get_job_info(job_of(home, record.run_id))
        env_vars = job.runtime_env["env_vars"]
        # The job dials the bound address, trusting the CA handed as text (a node cannot read a path here).
        assert env_vars["GYM_GUI_DAEMON_ADDRESS"] == client.info.address
        assert env_vars["GYM_GUI_TLS_CA"].startswith("-----BEGIN CERTIFICATE-----")
        assert SECRET not in json.dumps(job.runtime_env)
    finally:
        stop_daemon(client)
