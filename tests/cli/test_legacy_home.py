"""Runs stored by gym_gui before worker kinds had their own parameters still show and re-run.

``tests/cli/legacy_home`` is a home written by that version (its registry, a random run, and a
CleanRL dry run whose config has ``source``, ``resources.torch_deterministic: false`` and
``tracking.capture_video: true``, and whose manifest keeps ``script`` and ``script_command`` at its
top level). Nothing in it is rewritten: the version today reads it as it is.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from gym_gui.core.config import parse_run_config
from gym_gui.storage.home import Home
from gym_gui.storage.run_dir import RunDir
from tests.support import gym_gui

LEGACY = Path(__file__).resolve().parent / "legacy_home"
RANDOM_RUN = "FrozenLake-v1__random__0__1795806243"
CLEANRL_RUN = "CartPole-v1__ppo__0__1795806246"


@pytest.fixture
def home(tmp_path: Path):  # type: ignore[no-untyped-def]
    home = tmp_path / "home"
    shutil.copytree(LEGACY, home)
    yield home
    gym_gui("daemon", "stop", home=home)


def test_the_old_files_load_as_they_are(home: Path) -> None:
    files = RunDir(Home(home).run_dir(CLEANRL_RUN))
    stored = json.loads(files.config_path.read_text())
    assert "source" in stored and stored["tracking"]["capture_video"] is True  # the old format, as kept
    config = files.read_config()
    # The settings one kind alone read are that kind's parameters now, by their own names.
    assert config.params == {"torch_deterministic": False, "capture_video": True}
    assert parse_run_config(config.model_dump(mode="json")) == config  # and the new form reads back
    manifest = files.read_manifest()
    assert manifest.extras == {} and manifest.command  # the old top-level script fields are kept aside
    assert manifest.model_dump()["script"].endswith("cleanrl/ppo.py")


def test_show_and_rerun_of_runs_made_before_the_change(home: Path) -> None:
    for run_id in (RANDOM_RUN, CLEANRL_RUN):
        shown = gym_gui("show", run_id, home=home)
        assert shown.returncode == 0, shown.stderr
        assert run_id in shown.stdout and "COMPLETED" in shown.stdout

    again = gym_gui("rerun", RANDOM_RUN, "--yes", home=home)
    assert again.returncode == 0, again.stderr
    assert "identical" in again.stdout  # the same seed and config: the same returns as stored then

    # The CleanRL dry run re-runs as a dry run; its old settings reach the script as its own flags.
    again = gym_gui("rerun", CLEANRL_RUN, "--yes", home=home)
    assert again.returncode == 0, again.stdout + again.stderr
    (rerun_id,) = [
        r for r in re.findall(r"CartPole-v1__ppo__0__\d+(?:-\d+)?", again.stdout) if r != CLEANRL_RUN
    ][:1]
    manifest = RunDir(Home(home).run_dir(rerun_id)).read_manifest()
    script = manifest.extras["script_command"]
    assert script[script.index("--torch-deterministic") + 1] == "False"
    assert script[script.index("--capture-video") + 1] == "True"
