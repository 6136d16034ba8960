"""The Re-run action of the runs table (enabled for ended runs, a package difference confirmed in a
dialog, the re-run's verdict shown among the run's events in the log drawer) and the CleanRL form's
"Start from" field."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QMessageBox
from pytestqt.qtbot import QtBot

from gym_gui.core.config import parse_run_config
from gym_gui.core.states import RunState
from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.home import Home
from gym_gui.storage.run_dir import ManifestWriter, RunDir
from gym_gui.ui.daemon_link import DaemonLink
from gym_gui.ui.runs.log_drawer import LogDrawer
from gym_gui.ui.runs.table import RunsTable
from tests.ui.test_forms_and_runs import _cleanrl_form, _line


def _ended_random_run(client: DaemonClient, episodes: int = 6) -> str:
    config = parse_run_config(
        {"worker": "random", "env_id": "CartPole-v1", "seed": 11, "budget": {"episodes": episodes}}
    )
    record, _ = client.submit(config)
    assert client.wait_for_end(record.run_id, timeout=60).state is RunState.COMPLETED
    return record.run_id


def _new_runs(table: RunsTable, before: set[str]) -> list[str]:
    return [run_id for run_id in table.run_ids() if run_id not in before]


def test_rerun_button_reruns_and_the_drawer_shows_the_verdict(
    qtbot: QtBot, link: DaemonLink, client: DaemonClient, home: Home
) -> None:
    original = _ended_random_run(client)
    table = RunsTable(link)
    qtbot.addWidget(table)
    qtbot.waitUntil(lambda: table.state_of(original) == RunState.COMPLETED.value, timeout=10_000)
    before = set(table.run_ids())

    table.select(original)
    assert table.rerun_button.isEnabled()
    menu = table.context_menu()
    assert menu is not None and "Re-run" in [action.text() for action in menu.actions()]
    qtbot.mouseClick(table.rerun_button, Qt.MouseButton.LeftButton)

    # The same interpreter: nothing to confirm, the re-run starts at once.
    qtbot.waitUntil(lambda: len(_new_runs(table, before)) == 1, timeout=20_000)
    assert table.rerun_dialog is None
    rerun = _new_runs(table, before)[0]
    assert client.wait_for_end(rerun, timeout=60).state is RunState.COMPLETED
    assert RunDir(home.run_dir(rerun)).read_manifest().rerun_of == original

    drawer = LogDrawer(link)
    qtbot.addWidget(drawer)
    drawer.show_run(client.get_run(rerun).record)
    qtbot.waitUntil(
        lambda: f"re-run of {original}: identical: 6 episodic returns match" in drawer.text("events"),
        timeout=10_000,
    )


def test_a_different_package_set_asks_first_and_no_launches_nothing(
    qtbot: QtBot, link: DaemonLink, client: DaemonClient, home: Home
) -> None:
    original = _ended_random_run(client, episodes=3)
    files = RunDir(home.run_dir(original))
    manifest = files.read_manifest()
    older = [*manifest.environment.packages, "ancient-helper==0.3"]
    ManifestWriter(files, manifest).update(
        environment={**manifest.environment.model_dump(), "packages": older}
    )
    table = RunsTable(link)
    qtbot.addWidget(table)
    qtbot.waitUntil(lambda: table.state_of(original) == RunState.COMPLETED.value, timeout=10_000)
    before = set(table.run_ids())
    table.select(original)

    table.rerun_button.click()
    qtbot.waitUntil(lambda: table.rerun_dialog is not None, timeout=20_000)
    dialog = table.rerun_dialog
    assert dialog is not None and dialog.isVisible()
    assert "ancient-helper 0.3 → —" in dialog.text()
    qtbot.mouseClick(dialog.button(QMessageBox.StandardButton.No), Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: table.rerun_dialog is None, timeout=5_000)
    assert "not re-run" in table.message_label.text()
    assert _new_runs(table, before) == [] and len(client.list_runs()) == 1

    table.rerun_button.click()
    qtbot.waitUntil(lambda: table.rerun_dialog is not None, timeout=20_000)
    dialog = table.rerun_dialog
    assert dialog is not None
    qtbot.mouseClick(dialog.button(QMessageBox.StandardButton.Yes), Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: len(_new_runs(table, before)) == 1, timeout=20_000)
    rerun = _new_runs(table, before)[0]
    assert client.wait_for_end(rerun, timeout=60).state is RunState.COMPLETED


def test_rerun_is_refused_for_a_run_that_has_not_ended(
    qtbot: QtBot, link: DaemonLink, client: DaemonClient
) -> None:
    config = parse_run_config(
        {"worker": "random", "env_id": "CartPole-v1", "seed": 0, "budget": {"episodes": 10_000_000}}
    )
    record, _ = client.submit(config)
    table = RunsTable(link)
    qtbot.addWidget(table)
    qtbot.waitUntil(lambda: table.state_of(record.run_id) == RunState.RUNNING.value, timeout=30_000)
    table.select(record.run_id)
    assert not table.rerun_button.isEnabled()
    assert "has not ended" in table.rerun_button.toolTip()
    client.cancel(record.run_id)
    qtbot.waitUntil(lambda: table.rerun_button.isEnabled(), timeout=30_000)


def test_the_cleanrl_form_starts_from_a_finished_run(
    qtbot: QtBot, link: DaemonLink, client: DaemonClient, home: Home
) -> None:
    parent = parse_run_config(
        {
            "worker": "cleanrl",
            "algorithm": "ppo",
            "env_id": "CartPole-v1",
            "seed": 1,
            "budget": {"timesteps": 512},
            "params": {"num-envs": 2, "num-steps": 128},
        }
    )
    record, _ = client.submit(parent)
    assert client.wait_for_end(record.run_id, timeout=300).state is RunState.COMPLETED
    form = _cleanrl_form(qtbot, link)
    # Finished runs of the kind with a saved model are offered; typing an id is possible too.
    qtbot.waitUntil(lambda: form.start_from_combo.findText(record.run_id) >= 0, timeout=20_000)
    form.env_combo.setCurrentText("CartPole-v1")
    form.budget_edit.setText("512")
    _line(form, "num-envs").setText("2")
    _line(form, "num-steps").setText("128")

    form.start_from_combo.setEditText("not/a run")
    assert not form.submit_button.isEnabled()
    assert "invalid run id" in form.start_from_combo.toolTip()
    form.start_from_combo.setCurrentIndex(form.start_from_combo.findText(record.run_id))
    assert form.config().warm_start is not None and form.config().warm_start.run_id == record.run_id

    with qtbot.waitSignal(form.run_submitted, timeout=120_000) as submitted:
        qtbot.mouseClick(form.submit_button, Qt.MouseButton.LeftButton)
    child = str(submitted.args[0])
    assert client.wait_for_end(child, timeout=300).state is RunState.COMPLETED
    started_from = RunDir(home.run_dir(child)).read_manifest().warm_start_from
    assert started_from is not None and started_from.run_id == record.run_id
