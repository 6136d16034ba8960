"""`gym-gui operators` and `gym-gui arena` end to end: a real daemon, real runs, the printed table."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.run_dir import RunDir
from gym_gui.storage.telemetry import TelemetryReader
from tests.support import assert_one_line_error, gym_gui


@pytest.fixture
def home(tmp_path: Path):  # type: ignore[no-untyped-def]
    home = tmp_path / "home"
    yield home
    gym_gui("daemon", "stop", home=home)


def arena(home: Path, out: Path, *args: str) -> dict:  # type: ignore[type-arg]
    result = gym_gui("arena", *args, "--json", str(out), home=home)
    assert result.returncode == 0, result.stderr
    assert "mean return ± 95 % CI" in result.stdout
    return json.loads(out.read_text())


def test_a_batch_prints_its_table_stores_grouped_runs_and_gives_the_same_numbers_twice(
    home: Path, tmp_path: Path
) -> None:
    args = ("random", "random", "--env", "FrozenLake-v1", "--episodes", "30", "--seed", "5", "--slots", "4")
    first = arena(home, tmp_path / "first.json", *args)
    second = arena(home, tmp_path / "second.json", *args)
    numbers = lambda report: [  # noqa: E731
        [(e["seed"], e["return"], e["length"], e["success"]) for e in op["episodes"]]
        for op in report["operators"]
    ]
    assert numbers(first) == numbers(second)
    # Two random operators on the same seeds play the same episodes: each is seeded by its episode alone.
    assert numbers(first)[0] == numbers(first)[1]
    assert [e["seed"] for e in first["operators"][0]["episodes"]] == list(range(5, 35))
    op = first["operators"][0]
    assert op["success_rate"] == pytest.approx(sum(e["success"] for e in op["episodes"]) / 30)
    assert first["comparison"] != second["comparison"]

    # Each operator's play is a stored run of the comparison, every step flagged as the operator's.
    with DaemonClient.connect(home, autostart=False) as client:
        runs = {run.run_id: run for run in client.list_runs()}
    for report in (first, second):
        for entry in report["operators"]:
            run = runs[entry["run_id"]]
            assert run.state.value == "COMPLETED"
            files = RunDir(run.run_dir)
            assert files.read_config().comparison == report["comparison"]
            reader = TelemetryReader(files.telemetry_path)
            try:
                stored = reader.episodes()
                assert [(e.seed, e.total_reward, e.steps) for e in stored] == [
                    (e["seed"], e["return"], e["length"]) for e in entry["episodes"]
                ]
                assert {step.actor for step in reader.steps(0)} == {"operator"}
            finally:
                reader.close()


def test_fixed_seeds_play_one_seed_every_episode(home: Path, tmp_path: Path) -> None:
    report = arena(
        home,
        tmp_path / "fixed.json",
        "random",
        "--env",
        "FrozenLake-v1",
        "--episodes",
        "6",
        "--seed",
        "9",
        "--seeds",
        "fixed",
    )
    episodes = report["operators"][0]["episodes"]
    assert {e["seed"] for e in episodes} == {9}
    assert len({(e["return"], e["length"]) for e in episodes}) == 1


def test_operators_lists_what_can_act_and_bad_names_are_one_line(home: Path, tmp_path: Path) -> None:
    listed = gym_gui("operators", "--env", "CartPole-v1", home=home)
    assert listed.returncode == 0, listed.stderr
    assert "random" in listed.stdout and "usable" in listed.stdout
    assert_one_line_error(
        gym_gui("arena", "../etc", "--env", "FrozenLake-v1", home=home),
        "is not RUN, RUN:CHECKPOINT, random, human or llm:CONFIG.json",
    )
    assert_one_line_error(
        gym_gui("arena", "CartPole-v1__ppo__1__1", "--env", "CartPole-v1", home=home),
        "there is no run CartPole-v1__ppo__1__1",
    )
    assert_one_line_error(
        gym_gui("arena", "human", "--env", "CartPole-v1", home=home),
        "a person takes a seat in the window's Arena",
    )
    assert_one_line_error(gym_gui("arena", "random", "--env", "NoSuchEnv-v0", home=home), "NoSuchEnv-v0")
    assert_one_line_error(
        gym_gui(
            "arena", "random", "--env", "CartPole-v1", "--json", str(tmp_path / "no" / "x.json"), home=home
        ),
        "does not exist",
    )
