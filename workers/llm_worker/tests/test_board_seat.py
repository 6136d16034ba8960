"""An LLM configuration in a seat of a board game: `gym-gui arena --seat` against the suite's chat
server, the model reading the board's text and answering legal moves."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.run_dir import RunDir
from gym_gui.storage.telemetry import TelemetryReader
from tests.support import gym_gui
from workers.llm_worker.tests.chat_server import MODEL, Answer, ChatServer, answer_actions

KEY = "sk-board-seat-7e21"


def last_legal(request: dict[str, Any]) -> Answer:
    """The last of the legal moves the board's text lists: a move only the text tells."""
    moves = re.findall(r"Legal moves: ([\d, ]+)", request["messages"][-1]["content"])[-1]
    return answer_actions(request, [int(moves.split(",")[-1])])


@pytest.fixture
def home(tmp_path: Path):  # type: ignore[no-untyped-def]
    home = tmp_path / "home"
    yield home
    gym_gui("daemon", "stop", home=home)


def test_an_llm_seat_plays_legal_moves_read_from_the_boards_text(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LLM_API_KEY", KEY)
    with ChatServer(last_legal) as server:
        model = tmp_path / "model.json"
        params = {"base_url": server.url, "model": MODEL, "parallel": 1, "timeout": 10}
        model.write_text(
            json.dumps(
                {"worker": "llm", "env_id": "connect_four_v3", "budget": {"episodes": 1}, "params": params}
            )
        )
        out = tmp_path / "arena.json"
        result = gym_gui(
            "arena", "--env", "connect_four_v3", "--seat", "player_0=random", "--seat",
            f"player_1=llm:{model}", "--episodes", "2", "--seed", "0", "--json", str(out), home=home,
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
        asked = [
            r.body["messages"][-1]["content"] for r in server.received if r.path.endswith("/completions")
        ]
    seats = json.loads(out.read_text())["seatings"][0]
    llm = seats["seats"][1]
    assert (llm["agent"], llm["name"], llm["games"]) == ("player_1", f"{MODEL} on connect_four_v3", 2)
    assert llm["illegal"] == 0 and llm["fallbacks"] == 0
    assert asked and all("Connect Four" in text and "Legal moves:" in text for text in asked)

    with DaemonClient.connect(home, autostart=False) as client:
        run = next(run for run in client.list_runs() if run.run_id == seats["run_id"])
    reader = TelemetryReader(RunDir(run.run_dir).telemetry_path)
    try:
        steps = [step for step in reader.steps(0) if step.agent == "player_1"]
    finally:
        reader.close()
    # Each of its moves is the one the model named, with the call that named it.
    for step in steps:
        call = json.loads(step.info)["llm"]
        assert call["valid"] and call["actions"] == [json.loads(step.action)]
