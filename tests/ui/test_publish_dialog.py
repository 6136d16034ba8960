"""Publish… in the real window, through the real huggingface_hub client and a loopback Hub: a finished
Spade BDI run's model from the runs table and a dataset from the Datasets browser go up in one commit
with the progress bar following the publisher's stages; a failed upload says so in one line and
publishes nothing; without a token the dialog says where one goes and publishes nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from huggingface_hub import constants
from PySide6.QtWidgets import QLineEdit, QMenu
from pytestqt.qtbot import QtBot

from gym_gui.core.config import parse_run_config
from gym_gui.core.states import RunState
from gym_gui.datasets import DatasetStore, RunSource, record_dataset
from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.home import Home
from gym_gui.storage.run_dir import RunDir
from gym_gui.ui.main_window import MainWindow
from gym_gui.ui.publish_dialog import BAR_STEPS, PublishDialog
from tests.hub_server import FakeHub
from tests.support import files_containing
from tests.ui.test_scenario import click, click_run, type_into

TOKEN = "hf_loopback_window_token_0123456789"
PUBLISH_TIMEOUT = 120_000


@pytest.fixture
def hub_client(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The window's own huggingface_hub client, as HF_ENDPOINT and HF_HOME would have set it at its
    import: its endpoint is set per test, its cache and stored login the test's own."""
    hf_home = tmp_path / "hf_home"
    monkeypatch.setattr(constants, "HF_TOKEN_PATH", str(hf_home / "token"))
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(hf_home / "hub"))
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.delenv("HUGGING_FACE_HUB_TOKEN", raising=False)
    return hf_home


def point_at(hub: FakeHub, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(constants, "ENDPOINT", hub.url)
    monkeypatch.setattr(
        constants, "HUGGINGFACE_CO_URL_TEMPLATE", hub.url + "/{repo_id}/resolve/{revision}/{filename}"
    )
    monkeypatch.setenv("HF_TOKEN", TOKEN)


@pytest.fixture
def trained_run(client: DaemonClient) -> str:
    """A finished Spade BDI run on the 4x4 lake without ice (its Q-table the quickest model to train)."""
    config = parse_run_config(
        {
            "worker": "spade_bdi",
            "env_id": "FrozenLake-v1",
            "seed": 1,
            "env_kwargs": {"is_slippery": False},
            "budget": {"episodes": 100},
        }
    )
    record, _ = client.submit(config)
    final = client.wait_for_end(record.run_id, timeout=400)
    assert final.state is RunState.COMPLETED, final.reason
    return record.run_id


def open_publish(qtbot: QtBot, window: MainWindow, run_id: str) -> PublishDialog:
    """Select the run's row and choose Publish… in its context menu."""
    click_run(qtbot, window, run_id)
    table = window.runs
    qtbot.waitUntil(lambda: table.state_of(run_id) == "COMPLETED", timeout=20_000)
    menu = table.context_menu()
    assert isinstance(menu, QMenu)
    [action] = [action for action in menu.actions() if action.text() == "Publish…"]
    assert action.isEnabled()
    action.trigger()
    menu.deleteLater()
    dialog = table.publish_window
    assert dialog is not None and dialog.isVisible()
    return dialog


def test_a_finished_runs_model_is_published_from_the_runs_table_with_its_progress(
    qtbot: QtBot,
    window: MainWindow,
    client: DaemonClient,
    home: Home,
    trained_run: str,
    hub_client: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with FakeHub(TOKEN) as hub:
        point_at(hub, monkeypatch)
        dialog = open_publish(qtbot, window, trained_run)
        assert dialog.publish_button.isEnabled() and not dialog.result_label.text()
        seen: list[int] = []
        dialog.progress_bar.valueChanged.connect(seen.append)

        type_into(qtbot, dialog.repo_edit, "not a repo")
        click(dialog.publish_button)
        assert dialog.result_label.text().startswith("--repo 'not a repo'") and not dialog.busy

        type_into(qtbot, dialog.repo_edit, "gg-team/frozenlake-q")
        type_into(qtbot, dialog.episodes_spin, "3")
        click(dialog.private_check)
        with qtbot.waitSignal(dialog.published, timeout=PUBLISH_TIMEOUT) as published:
            click(dialog.publish_button)
            assert dialog.busy and not dialog.publish_button.isEnabled()

        url = str(published.args[0])
        assert url == f"{hub.url}/gg-team/frozenlake-q" == dialog.repo_url
        assert url in dialog.result_label.text()
        assert dialog.stage_label.text().startswith(f"published {trained_run} to gg-team/frozenlake-q")
        # The bar went up through the stages, to full.
        assert seen == sorted(seen) and len(set(seen)) >= 4 and seen[-1] == BAR_STEPS

        repo = hub.repo("gg-team/frozenlake-q")
        assert repo is not None and repo.private and len(repo.commits) == 1
        files = RunDir(home.run_dir(trained_run))
        final_model = next(model for model in files.saved_models() if model.kind == "model")
        assert repo.files["spade_bdi.json"] == (files.path / final_model.path).read_bytes()
        assert {"README.md", "gym_gui.json", "requirements.txt", "metrics.csv", "replay.gif"} <= set(
            repo.files
        )
        facts = json.loads(repo.files["gym_gui.json"])
        assert facts["run_id"] == trained_run and len(facts["evaluation"]["returns"]) == 3
        # The evaluation it played is a run of its own, in the table like any other.
        evaluation = facts["evaluation"]["run_id"]
        assert client.get_run(evaluation).record.state is RunState.COMPLETED
        assert window.runs.message_label.text() == f"published {trained_run} to {url}"

        assert hub.tokens_seen == {TOKEN}
    assert files_containing(home.root, TOKEN.encode()) == []
    dialog.close()


def test_a_failed_upload_shows_one_line_and_publishes_nothing(
    qtbot: QtBot,
    window: MainWindow,
    trained_run: str,
    hub_client: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with FakeHub(TOKEN, fail={"commit": 500}) as hub:
        point_at(hub, monkeypatch)
        dialog = open_publish(qtbot, window, trained_run)
        type_into(qtbot, dialog.repo_edit, "gg-team/broken")
        type_into(qtbot, dialog.episodes_spin, "1")
        click(dialog.publish_button)
        qtbot.waitUntil(lambda: not dialog.busy, timeout=PUBLISH_TIMEOUT)

        line = dialog.result_label.text()
        assert line.startswith("not published to gg-team/broken: ") and "500" in line
        assert line.endswith("; nothing was uploaded")
        assert "\n" not in line and TOKEN not in line
        assert dialog.progress_bar.value() == 0 and not dialog.repo_url
        # The repository it made for the commit is gone again: nothing half-published.
        assert hub.refused == [("commit", 500)] and hub.repo("gg-team/broken") is None
        assert dialog.publish_button.isEnabled()  # the fields stay, to try again
    dialog.close()


def test_without_a_token_the_dialog_says_where_one_goes_and_publishes_nothing(
    qtbot: QtBot, window: MainWindow, trained_run: str, hub_client: Path
) -> None:
    dialog = open_publish(qtbot, window, trained_run)
    line = dialog.result_label.text()
    assert line.startswith("publish needs a Hugging Face token: HF_TOKEN or a `hf auth login`")
    assert line.endswith("gym_gui never stores it")
    assert not dialog.publish_button.isEnabled()
    # No field for a token: the window never asks for one.
    assert [e for e in dialog.findChildren(QLineEdit) if e.echoMode() is not QLineEdit.EchoMode.Normal] == []
    dialog.close()


def test_a_dataset_is_published_from_the_datasets_browser(
    qtbot: QtBot,
    window: MainWindow,
    client: DaemonClient,
    home: Home,
    hub_client: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(home.datasets_dir))
    config = parse_run_config(
        {"worker": "random", "env_id": "FrozenLake-v1", "seed": 2, "budget": {"episodes": 4}}
    )
    record, _ = client.submit(config)
    final = client.wait_for_end(record.run_id, timeout=60)
    assert final.state is RunState.COMPLETED, final.reason
    record_dataset(DatasetStore(home), "frozenlake/random-v0", [RunSource.of(final.run_id, final.run_dir)])

    with FakeHub(TOKEN) as hub:
        point_at(hub, monkeypatch)
        window.datasets_action.trigger()
        browser = window.datasets
        qtbot.waitUntil(lambda: browser.table.topLevelItemCount() == 1, timeout=20_000)
        assert not browser.publish_button.isEnabled()
        browser.table.setCurrentItem(browser.table.topLevelItem(0))
        qtbot.waitUntil(browser.publish_button.isEnabled, timeout=20_000)
        click(browser.publish_button)
        dialog = browser.publish_window
        assert dialog is not None and dialog.isVisible() and not dialog.episodes_spin.isVisible()
        assert dialog.repo_edit.placeholderText() == "ORG/frozenlake"

        type_into(qtbot, dialog.repo_edit, "gg-team/frozenlake")
        with qtbot.waitSignal(dialog.published, timeout=PUBLISH_TIMEOUT) as published:
            click(dialog.publish_button)
        assert str(published.args[0]) == f"{hub.url}/datasets/gg-team/frozenlake"
        assert dialog.progress_bar.value() == BAR_STEPS

        repo = hub.repo("gg-team/frozenlake", "dataset")
        assert repo is not None and len(repo.commits) == 1
        assert json.loads(repo.files["namespace_metadata.json"])["datasets"] == ["frozenlake/random-v0"]
        local = home.datasets_dir / "frozenlake" / "random-v0"
        ours = {f"random-v0/{p.relative_to(local).as_posix()}" for p in local.rglob("*") if p.is_file()}
        assert ours <= set(repo.files)
    dialog.close()
