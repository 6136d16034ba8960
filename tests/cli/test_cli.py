"""The `gym-gui` command end to end: real daemon, real runs, one clear line for every error."""

from __future__ import annotations

import json
import os
import queue
import re
import sqlite3
import subprocess
import sys
import tarfile
import threading
from pathlib import Path

import pytest

from gym_gui.core.daemon_file import read_daemon_file
from gym_gui.core.processes import process_alive
from gym_gui.play.seat import Seat
from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.home import Home
from gym_gui.storage.registry import RunRegistry
from gym_gui.storage.run_dir import RunDir
from gym_gui.storage.telemetry import TelemetryReader
from tests.support import assert_one_line_error, gym_gui, wait_until, wait_until_stable


@pytest.fixture
def home(tmp_path: Path):  # type: ignore[no-untyped-def]
    home = tmp_path / "home"
    yield home
    gym_gui("daemon", "stop", home=home)


def run_id_in(text: str) -> str:
    match = re.search(r"run (\S+__\S+__\S+__\d+(?:-\d+)?)", text)
    assert match, text
    return match.group(1)


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
        "field 'env_id': ",
        "FrozenLake-v1",
    )
    # Whoever finds the id unknown (gym_gui's gymnasium, a kind's plugin, a bundle's), the line names the field.
    for kind in (("--worker", "spade_bdi"), ("--worker", "llm"), ("--worker", "cleanrl", "--algo", "ppo")):
        assert_one_line_error(
            gym_gui(
                "train", *kind, "--env", "CartPol-v1", "--total-timesteps", "2000", "--dry-run", home=home
            ),
            "field 'env_id': ",
            "CartPol",
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
    assert_one_line_error(
        gym_gui(
            "train", "--worker", "random", "--env", "CartPole-v1", "--total-timesteps", str(10**13), home=home
        ),
        "field 'budget.timesteps': must be at most 10^12 environment steps",
    )
    # A CleanRL script's flags are checked before the run is stored, not by the script once it runs.
    for param, needle in [
        ("learning-rate=nan", "--learning-rate: expected a finite number"),
        ("learning-rate=inf", "--learning-rate: expected a finite number"),
        ("num-envs=0", "--num-envs: must be in [1, inf], got 0"),
    ]:
        ppo = (
            "train",
            "--worker",
            "cleanrl",
            "--algo",
            "ppo",
            "--env",
            "CartPole-v1",
            "--total-timesteps",
            "2000",
        )
        assert_one_line_error(gym_gui(*ppo, "--param", param, "--detach", home=home), needle)
    assert not (home / "runs").exists() or not any((home / "runs").iterdir())
    # A kind without a default budget (CleanRL runs by its script's steps) asks for one.
    assert_one_line_error(
        gym_gui("train", "--worker", "cleanrl", "--algo", "ppo", "--env", "CartPole-v1", home=home),
        "field 'budget': CleanRL Worker has no default budget",
        "--total-timesteps",
    )
    # An argument the env does not take is refused at submit, whichever lane checks it.
    config.write_text(
        json.dumps(
            {
                "worker": "random",
                "env_id": "FrozenLake-v1",
                "budget": {"episodes": 1},
                "env_kwargs": {"foo": 1},
            }
        )
    )
    assert_one_line_error(
        gym_gui("train", "--config", str(config), "--detach", home=home),
        "field 'env_kwargs': FrozenLake-v1 takes no argument 'foo'",
    )
    config.write_text(
        json.dumps(
            {
                "worker": "cleanrl",
                "algorithm": "ppo",
                "env_id": "CartPole-v1",
                "budget": {"timesteps": 2000},
                "env_kwargs": {"sutton_barto_reward": True},
            }
        )
    )
    assert_one_line_error(
        gym_gui("train", "--config", str(config), "--detach", home=home),
        "field 'env_kwargs': CleanRL's scripts make their environment from its id alone",
    )
    assert_one_line_error(gym_gui("show", "../registry", home=home), "invalid run id")
    assert_one_line_error(
        gym_gui("cancel", "CartPole-v1__random__0__1", home=home), "CartPole-v1__random__0__1"
    )


def test_usage_errors_are_one_line_naming_what_was_wrong(home: Path) -> None:
    assert_one_line_error(gym_gui("train", "--bogus", home=home), "--bogus", "gym-gui train --help", code=2)
    assert_one_line_error(gym_gui("show", home=home), "Missing argument", "gym-gui show --help", code=2)
    assert_one_line_error(
        gym_gui("train", "--worker", "random", "--episodes", "many", home=home),
        "'--episodes'",
        "integer",
        code=2,
    )
    assert_one_line_error(gym_gui("runs", "extra", home=home), "extra", code=2)
    # A group without its command still answers with its help.
    group = gym_gui("daemon", home=home)
    assert group.returncode == 2 and "start" in group.stdout + group.stderr


def test_a_long_input_is_shown_cut_in_its_error_line(home: Path) -> None:
    # A 10,000-character id, parameter or value is refused in one line that shows its start, not all of it.
    long = "a" * 10_000
    ppo = (
        "train",
        "--worker",
        "cleanrl",
        "--algo",
        "ppo",
        "--env",
        "CartPole-v1",
        "--total-timesteps",
        "1000",
    )
    for args in [
        ("show", long),
        ("cancel", "../" + long),
        ("train", "--worker", "random", "--env", "FrozenLake-v1", "--episodes", "1", "--param", long),
        ("train", "--worker", "llm", "--env", "FrozenLake-v1", "--param", f"max_tokens={long}", "--dry-run"),
        (*ppo, "--param", f"{long}=1", "--dry-run"),
    ]:
        result = gym_gui(*args, home=home)
        assert_one_line_error(result, "a" * 70 + "…")
        assert len(result.stderr) < 400, (args[:3], len(result.stderr))


def test_bundles_list_takes_the_names_it_shows(home: Path) -> None:
    listed = gym_gui("bundles", "list", "cleanrl", home=home)
    assert listed.returncode == 0, listed.stderr
    assert "cleanrl" in listed.stdout
    assert_one_line_error(gym_gui("bundles", "list", "cleanrl", "nope", home=home), "'nope'", "cleanrl")


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


def test_an_export_into_the_home_is_refused_in_one_line_and_its_files_stay_whole(
    home: Path, tmp_path: Path
) -> None:
    result = gym_gui("train", "--worker", "random", "--env", "FrozenLake-v1", "--episodes", "3", home=home)
    run_id = run_id_in(result.stdout)
    files = Home(home).ensure()
    database = RunDir(files.run_dir(run_id)).telemetry_path
    before = {path: path.read_bytes() for path in (database, files.registry_path)}
    link = tmp_path / "elsewhere"
    link.symlink_to(home)
    for target in (database, files.registry_path, link / "runs" / run_id / "telemetry.sqlite"):
        assert_one_line_error(
            gym_gui("export", run_id, "-o", str(target), home=home), "inside the gym_gui home", str(target)
        )
    assert {path: path.read_bytes() for path in before} == before
    shown = gym_gui("show", run_id, home=home)
    assert shown.returncode == 0 and re.search(r"episodes\s+3\b", shown.stdout), shown.stderr
    assert gym_gui("export", run_id, "-o", str(tmp_path / "run.tar.gz"), home=home).returncode == 0


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


def test_a_shell_whose_settings_differ_from_the_running_daemons_is_told(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    started_with = str(tmp_path / "bundles_a")
    monkeypatch.setenv("GYM_GUI_BUNDLES", started_with)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    try:
        assert gym_gui("daemon", "start", home=home).returncode == 0
        same = gym_gui("runs", home=home)
        assert same.returncode == 0 and "warning" not in same.stderr, same.stderr

        monkeypatch.setenv("GYM_GUI_BUNDLES", str(tmp_path / "bundles_b"))
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
        told = gym_gui("runs", home=home)
        assert told.returncode == 0  # told, not refused
        lines = [line for line in told.stderr.splitlines() if line.startswith("warning:")]
        assert len(lines) == 2, told.stderr
        assert f"GYM_GUI_BUNDLES={started_with!r}" in lines[0] and "bundles_b" in lines[0]
        assert "CUDA_VISIBLE_DEVICES=(unset)" in lines[1] and "gym-gui daemon stop" in lines[1]
    finally:
        gym_gui("daemon", "stop", home=home)


class _Watch:
    """`gym-gui watch RUN` in the background (piped: one plain line per thing that happened)."""

    def __init__(self, run_id: str, home: Path) -> None:
        env = {**os.environ, "GYM_GUI_HOME": str(home), "COLUMNS": "200", "NO_COLOR": "1"}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "gym_gui", "watch", run_id], stdout=subprocess.PIPE, text=True, env=env
        )
        self.lines: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        stdout = self.process.stdout
        assert stdout is not None
        threading.Thread(
            target=lambda: [self.lines.put(line.rstrip()) for line in stdout], daemon=True
        ).start()

    def wait_for(self, text: str, timeout: float = 30) -> None:
        def shown() -> bool:
            while not self.lines.empty():
                self.seen.append(self.lines.get())
            return any(text in line for line in self.seen)

        try:
            wait_until(shown, timeout, f"`gym-gui watch` to print {text!r}")
        except AssertionError as exc:
            raise AssertionError(f"{exc}; it printed {self.seen[-8:]}") from None

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(10)


def test_pause_and_resume_from_the_cli_hold_the_process_and_go_on_from_the_same_step(home: Path) -> None:
    started = gym_gui(
        "train",
        "--worker",
        "random",
        "--env",
        "CartPole-v1",
        "--total-timesteps",
        "100000000",
        "--detach",
        home=home,
    )
    assert started.returncode == 0, started.stderr
    run_id = run_id_in(started.stdout)
    client = DaemonClient.connect(home, autostart=False)
    registry = RunRegistry(Home(home).registry_path)
    watch = _Watch(run_id, home)
    try:
        wait_until(lambda: client.get_run(run_id).progress.steps > 1000, 60, "the run to take steps")
        pid = registry.get(run_id).pid
        assert pid is not None

        paused = gym_gui("pause", run_id, home=home)
        assert paused.returncode == 0, paused.stderr
        assert f"run {run_id} PAUSED" in paused.stdout
        assert client.get_run(run_id).record.state == "PAUSED"
        assert registry.get(run_id).pid == pid and process_alive(pid), "a paused run must keep its process"
        held = wait_until_stable(lambda: client.get_run(run_id).progress.steps, what="the paused run's steps")
        reader = TelemetryReader(RunDir(Home(home).run_dir(run_id)).telemetry_path)
        last_key = reader.last_step_key()
        assert last_key is not None
        reader.close()

        # PAUSED shows in the runs table, in show (state and history) and in watch.
        assert re.search(rf"{re.escape(run_id)}\s.*\sPAUSED\s", gym_gui("runs", home=home).stdout)
        shown = gym_gui("show", run_id, home=home).stdout
        assert re.search(r"state\s+PAUSED: paused", shown), shown
        assert re.search(r"RUNNING\s+│\s+PAUSED\s+│\s+paused", shown), shown
        watch.wait_for("state PAUSED: paused")

        # Controls that do not apply say why, in one line.
        assert_one_line_error(gym_gui("pause", run_id, home=home), "only a RUNNING run can be paused")
        assert_one_line_error(
            gym_gui("checkpoint", run_id, home=home), "worker Random Baseline cannot checkpoint on demand"
        )
        assert_one_line_error(gym_gui("render-rate", run_id, "500", home=home), "between 0 and 240")
        assert client.get_run(run_id).progress.steps == held, "refused controls must not move the run"

        resumed = gym_gui("resume", run_id, home=home)
        assert resumed.returncode == 0, resumed.stderr
        assert f"run {run_id} RUNNING" in resumed.stdout
        watch.wait_for("state RUNNING: resumed")
        wait_until(
            lambda: client.get_run(run_id).progress.steps > held + 5000, 60, "the resumed run to step on"
        )
        assert registry.get(run_id).pid == pid and process_alive(pid), "resume must continue the same process"
        assert_one_line_error(gym_gui("resume", run_id, home=home), "only a PAUSED run can be resumed")
        # The episode it was paused in went on from its last step: it ended with every step stored.
        episode, step = last_key
        reader = TelemetryReader(RunDir(Home(home).run_dir(run_id)).telemetry_path)
        try:
            wait_until(lambda: reader.episode_count() > episode + 1, 30, "the paused episode to end")
            assert reader.episode(episode).steps == reader.steps_per_episode()[episode] >= step + 1
            numbers = [e.episode for e in reader.episodes()]
            assert numbers == list(range(len(numbers))), "episodes must be numbered on, never again from 0"
        finally:
            reader.close()

        # A run cancelled while paused ends from PAUSED, and its process with it.
        assert gym_gui("pause", run_id, home=home).returncode == 0
        cancelled = gym_gui("cancel", run_id, home=home)
        assert f"run {run_id} CANCELLED" in cancelled.stdout, cancelled.stderr
        assert [c.to_state for c in client.get_run(run_id).history][-2:] == ["PAUSED", "CANCELLED"]
        wait_until(lambda: not process_alive(pid), 30, "the cancelled worker to exit")
        watch.wait_for("state CANCELLED")
        assert watch.process.wait(30) == 0
    finally:
        watch.close()
        registry.close()
        client.close()


def test_a_worker_that_cannot_pause_is_refused_in_one_line(home: Path) -> None:
    assert gym_gui("daemon", "start", home=home).returncode == 0
    client = DaemonClient.connect(home, autostart=False)
    session = Seat(client, "FrozenLake-v1", seed=0)
    try:
        session.start()
        wait_until(lambda: client.get_run(session.run_id).record.state == "RUNNING", 30, "human play to run")
        assert_one_line_error(gym_gui("pause", session.run_id, home=home), "worker Human-Only cannot pause")
        assert_one_line_error(gym_gui("resume", session.run_id, home=home), "worker Human-Only cannot pause")
        assert client.get_run(session.run_id).record.state == "RUNNING"
    finally:
        session.close()
        client.close()


def test_wandb_sync_says_in_one_line_what_it_needs(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    result = gym_gui("train", "--worker", "random", "--env", "FrozenLake-v1", "--episodes", "1", home=home)
    assert result.returncode == 0, result.stderr
    run_id = run_id_in(result.stdout)
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    assert_one_line_error(
        gym_gui("wandb", "sync", run_id, home=home), f"run {run_id} has no offline W&B data"
    )

    # Where wandb keeps a run it records offline, as a CleanRL run with offline tracking leaves it.
    (Home(home).run_dir(run_id) / "wandb" / "offline-run-20250101_000000-abc123").mkdir(parents=True)
    assert_one_line_error(
        gym_gui("wandb", "sync", run_id, home=home),
        "sync needs a W&B API key: WANDB_API_KEY or a `wandb login`",
        "gym_gui never stores it",
    )

    monkeypatch.setenv("WANDB_API_KEY", "not-a-real-key")
    assert_one_line_error(
        gym_gui("wandb", "sync", run_id, home=home), "worker 'random' runs in gym_gui's own environment"
    )
