"""The LLM Multi-Step Worker in the window: picked in the roster, started from its generated form against
the test chat server, and watched live (steps with their conversation, the lake drawn) in the Live tab."""

from __future__ import annotations

import json

from PySide6.QtCore import QPoint, Qt
from PySide6.QtWidgets import QLineEdit, QPlainTextEdit
from pytestqt.qtbot import QtBot

from gym_gui.protocol.client import DaemonClient
from gym_gui.ui.control_panel import AGENT
from gym_gui.ui.forms.worker import WorkerForm
from gym_gui.ui.main_window import MainWindow
from gym_gui.ui.tabs.live import LiveTab
from tests.llm.chat_server import MODEL, ChatServer, solver
from tests.ui.test_scenario import click, click_run, open_tab, type_into

KEY = "sk-window-7d3a91"


def test_an_llm_run_starts_from_its_form_and_is_watched_live_with_its_conversation(
    qtbot: QtBot, window: MainWindow, client: DaemonClient
) -> None:
    window.activateWindow()  # clicks and typing go where a user's would: to the active window
    qtbot.waitUntil(window.isActiveWindow, timeout=5_000)
    control = window.control
    roster = control.roster
    item = next(
        roster.item(r) for r in range(roster.count()) if roster.item(r).text() == "LLM Multi-Step Worker"
    )
    assert item.flags() & Qt.ItemFlag.ItemIsEnabled and "hybrid lane" in item.toolTip()
    click(control.agent, QPoint(control.agent.sizeHint().width() // 2, control.agent.height() // 2))
    assert control.mode == AGENT
    click(roster.viewport(), roster.visualItemRect(item).center())
    assert roster.kind() == "llm"
    form = control.forms.currentWidget()
    assert isinstance(form, WorkerForm)
    form.set_env("FrozenLake-v1")

    # The parameters are the plugin's, the system prompt shown is FrozenLake's family template.
    qtbot.waitUntil(lambda: "system_prompt" in form.param_names(), timeout=60_000)
    prompt = form.param_editor("system_prompt")
    assert isinstance(prompt, QPlainTextEdit)
    qtbot.waitUntil(lambda: "$legend" in prompt.toPlainText(), timeout=30_000)
    assert prompt.toPlainText().startswith("You are playing the game $env_id")

    with ChatServer(solver, latency=0.05) as server:
        for name, text in (("base_url", server.url), ("model", MODEL), ("parallel", "1")):
            editor = form.param_editor(name)
            assert isinstance(editor, QLineEdit)
            type_into(qtbot, editor, text)
        secret = form.findChild(QLineEdit, "secret:LLM_API_KEY")
        assert secret is not None and secret.echoMode() is QLineEdit.EchoMode.Password
        type_into(qtbot, secret, KEY)
        form.budget_kind_combo.setCurrentText("episodes")
        form.budget_spin.setValue(1000)  # more than the test watches: it is cancelled
        with qtbot.waitSignal(form.run_submitted, timeout=60_000) as submitted:
            click(form.submit_button)
        run_id = str(submitted.args[0])
        config = json.loads(client.get_run(run_id).config_json)
        assert config["params"] == {"base_url": server.url, "model": MODEL, "parallel": 1}
        assert KEY not in client.get_run(run_id).config_json

        # A hybrid run's tabs; its steps reach the Live tab, each with the call that chose it.
        click_run(qtbot, window, run_id)
        assert [tab.title for tab in window.run_view.tab_list()] == ["Live", "Replay", "Charts"]
        live = open_tab(window, LiveTab)
        qtbot.waitUntil(lambda: live.steps_seen >= 12, timeout=600_000)  # a first run builds the bundle
        qtbot.waitUntil(lambda: live.env_view.grid is not None, timeout=30_000)
        assert live.env_view.grid["game"] == "frozenlake"
        row = live.model.row(0)
        llm = json.loads(row[6])["llm"]
        assert llm["call"] == 0 and llm["prompt"]["messages"][0]["role"] == "user"
        assert llm["actions"] == [json.loads(row[2])] and llm["valid"]
        assert {r.authorization for r in server.received} == {f"Bearer {KEY}"}

        table = window.runs
        qtbot.waitUntil(lambda: table.cancel_button.isEnabled(), timeout=30_000)
        click(table.cancel_button)
        qtbot.waitUntil(lambda: table.state_of(run_id) == "CANCELLED", timeout=60_000)
