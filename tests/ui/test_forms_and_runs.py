"""The training forms, the runs table, the log drawer and the settings against a real daemon (offscreen Qt)."""

from __future__ import annotations

import dataclasses
import json
import tarfile
from pathlib import Path

import pytest
from PySide6.QtCore import QByteArray, Qt
from PySide6.QtWidgets import QCheckBox, QLineEdit, QMainWindow, QMessageBox
from pytestqt.qtbot import QtBot

from gym_gui.core.config import parse_run_config
from gym_gui.core.records import BundleProgress, EventRecord
from gym_gui.core.states import RunState
from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.home import Home
from gym_gui.ui.daemon_link import DaemonLink
from gym_gui.ui.forms.form import GeneratedForm
from gym_gui.ui.forms.kinds import form_for
from gym_gui.ui.runs.log_drawer import LogDrawer, tail_lines
from gym_gui.ui.runs.table import RunsTable
from gym_gui.ui.settings import SecretNotStored, Settings
from tests.support import files_containing, run_record

DESCRIBE_TIMEOUT = 180_000  # ms: the first description imports the script (and torch) in the bundle
API_KEY = "wandb-test-key-5f1e0c9a7b3d"


@pytest.fixture
def no_bundles(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty bundles directory for the daemon (request it before `link`)."""
    empty = tmp_path / "no_bundles"
    empty.mkdir()
    monkeypatch.setenv("GYM_GUI_BUNDLES", str(empty))
    return empty


def _cleanrl_form(qtbot: QtBot, link: DaemonLink, settings: Settings | None = None) -> GeneratedForm:
    form = GeneratedForm("cleanrl", link, settings)
    qtbot.addWidget(form)
    qtbot.waitUntil(lambda: form.description is not None, timeout=DESCRIBE_TIMEOUT)
    return form


def _preview(qtbot: QtBot, form: GeneratedForm, *wanted: str) -> str:
    """The command preview once the daemon's answer holds every ``wanted`` text."""
    qtbot.waitUntil(lambda: all(text in form.preview.text() for text in wanted), timeout=DESCRIBE_TIMEOUT)
    return form.preview.text()


def _line(form: GeneratedForm, name: str) -> QLineEdit:
    editor = form.param_editor(name)
    assert isinstance(editor, QLineEdit), name
    return editor


# ------------------------------------------------------------------ CleanRL form


def test_cleanrl_form_is_built_from_ppo_arguments(
    qtbot: QtBot, link: DaemonLink, client: DaemonClient
) -> None:
    form = _cleanrl_form(qtbot, link)
    described = client.describe_worker("cleanrl", algorithm="ppo").form
    script_names = [param.name for param in described.parameters]
    mapped = set(described.mapped)  # the flags the daemon sets from the common fields

    assert form.algorithm() == "ppo"
    assert form.param_names() == [name for name in script_names if name not in mapped]
    assert "env-id" in mapped and not mapped & set(form.param_names())
    # The script's own switches are its parameters, with its defaults (no field of the common form sets them).
    deterministic, video = form.param_editor("torch-deterministic"), form.param_editor("capture-video")
    assert isinstance(deterministic, QCheckBox) and deterministic.isChecked()
    assert isinstance(video, QCheckBox) and not video.isChecked()
    assert _line(form, "learning-rate").text() == "0.00025"
    assert _line(form, "num-envs").text() == "4"
    anneal = form.param_editor("anneal-lr")
    assert isinstance(anneal, QCheckBox) and anneal.isChecked()
    assert "learning rate" in _line(form, "learning-rate").toolTip()
    # The common fields take the script's own defaults.
    assert form.env_combo.currentText() == "CartPole-v1"
    assert form.budget_edit.text() == "500000"

    # Scripts that cannot run in the bundle are listed, disabled, with their reason.
    model = form.picker.model
    disabled = [model.item(row) for row in range(model.rowCount()) if not model.item(row).isEnabled()]
    assert disabled and all("cannot run here" in item.toolTip() for item in disabled)

    # Nothing changed: no parameters, the script's defaults apply.
    assert form.config().params == {}
    assert form.submit_button.isEnabled()

    # A value that is not a number is marked before submit and blocks it.
    rate = _line(form, "learning-rate")
    rate.setText("fast")
    assert rate.property("invalid") is True
    assert "expected a number" in rate.toolTip()
    assert not form.submit_button.isEnabled()
    assert "params.learning-rate" in form.invalid_fields()

    rate.setText("3e-4")
    assert rate.property("invalid") is False
    assert form.submit_button.isEnabled()
    # The daemon resolves the command the run would execute.
    preview = _preview(qtbot, form, "--learning-rate 0.0003")
    assert "--env-id CartPole-v1" in preview and "--total-timesteps 500000" in preview
    assert "<cleanrl bundle>/bin/python -m gym_gui_cleanrl_worker train --script <cleanrl bundle>/" in preview
    assert "/cleanrl/ppo.py" in preview
    assert form.config().params == {"learning-rate": 0.0003}
    # An env family the bundle lacks is greyed with its install hint, and cannot be chosen.
    pong = form.env_combo.findText("ALE/Pong-v5")
    assert pong >= 0 and "needs ale_py" in form.env_combo.itemData(pong, Qt.ItemDataRole.ToolTipRole)
    form.set_env("ALE/Pong-v5")
    assert form.env_combo.currentText() == "CartPole-v1" and form.model.env_id == "CartPole-v1"
    assert form.preview.error() == ""

    # An empty value means "the script's default"; an int field refuses a fraction.
    rate.setText("")
    assert form.config().params == {}
    steps = _line(form, "num-steps")
    steps.setText("12.5")
    assert steps.property("invalid") is True and not form.submit_button.isEnabled()
    steps.setText("1e3")
    assert form.config().params == {"num-steps": 1000}
    form.budget_edit.setText("many")
    assert form.budget_edit.property("invalid") is True and not form.submit_button.isEnabled()
    form.budget_edit.setText("500000")

    # Another script brings its own arguments; going back restores what was typed for ppo.
    form.set_algorithm("dqn")
    qtbot.waitUntil(
        lambda: form.description is not None and form.description.variant == "dqn", timeout=DESCRIBE_TIMEOUT
    )
    assert "buffer-size" in form.param_names() and "num-minibatches" not in form.param_names()
    form.set_algorithm("ppo")
    qtbot.waitUntil(
        lambda: form.description is not None and form.description.variant == "ppo", timeout=DESCRIBE_TIMEOUT
    )
    assert form.config().params == {"num-steps": 1000}


def test_cleanrl_form_without_the_bundle_says_it_will_be_installed(
    qtbot: QtBot, no_bundles: Path, link: DaemonLink
) -> None:
    form = GeneratedForm("cleanrl", link)
    qtbot.addWidget(form)
    qtbot.waitUntil(lambda: form.bundle_installed is False, timeout=30_000)
    assert "installed on first use" in form.bundle_note.text()
    # Which envs a script trains on is the bundle's to say: until then any id, and how to get the bundle.
    assert form.env_note.isVisibleTo(form) and "gym-gui bundles install cleanrl" in form.env_note.text()
    assert form.env_combo.isEditable() and form.env_combo.findText("Taxi-v4") >= 0
    assert form.ready and form.algorithm() == "ppo" and form.param_names() == []
    assert form.env_combo.currentText() == form.config().env_id == "CartPole-v1"  # ppo's own, until known
    assert form.submit_button.isEnabled()
    assert form.config().algorithm == "ppo"

    # The daemon's install progress, as the run waiting for the bundle receives it: the fields of
    # the event's data, whatever its message says.
    def event(progress: BundleProgress) -> EventRecord:
        return EventRecord(0.0, "bundle", "INFO", "(for people)", json.dumps(progress.data()))

    form.picker._install_event(
        event(BundleProgress("cleanrl", 0, 5, "waiting", "waiting for another install"))
    )
    assert form.install_progress.maximum() == 0  # busy: no step yet
    assert form.install_progress.format() == "waiting for another install"
    form.picker._install_event(event(BundleProgress("cleanrl", 2, 5, "installing", "pip install torch")))
    assert (form.install_progress.value(), form.install_progress.maximum()) == (2, 5)
    assert form.install_progress.format() == "2/5 pip install torch"
    form.picker._install_event(EventRecord(0.0, "worker", "INFO", "3/5 not a bundle event", "{}"))
    assert form.install_progress.value() == 2


def test_cleanrl_form_submits_a_ppo_run_that_completes(
    qtbot: QtBot, link: DaemonLink, client: DaemonClient, home: Home
) -> None:
    table = RunsTable(link)
    qtbot.addWidget(table)
    form = _cleanrl_form(qtbot, link)
    form.budget_edit.setText("2048")
    _line(form, "num-steps").setText("128")  # the default: stays out of params
    _line(form, "learning-rate").setText("0.0005")
    requested: list[object] = []
    form.submit_requested.connect(lambda config, secrets: requested.append((config, secrets)))

    with qtbot.waitSignal(form.run_submitted, timeout=120_000) as submitted:
        form.submit_button.click()
    run_id = str(submitted.args[0])
    assert requested and requested[0][1] == {}  # type: ignore[index]

    record = client.wait_for_end(run_id, timeout=280)
    assert record.state is RunState.COMPLETED, record.reason
    stored = parse_run_config((home.run_dir(run_id) / "config.json").read_text())
    assert stored.algorithm == "ppo"
    assert stored.budget.timesteps == 2048
    assert stored.params == {"learning-rate": 0.0005}

    # The table shows how far it trained and its SPS (the run's own charts/SPS metric).
    qtbot.waitUntil(lambda: table.state_of(run_id) == RunState.COMPLETED.value, timeout=10_000)
    qtbot.waitUntil(lambda: table.model.row(run_id).final_fetched, timeout=10_000)  # type: ignore[union-attr]
    row = table.model.row(run_id)
    assert row is not None and row.unit == "steps" and row.budget == 2048
    assert row.done > 0 and row.sps is not None and row.sps > 0


def test_wandb_key_is_never_stored_and_values_come_back(
    qtbot: QtBot, link: DaemonLink, client: DaemonClient, home: Home
) -> None:
    settings = Settings(home.root)
    form = _cleanrl_form(qtbot, link, settings)
    form.wandb_mode_combo.setCurrentText("online")
    form.wandb_project_edit.setText("cockpit-tests")
    form.wandb_key_edit.setText(API_KEY)
    _line(form, "gamma").setText("0.95")
    form.budget_edit.setText("4096")
    form.dry_run_check.setChecked(True)

    assert form.secret_env() == {"WANDB_API_KEY": API_KEY}
    config = form.config()
    assert API_KEY not in config.model_dump_json()
    preview = _preview(qtbot, form, "WANDB_API_KEY=***", "--gamma 0.95", "--total-timesteps 4096")
    assert "--wandb-project-name cockpit-tests" in preview and "WANDB_MODE=online" in preview
    assert API_KEY not in preview
    plan = form.preview.plan
    assert plan is not None

    with qtbot.waitSignal(form.run_submitted, timeout=120_000) as submitted:
        form.submit()
    run_id = str(submitted.args[0])
    record = client.wait_for_end(run_id, timeout=200)
    assert record.state is RunState.COMPLETED, record.reason
    # The daemon's resolved command is shown, its secrets redacted.
    qtbot.waitUntil(lambda: "resolved by the daemon" in form.dry_run_output.toPlainText(), timeout=20_000)
    assert "WANDB_API_KEY=***" in form.dry_run_output.toPlainText()
    assert API_KEY not in form.dry_run_output.toPlainText()

    form.save_settings()
    settings.sync()
    assert settings.path.is_file()
    assert API_KEY.encode() not in settings.path.read_bytes()
    assert files_containing(home.run_dir(run_id), API_KEY.encode()) == []
    # The preview was exactly the command the dry run resolved.
    manifest = json.loads((home.run_dir(run_id) / "manifest.json").read_text())
    assert plan.argv == manifest["command"] and plan.script_argv == manifest["extras"]["script_command"]

    # A new form (the next start of the window) gets everything back except the key.
    again = _cleanrl_form(qtbot, link, Settings(home.root))
    assert again.wandb_mode_combo.currentText() == "online"
    assert again.wandb_project_edit.text() == "cockpit-tests"
    assert again.budget_edit.text() == "4096"
    assert _line(again, "gamma").text() == "0.95"
    assert again.wandb_key_edit.text() == ""
    assert again.config().params == {"gamma": 0.95}


# ------------------------------------------------------------------ random form and the runs table


def test_random_form_run_appears_in_the_runs_table(
    qtbot: QtBot, link: DaemonLink, client: DaemonClient
) -> None:
    table = RunsTable(link)
    qtbot.addWidget(table)
    form = form_for("random", link)
    assert isinstance(form, GeneratedForm)
    qtbot.addWidget(form)
    assert form_for("human", link) is None
    form.set_env("FrozenLake-v1")
    form.budget_kind_combo.setCurrentText("episodes")
    form.budget_edit.setText("5")

    with qtbot.waitSignal(form.run_submitted, timeout=30_000) as submitted:
        form.submit_button.click()
    run_id = str(submitted.args[0])
    qtbot.waitUntil(lambda: table.state_of(run_id) == RunState.COMPLETED.value, timeout=60_000)
    row = table.model.row(run_id)
    assert row is not None and row.info.worker == "random" and row.info.env_id == "FrozenLake-v1"
    # The ended run's final figures are fetched once.
    qtbot.waitUntil(lambda: table.model.row(run_id).final_fetched, timeout=10_000)  # type: ignore[union-attr]
    assert row.done == 5 and row.budget == 5 and row.unit == "episodes"

    selected: list[list[str]] = []
    current: list[str] = []
    table.selection_changed.connect(selected.append)
    table.run_selected.connect(current.append)
    table.select(run_id)
    assert selected[-1] == [run_id] and current[-1] == run_id


def test_runs_table_cancel_archive_export_delete(
    qtbot: QtBot,
    link: DaemonLink,
    client: DaemonClient,
    home: Home,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    table = RunsTable(link)
    qtbot.addWidget(table)
    config = parse_run_config(
        {"worker": "random", "env_id": "CartPole-v1", "seed": 0, "budget": {"episodes": 10_000_000}}
    )
    record, _ = client.submit(config)
    run_id = record.run_id
    qtbot.waitUntil(lambda: table.state_of(run_id) == RunState.RUNNING.value, timeout=30_000)
    # Progress and SPS of a running run are fetched while it runs.
    qtbot.waitUntil(lambda: table.model.row(run_id).steps > 0, timeout=10_000)  # type: ignore[union-attr]

    table.select(run_id)
    assert table.cancel_button.isEnabled()
    table.cancel()
    assert client.wait_for_end(run_id, timeout=30).state is RunState.CANCELLED
    qtbot.waitUntil(lambda: table.state_of(run_id) == RunState.CANCELLED.value, timeout=10_000)

    # Archived runs are hidden unless "Archived" is checked.
    assert run_id in table.run_ids(visible_only=True)
    table.archive([run_id])
    qtbot.waitUntil(lambda: run_id not in table.run_ids(visible_only=True), timeout=10_000)
    table.show_archived_check.setChecked(True)
    assert run_id in table.run_ids(visible_only=True)
    table.set_show_archived(False)
    assert run_id not in table.run_ids(visible_only=True)
    table.unarchive([run_id])
    qtbot.waitUntil(lambda: run_id in table.run_ids(visible_only=True), timeout=10_000)

    target = tmp_path / "export" / "run.tar.gz"
    target.parent.mkdir()
    with qtbot.waitSignal(table.exported, timeout=30_000):
        table.export(run_id, target)
    with tarfile.open(target, "r:gz") as tar:
        names = tar.getnames()
    assert f"{run_id}/config.json" in names and f"{run_id}/telemetry.sqlite" in names

    # Delete asks first: answering No keeps the run.
    monkeypatch.setattr(QMessageBox, "question", lambda *args, **kwargs: QMessageBox.StandardButton.No)
    assert table.delete([run_id]) is False
    assert home.run_dir(run_id).is_dir()

    table.confirm_delete = False
    assert table.delete([run_id]) is True
    qtbot.waitUntil(lambda: run_id not in table.run_ids(), timeout=10_000)
    assert not home.run_dir(run_id).exists()


# ------------------------------------------------------------------ log drawer


def test_log_drawer_shows_the_tails(qtbot: QtBot, tmp_path: Path) -> None:
    logs = tmp_path / "run" / "logs"
    logs.mkdir(parents=True)
    stdout = logs / "worker.stdout.log"
    stdout.write_text("".join(f"line {i}\n" for i in range(5000)))
    (logs / "worker.stderr.log").write_text("warning: something\n")
    drawer = LogDrawer()
    qtbot.addWidget(drawer)
    run = run_record("r1", RunState.RUNNING, run_dir=str(tmp_path / "run"))
    drawer.show_run(run)

    qtbot.waitUntil(lambda: drawer.text("stdout").endswith("line 4999"), timeout=5_000)
    lines = drawer.text("stdout").splitlines()
    assert len(lines) == 200 and lines[0] == "line 4800"
    assert drawer.text("stderr") == "warning: something"

    with stdout.open("a") as handle:  # a running worker writes on: the drawer follows
        handle.write("line 5000\n")
    qtbot.waitUntil(lambda: drawer.text("stdout").endswith("line 5000"), timeout=5_000)

    drawer.run_changed(dataclasses.replace(run, state=RunState.COMPLETED))
    assert not drawer._timer.isActive()


def test_tail_lines_reads_from_the_end(tmp_path: Path) -> None:
    path = tmp_path / "big.log"
    path.write_text("".join(f"{i:08d} " + "x" * 100 + "\n" for i in range(20_000)))
    tail = tail_lines(path, lines=3)
    assert tail.splitlines() == [f"{i:08d} " + "x" * 100 for i in (19_997, 19_998, 19_999)]
    assert tail_lines(tmp_path / "missing.log") == ""
    (tmp_path / "short.log").write_text("only\n")
    assert tail_lines(tmp_path / "short.log") == "only"


# ------------------------------------------------------------------ settings


def test_settings_round_trip_without_secrets(qtbot: QtBot, link: DaemonLink, home: Home) -> None:
    settings = Settings(home.root)
    assert settings.path.parent == home.root

    form = GeneratedForm("random", link, settings)
    qtbot.addWidget(form)
    form.set_env("CliffWalking-v1")
    form.seed_spin.setValue(42)
    form.budget_kind_combo.setCurrentText("timesteps")
    form.budget_edit.setText("777")
    form.render_fps_spin.setValue(5.0)
    form.save_settings()

    window = QMainWindow()
    qtbot.addWidget(window)
    window.resize(640, 480)
    settings.save_window(window)
    settings.set_splitter_sizes("bottom", [300, 200])
    settings.set_last_env("Taxi-v4")
    settings.set_last_worker("cleanrl")
    settings.set_last_mode("agent")
    settings.sync()

    reread = Settings(home.root)
    again = GeneratedForm("random", link, reread)
    qtbot.addWidget(again)
    assert again.env_combo.currentText() == "CliffWalking-v1"
    assert again.seed_spin.value() == 42
    assert again.budget_kind_combo.currentText() == "timesteps"
    assert again.budget_edit.text() == "777"
    assert again.render_fps_spin.value() == 5.0
    assert again.config().budget.timesteps == 777
    assert reread.splitter_sizes("bottom") == [300, 200]
    assert (reread.last_env(), reread.last_worker(), reread.last_mode()) == ("Taxi-v4", "cleanrl", "agent")
    assert isinstance(reread.window_geometry(), QByteArray)
    assert reread.restore_window(QMainWindow())

    # Secrets are refused at any depth, and nothing of them is written.
    for values in ({"api_key": "x"}, {"nested": {"WANDB_API_KEY": "x"}}, {"params": {"ppo": {"token": "x"}}}):
        with pytest.raises(SecretNotStored):
            reread.set_form_values("cleanrl", values)
    reread.sync()
    assert "forms/cleanrl" not in reread.qsettings.allKeys()
    assert reread.form_values("cleanrl") == {}
