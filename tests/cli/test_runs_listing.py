"""`gym-gui runs` against a real daemon with 60 runs: the newest 50 unless asked, filters, --all, --json."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from gym_gui.core.states import RunState
from gym_gui.storage.registry import RunRegistry
from tests.fixtures import SHARED_BUNDLES
from tests.support import assert_one_line_error, gym_gui, module_daemon, run_record

STATES = (RunState.COMPLETED, RunState.FAILED, RunState.CANCELLED)


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root: Path = tmp_path_factory.mktemp("runs_listing_home")
    with module_daemon(root, SHARED_BUNDLES, ["--cancel-grace", "3"]) as (_client, home):
        # Rows written into the daemon's registry directly (as bench/scale.py does, decision 0032).
        registry = RunRegistry(home.registry_path)
        for index in range(61):
            registry.create(
                run_record(
                    f"run-{index:02d}",
                    STATES[index % 3],
                    created_at=1_700_000_000.0 + index,
                    worker=("random", "cleanrl")[index % 2],
                    reason="CUDA out of memory" if index == 7 else "",
                    archived=index == 60,
                )
            )
        registry.close()
        yield root


def _listed(output: str) -> list[str]:
    return re.findall(r"\brun-\d\d\b", output)


def test_the_newest_50_runs_are_shown_oldest_first_and_the_cut_is_said(home: Path) -> None:
    shown = gym_gui("runs", home=home)
    assert shown.returncode == 0, shown.stderr
    assert _listed(shown.stdout) == [f"run-{index:02d}" for index in range(10, 60)]
    assert "50 of 60 runs shown; --all for every one" in shown.stdout

    every = gym_gui("runs", "--all", home=home)
    assert _listed(every.stdout) == [f"run-{index:02d}" for index in range(61)]
    assert "(archived)" in every.stdout and "runs shown" not in every.stdout
    assert "--all" not in gym_gui("runs", "--limit", "0", home=home).stdout


def test_runs_are_filtered_by_state_worker_and_text(home: Path) -> None:
    failed = gym_gui("runs", "--state", "failed", "--worker", "cleanrl", "--limit", "3", home=home)
    # FAILED are 1, 4, 7, …; cleanrl the odd ones: 1, 7, 13, …, 55 (10 of them); the newest 3 shown.
    assert _listed(failed.stdout) == ["run-43", "run-49", "run-55"]
    assert "3 of 10 runs shown" in failed.stdout
    assert _listed(gym_gui("runs", "--text", "cuda", home=home).stdout) == ["run-07"]
    assert _listed(gym_gui("runs", "--env", "FrozenLake-v1", home=home).stdout) == []

    documented = gym_gui("runs", "--json", "--limit", "2", "--state", "COMPLETED,CANCELLED", home=home)
    assert [run["run_id"] for run in json.loads(documented.stdout)] == ["run-57", "run-59"]
    assert "2 of 40 runs shown" in documented.stderr


def test_a_state_that_is_none_is_one_line_naming_the_option(home: Path) -> None:
    assert_one_line_error(gym_gui("runs", "--state", "FAILED,DONE", home=home), "--state", "'DONE'", "QUEUED")
    assert_one_line_error(gym_gui("runs", "--limit", "-1", home=home), "--limit", code=2)
