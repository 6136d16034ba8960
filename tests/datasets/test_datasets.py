"""Datasets end to end: stored runs written as Minari datasets through `gym-gui dataset`, read back with
Minari's own loader, datasets made by Minari's DataCollector listed and imported, and the daemon's
checks of a run's dataset before anything starts."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

from gym_gui.play.operators import Operators
from gym_gui.play.seat import Control, Seat
from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.home import Home
from gym_gui.storage.run_dir import RunDir
from gym_gui.storage.telemetry import TelemetryReader
from gym_gui.workers import worker_catalog
from tests.support import assert_one_line_error, gym_gui, wait_until


@pytest.fixture
def minari_home(home: Home, monkeypatch: pytest.MonkeyPatch) -> Home:
    """The test's home, with Minari in this process pointed at its datasets (as gym_gui points it)."""
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(home.datasets_dir))
    return home


@pytest.fixture
def cli_home(minari_home: Home) -> Iterator[Path]:
    yield minari_home.root
    gym_gui("daemon", "stop", home=minari_home.root)


def ok(*args: str, home: Path) -> str:
    result = gym_gui(*args, home=home)
    assert result.returncode == 0, result.stderr
    return result.stdout


def run_id_of(stdout: str) -> str:
    return next(line.split()[1] for line in stdout.splitlines() if line.startswith("run "))


def stored_episodes(run_dir: str) -> dict[int, list[Any]]:
    reader = TelemetryReader(RunDir(run_dir).telemetry_path)
    try:
        return {episode.episode: reader.steps(episode.episode) for episode in reader.episodes()}
    finally:
        reader.close()


def collect(env_id: str, episodes: int, seed: int) -> Any:
    """A DataCollector over ``env_id`` that played ``episodes`` random episodes (Minari's own recorder)."""
    import minari

    env = minari.DataCollector(gym.make(env_id))
    env.action_space.seed(seed)
    for episode in range(episodes):
        env.reset(seed=seed + episode)
        done = False
        while not done:
            _, _, terminated, truncated, _ = env.step(env.action_space.sample())
            done = terminated or truncated
    return env


def test_a_dataset_of_a_random_run_and_a_persons_run_holds_every_stored_step(
    cli_home: Path, minari_home: Home
) -> None:
    random_run = run_id_of(
        ok(
            "train",
            "--worker",
            "random",
            "--env",
            "FrozenLake-v1",
            "--seed",
            "3",
            "--episodes",
            "12",
            home=cli_home,
        )
    )
    with DaemonClient.connect(cli_home, autostart=False) as client:
        seat = Seat(client, "FrozenLake-v1", seed=40, episodes=2)
        seat.start()
        for episode in range(2):
            if episode:
                seat.next_episode()
            presses = iter([2, 2, 1, 1, 1, 2, 0, 3] * 20)
            while not seat.episode_over:
                seat.step(next(presses))
        seat.close()
        wait_until(lambda: client.get_run(seat.run_id).record.state.terminal, what="the person's run to end")
        records = {record.run_id: record for record in client.list_runs()}

    out = ok("dataset", "create", "frozenlake/mixed-v0", "--from", random_run, seat.run_id, home=cli_home)
    assert "14 episodes" in out

    import minari

    dataset = minari.load_dataset("frozenlake/mixed-v0")
    expected = [
        (run, steps)
        for run in (random_run, seat.run_id)
        for _, steps in sorted(stored_episodes(records[run].run_dir).items())
    ]
    assert dataset.total_episodes == len(expected) == 14
    assert dataset.total_steps == sum(len(steps) for _, steps in expected)
    env = gym.make("FrozenLake-v1")
    seeds = [
        int(meta["seed"]) for meta in dataset.storage.get_episode_metadata(range(dataset.total_episodes))
    ]
    for episode, (_run, steps) in zip(dataset.iterate_episodes(), expected, strict=True):
        # Every stored step, as stored: the observation after each action, the action, the reward, the end.
        assert episode.observations[1:].tolist() == [json.loads(step.observation) for step in steps]
        assert episode.actions.tolist() == [json.loads(step.action) for step in steps]
        assert episode.rewards.tolist() == [step.reward for step in steps]
        assert episode.terminations.tolist() == [step.terminated for step in steps]
        assert episode.truncations.tolist() == [step.truncated for step in steps]
        # The first observation, rebuilt from the episode's seed, is the env's own.
        assert episode.observations[0] == env.reset(seed=seeds[episode.id])[0]
        assert episode.infos["actor"].tolist() == [0] * (len(steps) + 1)

    card = json.loads((minari_home.datasets_dir / "frozenlake/mixed-v0/gym_gui.json").read_text())
    assert card["source_runs"] == [random_run, seat.run_id]
    assert card["env_id"] == "FrozenLake-v1"
    assert set(card["files"]) == {"data/metadata.json", "data/main_data.hdf5"}
    assert dataset.spec.env_spec.id == "FrozenLake-v1"
    assert random_run in dataset.storage.metadata["description"]

    shown = ok("dataset", "show", "frozenlake/mixed-v0", home=cli_home)
    assert "Discrete(16)" in shown and random_run in shown and "sha256" in shown
    listed = ok("dataset", "list", home=cli_home)
    assert "frozenlake/mixed-v0" in listed and "14" in listed


def test_a_hybrid_runs_dataset_says_at_each_step_who_acted_and_what_the_operator_proposed(
    client: DaemonClient, minari_home: Home
) -> None:
    operators = Operators(minari_home, worker_catalog(), client.list_runs)
    hybrid = Seat(client, "Taxi-v4", operators.choose("random", "Taxi-v4"), control=Control.HYBRID, seed=4)
    hybrid.start()
    presses = {1: 0, 2: 1, 7: 2}
    step = 0
    while not hybrid.episode_over:
        hybrid.step(presses.get(step))
        step += 1
    hybrid.close()
    wait_until(lambda: client.get_run(hybrid.run_id).record.state.terminal, what="the hybrid run to end")

    from gym_gui.datasets import DatasetStore, RunSource, record_dataset

    record = client.get_run(hybrid.run_id).record
    recorded = record_dataset(
        DatasetStore(minari_home), "taxi/hybrid-v0", [RunSource.of(record.run_id, record.run_dir)]
    )
    assert recorded.episodes == 1

    import minari

    episode = next(minari.load_dataset("taxi/hybrid-v0").iterate_episodes())
    steps = stored_episodes(record.run_dir)[0]
    actors = episode.infos["actor"].tolist()
    assert actors[0] == 0  # the reset: no one acted
    assert actors[1:] == [2 if i in presses else 1 for i in range(len(steps))]
    overridden = episode.infos["overridden"].tolist()[1:]
    proposed = episode.infos["proposed_action"].tolist()[1:]
    for i, stored in enumerate(steps):
        assert overridden[i] == bool(stored.proposed_action)
        assert proposed[i] == (
            json.loads(stored.proposed_action) if stored.proposed_action else json.loads(stored.action)
        )
    assert any(overridden)


def test_a_dataset_minaris_datacollector_made_is_listed_checked_at_first_use_and_refused_once_changed(
    cli_home: Path, minari_home: Home
) -> None:
    collect("CartPole-v1", 3, seed=0).create_dataset("cartpole/collected-v0", algorithm_name="random")
    listed = ok("dataset", "list", home=cli_home)
    assert "cartpole/collected-v0" in listed and "not yet" in listed

    # A run may learn from it: the daemon records its digests at this first use.
    ok("train", "--worker", "random", "--dataset", "cartpole/collected-v0", "--episodes", "1", home=cli_home)
    record = json.loads((minari_home.datasets_dir / "cartpole/collected-v0/gym_gui.json").read_text())
    assert record["recorded"] == "first-use"

    # The env a run plays must be the dataset's.
    assert_one_line_error(
        gym_gui(
            "train",
            "--worker",
            "random",
            "--env",
            "Acrobot-v1",
            "--dataset",
            "cartpole/collected-v0",
            "--episodes",
            "1",
            home=cli_home,
        ),
        "field 'dataset'",
        "recorded on CartPole-v1, not on the run's env Acrobot-v1",
    )
    # A dataset whose data changed since it was recorded is refused, naming the file; nothing is stored.
    with DaemonClient.connect(cli_home, autostart=False) as client:
        before = len(client.list_runs())
    data = minari_home.datasets_dir / "cartpole/collected-v0/data/main_data.hdf5"
    with data.open("r+b") as f:
        f.seek(data.stat().st_size // 2)
        f.write(b"\x00changed")
    assert_one_line_error(
        gym_gui(
            "train",
            "--worker",
            "random",
            "--dataset",
            "cartpole/collected-v0",
            "--episodes",
            "1",
            home=cli_home,
        ),
        "field 'dataset'",
        "data/main_data.hdf5 changed since it was first-use",
    )
    with DaemonClient.connect(cli_home, autostart=False) as client:
        assert len(client.list_runs()) == before
    assert_one_line_error(
        gym_gui(
            "train", "--worker", "random", "--dataset", "cartpole/none-v0", "--episodes", "1", home=cli_home
        ),
        "no dataset 'cartpole/none-v0'",
    )
    assert_one_line_error(
        gym_gui(
            "train",
            "--worker",
            "random",
            "--env",
            "CartPole-v1",
            "--dataset",
            "../../etc-v0",
            "--episodes",
            "1",
            home=cli_home,
        ),
        "field 'dataset'",
    )


def test_a_dataset_is_imported_once_and_deleted_only_when_no_live_run_learns_from_it(
    cli_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    elsewhere = tmp_path / "elsewhere"
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(elsewhere))
    collect("CartPole-v1", 2, seed=5).create_dataset("cartpole/outside-v0")
    source = elsewhere / "cartpole/outside-v0"
    out = ok("dataset", "import", str(source), home=cli_home)
    assert "cartpole/outside-v0" in out and "2 episodes" in out
    assert_one_line_error(gym_gui("dataset", "import", str(source), home=cli_home), "already in this home")
    assert_one_line_error(
        gym_gui("dataset", "import", str(tmp_path), home=cli_home), "is not a Minari dataset"
    )
    record = json.loads((cli_home / "datasets/cartpole/outside-v0/gym_gui.json").read_text())
    assert record["recorded"] == "imported" and record["imported_from"] == str(source)

    run = run_id_of(
        ok(
            "train",
            "--worker",
            "random",
            "--dataset",
            "cartpole/outside-v0",
            "--episodes",
            "100000",
            "--detach",
            home=cli_home,
        )
    )
    with DaemonClient.connect(cli_home, autostart=False) as client:
        client.wait_for_state(run, *(state for state in _live_states()), timeout=60)
        assert_one_line_error(
            gym_gui("dataset", "delete", "cartpole/outside-v0", home=cli_home), f"used by run {run}"
        )
        assert (cli_home / "datasets/cartpole/outside-v0/data/metadata.json").is_file()
        client.cancel(run)
        client.wait_for_end(run, timeout=60)
    ok("dataset", "delete", "cartpole/outside-v0", home=cli_home)
    assert not (cli_home / "datasets/cartpole").exists()
    assert "no datasets" in ok("dataset", "list", home=cli_home)


def _live_states() -> list[Any]:
    from gym_gui.core.states import RunState

    return [RunState.RUNNING]


def test_dataset_names_and_sources_are_checked_before_anything_is_written(cli_home: Path) -> None:
    run = run_id_of(
        ok("train", "--worker", "random", "--env", "CartPole-v1", "--episodes", "2", home=cli_home)
    )
    other = run_id_of(
        ok("train", "--worker", "random", "--env", "Acrobot-v1", "--episodes", "1", home=cli_home)
    )
    assert_one_line_error(
        gym_gui("dataset", "create", "no version", "--from", run, home=cli_home), "field 'dataset'"
    )
    assert_one_line_error(gym_gui("dataset", "create", "cartpole/x-v0", home=cli_home), "--from RUN")
    assert_one_line_error(
        gym_gui("dataset", "create", "cartpole/x-v0", "--from", "nothing-here", home=cli_home),
        "--from 'nothing-here': no run, sweep or comparison",
    )
    assert_one_line_error(
        gym_gui("dataset", "create", "cartpole/x-v0", "--from", run, other, home=cli_home),
        "one environment",
        "Acrobot-v1",
    )
    assert not (cli_home / "datasets/cartpole/x-v0").exists()
    ok("dataset", "create", "cartpole/x-v0", "--from", run, home=cli_home)
    assert_one_line_error(
        gym_gui("dataset", "create", "cartpole/x-v0", "--from", run, home=cli_home), "already exists"
    )


def test_an_arenas_comparison_names_its_runs_for_a_dataset(cli_home: Path, tmp_path: Path) -> None:
    out = tmp_path / "arena.json"
    ok(
        "arena",
        "random",
        "random",
        "--env",
        "FrozenLake-v1",
        "--episodes",
        "4",
        "--seed",
        "1",
        "--json",
        str(out),
        home=cli_home,
    )
    report = json.loads(out.read_text())
    created = ok("dataset", "create", "frozenlake/arena-v0", "--from", report["comparison"], home=cli_home)
    assert "8 episodes" in created
    record = json.loads((cli_home / "datasets/frozenlake/arena-v0/gym_gui.json").read_text())
    assert sorted(record["source_runs"]) == sorted(op["run_id"] for op in report["operators"])
    assert np.isclose(
        record["mean_return"], np.mean([e["return"] for op in report["operators"] for e in op["episodes"]])
    )
    assert os.environ.get("MINARI_DATASETS_PATH") == str(cli_home / "datasets")
