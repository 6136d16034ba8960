"""A telemetry run's exported event files in the window: its TensorBoard tab appears and serves them
from a bundle that has TensorBoard, gym_gui's own environment having none."""

from __future__ import annotations

from pathlib import Path

import pytest
from pytestqt.qtbot import QtBot

from gym_gui.core.records import RunRecord
from gym_gui.core.states import RunState
from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.event_files import write_event_files
from gym_gui.storage.run_dir import RunDir
from gym_gui.ui import local_web
from gym_gui.ui.daemon_link import DaemonLink
from gym_gui.ui.presenters import tabs_for_run
from gym_gui.ui.tabs.tensorboard import TensorBoardTab
from tests.support import random_config, tensorboard_runs


def _exported_random_run(client: DaemonClient) -> RunRecord:
    record, _ = client.submit(random_config("CartPole-v1", episodes=4))
    final = client.wait_for_end(record.run_id, timeout=120)
    assert final.state is RunState.COMPLETED, final.reason
    run = client.get_run(record.run_id).record
    write_event_files(RunDir(run.run_dir))
    return run


def _tensorboard_tab(qtbot: QtBot, run: RunRecord, link: DaemonLink) -> TensorBoardTab | None:
    tabs = tabs_for_run(run, link)
    for tab in tabs:
        qtbot.addWidget(tab)
    return next((tab for tab in tabs if isinstance(tab, TensorBoardTab)), None)


def test_a_random_runs_exported_event_files_open_in_its_tensorboard_tab(
    qtbot: QtBot, link: DaemonLink, client: DaemonClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    record, _ = client.submit(random_config("CartPole-v1", episodes=2))
    plain = client.wait_for_end(record.run_id, timeout=120)
    assert _tensorboard_tab(qtbot, plain, link) is None  # nothing exported: no TensorBoard tab

    run = _exported_random_run(client)
    tab = _tensorboard_tab(qtbot, run, link)
    assert tab is not None
    # Not embedded (QtWebEngine is not what this test is about): the tab offers the address.
    monkeypatch.delenv("QTWEBENGINE_DISABLE_SANDBOX", raising=False)
    monkeypatch.delenv("QTWEBENGINE_CHROMIUM_FLAGS", raising=False)
    monkeypatch.setattr(local_web.os, "geteuid", lambda: 0)
    tab.attach(run)
    tab.show()
    qtbot.waitUntil(lambda: tab.ready or tab.restart_button.isVisible(), timeout=90_000)
    assert tab.ready, tab.message.text()
    url = tab.url
    assert url is not None
    # TensorBoard lists the exported directory under the run's id.
    qtbot.waitUntil(lambda: run.run_id in tensorboard_runs(url), timeout=30_000)
    process = tab.process
    assert process is not None
    tab.detach()
    qtbot.waitUntil(lambda: process.poll() is not None, timeout=15_000)


def test_without_a_bundle_that_has_tensorboard_the_tab_says_how_to_install_one(
    qtbot: QtBot, link: DaemonLink, client: DaemonClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = _exported_random_run(client)
    monkeypatch.setenv("GYM_GUI_BUNDLES", str(tmp_path / "no_bundles"))
    tab = _tensorboard_tab(qtbot, run, link)
    assert tab is not None
    tab.show()
    tab.attach(run)
    qtbot.waitUntil(lambda: "gym-gui bundles install cleanrl" in tab.message.text(), timeout=10_000)
    assert tab.process is None
