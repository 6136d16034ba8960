"""`gym-gui compare`: real random-worker runs through a real daemon, grouped by experiment as the
window's Compare view groups them, their mean ± std in a table and a picture; bad input on one line."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from gym_gui.core.config import parse_run_config
from gym_gui.core.curves import DEFAULT_SMOOTHING, ema, mean_std_band
from gym_gui.core.states import RunState
from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.home import Home
from gym_gui.storage.run_dir import RunDir
from gym_gui.storage.telemetry import TelemetryReader
from tests.fixtures import SHARED_BUNDLES
from tests.support import assert_one_line_error, gym_gui, module_daemon

METRIC = "episode/return"


def _random_run(client: DaemonClient, seed: int, episodes: int, dry_run: bool = False) -> str:
    config = parse_run_config(
        {
            "worker": "random",
            "env_id": "CartPole-v1",
            "seed": seed,
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
    seeds: list[str]  # three seeds of one experiment
    longer: str  # another experiment: a longer budget
    dry: str  # a dry run: no metric at all


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runs]:
    root = tmp_path_factory.mktemp("compare_home")
    with module_daemon(root, SHARED_BUNDLES, ["--cancel-grace", "3"]) as (client, home):
        seeds = [_random_run(client, seed, 30) for seed in (1, 2, 3)]
        yield Runs(home, seeds, _random_run(client, 1, 60), _random_run(client, 1, 30, dry_run=True))


def _row(output: str, run_id: str) -> str:
    """The table line that holds ``run_id`` (the first run of its experiment's row)."""
    lines = [line for line in output.splitlines() if run_id in line]
    assert lines, output
    return lines[0]


def _band_of(home: Home, run_ids: list[str]) -> tuple[float, float, float]:
    """The last step, mean and std of the runs' smoothed returns, from storage (as the window draws them)."""
    curves = []
    for run_id in run_ids:
        reader = TelemetryReader(RunDir(home.run_dir(run_id)).telemetry_path)
        try:
            points = reader.metrics(METRIC)
        finally:
            reader.close()
        steps = np.array([p.step for p in points], dtype=np.float64)
        values = ema(np.array([p.value for p in points]), DEFAULT_SMOOTHING)[0]
        curves.append((steps, values))
    band = mean_std_band(run_ids, curves)
    assert band is not None
    return float(band.steps[-1]), float(band.mean[-1]), float(band.std[-1])


def test_seeds_of_one_config_are_one_experiment_with_their_mean_and_std(runs: Runs, tmp_path: Path) -> None:
    home, seeds, longer = runs.home, runs.seeds, runs.longer
    plot = tmp_path / "returns.png"
    result = gym_gui("compare", *seeds, longer, "--metric", METRIC, "--plot", str(plot), home=home.root)
    assert result.returncode == 0, result.stderr

    seeded = _row(result.stdout, seeds[0])
    assert "random on CartPole-v1 budget.episodes=30" in seeded and "3 (1, 2, 3)" in seeded
    # Each seed is listed in the experiment's row (one run id a line).
    assert all(re.search(rf"│\s+{run_id}\s+│", result.stdout) for run_id in seeds)
    step, mean, std = _band_of(home, seeds)
    assert f"{step:,.0f}" in seeded and f"{mean:.4g} ± {std:.4g}" in seeded and std > 0

    alone = _row(result.stdout, longer)
    assert "budget.episodes=60" in alone and "1 (1)" in alone and "±" not in alone
    assert f"plot written to {plot}" in result.stdout
    with Image.open(plot) as picture:
        assert picture.format == "PNG" and picture.size == (1000, 550)


def test_no_smoothing_compares_the_raw_points(runs: Runs) -> None:
    home, seeds = runs.home, runs.seeds
    raw = gym_gui("compare", *seeds[:2], "--metric", METRIC, "--smoothing", "0", home=home.root)
    assert raw.returncode == 0, raw.stderr
    smoothed = gym_gui("compare", *seeds[:2], "--metric", METRIC, home=home.root)
    assert "smoothing 0," not in smoothed.stdout and "smoothing 0.6" in smoothed.stdout
    assert _row(raw.stdout, seeds[0]).split("│")[-2] != _row(smoothed.stdout, seeds[0]).split("│")[-2]


def test_runs_compare_their_stored_episodes_by_episode_number(runs: Runs) -> None:
    # What a person's or an operator's runs (which log no metric) compare by: each stored episode's return.
    home, seeds = runs.home, runs.seeds
    result = gym_gui(
        "compare", *seeds, "--metric", "episodes/total_reward", "--smoothing", "0", home=home.root
    )
    assert result.returncode == 0, result.stderr
    totals = []
    for run_id in seeds:
        reader = TelemetryReader(RunDir(home.run_dir(run_id)).telemetry_path)
        try:
            totals.append(reader.episodes()[-1].total_reward)
        finally:
            reader.close()
    row = _row(result.stdout, seeds[0]).split("│")
    # The last episode (29) is the last step all three reached; its mean ± std over the seeds.
    assert row[-3].strip() == "29"
    assert row[-2].strip() == f"{np.mean(totals):.4g} ± {np.std(totals):.4g}"


def test_bad_input_is_one_line(runs: Runs, tmp_path: Path) -> None:
    root, seeds, dry = runs.home.root, runs.seeds, runs.dry
    assert_one_line_error(
        gym_gui("compare", seeds[0], "CartPole-v1__random__9__1", "--metric", METRIC, home=root),
        "CartPole-v1__random__9__1",
    )
    assert_one_line_error(
        gym_gui("compare", *seeds, "--metric", "charts/nope", home=root),
        "no run has the metric 'charts/nope'",
        "episode/length, episode/return",
    )
    # A dry run stored no metric: it is named, and so is what the runs have in common (nothing).
    assert_one_line_error(
        gym_gui("compare", seeds[0], dry, "--metric", METRIC, home=root),
        f"{dry} has no metric '{METRIC}'",
        "no metric in common",
    )
    assert_one_line_error(
        gym_gui(
            "compare", *seeds, "--metric", METRIC, "--plot", str(tmp_path / "absent" / "x.png"), home=root
        ),
        "cannot write the plot",
        "No such file or directory",
    )
    assert_one_line_error(
        gym_gui("compare", *seeds, "--metric", METRIC, "--plot", str(tmp_path / "x.nope"), home=root),
        "cannot write the plot",
        "'nope' is not supported",
    )
    assert not (tmp_path / "x.nope").exists()
    assert_one_line_error(gym_gui("compare", seeds[0], "--metric", METRIC, home=root), "two or more runs")
    assert_one_line_error(gym_gui("compare", *seeds, home=root), "--metric", code=2)
