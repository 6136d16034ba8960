"""`gym-gui daemon start --max-concurrent …`: the daemon's options, kept in the home for every start and told when they differ."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from gym_gui.core.daemon_file import read_daemon_file
from tests.support import assert_one_line_error, gym_gui

OPTIONS = (
    ["--max-concurrent", "3", "--min-free-mb", "1", "--warn-free-mb", "2"],
    ["--heartbeat-timeout", "7", "--cancel-grace", "4"],
)


@pytest.fixture
def home(tmp_path: Path):  # type: ignore[no-untyped-def]
    home = tmp_path / "home"
    yield home
    gym_gui("daemon", "stop", home=home)


def running_options(home: Path) -> dict[str, float]:
    info = read_daemon_file(home / "daemon.json")
    assert info is not None and info.options is not None
    return info.options.chosen()


def status_rows(home: Path) -> dict[str, str]:
    status = gym_gui("daemon", "status", home=home)
    assert status.returncode == 0, status.stderr
    # Label and value are set apart by two spaces at least (a label may hold one).
    return dict(
        re.split(r"\s{2,}", line.strip(), maxsplit=1) for line in status.stdout.splitlines() if line.strip()
    )


def warnings(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("warning:")]


def test_the_options_of_daemon_start_are_kept_and_an_on_demand_start_takes_them(home: Path) -> None:
    started = gym_gui("daemon", "start", *OPTIONS[0], *OPTIONS[1], home=home)
    assert started.returncode == 0, started.stderr
    asked = {
        "max_concurrent": 3,
        "min_free_mb": 1,
        "warn_free_mb": 2,
        "heartbeat_timeout": 7,
        "cancel_grace": 4,
    }
    assert running_options(home) == asked
    rows = status_rows(home)
    assert rows["max-concurrent"] == "3" and rows["min-free-mb"] == "1 MB" and rows["warn-free-mb"] == "2 MB"
    assert rows["heartbeat-timeout"] == "7 s" and rows["cancel-grace"] == "4 s"
    assert rows["options kept in"] == str(home / "daemon-options.json")
    assert gym_gui("daemon", "stop", home=home).returncode == 0

    # Any command starts a daemon when none runs: it starts with the options kept.
    listed = gym_gui("runs", home=home)
    assert listed.returncode == 0 and not warnings(listed.stderr), listed.stderr
    assert running_options(home) == asked
    assert gym_gui("daemon", "stop", home=home).returncode == 0

    # A later start changes the options it names and keeps the others; --defaults forgets them.
    assert gym_gui("daemon", "start", "--cancel-grace", "9", home=home).returncode == 0
    assert running_options(home) == {**asked, "cancel_grace": 9}
    assert gym_gui("daemon", "stop", home=home).returncode == 0
    assert gym_gui("daemon", "start", "--defaults", "--max-concurrent", "1", home=home).returncode == 0
    assert json.loads((home / "daemon-options.json").read_text()) == {"max_concurrent": 1}
    rows = status_rows(home)
    assert rows["max-concurrent"] == "1" and rows["cancel-grace"] == "5 s" and rows["min-free-mb"] == "100 MB"


def test_a_running_daemon_whose_options_differ_from_those_asked_is_told(home: Path) -> None:
    assert gym_gui("daemon", "start", "--max-concurrent", "2", home=home).returncode == 0
    again = gym_gui("daemon", "start", "--max-concurrent", "1", "--cancel-grace", "4", home=home)
    assert again.returncode == 0  # told, not refused: the running daemon goes on
    told = warnings(again.stderr)
    assert len(told) == 2, again.stderr
    assert "--max-concurrent 2" in told[0] and "asks 1" in told[0] and "gym-gui daemon stop" in told[0]
    assert "--cancel-grace 5 s" in told[1] and "asks 4 s" in told[1]
    # Every command says so while that daemon runs, and none once the next one started with them.
    listed = gym_gui("runs", home=home)
    assert listed.returncode == 0 and len(warnings(listed.stderr)) == 2, listed.stderr
    assert gym_gui("daemon", "stop", home=home).returncode == 0
    listed = gym_gui("runs", home=home)
    assert listed.returncode == 0 and not warnings(listed.stderr), listed.stderr
    assert running_options(home)["max_concurrent"] == 1


def test_a_bad_option_is_refused_in_one_line_and_nothing_is_kept(home: Path) -> None:
    refused = gym_gui("daemon", "start", "--heartbeat-timeout", "0", home=home)
    assert_one_line_error(refused, "--heartbeat-timeout", "greater than 0")
    assert not (home / "daemon-options.json").exists() and not (home / "daemon.json").exists()

    # A file damaged by hand: the daemon a command starts on demand refuses it in one line naming it.
    home.mkdir(exist_ok=True)
    (home / "daemon-options.json").write_text('{"max_concurrent": 0}')
    damaged = gym_gui("runs", home=home)
    assert_one_line_error(damaged, "daemon-options.json", "max_concurrent")
