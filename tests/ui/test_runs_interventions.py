"""The runs table's Interventions column: the share of steps a person acted, for runs whose steps say who
acted, read from storage once the run has ended (off the GUI thread) and kept; blank for other runs."""

from __future__ import annotations

from PySide6.QtCore import Qt
from pytestqt.qtbot import QtBot

from gym_gui.core.states import RunState
from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.home import Home
from gym_gui.storage.run_dir import RunDir
from gym_gui.ui.daemon_link import DaemonLink
from gym_gui.ui.runs.model import COLUMNS, INTERVENTIONS
from gym_gui.ui.runs.table import RunsTable
from tests.support import publish_acted_run, random_config


def cell(table: RunsTable, run_id: str, role: Qt.ItemDataRole = Qt.ItemDataRole.DisplayRole) -> object:
    """The run's Interventions cell (None while the table has no row for the run)."""
    run_ids = table.model.run_ids()
    if run_id not in run_ids:
        return None
    return table.model.index(run_ids.index(run_id), INTERVENTIONS).data(role)


def test_the_interventions_column_shows_the_rate_of_ended_runs_whose_steps_say_who_acted(
    qtbot: QtBot, link: DaemonLink, client: DaemonClient, home: Home
) -> None:
    # Already ended when the table first shows them: a run a person took over 3 steps of 12 (and
    # whose last episode does not say), and an ordinary run.
    acted = publish_acted_run(client, "oooohhoooo", "oh", "---").run_id
    ordinary, _ = client.submit(random_config(episodes=2))
    assert client.wait_for_end(ordinary.run_id, timeout=60).state is RunState.COMPLETED

    table = RunsTable(link)
    qtbot.addWidget(table)
    assert COLUMNS[INTERVENTIONS] == "Interventions"
    qtbot.waitUntil(
        lambda: all((row := table.model.row(r)) and row.interventions_read for r in (acted, ordinary.run_id)),
        timeout=10_000,
    )
    assert cell(table, acted) == "25.0%"
    assert "A person acted 25.0% of the steps" in str(cell(table, acted, Qt.ItemDataRole.ToolTipRole))
    assert cell(table, ordinary.run_id) == ""

    # Kept, not read again: the file gone, the figure stays.
    RunDir(home.run_dir(acted)).telemetry_path.unlink()
    table.model.set_figures(acted, client.get_run(acted), None)
    assert cell(table, acted) == "25.0%"

    # A run that ends while the table is open gets its rate then.
    later = publish_acted_run(client, "hhho").run_id
    qtbot.waitUntil(lambda: cell(table, later) == "75.0%", timeout=10_000)
