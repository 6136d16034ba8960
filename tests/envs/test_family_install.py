"""`gym-gui envs install atari` from a fresh home into a fresh copy of gym_gui's environment: ale-py is
installed, recorded so that `make install` keeps it, and the catalog lists Atari as installed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from gym_gui.workers.bundle_install import base_python
from tests.fixtures import REPO
from tests.support import gym_gui

UV = str(Path(sys.executable).parent / "uv")


def make_install(venv: Path) -> Path:
    """What `make install` does to gym_gui's environment ``venv``: sync it to the lock and the families
    `gym-gui envs install` recorded there, then add the local packages."""
    python = venv / "bin" / "python"
    local = [REPO / "sdk", *sorted(p.parent for p in (REPO / "workers").glob("*/pyproject.toml")), REPO]
    records = sorted(str(p) for p in (venv / "gym_gui_families").glob("*.txt"))
    for command in (
        [UV, "pip", "sync", "--quiet", "--python", str(python), str(REPO / "requirements.lock"), *records],
        [UV, "pip", "install", "--quiet", "--python", str(python), "--no-deps", *(f"-e{p}" for p in local)],
    ):
        subprocess.run(command, check=True, capture_output=True, timeout=600)
    return python


def test_install_atari_into_a_fresh_app_environment(tmp_path: Path) -> None:
    subprocess.run([UV, "venv", "--quiet", "--python", base_python(), str(tmp_path / "app")], check=True)
    python = make_install(tmp_path / "app")
    home = tmp_path / "home"
    assert subprocess.run([python, "-c", "import ale_py"], capture_output=True).returncode != 0

    listed = json.loads(gym_gui("envs", "--family", "atari", "--json", home=home, python=python).stdout)
    assert listed["envs"] == []  # ALE's games are read from ale-py, once it is installed
    assert listed["families"] == [
        {
            "name": "atari",
            "title": "Atari (ALE)",
            "installed": False,
            "needs": "install it with `gym-gui envs install atari`",
            "envs": 0,
        }
    ]

    installed = gym_gui("envs", "install", "atari", home=home, python=python, timeout=600)
    assert installed.returncode == 0, installed.stderr
    lines = installed.stdout.splitlines()
    assert any(
        line.startswith("installed ale-py==0.12.") and "into gym_gui's environment" in line for line in lines
    )
    # The suite's bundles (shared by every test home) hold the CleanRL bundle: it has the extra too.
    assert "bundle cleanrl has extra atari" in lines
    record = (tmp_path / "app" / "gym_gui_families" / "atari.txt").read_text().splitlines()
    assert next(line for line in record if not line.startswith("#")).startswith("ale-py==0.12.")

    envs = json.loads(gym_gui("envs", "--family", "atari", "--json", home=home, python=python).stdout)["envs"]
    assert "ALE/Breakout-v5" in {env["env_id"] for env in envs}
    assert all(env["installed"] and env["needs"] == "" for env in envs)

    # make install syncs the lock and the recorded families: Atari stays.
    make_install(tmp_path / "app")
    assert subprocess.run([python, "-c", "import ale_py"], capture_output=True).returncode == 0
    again = gym_gui("envs", "install", "atari", home=home, python=python)
    assert again.returncode == 0 and "Atari (ALE) is installed in gym_gui's environment" in again.stdout
