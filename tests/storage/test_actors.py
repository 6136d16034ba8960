"""Who acted at each step: stored beside the steps that say, counted per episode and over the run from
the index of those steps, and read as "" from every step that does not, a file of the previous
schema version included."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from gym_gui.core.errors import StorageError
from gym_gui.core.records import EpisodeInterventions, StepRecord, StepRow
from gym_gui.storage.database import apply_migrations
from gym_gui.storage.telemetry import TelemetryReader
from gym_gui.storage.telemetry_schema import (
    ACTORS_SINCE,
    MIGRATIONS,
    STEP_TABLE,
    TELEMETRY_DATABASE,
    insert_rows,
)
from gym_gui.storage.telemetry_writer import TelemetryWriter

WAIT = 30.0


def plain(episode: int, steps: range) -> list[StepRow]:
    """Steps that do not say who acted (every run's before operators)."""
    return [(episode, step, 0.0, False, False, "0", f"[{step}]", "{}", None, 1.0) for step in steps]


def acted(episode: int, actors: str, first: int = 0) -> list[StepRow]:
    """Steps ``first``… acted as ``actors`` says, a letter a step: o operator, h human (the operator
    had proposed action 3), - not said."""
    who = {"o": "operator", "h": "human", "-": ""}
    return [
        (episode, first + i, 0.0, False, False, "1", "[0]", "{}", None, 1.0, who[c], "3" if c == "h" else "")
        for i, c in enumerate(actors)
    ]


def test_steps_say_who_acted_and_the_run_counts_interventions(tmp_path: Path) -> None:
    path = tmp_path / "telemetry.sqlite"
    with TelemetryWriter(path) as writer:
        writer.put_steps(plain(0, range(4)))  # an episode played before anyone said who acts
        writer.put_steps(acted(1, "oohhoh-"))
        writer.put_steps(acted(2, "hhhh"))
        writer.put_steps(acted(3, "oooo") + acted(3, "oh", first=4))  # two batches in one episode
    reader = TelemetryReader(path)
    try:
        record = reader.step(1, 2)
        assert (record.actor, record.proposed_action) == ("human", "3")
        assert [(s.actor, s.proposed_action) for s in reader.steps(1, 0, 2)] == [("operator", "")] * 2
        assert (reader.step(1, 6).actor, reader.step(0, 0).actor) == ("", "")
        assert reader.interventions() == [
            EpisodeInterventions(episode=1, steps=6, human=3, interventions=2),
            EpisodeInterventions(episode=2, steps=4, human=4, interventions=1),
            EpisodeInterventions(episode=3, steps=6, human=1, interventions=1),
        ]
        assert reader.interventions()[0].rate == 0.5
        assert reader.intervention_rate() == pytest.approx(8 / 16)
        assert reader.actor_spans(1) == [
            (0, 2, "operator"),
            (2, 4, "human"),
            (4, 5, "operator"),
            (5, 6, "human"),
        ]
        assert reader.actor_spans(1, start=3) == [(3, 4, "human"), (4, 5, "operator"), (5, 6, "human")]
        assert reader.actor_spans(3) == [(0, 5, "operator"), (5, 6, "human")]
        assert reader.actor_spans(0) == []
    finally:
        reader.close()


def test_a_run_whose_steps_never_say_has_no_rate(tmp_path: Path) -> None:
    path = tmp_path / "telemetry.sqlite"
    with TelemetryWriter(path) as writer:
        writer.put_steps(plain(0, range(10)))
        writer.put_steps(acted(1, "---"))  # said "not recorded" on the wire: the same
    reader = TelemetryReader(path)
    try:
        assert reader.intervention_rate() is None
        assert reader.interventions() == []
        assert reader.actor_spans(1) == []
        assert {s.actor for s in reader.steps(1)} == {""}
    finally:
        reader.close()
    with sqlite3.connect(path) as conn:  # the index of acted steps stays empty for such a run
        assert conn.execute(
            "SELECT COUNT(*) FROM steps INDEXED BY steps_actor WHERE actor != ''"
        ).fetchone() == (0,)
    conn.close()


def test_a_database_of_the_previous_version_reads_and_upgrades(tmp_path: Path) -> None:
    # A run stored before steps said who acted: its file made by the migrations before ACTORS_SINCE.
    path = tmp_path / "telemetry.sqlite"
    conn = sqlite3.connect(path, isolation_level=None)
    apply_migrations(conn, MIGRATIONS[: ACTORS_SINCE - 1], path, TELEMETRY_DATABASE)
    insert_rows(conn, STEP_TABLE, plain(0, range(3)))
    conn.close()

    reader = TelemetryReader(path)  # read-only: opened as it is, nothing migrated
    try:
        assert reader.steps(0) == [StepRecord(*row) for row in plain(0, range(3))]
        assert (reader.step(0, 1).actor, reader.step(0, 1).proposed_action) == ("", "")
        assert reader.intervention_rate() is None
        assert reader.interventions() == []
        assert reader.actor_spans(0) == []
    finally:
        reader.close()
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone() == (ACTORS_SINCE - 1,)
    conn.close()

    # The daemon's writer (a resumed run) upgrades it: the old steps read "", new ones say who acted.
    with TelemetryWriter(path) as writer:
        writer.put_steps(acted(0, "oh", first=3))
    reader = TelemetryReader(path)
    try:
        assert [s.actor for s in reader.steps(0)] == ["", "", "", "operator", "human"]
        assert reader.intervention_rate() == 0.5
    finally:
        reader.close()


def test_a_batch_of_rows_of_two_widths_is_refused_naming_the_columns(tmp_path: Path) -> None:
    path = tmp_path / "telemetry.sqlite"
    writer = TelemetryWriter(path)
    writer.start()
    try:
        writer.put_steps(acted(0, "o") + plain(0, range(1, 2)))
        with pytest.raises(StorageError, match="proposed_action"):
            writer.flush(timeout=WAIT)
    finally:
        writer.close(timeout=WAIT)
