"""`gym-gui export-tensorboard RUN`: stored runs of a real daemon written as TensorBoard event files in
the run directory, read back with TensorBoard's own reader; bad input and empty runs on one line."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from gym_gui.core.config import parse_run_config
from gym_gui.core.states import RunState
from gym_gui.daemon.ending import TENSORBOARD_EVENT
from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.event_files import EPISODE_LENGTH, EPISODE_RETURN
from gym_gui.storage.home import Home
from gym_gui.storage.run_dir import RunDir
from gym_gui.storage.telemetry import TelemetryReader
from tests.fixtures import SHARED_BUNDLES
from tests.support import assert_one_line_error, gym_gui, module_daemon, publish_acted_run


def _random_run(client: DaemonClient, episodes: int, dry_run: bool = False) -> str:
    config = parse_run_config(
        {
            "worker": "random",
            "env_id": "CartPole-v1",
            "seed": 3,
            "budget": {"episodes": episodes},
            "dry_run": dry_run,
        }
    )
    record, _ = client.submit(config)
    final = client.wait_for_end(record.run_id, timeout=120)
    assert final.state is RunState.COMPLETED, final.reason
    return record.run_id


@dataclass(frozen=True)
class Runs:
    home: Home
    random: str  # streams its episodes and logs episode/return and episode/length as metrics too
    human: str  # a hand-built session of the human kind: episodes, no metric
    dry: str  # a dry run: nothing stored


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runs]:
    root = tmp_path_factory.mktemp("tensorboard_home")
    with module_daemon(root, SHARED_BUNDLES, ["--cancel-grace", "3"]) as (client, home):
        human = publish_acted_run(client, "ooo", "hh", "o-o-o-o").run_id
        yield Runs(home, _random_run(client, 12), human, _random_run(client, 5, dry_run=True))


def _scalars(files: RunDir) -> dict[str, list[tuple[int, float, float]]]:
    """Every scalar TensorBoard reads from the run's event files, where the TensorBoard tab looks, as
    (step, value, wall time) per tag."""
    logdir = files.tensorboard_logdir()
    assert logdir == files.exported_event_files
    accumulator = EventAccumulator(str(logdir / files.run_id), size_guidance={"scalars": 0})
    accumulator.Reload()
    return {
        tag: [(event.step, event.value, event.wall_time) for event in accumulator.Scalars(tag)]
        for tag in accumulator.Tags()["scalars"]
    }


def _expected_episodes(
    files: RunDir,
) -> tuple[list[tuple[int, float, float]], list[tuple[int, float, float]]]:
    """Each stored episode's (step count when it ended, return, time it ended) and (that step,
    length, that time)."""
    reader = TelemetryReader(files.telemetry_path)
    try:
        episodes = reader.episodes()
    finally:
        reader.close()
    returns, lengths, step = [], [], 0
    for episode in episodes:
        step += episode.steps
        returns.append((step, episode.total_reward, episode.ended_at))
        lengths.append((step, float(episode.steps), episode.ended_at))
    return returns, lengths


def _points(series: list[tuple[int, float, float]]) -> list[tuple[int, float]]:
    return [(step, value) for step, value, _ in series]


def _snapshot(files: RunDir) -> dict[str, bytes]:
    """Every file of the run but the exported event files, and SQLite's own side files (a reader,
    this test's too, makes them)."""
    return {
        str(path.relative_to(files.path)): path.read_bytes()
        for path in sorted(files.path.rglob("*"))
        if path.is_file()
        and not path.is_relative_to(files.exported_event_files)
        and not path.name.endswith(("-wal", "-shm"))
    }


def test_a_random_runs_export_holds_every_episode_at_its_step_and_is_replaced_by_the_next(runs: Runs) -> None:
    files = RunDir(runs.home.run_dir(runs.random))
    before = _snapshot(files)

    done = gym_gui("export-tensorboard", runs.random, home=runs.home.root)
    assert done.returncode == 0, done.stderr
    assert str(files.exported_event_files) in done.stdout.replace("\n", "")

    scalars = _scalars(files)
    returns, lengths = _expected_episodes(files)
    assert len(returns) == 12
    assert _points(scalars[EPISODE_RETURN]) == _points(returns)
    assert _points(scalars[EPISODE_LENGTH]) == _points(lengths)

    # A second export replaces the first: one event file, the same points, and nothing else of the
    # run was touched by either.
    again = gym_gui("export-tensorboard", runs.random, home=runs.home.root)
    assert again.returncode == 0, again.stderr
    events = [path for path in files.exported_event_files.rglob("*") if path.is_file()]
    assert len(events) == 1 and events[0].name.startswith("events.out.tfevents.")
    assert _scalars(files) == scalars
    assert _snapshot(files) == before
    assert sorted(p.name for p in files.path.iterdir() if p.name.startswith(".")) == []


def test_a_run_without_metrics_is_exported_from_its_stored_episodes(runs: Runs) -> None:
    files = RunDir(runs.home.run_dir(runs.human))
    done = gym_gui("export-tensorboard", runs.human, home=runs.home.root)
    assert done.returncode == 0, done.stderr
    assert "wrote 3 episodes" in done.stdout and "0 points of 0 metrics" in done.stdout

    scalars = _scalars(files)
    assert sorted(scalars) == [EPISODE_LENGTH, EPISODE_RETURN]
    assert _points(scalars[EPISODE_LENGTH]) == [(3, 3.0), (5, 2.0), (12, 7.0)]
    assert _points(scalars[EPISODE_RETURN]) == [(3, 0.0), (5, 0.0), (12, 0.0)]
    # Each point carries the time its episode ended (an event's wall time is a double: exact).
    returns, lengths = _expected_episodes(files)
    assert scalars[EPISODE_RETURN] == returns
    assert scalars[EPISODE_LENGTH] == lengths


def test_an_unknown_run_is_one_line(runs: Runs) -> None:
    missing = runs.random.replace("__3__", "__4__")
    assert_one_line_error(
        gym_gui("export-tensorboard", missing, home=runs.home.root), f"no run with id {missing!r}"
    )
    assert_one_line_error(gym_gui("export-tensorboard", "../elsewhere", home=runs.home.root), "run id")


def test_a_run_that_stored_no_episode_is_one_line_and_writes_nothing(runs: Runs) -> None:
    files = RunDir(runs.home.run_dir(runs.dry))
    before = _snapshot(files)
    assert_one_line_error(
        gym_gui("export-tensorboard", runs.dry, home=runs.home.root),
        f"run {runs.dry} has stored no episodes and no metrics",
    )
    assert _snapshot(files) == before and not files.exported_event_files.exists()
    assert sorted(p.name for p in files.path.iterdir() if p.name.startswith(".")) == []


def test_train_tensorboard_writes_the_event_files_when_the_run_ends(runs: Runs) -> None:
    before = set(runs.home.runs_dir.iterdir())
    done = gym_gui(
        "train", "--worker", "random", "--env", "CartPole-v1", "--episodes", "6", "--tensorboard",
        home=runs.home.root,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    (path,) = set(runs.home.runs_dir.iterdir()) - before
    files = RunDir(path)
    assert files.read_config().tracking.tensorboard_export  # the run's config says so
    returns, lengths = _expected_episodes(files)
    assert len(returns) == 6
    scalars = _scalars(files)
    assert _points(scalars[EPISODE_RETURN]) == _points(returns)
    assert _points(scalars[EPISODE_LENGTH]) == _points(lengths)
    reader = TelemetryReader(files.telemetry_path)
    try:
        said = [event.message for event in reader.events() if event.kind == TENSORBOARD_EVENT]
    finally:
        reader.close()
    assert said == [
        f"TensorBoard event files of 6 episodes and 12 metric points written into {files.exported_event_files}"
    ]
