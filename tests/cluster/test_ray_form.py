"""The forms' executor choice: a run submitted from the window with "Runs on: ray" runs on Ray."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from pytestqt.qtbot import QtBot

from gym_gui.core.states import RunState
from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.home import Home
from gym_gui.storage.run_dir import RunDir
from gym_gui.ui.daemon_link import DaemonLink
from gym_gui.ui.forms.form import GeneratedForm
from tests.cluster.conftest import RayHead


@pytest.fixture
def link(qtbot: QtBot, home: Home, client: DaemonClient) -> Iterator[DaemonLink]:
    link = DaemonLink(home.root, autostart=False)
    link.connect_daemon()
    qtbot.waitUntil(lambda: link.connected, timeout=20_000)
    yield link
    link.close()


def test_a_form_set_to_ray_names_the_missing_address_then_runs_there(
    qtbot: QtBot, link: DaemonLink, client: DaemonClient, home: Home, ray_head: RayHead
) -> None:
    form = GeneratedForm("random", link)
    qtbot.addWidget(form)
    form.set_env("FrozenLake-v1")
    form.budget_edit.setText("3")
    form.executor_row.kind_combo.setCurrentText("ray")
    assert not form.submit_button.isEnabled()
    assert "executor.ray_address" in form.submit_button.toolTip()
    assert form.executor_row.address_edit.isEnabled()
    form.executor_row.address_edit.setText(ray_head.address)
    assert form.submit_button.isEnabled()
    with qtbot.waitSignal(form.run_submitted, timeout=30_000) as submitted:
        form.submit()
    run_id = submitted.args[0]
    final = client.wait_for_end(run_id, timeout=180)
    assert final.state is RunState.COMPLETED, final.reason
    manifest = json.loads(RunDir(home.run_dir(run_id)).manifest_path.read_text())
    assert manifest["executor"]["ray_address"] == ray_head.address
    # The choice is remembered with the form, as its other fields are.
    form.save_settings()
    again = GeneratedForm("random", link)
    qtbot.addWidget(again)
    assert again.executor_row.kind_combo.currentText() == "ray"
    assert again.executor_row.address_edit.text() == ray_head.address


def test_the_cleanrl_form_puts_the_executor_into_its_config(qtbot: QtBot, link: DaemonLink) -> None:
    form = GeneratedForm("cleanrl", link)
    qtbot.addWidget(form)
    assert form.executor_row.kind_combo.currentText() == "local"
    assert not form.executor_row.address_edit.isEnabled()
    form.executor_row.kind_combo.setCurrentText("ray")
    form.executor_row.address_edit.setText("head.lab:8265")
    config = form.model.to_config()
    assert (config.executor.kind, config.executor.ray_address) == ("ray", "head.lab:8265")
