"""Steps that name their agent (a multi-agent env's seat) and episodes with each agent's return: stored,
read back, and read as the one implicit agent "" from a file of the previous schema version."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from gym_gui.core.records import EpisodeRecord, StepRecord, StepRow
from gym_gui.storage.database import apply_migrations
from gym_gui.storage.telemetry import TelemetryReader
from gym_gui.storage.telemetry_schema import (
    AGENTS_SINCE,
    EPISODE_TABLE,
    MIGRATIONS,
    STEP_TABLE,
    TELEMETRY_DATABASE,
    insert_rows,
)
from gym_gui.storage.telemetry_writer import TelemetryWriter


def turns(episode: int, agents: list[str], first: int = 0) -> list[StepRow]:
    """Steps ``first``… of ``episode``, a turn of each agent of ``agents`` in order; the last ends."""
    last = first + len(agents) - 1
    return [
        (episode, step, 1.0, step == last, False, "0", "[0]", "{}", None, 1.0, "", "", agent)
        for step, agent in enumerate(agents, start=first)
    ]


def summary(episode: int, steps: int, returns: tuple[tuple[str, float], ...]) -> EpisodeRecord:
    total = sum(value for _agent, value in returns)
    return EpisodeRecord(episode, 7, steps, total, True, False, 1.0, 2.0, "{}", returns)


def test_steps_name_their_agents_and_episodes_keep_each_agents_return(tmp_path: Path) -> None:
    path = tmp_path / "telemetry.sqlite"
    returns = (("player_1", -1.0), ("player_0", 1.0))  # the env's order, not sorted
    with TelemetryWriter(path) as writer:
        writer.put_steps(turns(0, ["player_0", "player_1"]))  # two batches: a game spans them
        writer.put_steps(turns(0, ["player_0", "player_1", "player_0"], first=2))
        writer.put_episode(summary(0, 5, returns))
    reader = TelemetryReader(path)
    try:
        assert [s.agent for s in reader.steps(0)] == ["player_0", "player_1"] * 2 + ["player_0"]
        assert reader.step(0, 3) == StepRecord(
            0, 3, 1.0, False, False, "0", "[0]", "{}", None, 1.0, agent="player_1"
        )
        (episode,) = reader.episodes()
        assert episode.agent_returns == returns and episode.total_reward == 0.0
        assert reader.episode(0) == episode
    finally:
        reader.close()


def test_a_database_of_the_previous_version_reads_as_one_implicit_agent_and_upgrades(tmp_path: Path) -> None:
    path = tmp_path / "telemetry.sqlite"
    conn = sqlite3.connect(path, isolation_level=None)
    apply_migrations(conn, MIGRATIONS[: AGENTS_SINCE - 1], path, TELEMETRY_DATABASE)
    insert_rows(conn, STEP_TABLE, [(0, 0, 1.0, True, False, "0", "[0]", "{}", None, 1.0)])
    columns = (EPISODE_TABLE[0], EPISODE_TABLE[1][:-1])  # that version's episodes: no agent_returns
    insert_rows(conn, columns, [(0, None, 1, 1.0, 1, 0, 1.0, 2.0, "{}")])
    conn.close()

    reader = TelemetryReader(path)  # read-only: opened as it is
    try:
        assert reader.step(0, 0).agent == ""
        assert reader.episodes() == [EpisodeRecord(0, None, 1, 1.0, True, False, 1.0, 2.0, "{}")]
    finally:
        reader.close()
    with TelemetryWriter(path) as writer:  # the daemon's writer upgrades it
        writer.put_steps(turns(1, ["a", "b"]))
        writer.put_episode(summary(1, 2, (("a", 1.0), ("b", 1.0))))
    reader = TelemetryReader(path)
    try:
        assert [(s.episode, s.agent) for s in reader.steps(0) + reader.steps(1)] == [
            (0, ""),
            (1, "a"),
            (1, "b"),
        ]
        assert [e.agent_returns for e in reader.episodes()] == [(), (("a", 1.0), ("b", 1.0))]
    finally:
        reader.close()
