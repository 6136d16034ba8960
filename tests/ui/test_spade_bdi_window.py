"""The Spade BDI worker in the real window: listed and enabled in the roster, its generated form
starts a run, and the run shows in the Live tab with the lake and each step's Q-values; a deliberate
run's value map, intention and beliefs live, and each replayed step's Q-values."""

from __future__ import annotations

import json

from PySide6.QtCore import QPoint, Qt
from pytestqt.qtbot import QtBot

from gym_gui.core.states import RunState
from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.home import Home
from gym_gui.ui.control_panel import AGENT
from gym_gui.ui.forms.form import GeneratedForm
from gym_gui.ui.main_window import MainWindow
from gym_gui.ui.panes.payloads import action_moves
from gym_gui.ui.panes.views import AgentPanes
from gym_gui.ui.tabs.live import LiveTab
from gym_gui.ui.tabs.replay import ReplayTab
from tests.ui.test_scenario import click, click_run, open_tab
from workers.spade_bdi_worker.tests.conftest import RUN_TIMEOUT, bdi_config, final_table


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
    assert isinstance(form, GeneratedForm)
    qtbot.waitUntil(lambda: "mode" in form.param_names(), timeout=30_000)
    assert {"alpha", "gamma", "epsilon_start", "epsilon_end", "epsilon_decay", "asl"} <= set(
        form.param_names()
    )
    form.set_env("FrozenLake-v1")
    form.budget_kind_combo.setCurrentText("episodes")
    form.budget_edit.setText("1_000_000")  # far more than the test watches: it is cancelled
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


def learned_cells(panes: AgentPanes) -> int:
    """Cells of the value map whose largest action value is above zero (the way to the goal, learned)."""
    best = panes.value_map.best
    return 0 if best is None or not panes.pane_visible(panes.value_map) else int((best > 0).sum())


def test_a_deliberate_run_shows_its_value_map_and_mind_live_and_each_steps_q_values_in_replay(
    qtbot: QtBot, window: MainWindow, client: DaemonClient, home: Home
) -> None:
    record, _ = client.submit(bdi_config(mode="deliberate"))  # the 4x4 lake without ice, 300 episodes
    run_id = record.run_id
    click_run(qtbot, window, run_id)
    live = open_tab(window, LiveTab)
    panes = live.panes

    # While it learns: the value map over the lake fills in with greedy arrows, and each step's
    # intention and beliefs are read beside it.
    qtbot.waitUntil(
        lambda: learned_cells(panes) >= 3 and bool(panes.value_map.arrows), timeout=RUN_TIMEOUT * 1000
    )
    assert panes.value_map.frames_drawn > 0 and panes.value_map.grid is not None
    assert panes.value_map.grid["game"] == "frozenlake"
    assert panes.pane_visible(panes.deliberation) and panes.pane_visible(panes.values)
    assert panes.deliberation.intention.text() == "Intention: !step"
    beliefs = panes.deliberation.beliefs.toPlainText().splitlines()
    assert "mode(deliberate)" in beliefs and any(b.startswith("epsilon(") for b in beliefs)
    assert panes.values.table.rowCount() == 4
    assert not panes.pane_visible(panes.conversation)

    # At the end the map is the run's final table, rebuilt from its steps, and its arrows lead from
    # the start to the goal.
    table = window.runs
    qtbot.waitUntil(lambda: table.state_of(run_id) == RunState.COMPLETED.value, timeout=RUN_TIMEOUT * 1000)
    final = final_table(home, run_id)["q"]
    qtbot.waitUntil(
        lambda: (
            panes.table is not None
            and panes.table.q.tolist() == final
            and panes.value_map.best is not None
            and panes.value_map.best.tolist() == [max(row) for row in final]
        ),
        timeout=30_000,
    )
    moves, arrows = action_moves("FrozenLake-v1"), panes.value_map.arrows
    state, visited = 0, set()
    while state != 15:
        assert state in arrows and state not in visited, f"no greedy way on from state {state}: {arrows}"
        visited.add(state)
        row, col = divmod(state, 4)
        d_row, d_col = moves[arrows[state]]
        state = (row + d_row) * 4 + col + d_col

    # Replay: each step shows its own Q-values before and after its update, and its beliefs.
    replay = open_tab(window, ReplayTab)
    qtbot.waitUntil(lambda: replay.episode_combo.count() == 300, timeout=30_000)
    replay.select_episode(299)
    for step in (0, 2):
        replay.seek(step)
        stored = replay.current_step()
        assert stored is not None
        info = json.loads(stored.info)
        shown = replay.panes.values
        assert shown.values is not None and list(shown.values.before) == info["q_before"]
        assert list(shown.values.after) == info["q_after"]
        for action, value in enumerate(info["q_after"]):
            assert shown.table.item(action, 2).text() == f"{value:.4f}"
        taken = shown.table.item(int(stored.action), 0)
        assert taken.text().startswith("▶ ") and taken.font().bold()
        assert f"state {info['state']}" in shown.summary.text()
        assert replay.panes.deliberation.beliefs.toPlainText().splitlines() == info["beliefs"]
    assert not replay.panes.pane_visible(replay.panes.value_map)
    window.close()
