"""`gym-gui eval RUN --dataset NAME --epsilon E`: a trained model's evaluation, with ε-greedy noise,
written straight into a Minari dataset that holds every step the evaluation stored."""

from __future__ import annotations

import json

import pytest

from gym_gui.core.states import RunState
from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.home import Home
from gym_gui.storage.run_dir import RunDir
from gym_gui.storage.telemetry import TelemetryReader
from tests.support import assert_one_line_error, gym_gui
from workers.cleanrl_worker.tests.support import cleanrl_config


@pytest.fixture(scope="module")
def trained(cleanrl_daemon: tuple[DaemonClient, Home]) -> str:
    client, _home = cleanrl_daemon
    record, _ = client.submit(
        cleanrl_config("ppo", "CartPole-v1", 512, params={"num-envs": 1, "num-steps": 256})
    )
    final = client.wait_for_end(record.run_id, timeout=300)
    assert final.state is RunState.COMPLETED, final.reason
    return record.run_id


def evaluation_actions(client: DaemonClient, stdout: str) -> tuple[str, list[list[int]]]:
    run_id = next(line.split()[1] for line in stdout.splitlines() if line.startswith("run "))
    reader = TelemetryReader(RunDir(client.get_run(run_id).record.run_dir).telemetry_path)
    try:
        return run_id, [
            [json.loads(step.action) for step in reader.steps(episode.episode)]
            for episode in reader.episodes()
        ]
    finally:
        reader.close()


def test_an_evaluation_with_epsilon_becomes_a_dataset_of_its_every_step(
    cleanrl_daemon: tuple[DaemonClient, Home], trained: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    client, home = cleanrl_daemon
    eval_args = ("eval", trained, "--episodes", "3", "--seed", "11", "--render-fps", "0")
    noisy = gym_gui(*eval_args, "--epsilon", "0.5", "--dataset", "cartpole/ppo-noisy-v0", home=home.root)
    assert noisy.returncode == 0, noisy.stderr
    assert "dataset cartpole/ppo-noisy-v0: 3 episodes" in noisy.stdout
    noisy_run, noisy_actions = evaluation_actions(client, noisy.stdout)

    # ε-greedy noise follows from the seed: the same evaluation plays the same actions again, and they
    # differ from the model's own (ε = 0) on the same seeds.
    again = gym_gui(*eval_args, "--epsilon", "0.5", home=home.root)
    assert again.returncode == 0, again.stderr
    assert evaluation_actions(client, again.stdout)[1] == noisy_actions
    greedy = gym_gui(*eval_args, home=home.root)
    assert greedy.returncode == 0, greedy.stderr
    assert evaluation_actions(client, greedy.stdout)[1] != noisy_actions

    monkeypatch.setenv("MINARI_DATASETS_PATH", str(home.datasets_dir))
    import minari

    dataset = minari.load_dataset("cartpole/ppo-noisy-v0")
    assert [episode.actions.tolist() for episode in dataset.iterate_episodes()] == noisy_actions
    record = json.loads((home.datasets_dir / "cartpole/ppo-noisy-v0/gym_gui.json").read_text())
    assert record["source_runs"] == [noisy_run]
    assert record["operator"] == trained

    # A taken name or a bad one is refused before the evaluation starts.
    before = len(client.list_runs())
    assert_one_line_error(
        gym_gui(*eval_args, "--dataset", "cartpole/ppo-noisy-v0", home=home.root), "already exists"
    )
    assert_one_line_error(gym_gui(*eval_args, "--dataset", "noisy", home=home.root), "field 'dataset'")
    assert len(client.list_runs()) == before
