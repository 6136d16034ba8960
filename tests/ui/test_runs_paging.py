"""The runs table of a home with 250 runs: the newest 100 first, older pages as it is scrolled to its end,
and runs the daemon adds or deletes meanwhile, from a real daemon into real Qt (offscreen)."""

from __future__ import annotations

from pytestqt.qtbot import QtBot

from gym_gui.core.states import RunState
from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.registry import RunRegistry
from gym_gui.ui.daemon_link import RUNS_PAGE, DaemonLink
from gym_gui.ui.runs.table import RunsTable
from tests.support import random_config, run_record

RUNS = 250


def test_the_newest_page_first_then_older_pages_as_the_table_is_scrolled(
    qtbot: QtBot, client: DaemonClient, registry: RunRegistry, link: DaemonLink
) -> None:
    # Rows written into the daemon's registry directly (as bench/scale.py does, decision 0032).
    for index in range(RUNS):
        registry.create(run_record(f"run-{index:03d}", RunState.COMPLETED, created_at=1_000.0 + index))
    table = RunsTable(link)
    qtbot.addWidget(table)
    table.resize(900, 400)
    table.show()

    qtbot.waitUntil(lambda: table.model.rowCount() >= RUNS_PAGE, timeout=10_000)
    assert RUNS_PAGE == 100 and table.model.rowCount() == RUNS_PAGE
    assert set(table.model.run_ids()) == {f"run-{index:03d}" for index in range(150, RUNS)}
    assert table.count_label.isVisible() and table.count_label.text() == "100 of 250 runs"

    # Scrolled to its end, the view asks for the next older page, and then the last.
    for held in (200, 250):
        table.view.scrollToBottom()
        qtbot.waitUntil(lambda held=held: table.model.rowCount() == held, timeout=10_000)
    assert set(table.model.run_ids()) == {f"run-{index:03d}" for index in range(RUNS)}
    assert not table.count_label.isVisible() and not table.model.canFetchMore(table.model.index(-1, -1))

    # The watch adds a new run and drops a deleted one.
    record, _ = client.submit(random_config(episodes=2))
    qtbot.waitUntil(lambda: table.state_of(record.run_id) is RunState.COMPLETED, timeout=30_000)
    client.delete("run-000")
    qtbot.waitUntil(lambda: table.model.row("run-000") is None, timeout=10_000)
    assert table.model.rowCount() == RUNS and table.total == RUNS
