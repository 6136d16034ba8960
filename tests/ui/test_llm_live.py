"""The LLM Multi-Step Worker in the window: picked in the roster, started from its generated form against
the test chat server, watched live (the lake drawn, beside it the conversation of each step) in the Live
tab, and replayed with the prompt and reply of each step's call, the later steps of a plan included, and the
image a vision model was sent."""

from __future__ import annotations

import base64
import json

from PySide6.QtCore import QPoint, Qt, QUrl
from PySide6.QtGui import QImage, QTextDocument
from PySide6.QtWidgets import QLineEdit, QPlainTextEdit
from pytestqt.qtbot import QtBot

from gym_gui.core.records import StepRecord
from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.home import Home
from gym_gui.ui.control_panel import AGENT
from gym_gui.ui.daemon_link import DaemonLink
from gym_gui.ui.forms.form import GeneratedForm
from gym_gui.ui.main_window import MainWindow
from gym_gui.ui.panes.views import AgentPanes
from gym_gui.ui.tabs.live import LiveTab
from gym_gui.ui.tabs.replay import ReplayTab
from tests.ui.test_replay import make_tab
from tests.ui.test_scenario import click, click_run, open_tab, type_into
from workers.llm_worker.tests.chat_server import MODEL, ChatServer, fixed, solver
from workers.llm_worker.tests.support import completed, llm_config, stored

KEY = "sk-window-7d3a91"


def shows_its_call(panes: AgentPanes, home: Home, run_id: str) -> bool:
    """Whether the conversation pane shows, in full, the call that chose the step the panes show."""
    shown = panes.shown
    if shown is None or shown.call is None or not panes.pane_visible(panes.conversation):
        return False
    run = stored(home, run_id)
    steps = {(step.episode, step.step): step for step in run.steps}
    made = run.llm(steps[(shown.episode, shown.step - shown.call.index)])
    text = panes.conversation.text()
    # A message's trailing newline is not drawn.
    expected = [
        *(m["content"].rstrip("\n") for m in run.prefixes[made["prompt"]["prefix"]]),
        *(m["content"].rstrip("\n") for m in made["prompt"]["messages"]),
        made["reply"],
        f"actions [{', '.join(map(str, made['actions']))}] · valid",
        f"{made['tokens_in']} tokens in",
    ]
    return all(part in text for part in expected)


def test_an_llm_run_starts_from_its_form_and_is_watched_live_with_its_conversation(
    qtbot: QtBot, window: MainWindow, client: DaemonClient, home: Home
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
    assert isinstance(form, GeneratedForm)
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
        # The form starts from the kind's own budget (WorkerSpec.default_budget).
        assert (form.budget_kind_combo.currentText(), form.budget_edit.text()) == ("episodes", "20")
        form.budget_edit.setText("1000")  # more than the test watches: it is cancelled
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

        # Beside the lake, the conversation of the step shown: the system prompt, the observation as
        # the model read it, its reply and what was made of it.
        panes = live.panes
        qtbot.waitUntil(lambda: shows_its_call(panes, home, run_id), timeout=30_000)
        assert not panes.pane_visible(panes.value_map) and not panes.pane_visible(panes.values)

        # Replay: the prompt and reply of a step's call.
        replay = open_tab(window, ReplayTab)
        qtbot.waitUntil(lambda: replay.episode_combo.count() > 0, timeout=30_000)
        replay.select_episode(0)
        replay.seek(1)
        qtbot.waitUntil(lambda: shows_its_call(replay.panes, home, run_id), timeout=30_000)
        assert replay.panes.shown is not None and replay.panes.shown.key == (0, 1)

        table = window.runs
        qtbot.waitUntil(lambda: table.cancel_button.isEnabled(), timeout=30_000)
        click(table.cancel_button)
        qtbot.waitUntil(lambda: table.state_of(run_id) == "CANCELLED", timeout=60_000)


def test_replay_shows_the_call_of_each_step_of_a_plan(
    qtbot: QtBot, link: DaemonLink, client: DaemonClient, home: Home
) -> None:
    # Plans of three actions: the lake's six steps take two calls, each recorded by its first step.
    with ChatServer(solver) as server:
        run = completed(client, llm_config(server.url, episodes=1, plan_length=3))
    steps: list[StepRecord] = stored(home, run.run_id).steps
    assert [json.loads(step.info)["llm"]["index"] for step in steps] == [0, 1, 2, 0, 1, 2]
    tab = make_tab(qtbot, link, run)
    tab.select_episode(0)
    for step in (2, 4, 3):
        tab.seek(step)
        qtbot.waitUntil(lambda: shows_its_call(tab.panes, home, run.run_id), timeout=30_000)
        index = step % 3
        assert (
            "its first action" if index == 0 else f"action {index + 1} of its plan"
        ) in tab.panes.conversation.text()


def test_the_conversation_shows_the_image_a_call_was_sent(
    qtbot: QtBot, link: DaemonLink, client: DaemonClient, home: Home
) -> None:
    # observation_input both: each call sends the text and the rendered frame as an image part.
    with ChatServer(fixed(2)) as server:
        run = completed(client, llm_config(server.url, episodes=1, observation_input="both"))
    content = server.completions()[0].body["messages"][1]["content"]
    assert [part["type"] for part in content] == ["text", "image_url"]
    assert "Map (top row first):" in content[0]["text"]
    url = content[1]["image_url"]["url"]
    assert url.startswith("data:image/png;base64,")
    sent = QImage.fromData(base64.b64decode(url.removeprefix("data:image/png;base64,")))
    assert sent.width() > 0

    # The call's record keeps the image with the message it went with.
    saved = stored(home, run.run_id)
    assert saved.llm(saved.steps[0])["prompt"]["messages"][0]["image"] == url.removeprefix(
        "data:image/png;base64,"
    )
    tab = make_tab(qtbot, link, run)
    tab.select_episode(0)
    tab.seek(0)
    pane = tab.panes.conversation
    qtbot.waitUntil(lambda: bool(pane.images), timeout=30_000)
    ((name, shown),) = pane.images.items()
    assert shown == sent
    # The document draws that image where the call's user message is.
    assert pane.document().resource(QTextDocument.ResourceType.ImageResource, QUrl(name)) == sent
    assert f"the image sent with it ({sent.width()}×{sent.height()} PNG)" in pane.text()
