"""The `gym-gui` command end to end: real daemon, real runs, one clear line for every error."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from gym_gui.core.daemon_file import read_daemon_file


def gym_gui(
    *args: str, home: Path, timeout: float = 180, input: str | None = None
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "GYM_GUI_HOME": str(home), "COLUMNS": "200", "NO_COLOR": "1"}
    return subprocess.run(
        [sys.executable, "-m", "gym_gui", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        input=input,
    )


@pytest.fixture
def home(tmp_path: Path):  # type: ignore[no-untyped-def]
    home = tmp_path / "home"
    yield home
    gym_gui("daemon", "stop", home=home)


def run_id_in(text: str) -> str:
    match = re.search(r"run (\S+__\S+__\S+__\d+(?:-\d+)?)", text)
    assert match, text
    return match.group(1)


def assert_one_line_error(result: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert result.returncode == 1, result
    assert "Traceback" not in result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert lines and lines[0].startswith("error:"), result.stderr
    for needle in needles:
        assert needle in result.stderr


def test_train_200_frozenlake_episodes_then_show(home: Path) -> None:
    result = gym_gui("train", "--worker", "random", "--env", "FrozenLake-v1", "--episodes", "200", home=home)
    assert result.returncode == 0, result.stderr
    assert "COMPLETED" in result.stdout
    run_id = run_id_in(result.stdout)
    shown = gym_gui("show", run_id, home=home)
    assert shown.returncode == 0, shown.stderr
    assert re.search(r"episodes\s+200\b", shown.stdout)
    assert "match" in shown.stdout
    listed = gym_gui("runs", home=home)
    assert run_id in listed.stdout


def test_bad_input_prints_one_clear_line(home: Path, tmp_path: Path) -> None:
    assert_one_line_error(
        gym_gui("train", "--worker", "random", "--env", "FrozenLake-v2", "--episodes", "1", home=home),
        "FrozenLake-v1",
    )
    config = tmp_path / "run.json"
    config.write_text(
        json.dumps({"worker": "random", "env_id": "CartPole-v1", "budget": {"episodes": 1}, "speed": 3})
    )
    assert_one_line_error(gym_gui("train", "--config", str(config), home=home), "speed")
    config.write_text("{not json")
    assert_one_line_error(gym_gui("train", "--config", str(config), home=home), "not valid JSON")
    assert_one_line_error(
        gym_gui("train", "--worker", "random", "--env", "CartPole-v1", "--episodes", "0", home=home),
        "budget.episodes",
    )
    assert_one_line_error(gym_gui("show", "../registry", home=home), "invalid run id")
    assert_one_line_error(
        gym_gui("cancel", "CartPole-v1__random__0__1", home=home), "CartPole-v1__random__0__1"
    )


def test_config_file_with_flag_overrides_and_detach(home: Path, tmp_path: Path) -> None:
    config = tmp_path / "run.json"
    config.write_text(
        json.dumps({"worker": "random", "env_id": "CartPole-v1", "seed": 3, "budget": {"episodes": 50}})
    )
    result = gym_gui("train", "--config", str(config), "--episodes", "4", "--detach", home=home)
    assert result.returncode == 0, result.stderr
    run_id = run_id_in(result.stdout)
    assert run_id.startswith("CartPole-v1__random__3__")
    stored = json.loads((home / "runs" / run_id / "config.json").read_text())
    assert stored["budget"]["episodes"] == 4


def test_watch_follows_a_run_to_its_end(home: Path) -> None:
    started = gym_gui(
        "train",
        "--worker",
        "random",
        "--env",
        "CartPole-v1",
        "--total-timesteps",
        "60000",
        "--detach",
        home=home,
    )
    run_id = run_id_in(started.stdout)
    watched = gym_gui("watch", run_id, home=home)
    assert watched.returncode == 0, watched.stderr
    assert "COMPLETED" in watched.stdout
    assert "episode/return" in watched.stdout


def test_archive_delete_export_and_schema(home: Path, tmp_path: Path) -> None:
    result = gym_gui("train", "--worker", "random", "--env", "Taxi-v4", "--episodes", "3", home=home)
    run_id = run_id_in(result.stdout)

    archive = tmp_path / "run.tar.gz"
    assert gym_gui("export", run_id, "--output", str(archive), home=home).returncode == 0
    with tarfile.open(archive) as tar:
        names = tar.getnames()
        assert f"{run_id}/config.json" in names and f"{run_id}/manifest.json" in names
        tar.extractall(tmp_path / "out", filter="data")
    db = sqlite3.connect(tmp_path / "out" / run_id / "telemetry.sqlite")
    assert db.execute("SELECT COUNT(*) FROM episodes").fetchone()[0] == 3
    db.close()

    assert gym_gui("archive", run_id, home=home).returncode == 0
    assert run_id not in gym_gui("runs", home=home).stdout
    assert run_id in gym_gui("runs", "--all", home=home).stdout

    refused = gym_gui("delete", run_id, home=home, input="n\n")
    assert refused.returncode == 1
    assert (home / "runs" / run_id).exists()
    assert gym_gui("delete", run_id, "--yes", home=home).returncode == 0
    assert not (home / "runs" / run_id).exists()
    gone = gym_gui("export", run_id, "--output", str(tmp_path / "gone.tar.gz"), home=home)
    assert gone.returncode == 1 and "no run directory at" in gone.stderr, gone.stderr
    assert not (tmp_path / "gone.tar.gz").exists()

    schema = json.loads(gym_gui("schema", home=home).stdout)
    assert {"worker", "env_id", "budget", "tracking"} <= set(schema["properties"])


def test_daemon_start_status_stop(home: Path) -> None:
    assert gym_gui("daemon", "start", home=home).returncode == 0
    info = read_daemon_file(home / "daemon.json")
    assert info is not None
    status = gym_gui("daemon", "status", home=home)
    assert status.returncode == 0
    assert info.address in status.stdout and "daemon.log" in status.stdout
    stopped = gym_gui("daemon", "stop", home=home)
    assert stopped.returncode == 0
    assert not (home / "daemon.json").exists()
    assert gym_gui("daemon", "status", home=home).returncode == 1
