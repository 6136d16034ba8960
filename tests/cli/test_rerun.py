"""`gym-gui rerun`: the same config, seed and package set, a package difference confirmed, returns compared."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from gym_gui.core.rerun import RERUN_EVENT
from gym_gui.storage.home import Home
from gym_gui.storage.registry import RunRegistry
from gym_gui.storage.run_dir import ManifestWriter, RunDir
from gym_gui.storage.telemetry import TelemetryReader
from tests.support import assert_one_line_error, gym_gui


@pytest.fixture
def home(tmp_path: Path):  # type: ignore[no-untyped-def]
    home = tmp_path / "home"
    yield home
    gym_gui("daemon", "stop", home=home)


def _run_ids(text: str) -> list[str]:
    return re.findall(r"run (\S+__\S+__\S+__\d+(?:-\d+)?)", text)


def _files(home: Path, run_id: str) -> RunDir:
    return RunDir(Home(home).run_dir(run_id))


def _rerun_events(files: RunDir) -> list[dict[str, object]]:
    reader = TelemetryReader(files.telemetry_path)
    try:
        return [json.loads(event.data) for event in reader.events() if event.kind == RERUN_EVENT]
    finally:
        reader.close()


def _run_count(home: Path) -> int:
    registry = RunRegistry(Home(home).registry_path)
    try:
        return len(registry.list(include_archived=True))
    finally:
        registry.close()


def test_a_seeded_random_run_reruns_with_identical_returns(home: Path) -> None:
    trained = gym_gui(
        "train", "--worker", "random", "--env", "CartPole-v1", "--episodes", "12", "--seed", "7", home=home
    )
    assert trained.returncode == 0, trained.stderr
    original = _run_ids(trained.stdout)[0]

    result = gym_gui("rerun", original, home=home)

    assert result.returncode == 0, result.stderr
    assert "differs" not in result.stdout  # the same interpreter: nothing to confirm
    rerun = next(run for run in _run_ids(result.stdout) if run != original)
    assert f"re-run of {original}: identical: 12 episodic returns match" in result.stdout
    files = _files(home, rerun)
    assert files.read_manifest().rerun_of == original
    assert files.read_config().seed == 7
    assert files.read_config().rerun_of == original
    assert _rerun_events(files) == [
        {
            "rerun_of": original,
            "identical": True,
            "episodes": 12,
            "original_episodes": 12,
            "first_difference": None,
        }
    ]


def test_a_different_package_set_is_listed_and_refused_unless_confirmed(home: Path) -> None:
    trained = gym_gui(
        "train", "--worker", "random", "--env", "CartPole-v1", "--episodes", "5", "--seed", "3", home=home
    )
    assert trained.returncode == 0, trained.stderr
    original = _run_ids(trained.stdout)[0]
    # What an older gym_gui would have recorded: another numpy, and a package no longer installed.
    files = _files(home, original)
    manifest = files.read_manifest()
    recorded = manifest.environment.packages
    numpy_now = next(line for line in recorded if line.lower().startswith("numpy=="))
    older = [line for line in recorded if line != numpy_now] + ["numpy==1.21.0", "ancient-helper==0.3"]
    ManifestWriter(files, manifest).update(
        environment={**manifest.environment.model_dump(), "packages": older}
    )
    runs_before = _run_count(home)

    refused = gym_gui("rerun", original, home=home, input="")
    assert_one_line_error(refused, "not re-run", "2 packages differ", "--yes")
    assert f"numpy 1.21.0 → {numpy_now.split('==')[1]}" in refused.stdout
    assert "ancient-helper 0.3 → —" in refused.stdout
    declined = gym_gui("rerun", original, home=home, input="n\n")
    assert_one_line_error(declined, "not re-run")
    assert _run_count(home) == runs_before  # nothing launched, nothing stored

    confirmed = gym_gui("rerun", original, "--yes", home=home)
    assert confirmed.returncode == 0, confirmed.stderr
    assert "numpy 1.21.0 →" in confirmed.stdout
    assert "identical: 5 episodic returns match" in confirmed.stdout
    assert _run_count(home) == runs_before + 1


def test_rerunning_a_run_that_does_not_exist_is_one_line(home: Path) -> None:
    assert_one_line_error(
        gym_gui("rerun", "CartPole-v1__random__0__1", home=home), "CartPole-v1__random__0__1"
    )
    assert_one_line_error(gym_gui("rerun", "../registry", home=home), "invalid run id")


def test_a_deterministic_cleanrl_ppo_run_reruns_with_identical_returns(
    home: Path, cleanrl_python: Path
) -> None:
    trained = gym_gui(
        "train",
        "--worker",
        "cleanrl",
        "--algo",
        "ppo",
        "--env",
        "CartPole-v1",
        "--total-timesteps",
        "2048",
        "--seed",
        "1",
        "--param",
        "num-envs=2",
        "--param",
        "num-steps=128",
        home=home,
        timeout=600,
    )
    assert trained.returncode == 0, trained.stderr
    original = _run_ids(trained.stdout)[0]

    result = gym_gui("rerun", original, home=home, timeout=600)

    assert result.returncode == 0, result.stderr
    match = re.search(r"identical: (\d+) episodic returns match", result.stdout)
    assert match, result.stdout
    assert int(match.group(1)) > 10  # CartPole episodes of a 2k-step run: enough to tell
    rerun = next(run for run in _run_ids(result.stdout) if run != original)
    assert _files(home, rerun).read_manifest().rerun_of == original
