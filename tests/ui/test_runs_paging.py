"""The runs table of a home with 250 runs: the newest 100 first, older pages as it is scrolled to its end,
and runs the daemon adds or deletes meanwhile; its Prune… dialog. A real daemon, real Qt (offscreen)."""

from __future__ import annotations

import os
import time

from PySide6.QtCore import Qt
from pytestqt.qtbot import QtBot

from gym_gui.core.states import RunState
from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.home import Home
from gym_gui.storage.registry import RunRegistry
from gym_gui.ui.daemon_link import RUNS_PAGE, DaemonLink
from gym_gui.ui.main_window import MainWindow
from gym_gui.ui.runs.table import RunsTable
from tests.support import random_config, run_record

RUNS = 250
DAY = 86400.0


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

    # A run older than the pages listed, asked for by id (a study's trial, a dataset's source): fetched.
    got: list[str] = []
    table.fetch("run-000", got.append, got.append)
    qtbot.waitUntil(lambda: got == ["run-000"], timeout=10_000)
    assert table.model.row("run-000") is not None
    table.fetch("run-999", got.append, got.append)
    qtbot.waitUntil(lambda: len(got) == 2, timeout=10_000)
    assert "no run with id 'run-999'" in got[1]

    # Scrolled to its end, the view asks for the next older page, and then the last. Listing the
    # newest page again between them (as on a reconnect) drops a run gone meanwhile from the span it
    # lists.
    table.view.scrollToBottom()
    qtbot.waitUntil(lambda: table.model.rowCount() == 201, timeout=10_000)
    registry.delete("run-249")  # behind the daemon's back: no watch event says so
    table.refresh()
    qtbot.waitUntil(lambda: table.model.row("run-249") is None, timeout=10_000)
    table.view.scrollToBottom()
    qtbot.waitUntil(lambda: table.model.rowCount() == RUNS - 1, timeout=10_000)
    assert set(table.model.run_ids()) == {f"run-{index:03d}" for index in range(RUNS - 1)}
    assert not table.count_label.isVisible() and not table.model.canFetchMore(table.model.index(-1, -1))

    # The watch adds a new run and drops a deleted one.
    record, _ = client.submit(random_config(episodes=2))
    qtbot.waitUntil(lambda: table.state_of(record.run_id) is RunState.COMPLETED, timeout=30_000)
    client.delete("run-000")
    qtbot.waitUntil(lambda: table.model.row("run-000") is None, timeout=10_000)
    assert table.model.rowCount() == table.total == RUNS - 1


def test_prune_previews_the_runs_its_rules_match_then_deletes_exactly_those(
    qtbot: QtBot, home: Home, registry: RunRegistry, window: MainWindow
) -> None:
    now = time.time()
    for run_id, state, ended in (
        ("old-failed", RunState.FAILED, now - 40 * DAY),
        ("old-completed", RunState.COMPLETED, now - 40 * DAY),
        ("new-failed", RunState.FAILED, now),
    ):
        registry.create(run_record(run_id, state, created_at=ended - 60, ended_at=ended))
        home.run_dir(run_id).mkdir(parents=True)
        (home.run_dir(run_id) / "payload.bin").write_bytes(os.urandom(30_000))
    table = window.runs
    table.refresh()  # the rows were written after the window listed the runs
    qtbot.waitUntil(lambda: table.model.rowCount() == 3, timeout=10_000)
    assert table.prune_button.isEnabled()  # whatever is selected
    # Run ▸ Prune runs… (the runs table's Prune… button may be folded into its tool bar's menu).
    run_menu = next(action.menu() for action in window.menuBar().actions() if action.text() == "&Run")
    next(action for action in run_menu.actions() if action.text() == "Prune runs…").trigger()
    dialog = table.prune_dialog
    assert dialog is not None and dialog.isVisible()

    # Bad rules are said in the dialog, naming what was wrong; nothing is asked of the daemon.
    qtbot.mouseClick(dialog.preview_button, Qt.MouseButton.LeftButton)
    assert "say which runs go" in dialog.message.text()
    dialog.older_than.setText("a month")
    qtbot.mouseClick(dialog.preview_button, Qt.MouseButton.LeftButton)
    assert "--older-than: 'a month' is not an age" in dialog.message.text()

    dialog.older_than.setText("30d")
    dialog.states[RunState.FAILED].setChecked(True)
    qtbot.mouseClick(dialog.preview_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: dialog.delete_button.isEnabled(), timeout=10_000)
    assert "1 run would be deleted, giving back" in dialog.message.text()
    assert dialog.runs.rowCount() == 1 and dialog.runs.item(0, 0).text() == "old-failed"
    assert home.run_dir("old-failed").exists() and table.model.row("old-failed") is not None

    # A rule changed after the preview: preview again before anything is deleted.
    dialog.states[RunState.COMPLETED].setChecked(True)
    assert not dialog.delete_button.isEnabled()
    qtbot.mouseClick(dialog.preview_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: dialog.runs.rowCount() == 2, timeout=10_000)
    assert dialog.delete_button.text().startswith("Delete 2 runs (")
    qtbot.mouseClick(dialog.delete_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: "2 runs deleted" in dialog.message.text(), timeout=10_000)
    qtbot.waitUntil(lambda: table.model.run_ids() == ["new-failed"], timeout=10_000)
    assert not home.run_dir("old-failed").exists() and not home.run_dir("old-completed").exists()
