"""The Spade BDI worker in the real window: listed and enabled in the roster, its generated form
starts a run, and the run shows in the Live tab with the lake and each step's Q-values."""

from __future__ import annotations

import json

from PySide6.QtCore import QPoint, Qt
from pytestqt.qtbot import QtBot

from gym_gui.protocol.client import DaemonClient
from gym_gui.ui.control_panel import AGENT
from gym_gui.ui.forms.worker import WorkerForm
from gym_gui.ui.main_window import MainWindow
from tests.ui.test_scenario import click, click_run


def test_the_spade_bdi_worker_trains_from_its_generated_form_and_shows_live(
    qtbot: QtBot, window: MainWindow, client: DaemonClient
) -> None:
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow, timeout=5_000)
    control = window.control
    roster = control.roster
    item = next(roster.item(r) for r in range(roster.count()) if roster.item(r).text() == "Spade BDI Worker")
    assert item.flags() & Qt.ItemFlag.ItemIsEnabled
    assert "telemetry lane" in item.toolTip()

    click(control.agent, QPoint(control.agent.sizeHint().width() // 2, control.agent.height() // 2))
    assert control.mode == AGENT
    click(roster.viewport(), roster.visualItemRect(item).center())
    assert roster.kind() == "spade_bdi"
    form = control.forms.currentWidget()
    assert isinstance(form, WorkerForm)
    qtbot.waitUntil(lambda: "mode" in form.param_names(), timeout=30_000)
    assert {"alpha", "gamma", "epsilon_start", "epsilon_end", "epsilon_decay", "asl"} <= set(
        form.param_names()
    )
    form.set_env("FrozenLake-v1")
    form.budget_kind_combo.setCurrentText("episodes")
    form.budget_spin.setValue(1_000_000)  # far more than the test watches: it is cancelled
    with qtbot.waitSignal(form.run_submitted, timeout=60_000) as submitted:
        click(form.submit_button)
    run_id = str(submitted.args[0])
    assert json.loads(client.get_run(run_id).config_json)["worker"] == "spade_bdi"

    click_run(qtbot, window, run_id)
    assert [tab.title for tab in window.run_view.tab_list()] == ["Live", "Charts", "Checkpoints", "Replay"]
    live = window.run_view.tab_list()[0]
    qtbot.waitUntil(lambda: live.steps_seen > 100 and live.frames_drawn > 0, timeout=120_000)
    qtbot.waitUntil(lambda: live.model.rowCount() > 0, timeout=30_000)
    info = json.loads(live.model.row(live.model.rowCount() - 1)[-1])
    assert len(info["q_before"]) == len(info["q_after"]) == 4 and info["mode"] == "fast"

    table = window.runs
    qtbot.waitUntil(lambda: table.cancel_button.isEnabled(), timeout=30_000)
    click(table.cancel_button)
    qtbot.waitUntil(lambda: table.state_of(run_id) == "CANCELLED", timeout=60_000)
    window.close()
