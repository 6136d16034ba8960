"""`gym-gui arena --seat` end to end: a real daemon, real PettingZoo, every game stored naming its agent."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.run_dir import RunDir
from gym_gui.storage.telemetry import TelemetryReader
from tests.support import assert_one_line_error, gym_gui

SEATS = ("--seat", "player_0=random", "--seat", "player_1=random")


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    home = tmp_path_factory.mktemp("arena_seats") / "home"
    yield home
    gym_gui("daemon", "stop", home=home)


def seated(home: Path, out: Path, *args: str) -> dict:  # type: ignore[type-arg]
    result = gym_gui("arena", "--env", "connect_four_v3", *args, "--json", str(out), home=home)
    assert result.returncode == 0, result.stderr
    assert "win rate (95 % CI)" in result.stdout and "mean return ± 95 % CI" in result.stdout
    return json.loads(out.read_text())


def test_seats_play_both_sides_store_every_game_and_give_the_same_results_twice(
    home: Path, tmp_path: Path
) -> None:
    args = (*SEATS, "--episodes", "4", "--seed", "3", "--swap")
    first = seated(home, tmp_path / "first.json", *args)
    second = seated(home, tmp_path / "second.json", *args)
    numbers = lambda report: [  # noqa: E731
        [
            (s["agent"], s["returns"], s["wins"], s["draws"], s["losses"], s["illegal"])
            for s in seating["seats"]
        ]
        for seating in report["seatings"]
    ]
    assert numbers(first) == numbers(second)
    assert len(first["seatings"]) == 2  # --swap: each operator from each side
    for seating in first["seatings"]:
        zero, one = seating["seats"]
        assert (zero["agent"], one["agent"]) == ("player_0", "player_1")
        assert zero["wins"] + zero["draws"] + zero["losses"] == 4 and zero["wins"] == one["losses"]
        assert [a + b for a, b in zip(zero["returns"], one["returns"], strict=True)] == [0.0] * 4
        assert zero["illegal"] == one["illegal"] == 0  # the random seat draws legal moves

    # Each seating is a run of the comparison; every stored step names its seat, in turn order.
    with DaemonClient.connect(home, autostart=False) as client:
        runs = {run.run_id: run for run in client.list_runs()}
    for seating in first["seatings"]:
        run = runs[seating["run_id"]]
        assert run.state.value == "COMPLETED"
        files = RunDir(run.run_dir)
        assert files.read_config().comparison == first["comparison"]
        reader = TelemetryReader(files.telemetry_path)
        try:
            episodes = reader.episodes()
            assert [dict(e.agent_returns) for e in episodes] == [
                {s["agent"]: s["returns"][i] for s in seating["seats"]} for i in range(4)
            ]
            steps = reader.steps(0)
            assert [s.agent for s in steps] == ["player_0", "player_1"] * (len(steps) // 2) + ["player_0"] * (
                len(steps) % 2
            )
            assert {s.actor for s in steps} == {"operator"}
            assert all(0 <= orjson.loads(s.action) < 7 for s in steps)
        finally:
            reader.close()


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (
            ("--seat", "player_0=random", "--seat", "player_9=random"),
            ("--seat player_9", "player_0, player_1"),
        ),
        (("--seat", "player_0=random"), ("seat player_1 has no operator",)),
        ((*SEATS[:3], "player_1=human"), ("seat player_1", "headless")),
        ((*SEATS[:3], "player_1=norun_0"), ("seat player_1", "there is no run norun_0")),
        (("--seat", "player_0"), ("--seat 'player_0'", "AGENT=OPERATOR")),
        (("random", *SEATS), ("not both",)),
    ],
)
def test_a_bad_seating_is_refused_in_one_line_before_anything_is_stored(
    home: Path, args: tuple[str, ...], needles: tuple[str, ...]
) -> None:
    with DaemonClient.connect(home) as client:
        before = len(client.list_runs())
    result = gym_gui("arena", "--env", "connect_four_v3", *args, "--episodes", "2", home=home)
    assert_one_line_error(result, *needles)
    with DaemonClient.connect(home, autostart=False) as client:
        assert len(client.list_runs()) == before


def test_a_single_agent_env_has_no_seats(home: Path) -> None:
    result = gym_gui("arena", "--env", "CartPole-v1", "--seat", "player_0=random", home=home)
    assert_one_line_error(result, "CartPole-v1 has one agent")


def test_a_language_model_seat_of_a_game_without_a_text_rendering_is_refused(
    home: Path, tmp_path: Path
) -> None:
    config = tmp_path / "chess.json"
    params = {"base_url": "http://127.0.0.1:9/v1", "model": "m"}
    config.write_text(
        json.dumps({"worker": "llm", "env_id": "chess_v6", "budget": {"episodes": 1}, "params": params})
    )
    result = gym_gui(
        "arena",
        "--env",
        "chess_v6",
        "--seat",
        "player_0=random",
        "--seat",
        f"player_1=llm:{config}",
        home=home,
    )
    assert_one_line_error(result, "seat player_1", "tictactoe_v3, connect_four_v3; chess_v6 has none")
