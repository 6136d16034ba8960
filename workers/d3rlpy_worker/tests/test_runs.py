"""d3rlpy runs through a real daemon on datasets Minari's DataCollector recorded and on one gym_gui recorded:
live metrics, TensorBoard files, checkpoints (on request, periodic, on a stop), the final model, an
evaluation that streams its steps, and the model as an operator in `gym-gui arena`, where DiscreteBC learned
from an ε-greedy evaluation of a small CleanRL DQN beats the random operator (issue 26's whole chain)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gym_gui.core.states import RunState
from gym_gui.datasets import DatasetStore, episode_returns
from gym_gui.storage.run_dir import RunDir
from gym_gui.storage.telemetry import TelemetryReader
from tests.support import gym_gui, wait_until
from workers.cleanrl_worker.tests.support import cleanrl_config
from workers.d3rlpy_worker.tests.support import OfflineHome, arena, d3rlpy_config, metrics

# Training, evaluating and an arena each take minutes on a busy two-core machine.
pytestmark = pytest.mark.timeout(1200)

LIVE_TAGS = ("losses/loss", "losses/td_loss", "eval/td_error", "eval/return", "dataset/mean_return")

DQN_DATASET = "cartpole/dqn-eps-v0"
# CleanRL's dqn.py on CartPole-v1, seed 1, small enough for a busy two-core machine (under a minute):
# learning from step 500, an update every 2 steps, the target network every 100, ε annealed over the
# first 30 %. Its greedy policy then balances for a few hundred steps (mean over seeds 0-9, played
# greedily: 270 with seed 1, 352 with seed 2; 3000 steps: 167), where random play lasts about 22.
DQN_STEPS = 5_000
DQN_PARAMS = {
    "learning-starts": 500,
    "train-frequency": 2,
    "target-network-frequency": 100,
    "exploration-fraction": 0.3,
    "learning-rate": 1e-3,
    "batch-size": 64,
}


@pytest.fixture(scope="module")
def dqn_dataset(d3rlpy_daemon: OfflineHome) -> str:
    """A small CleanRL DQN trained on CartPole, its evaluation with ε = 0.3 recorded as a dataset by
    `gym-gui eval --dataset --epsilon` (data of mixed quality from a good policy)."""
    client, home = d3rlpy_daemon.client, d3rlpy_daemon.home
    record, _ = client.submit(cleanrl_config("dqn", "CartPole-v1", DQN_STEPS, params=DQN_PARAMS))
    final = client.wait_for_end(record.run_id, timeout=900)
    assert final.state is RunState.COMPLETED, final.reason
    recorded = gym_gui(
        "eval",
        record.run_id,
        "--episodes",
        "10",
        "--seed",
        "100",
        "--render-fps",
        "0",
        "--epsilon",
        "0.3",
        "--dataset",
        DQN_DATASET,
        home=home.root,
    )
    assert recorded.returncode == 0, recorded.stderr
    assert f"dataset {DQN_DATASET}: 10 episodes" in recorded.stdout, recorded.stdout
    return DQN_DATASET


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


def test_discrete_bc_learns_a_cleanrl_dqns_epsilon_greedy_data_and_plays_better_than_random(
    offline: OfflineHome, dqn_dataset: str
) -> None:
    client, home = offline.client, offline.home
    config = d3rlpy_config(
        "discrete_bc", dqn_dataset, 400, steps_per_epoch=200, eval_episodes=1, td_error_episodes=1
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
    dataset_returns = episode_returns(DatasetStore(home), dqn_dataset)
    assert stored["dataset/mean_return"][0][1] == pytest.approx(sum(dataset_returns) / len(dataset_returns))
    extras = RunDir(run_dir).read_manifest().extras
    assert extras["dataset"] == dqn_dataset and extras["algorithm_class"] == "DiscreteBCConfig"
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

    # The headline: as an operator it beats the random one on the same seeds, as the DQN's noisy data did.
    result = arena(home, run_id, "random")
    bc, random_play = result[run_id], result["random"]
    assert not bc["error"] and bc["name"] == "discrete_bc on CartPole-v1"
    assert [e["seed"] for e in bc["episodes"]] == [e["seed"] for e in random_play["episodes"]]
    assert (
        min(dataset_returns) > 0 and sum(dataset_returns) / len(dataset_returns) > random_play["mean_return"]
    )
    assert bc["mean_return"] > random_play["mean_return"], result


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
    (row,) = arena(home, record.run_id, env_id="FrozenLake-v1", episodes=3).values()
    assert not row["error"] and len(row["episodes"]) == 3, row


def test_a_continuous_algorithm_learns_box_actions_and_its_model_plays_them(offline: OfflineHome) -> None:
    client, home = offline.client, offline.home
    config = d3rlpy_config(
        "iql", "pendulum/random-v0", 200, env_id="Pendulum-v1", steps_per_epoch=100, eval_episodes=1
    )
    record, _ = client.submit(config)
    final = client.wait_for_end(record.run_id, timeout=600)
    assert final.state is RunState.COMPLETED, final.reason
    stored = metrics(home, record.run_id)
    assert [step for step, _ in stored["eval/return"]] == [100, 200]  # played in Pendulum each epoch
    assert {"losses/actor_loss", "losses/critic_loss"} <= set(stored), sorted(stored)
    (row,) = arena(home, record.run_id, env_id="Pendulum-v1", episodes=2).values()
    assert not row["error"] and len(row["episodes"]) == 2, row
    assert all(episode["length"] == 200 for episode in row["episodes"])  # Pendulum's whole episodes
