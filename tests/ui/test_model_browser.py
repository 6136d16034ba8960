"""The checkpoint browser on real CleanRL runs: listing, evaluating, importing, refusing, keeping the selection."""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt
from pytestqt.qtbot import QtBot

from gym_gui.core.config import parse_run_config
from gym_gui.core.errors import ConfigError
from gym_gui.core.states import RunState
from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.home import Home
from gym_gui.storage.run_dir import RunDir
from gym_gui.storage.telemetry import TelemetryReader
from gym_gui.ui.daemon_link import DaemonLink
from gym_gui.ui.forms.form import GeneratedForm
from gym_gui.ui.main_window import MainWindow
from gym_gui.ui.model_browser import COLUMNS, ImportModelDialog, ModelBrowser
from gym_gui.ui.settings import Settings
from gym_gui.workers import worker_catalog
from tests.fixtures import SHARED_BUNDLES
from tests.support import assert_one_line_error, gym_gui, module_daemon

FINAL = "checkpoints/final.cleanrl_model"
SHA = COLUMNS.index("sha256")


def _train(client: DaemonClient, algo: str, timesteps: int, **extra: Any) -> str:
    config = parse_run_config(
        {
            "worker": "cleanrl",
            "algorithm": algo,
            "env_id": "CartPole-v1",
            "seed": 1,
            "budget": {"timesteps": timesteps},
            **extra,
        }
    )
    record, _ = client.submit(config)
    return record.run_id


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """A home with a PPO run (a checkpoint every 1024 steps and its final model) and a DQN run, both finished."""
    root = tmp_path_factory.mktemp("models_home")
    with module_daemon(root, SHARED_BUNDLES, ["--cancel-grace", "20"]) as (client, home):
        ppo = _train(client, "ppo", 2048, params={"num-steps": 256}, checkpoints={"every_steps": 1024})
        dqn = _train(
            client, "dqn", 2000, params={"learning-starts": 500, "buffer-size": 2000, "train-frequency": 4}
        )
        for run_id in (ppo, dqn):
            final = client.wait_for_end(run_id, timeout=400)
            assert final.state is RunState.COMPLETED, final.reason
        yield {"client": client, "home": home, "ppo": ppo, "dqn": dqn}


@pytest.fixture
def window(qtbot: QtBot, trained: dict[str, Any]) -> Iterator[MainWindow]:
    home: Home = trained["home"]
    link = DaemonLink(home.root, autostart=False)
    link.connect_daemon()
    qtbot.waitUntil(lambda: link.connected, timeout=20_000)
    window = MainWindow(link, Settings(home.root))
    qtbot.addWidget(window)
    window.show()
    qtbot.waitUntil(lambda: window.runs.info(trained["dqn"]) is not None, timeout=20_000)
    yield window
    window.run_view.clear()
    link.close()


def _open(qtbot: QtBot, window: MainWindow, *run_ids: str) -> ModelBrowser:
    """Open the browser from the View menu and wait until it lists every model of ``run_ids``."""
    window.models_action.trigger()
    browser = window.models
    assert window.models_dock.isVisible()
    qtbot.waitUntil(lambda: {e.run_id for e in browser.entries()} >= set(run_ids), timeout=30_000)
    return browser


def _select(qtbot: QtBot, browser: ModelBrowser, run_id: str, path: str) -> None:
    browser.select(run_id, path)
    qtbot.waitUntil(
        lambda: browser.selected is not None and browser.selected.key == (run_id, path), timeout=20_000
    )


def _run_ids(home: Home) -> set[str]:
    return {path.name for path in home.runs_dir.iterdir()}


def test_the_browser_lists_every_model_by_env_and_algorithm_with_step_size_sha256_and_final_return(
    qtbot: QtBot, window: MainWindow, trained: dict[str, Any]
) -> None:
    home: Home = trained["home"]
    browser = _open(qtbot, window, trained["ppo"], trained["dqn"])
    env_item = browser.tree.topLevelItem(0)
    assert env_item is not None and env_item.text(0) == "CartPole-v1"
    groups = [env_item.child(i).text(0) for i in range(env_item.childCount())]
    assert groups == ["cleanrl / dqn", "cleanrl / ppo"]

    for run_id in (trained["ppo"], trained["dqn"]):
        files = RunDir(home.run_dir(run_id))
        manifest = json.loads(files.manifest_path.read_text())
        reader = TelemetryReader(files.telemetry_path)
        returns = [point.value for point in reader.metrics(worker_catalog().return_metric("cleanrl"))][-20:]
        reader.close()
        assert returns
        paths = {entry["path"] for entry in manifest["checkpoints"]}
        assert FINAL in paths and (run_id != trained["ppo"] or len(paths) >= 2)
        for entry in manifest["checkpoints"]:
            item = browser.item_for(run_id, entry["path"])
            assert item is not None, entry
            file = files.path / entry["path"]
            digest = hashlib.sha256(file.read_bytes()).hexdigest()
            assert entry["meta"]["sha256"] == digest  # recorded by the daemon when registered
            assert item.toolTip(SHA) == digest and item.text(SHA) == digest[:12]
            assert item.text(COLUMNS.index("step")) == f"{entry['step']:,}"
            assert item.text(COLUMNS.index("size")) == f"{file.stat().st_size / 1024:,.1f} KiB"
            assert item.text(COLUMNS.index("final return")) == f"{sum(returns) / len(returns):.6g}"
            assert item.text(COLUMNS.index("run")) == run_id
            assert item.parent().text(0) == ("cleanrl / ppo" if run_id == trained["ppo"] else "cleanrl / dqn")

    # Re-opening rehashes nothing unchanged.
    hashed = browser.digests.computed
    window.models_dock.hide()
    window.models_action.trigger()
    qtbot.waitUntil(lambda: "saved model(s)" in browser.message.text(), timeout=20_000)
    assert browser.digests.computed == hashed


def test_evaluate_from_the_browser_starts_an_evaluation_that_plays(
    qtbot: QtBot, window: MainWindow, trained: dict[str, Any]
) -> None:
    client: DaemonClient = trained["client"]
    browser = _open(qtbot, window, trained["ppo"])
    _select(qtbot, browser, trained["ppo"], FINAL)
    assert browser.env.currentText() == "CartPole-v1"
    browser.episodes.setValue(2)
    with qtbot.waitSignal(browser.evaluation_started, timeout=60_000) as started:
        browser.buttons["evaluate"].click()
    run_id = started.args[0]
    # The window follows the new run, as it does for the Checkpoints tab's Evaluate.
    qtbot.waitUntil(
        lambda: window.run_view.run is not None and window.run_view.run.run_id == run_id, timeout=20_000
    )
    final = client.wait_for_end(run_id, timeout=240)
    assert final.state is RunState.COMPLETED, final.reason
    detail = client.get_run(run_id)
    assert json.loads(detail.config_json)["evaluation"]["checkpoint"] == FINAL
    reader = TelemetryReader(RunDir(final.run_dir).telemetry_path)
    episodes = reader.episodes()
    reader.close()
    assert len(episodes) == 2 and all(e.steps > 0 and e.total_reward == e.steps for e in episodes)


def test_train_from_this_fills_the_form_to_start_from_the_model_and_the_run_names_it(
    qtbot: QtBot, window: MainWindow, trained: dict[str, Any]
) -> None:
    client: DaemonClient = trained["client"]
    home: Home = trained["home"]
    checkpoint = "checkpoints/step_1024.cleanrl_model"
    browser = _open(qtbot, window, trained["ppo"])
    qtbot.waitUntil(lambda: any(e.model.path == checkpoint for e in browser.entries()), timeout=30_000)
    _select(qtbot, browser, trained["ppo"], checkpoint)
    browser.buttons["train"].click()
    form = window.control.forms.currentWidget()
    assert isinstance(form, GeneratedForm) and window.control.roster.kind() == "cleanrl"
    qtbot.waitUntil(lambda: "filled from the model" in form.status_label.text(), timeout=120_000)
    assert (form.model.algorithm, form.model.env_id) == ("ppo", "CartPole-v1")
    assert form.start_from_combo.currentText() == f"{trained['ppo']}:{checkpoint}"
    form.budget_edit.setText("512")
    with qtbot.waitSignal(form.run_submitted, timeout=120_000) as submitted:
        qtbot.mouseClick(form.submit_button, Qt.MouseButton.LeftButton)
    child = str(submitted.args[0])
    final = client.wait_for_end(child, timeout=300)
    assert final.state is RunState.COMPLETED, final.reason
    started_from = RunDir(home.run_dir(child)).read_manifest().warm_start_from
    assert started_from is not None
    assert (started_from.run_id, started_from.checkpoint) == (trained["ppo"], checkpoint)


def test_an_env_mismatch_is_refused_before_launch_in_the_window_and_in_gym_gui_eval(
    qtbot: QtBot, window: MainWindow, trained: dict[str, Any]
) -> None:
    home: Home = trained["home"]
    reason = f"the model of run {trained['ppo']} was trained on CartPole-v1; it cannot play Acrobot-v1"
    before = _run_ids(home)
    browser = _open(qtbot, window, trained["ppo"])
    _select(qtbot, browser, trained["ppo"], FINAL)
    browser.env.setCurrentText("Acrobot-v1")
    browser.buttons["evaluate"].click()
    qtbot.waitUntil(lambda: "was refused" in browser.status.text(), timeout=60_000)
    assert reason in browser.status.text()
    assert _run_ids(home) == before

    result = gym_gui("eval", trained["ppo"], "--env", "Acrobot-v1", home=home.root)
    assert_one_line_error(result, reason)
    assert _run_ids(home) == before


def test_an_imported_model_file_is_a_finished_run_that_evaluates_and_is_browsed(
    qtbot: QtBot, window: MainWindow, trained: dict[str, Any], tmp_path: Path
) -> None:
    client: DaemonClient = trained["client"]
    home: Home = trained["home"]
    source = tmp_path / "from-elsewhere.cleanrl_model"
    shutil.copyfile(home.run_dir(trained["ppo"]) / FINAL, source)
    digest = hashlib.sha256(source.read_bytes()).hexdigest()

    result = gym_gui("import-model", str(source), "--algo", "ppo", "--env", "CartPole-v1", home=home.root)
    assert result.returncode == 0, result.stderr
    imported = next(run for run in client.list_runs() if run.run_id in result.stdout)
    assert imported.state is RunState.COMPLETED and imported.worker == "cleanrl"
    assert imported.reason == f"imported from {source}"
    files = RunDir(imported.run_dir)
    assert hashlib.sha256((files.path / FINAL).read_bytes()).hexdigest() == digest
    manifest = files.read_manifest()
    assert manifest.imported_from == str(source) and manifest.final_state is RunState.COMPLETED
    assert [(m.path, m.sha256) for m in files.models()] == [(FINAL, digest)]
    assert files.read_config().notes == f"imported from {source}"
    assert sorted(p.name for p in files.path.iterdir()) == [
        "checkpoints",
        "config.json",
        "logs",
        "manifest.json",
    ]

    browser = _open(qtbot, window, imported.run_id)
    item = browser.item_for(imported.run_id, FINAL)
    assert item is not None and item.toolTip(SHA) == digest
    _select(qtbot, browser, imported.run_id, FINAL)
    assert f"imported from {source}" in browser.details.text()

    record, _ = client.submit(client.evaluation_config(imported.run_id, 2))
    final = client.wait_for_end(record.run_id, timeout=240)
    assert final.state is RunState.COMPLETED, final.reason
    reader = TelemetryReader(RunDir(final.run_dir).telemetry_path)
    assert reader.episode_count() == 2
    reader.close()


def test_garbage_or_a_dqn_model_declared_as_ppo_is_refused_with_the_reason_and_leaves_nothing(
    qtbot: QtBot, window: MainWindow, trained: dict[str, Any], tmp_path: Path
) -> None:
    client: DaemonClient = trained["client"]
    home: Home = trained["home"]
    garbage = tmp_path / "garbage.cleanrl_model"
    garbage.write_bytes(b"\x00not a model at all\xff" * 100)
    dqn = tmp_path / "dqn.cleanrl_model"
    shutil.copyfile(home.run_dir(trained["dqn"]) / FINAL, dqn)
    before, runs_before = _run_ids(home), len(client.list_runs(include_archived=True))

    result = gym_gui("import-model", str(garbage), "--algo", "ppo", "--env", "CartPole-v1", home=home.root)
    assert_one_line_error(
        result, f"{garbage} is not a loadable CleanRL model for CartPole-v1: cannot read model"
    )
    result = gym_gui("import-model", str(dqn), "--algo", "ppo", "--env", "CartPole-v1", home=home.root)
    assert_one_line_error(
        result, f"{dqn} is not a loadable CleanRL model for CartPole-v1: the file holds a dqn model, not ppo"
    )
    with pytest.raises(ConfigError, match="no such file"):
        client.import_model(str(tmp_path / "absent.cleanrl_model"), "cleanrl", "ppo", "CartPole-v1")

    # The window's import (its dialog's answers) says the same.
    browser = _open(qtbot, window, trained["ppo"])
    dialog = ImportModelDialog(browser)
    dialog.file.setText(str(dqn))
    dialog.algorithm.setText("ppo")
    dialog.env.setCurrentText("CartPole-v1")
    assert dialog.request() == (str(dqn), "cleanrl", "ppo", "CartPole-v1")
    browser.import_model(*dialog.request())
    qtbot.waitUntil(lambda: "The import was refused" in browser.status.text(), timeout=120_000)
    assert "holds a dqn model, not ppo" in browser.status.text()

    assert _run_ids(home) == before
    assert len(client.list_runs(include_archived=True)) == runs_before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dqn.cleanrl_model", "garbage.cleanrl_model"]


def test_a_corrupted_or_missing_file_on_selection_keeps_the_previous_selection(
    qtbot: QtBot, window: MainWindow, trained: dict[str, Any], tmp_path: Path
) -> None:
    client: DaemonClient = trained["client"]
    source = tmp_path / "victim.cleanrl_model"
    shutil.copyfile(trained["home"].run_dir(trained["ppo"]) / FINAL, source)
    victim = client.import_model(str(source), "cleanrl", "ppo", "CartPole-v1")
    browser = _open(qtbot, window, trained["ppo"], victim.run_id)
    _select(qtbot, browser, trained["ppo"], FINAL)

    with open(Path(victim.run_dir) / FINAL, "ab") as file:
        file.write(b"tampered")
    browser.select(victim.run_id, FINAL)
    qtbot.waitUntil(lambda: "Cannot load it" in browser.status.text(), timeout=20_000)
    assert f"{FINAL} of run {victim.run_id} has changed since it was saved" in browser.status.text()
    assert browser.selected is not None and browser.selected.key == (trained["ppo"], FINAL)
    current = browser.tree.currentItem()
    assert current is not None and current is browser.item_for(trained["ppo"], FINAL)
    assert browser.buttons["evaluate"].isEnabled()

    (Path(victim.run_dir) / FINAL).unlink()
    browser.refresh()
    qtbot.waitUntil(lambda: browser.item_for(victim.run_id, FINAL) is not None, timeout=20_000)
    qtbot.waitUntil(lambda: browser.item_for(victim.run_id, FINAL).text(COLUMNS.index("size")) == "missing")
    browser.status.setText("")
    browser.select(victim.run_id, FINAL)
    qtbot.waitUntil(lambda: "Cannot load it" in browser.status.text(), timeout=20_000)
    assert "is gone" in browser.status.text()
    assert browser.selected is not None and browser.selected.key == (trained["ppo"], FINAL)
