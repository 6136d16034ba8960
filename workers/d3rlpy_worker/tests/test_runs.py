"""d3rlpy runs through a real daemon on datasets Minari's DataCollector recorded: live metrics, TensorBoard files,
checkpoints (on request, periodic, on a stop), the final model, an evaluation that streams its steps, and
the model as an operator in `gym-gui arena`, where DiscreteBC learned from a good controller's ε-greedy
data beats the random operator."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from gym_gui.core.states import RunState
from gym_gui.storage.run_dir import RunDir
from gym_gui.storage.telemetry import TelemetryReader
from tests.support import gym_gui, wait_until
from workers.d3rlpy_worker.tests.support import OfflineHome, d3rlpy_config, metrics

# Training, evaluating and an arena each take minutes on a busy two-core machine.
pytestmark = pytest.mark.timeout(1200)

LIVE_TAGS = ("losses/loss", "losses/td_loss", "eval/td_error", "eval/return", "dataset/mean_return")


def test_discrete_cql_sends_its_metrics_while_it_trains_and_saves_checkpoints_on_request_and_on_a_stop(
    offline: OfflineHome,
) -> None:
    client, home = offline.client, offline.home
    config = d3rlpy_config(
        "discrete_cql",
        "cartpole/random-v0",
        100_000,
        steps_per_epoch=50,
        eval_episodes=1,
        td_error_episodes=2,
        batch_size=16,
    )
    record, _ = client.submit(config)
    run_id, run_dir = record.run_id, home.run_dir(record.run_id)
    wait_until(lambda: all(tag in metrics(home, run_id) for tag in LIVE_TAGS), 300, "an epoch's metrics")
    # Still training when they were stored: it can be paused, and holds between two gradient steps.
    paused = gym_gui("pause", run_id, home=home.root)
    assert f"run {run_id} PAUSED" in paused.stdout, paused.stderr
    stored = metrics(home, run_id)
    assert stored["dataset/mean_return"][0][0] == 0  # the dataset's own return, from the start
    assert stored["losses/loss"][0][0] == 50  # d3rlpy's epoch means, at the epoch's gradient step
    assert (run_dir / "runs" / "discrete_cql").is_dir()  # d3rlpy's TensorBoard adapter, in the run's runs/
    assert RunDir(run_dir).tensorboard_logdir() == run_dir / "runs"

    assert f"run {run_id} RUNNING" in gym_gui("resume", run_id, home=home.root).stdout
    asked = gym_gui("checkpoint", run_id, home=home.root)
    assert asked.returncode == 0, asked.stderr
    saved = re.search(r"checkpoint saved: (\S+\.d3) \(step (\d+)\)", asked.stdout)
    assert saved, asked.stdout
    assert Path(saved.group(1)).is_file() and Path(saved.group(1)).parent == run_dir / "checkpoints"

    cancelled = gym_gui("cancel", run_id, home=home.root)
    assert f"run {run_id} CANCELLED" in cancelled.stdout, cancelled.stderr
    models = {model.path: model for model in RunDir(run_dir).saved_models()}
    assert models["checkpoints/interrupted.d3"].step >= int(saved.group(2)), models
    assert all(model.sha256 for model in models.values()), models


def test_discrete_bc_learns_a_good_controllers_data_and_plays_better_than_random(
    offline: OfflineHome,
) -> None:
    client, home = offline.client, offline.home
    config = d3rlpy_config(
        "discrete_bc", "cartpole/good-eps-v0", 400, steps_per_epoch=200, eval_episodes=1, td_error_episodes=1
    )
    every = config.checkpoints.model_copy(update={"every_steps": 200})
    record, _ = client.submit(config.model_copy(update={"checkpoints": every}))
    final = client.wait_for_end(record.run_id, timeout=600)
    assert final.state is RunState.COMPLETED, final.reason
    run_id, run_dir = record.run_id, home.run_dir(record.run_id)
    models = RunDir(run_dir).saved_models()
    assert [(m.kind, m.path, m.step) for m in models] == [
        ("checkpoint", "checkpoints/step_200.d3", 200),
        ("checkpoint", "checkpoints/step_400.d3", 400),
        ("model", "checkpoints/final.d3", 400),
    ]
    assert all(model.sha256 for model in models)
    stored = metrics(home, run_id)
    assert [step for step, _ in stored["losses/loss"]] == [200, 400]
    assert "eval/td_error" not in stored  # behaviour cloning has no values to measure
    assert stored["time/steps_per_second"][0][1] > 0
    extras = RunDir(run_dir).read_manifest().extras
    assert extras["dataset"] == "cartpole/good-eps-v0" and extras["algorithm_class"] == "DiscreteBCConfig"
    models_listed = gym_gui("models", home=home.root)
    assert run_id in models_listed.stdout, models_listed.stderr

    # Its model played in its environment, every step streamed and stored.
    played = gym_gui("eval", run_id, "--episodes", "2", "--seed", "5", "--render-fps", "0", home=home.root)
    assert played.returncode == 0, played.stderr
    eval_id = next(line.split()[1] for line in played.stdout.splitlines() if line.startswith("run "))
    reader = TelemetryReader(RunDir(home.run_dir(eval_id)).telemetry_path)
    try:
        episodes = reader.episodes()
        assert [episode.seed for episode in episodes] == [5, 6]
        assert all(len(reader.steps(episode.episode)) == episode.steps > 0 for episode in episodes)
    finally:
        reader.close()

    # The headline: as an operator it beats the random one on the same seeds.
    table = home.root / "arena.json"
    arena = gym_gui(
        "arena",
        run_id,
        "random",
        "--env",
        "CartPole-v1",
        "--episodes",
        "10",
        "--json",
        str(table),
        home=home.root,
    )
    assert arena.returncode == 0, arena.stderr
    result = {row["operator"]: row for row in json.loads(table.read_text())["operators"]}
    assert not result[run_id]["error"] and result[run_id]["name"] == "discrete_bc on CartPole-v1"
    assert result[run_id]["mean_return"] > result["random"]["mean_return"], result


def test_a_dataset_of_discrete_observations_is_learned_one_hot_and_its_model_acts_on_the_envs_observations(
    offline: OfflineHome,
) -> None:
    client, home = offline.client, offline.home
    config = d3rlpy_config(
        "discrete_cql",
        "frozenlake/random-v0",
        100,
        env_id="FrozenLake-v1",
        steps_per_epoch=100,
        eval_episodes=2,
    )
    record, _ = client.submit(config)
    final = client.wait_for_end(record.run_id, timeout=600)
    assert final.state is RunState.COMPLETED, final.reason
    stored = metrics(home, record.run_id)
    assert "eval/return" in stored and "eval/td_error" in stored  # played in the env, one-hot encoded
    extras = RunDir(home.run_dir(record.run_id)).read_manifest().extras
    assert '"Discrete"' in extras["observation_space"]
    table = home.root / "frozen.json"
    arena = gym_gui(
        "arena",
        record.run_id,
        "--env",
        "FrozenLake-v1",
        "--episodes",
        "3",
        "--json",
        str(table),
        home=home.root,
    )
    assert arena.returncode == 0, arena.stderr
    (row,) = json.loads(table.read_text())["operators"]
    assert not row["error"] and len(row["episodes"]) == 3, row
