"""The real main window against a real daemon: roster, lane decision per worker kind, runs, robustness."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest
from pytestqt.qtbot import QtBot

from gym_gui.core.config import parse_run_config
from gym_gui.core.processes import process_alive
from gym_gui.core.records import RunRecord
from gym_gui.core.states import RunState
from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.home import Home
from gym_gui.ui.control_panel import AGENT
from gym_gui.ui.daemon_link import DaemonLink
from gym_gui.ui.main_window import MainWindow
from gym_gui.ui.presenters import ANALYTICS_BANNER, presenter_for
from gym_gui.ui.settings import Settings
from gym_gui.workers import worker_catalog
from tests.support import on_sys_path, run_record, wait_until
from tests.workers.test_registry import BROKEN_SET, LATER_SET, make_plugin_distribution


def run_info(worker: str, lane: str, state: RunState = RunState.COMPLETED) -> RunRecord:
    return run_record(f"CartPole-v1__{worker}__0__1", state, worker=worker, lane=lane)


def test_use_trained_says_so_when_no_run_has_a_model(window: MainWindow) -> None:
    panel = window.control.trained
    assert panel.offered() == []
    assert not panel.empty.isHidden() and "No finished training run with a saved model" in panel.empty.text()
    assert not panel.button.isEnabledTo(panel)


def test_roster_is_exactly_as_named_and_every_kind_can_run(window: MainWindow) -> None:
    names = window.control.roster.display_names()
    assert names[:5] == [
        "Human-Only",
        "Operator",
        "Spade BDI Worker",
        "LLM Multi-Step Worker",
        "CleanRL Worker",
    ]
    assert "Random Baseline" in names
    for row in range(5):
        item = window.control.roster.item(row)
        assert item.flags() & item.flags().ItemIsEnabled
    # A first start (nothing remembered yet) opens on a playable game, not an empty picker.
    assert window.control.env_picker.env_id == "FrozenLake-v1"


def test_broken_and_unavailable_worker_plugins_are_listed_greyed_with_why(
    qtbot: QtBot, home: Home, link: DaemonLink, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    on_sys_path(monkeypatch, make_plugin_distribution(tmp_path / "site", {**BROKEN_SET, **LATER_SET}))
    worker_catalog.cache_clear()
    try:
        window = MainWindow(link, Settings(home.root))
        qtbot.addWidget(window)
        roster = window.control.roster
        names = roster.display_names()
        assert names[:5] == [
            "Human-Only",
            "Operator",
            "Spade BDI Worker",
            "LLM Multi-Step Worker",
            "CleanRL Worker",
        ]
        assert sorted(names[-3:]) == sorted(f"{name} (broken)" for name in BROKEN_SET)
        broken = roster.item(roster.count() - 3)
        assert not broken.flags() & broken.flags().ItemIsEnabled
        later = roster.item(names.index("Later Worker (unavailable)"))
        assert "it does not run on this platform yet" in later.toolTip()
        assert not later.flags() & later.flags().ItemIsEnabled
        tips = " ".join(roster.item(row).toolTip() for row in range(roster.count()))
        assert "a_module_that_is_not_installed" in tips and "already taken by gym-gui-random-worker" in tips
        # The working kinds are still selectable.
        roster.select("random")
        assert roster.kind() == "random"
    finally:
        worker_catalog.cache_clear()


@pytest.mark.parametrize(
    ("worker", "lane", "titles"),
    [
        ("random", "telemetry", ["Live", "Replay"]),
        ("human", "telemetry", ["Live", "Replay"]),
        ("cleanrl", "analytics", ["Live", "Charts", "TensorBoard", "W&B", "Checkpoints", "Replay"]),
        ("cleanrl", "telemetry", ["Live", "Replay"]),  # an evaluation run of a trained model
    ],
)
def test_each_presenter_decides_its_lane_tabs(
    link: DaemonLink, worker: str, lane: str, titles: list[str]
) -> None:
    tabs = presenter_for(worker).tabs(run_info(worker, lane), link)
    try:
        assert [tab.title for tab in tabs] == titles
        live = tabs[0]
        banner = getattr(live, "banner_text", None)
        assert (banner() if callable(banner) else banner) == (ANALYTICS_BANNER if lane == "analytics" else "")
    finally:
        for tab in tabs:
            tab.deleteLater()


def test_a_random_run_appears_in_the_table_and_its_live_tab_updates(
    qtbot: QtBot, window: MainWindow, client: DaemonClient
) -> None:
    config = parse_run_config(
        {"worker": "random", "env_id": "FrozenLake-v1", "seed": 0, "budget": {"timesteps": 30_000_000}}
    )
    record, _ = client.submit(config)
    qtbot.waitUntil(lambda: window.runs.info(record.run_id) is not None, timeout=20_000)
    window.select_run(record.run_id)
    assert window.control.mode == AGENT
    live = window.run_view.tab_list()[0]
    qtbot.waitUntil(lambda: live.steps_seen > 100, timeout=30_000)
    qtbot.waitUntil(lambda: live.frames_drawn > 3, timeout=30_000)
    client.cancel(record.run_id)
    assert client.wait_for_end(record.run_id, timeout=60).state is RunState.CANCELLED


def test_closing_the_window_leaves_runs_training_and_a_new_window_reattaches(
    qtbot: QtBot, home: Home, client: DaemonClient
) -> None:
    link = DaemonLink(home.root, autostart=False)
    link.connect_daemon()
    qtbot.waitUntil(lambda: link.connected, timeout=20_000)
    first = MainWindow(link, Settings(home.root))
    qtbot.addWidget(first)
    record, _ = client.submit(
        parse_run_config({"worker": "random", "env_id": "CartPole-v1", "budget": {"timesteps": 30_000_000}})
    )
    qtbot.waitUntil(lambda: first.runs.info(record.run_id) is not None, timeout=20_000)
    wait_until(lambda: client.get_run(record.run_id).record.state == "RUNNING", 30, "the run to start")
    first.close()
    steps = client.get_run(record.run_id).progress.steps
    # The run outlives the window: it keeps producing steps.
    wait_until(lambda: client.get_run(record.run_id).progress.steps > steps + 1000, 30, "more steps")
    assert client.get_run(record.run_id).record.state == "RUNNING"

    link2 = DaemonLink(home.root, autostart=False)
    link2.connect_daemon()
    qtbot.waitUntil(lambda: link2.connected, timeout=20_000)
    second = MainWindow(link2, Settings(home.root))
    qtbot.addWidget(second)
    qtbot.waitUntil(
        lambda: second.runs.info(record.run_id) is not None, timeout=20_000
    )  # back-filled from the daemon
    second.select_run(record.run_id)
    live = second.run_view.tab_list()[0]
    qtbot.waitUntil(lambda: live.steps_seen > 100, timeout=30_000)
    client.cancel(record.run_id)
    client.wait_for_end(record.run_id, timeout=60)
    second.close()


def test_the_window_says_when_the_daemon_dies_and_starts_one_on_request(
    qtbot: QtBot, home: Home, client: DaemonClient
) -> None:
    link = DaemonLink(home.root, autostart=True)
    link.connect_daemon()
    qtbot.waitUntil(lambda: link.connected, timeout=20_000)
    window = MainWindow(link, Settings(home.root))
    qtbot.addWidget(window)
    window.show()
    record, _ = client.submit(
        parse_run_config({"worker": "random", "env_id": "FrozenLake-v1", "budget": {"episodes": 3}})
    )
    qtbot.waitUntil(lambda: window.runs.info(record.run_id) is not None, timeout=20_000)
    pid = client.info.pid
    os.kill(pid, signal.SIGKILL)
    wait_until(lambda: not process_alive(pid), 20, "the daemon to die")
    qtbot.waitUntil(lambda: "unreachable" in window.connection.text(), timeout=20_000)
    assert window.runs.info(record.run_id) is not None  # what was shown stays
    assert window.reconnect_button.isVisible()
    window.reconnect_button.click()
    qtbot.waitUntil(lambda: link.connected and "daemon at" in window.connection.text(), timeout=30_000)
    restarted = link.client
    assert restarted is not None and restarted.info.pid != pid
    restarted.shutdown()
    wait_until(lambda: not process_alive(restarted.info.pid), 20, "the restarted daemon to stop")
    window.close()


def test_the_window_is_told_when_its_settings_differ_from_the_running_daemons(
    qtbot: QtBot, client: DaemonClient, home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GYM_GUI_BUNDLES", str(tmp_path / "elsewhere"))
    link = DaemonLink(home.root, autostart=False)
    window = MainWindow(link, Settings(home.root))
    qtbot.addWidget(window)
    try:
        with qtbot.waitSignal(link.error, timeout=20_000) as told:
            link.connect_daemon()
        assert "GYM_GUI_BUNDLES" in told.args[0] and "elsewhere" in told.args[0]
        assert "GYM_GUI_BUNDLES" in window.statusBar().currentMessage()
    finally:
        link.close()


def test_the_window_is_told_when_the_homes_daemon_options_differ_from_the_running_daemons(
    qtbot: QtBot, client: DaemonClient, home: Home
) -> None:
    running = client.info.options
    assert running is not None and running.max_concurrent is not None
    home.daemon_options_path.write_text(json.dumps({"max_concurrent": running.max_concurrent + 1}))
    link = DaemonLink(home.root, autostart=False)
    window = MainWindow(link, Settings(home.root))
    qtbot.addWidget(window)
    try:
        with qtbot.waitSignal(link.error, timeout=20_000) as told:
            link.connect_daemon()
        assert f"--max-concurrent {running.max_concurrent} " in told.args[0]
        assert f"asks {running.max_concurrent + 1};" in told.args[0]
        assert "--max-concurrent" in window.statusBar().currentMessage()
    finally:
        link.close()
