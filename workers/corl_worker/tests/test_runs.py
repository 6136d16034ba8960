"""CORL runs through the real daemon: a CORL-shaped script trains on a Minari dataset of the home, its
wandb.log dicts bridged live whatever W&B's mode, its checkpoints the run's models."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from gym_gui.core.controls import Control
from gym_gui.core.states import RunState
from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.home import Home
from gym_gui.storage.run_dir import RunDir
from gym_gui.storage.telemetry import TelemetryReader
from tests.support import gym_gui, wait_until, wait_until_stable
from workers.corl_worker.tests.support import CHECKOUT, PENDULUM, corl_config, episodes_of, observations


def metric_steps(home: Home, run_id: str, tag: str) -> list[tuple[int, float]]:
    reader = TelemetryReader(RunDir(home.run_dir(run_id)).telemetry_path)
    try:
        return [(point.step, point.value) for point in reader.metrics(tag)]
    finally:
        reader.close()


def manifest(home: Home, run_id: str) -> dict[str, Any]:
    return json.loads((home.run_dir(run_id) / "manifest.json").read_text())


def test_a_corl_script_trains_on_a_home_dataset_with_every_log_bridged_and_its_last_checkpoint_the_model(
    corl_daemon: tuple[DaemonClient, Home], pendulum: Any
) -> None:
    _client, home = corl_daemon
    result = gym_gui(
        "train", "--worker", "corl", "--algo", "tiny_bc", "--scripts-dir", str(CHECKOUT),
        "--dataset", PENDULUM, "--steps", "300", "--param", "eval_freq=100", "--param", "hidden=[16, 16]",
        home=home.root, timeout=600,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    run_id = next(line.split()[1] for line in result.stdout.splitlines() if line.startswith("run "))
    assert f"run {run_id} COMPLETED" in result.stdout
    run_dir = home.run_dir(run_id)

    # The script ran as a CORL user runs it, with gym_gui's fields set (the env is the dataset's).
    extras = manifest(home, run_id)["extras"]
    assert extras["script_command"][2:] == [
        "--env=Pendulum-v1",
        "--max_timesteps=300",
        "--seed=0",
        "--device=cpu",
        f"--checkpoints_path={run_dir / 'checkpoints'}",
        "--eval_freq=100",
        "--hidden=[16, 16]",
    ]
    assert extras["dataset"] == PENDULUM and len(extras["dataset_sha256"]) == 64

    # Every wandb.log dict, at the step the script logged it at.
    losses = metric_steps(home, run_id, "actor_loss")
    assert [step for step, _ in losses] == list(range(1, 301))
    assert all(np.isfinite(value) and value >= 0 for _, value in losses)
    scores = metric_steps(home, run_id, "d4rl_normalized_score")
    assert [step for step, _ in scores] == [100, 200, 300]
    # Without reference scores the "D4RL score" is the raw return: the run's return metric holds it.
    returns = metric_steps(home, run_id, "eval/return")
    assert [step for step, _ in returns] == [100, 200, 300]
    assert [value for _, value in returns] == pytest.approx([value for _, value in scores])
    assert all(-2000 < value < 0 for _, value in returns)  # Pendulum's returns

    # Each torch.save into checkpoints_path is a checkpoint; the last one the run's model.
    models = RunDir(run_dir).saved_models()
    assert [(Path(model.path).name, model.kind, model.step) for model in models] == [
        ("checkpoint_99.pt", "checkpoint", 100),
        ("checkpoint_199.pt", "checkpoint", 200),
        ("checkpoint_299.pt", "model", 300),
    ]
    assert all(model.path.startswith("checkpoints/TinyBC-Pendulum-v1-") for model in models)

    # What it learned from: the dataset's every step, as Minari reads it, written into the run.
    with np.load(run_dir / extras["transitions"]) as data:
        assert np.array_equal(data["observations"], observations(pendulum).astype(np.float32))
        steps = sum(len(episode.rewards) for episode in episodes_of(pendulum))
        assert data["rewards"].shape == (steps,) and int(data["timeouts"].sum()) == len(episodes_of(pendulum))


def test_a_run_is_paused_at_its_next_log_and_its_metrics_are_stored_while_it_trains(
    corl_daemon: tuple[DaemonClient, Home],
) -> None:
    client, home = corl_daemon
    record, _ = client.submit(corl_config(1_000_000, params={"eval_freq": 250}))
    run_id = record.run_id
    try:
        wait_until(lambda: metric_steps(home, run_id, "actor_loss"), 300, "the first losses")
        client.control(run_id, Control.PAUSE)
        assert client.wait_for_state(run_id, RunState.PAUSED, timeout=60).state is RunState.PAUSED
        # Held at a wandb.log: what it logged so far is stored, and no more comes.
        held = wait_until_stable(
            lambda: len(metric_steps(home, run_id, "actor_loss")), what="the paused losses"
        )
        assert [step for step, _ in metric_steps(home, run_id, "actor_loss")] == list(range(1, held + 1))
        client.control(run_id, Control.RESUME)
        wait_until(
            lambda: len(metric_steps(home, run_id, "actor_loss")) > held + 300, 120, "training to go on"
        )
        wait_until(lambda: RunDir(home.run_dir(run_id)).saved_models(), 120, "a checkpoint")
    finally:
        client.cancel(run_id)
    final = client.wait_for_end(run_id, timeout=120)
    assert final.state is RunState.CANCELLED, final.reason
    steps = [step for step, _ in metric_steps(home, run_id, "actor_loss")]
    assert steps == list(range(1, len(steps) + 1))  # one training, from its first step, none twice
    # The model so far: its newest checkpoint.
    entries = manifest(home, run_id)["checkpoints"]
    newest = max(
        (entry for entry in entries if entry["kind"] == "checkpoint"), key=lambda entry: entry["step"]
    )
    assert [entry["path"] for entry in entries if entry["kind"] == "model"] == [newest["path"]]


def test_offline_w_and_b_gets_the_same_logs_and_its_run_is_registered(
    corl_daemon: tuple[DaemonClient, Home],
) -> None:
    client, home = corl_daemon
    record, _ = client.submit(
        corl_config(
            200, params={"eval_freq": 100}, tracking={"wandb_mode": "offline", "wandb_project": "tests"}
        )
    )
    final = client.wait_for_end(record.run_id, timeout=600)
    assert final.state is RunState.COMPLETED, final.reason
    assert [step for step, _ in metric_steps(home, record.run_id, "actor_loss")] == list(range(1, 201))
    wandb = manifest(home, record.run_id)["wandb"]
    assert wandb["mode"] == "offline" and wandb["project"] == "tests"
    offline_run = home.run_dir(record.run_id) / wandb["path"]
    assert offline_run.name.startswith("offline-run-") and list(offline_run.glob("*.wandb"))
    # The script's own project field was the run's.
    assert "--project=tests" in manifest(home, record.run_id)["extras"]["script_command"]


def test_a_script_that_raises_fails_its_run_in_one_line_naming_where(
    corl_daemon: tuple[DaemonClient, Home],
) -> None:
    client, home = corl_daemon
    record, _ = client.submit(corl_config(500, params={"fail_at": 50}))
    final = client.wait_for_end(record.run_id, timeout=600)
    assert final.state is RunState.FAILED
    assert "ValueError: failing at step 50 as asked (tiny_bc.py line" in final.reason
    assert "\n" not in final.reason
    assert [step for step, _ in metric_steps(home, record.run_id, "actor_loss")] == list(range(1, 51))
