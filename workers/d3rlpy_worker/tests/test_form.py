"""The d3rlpy run form in the window: the home's datasets to choose from, the run's environment the
chosen dataset's, and the daemon's refusal (its preflight) shown as the form's badge, word for word."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pytestqt.qtbot import QtBot

from gym_gui.core.errors import ConfigError
from gym_gui.datasets import DatasetStore
from gym_gui.ui.daemon_link import DaemonLink
from gym_gui.ui.forms.form import GeneratedForm
from workers.d3rlpy_worker.tests.support import OfflineHome, collect_random

DESCRIBE_TIMEOUT = 180_000  # ms: the first description imports d3rlpy (and torch) in the bundle


@pytest.fixture
def form(qtbot: QtBot, offline: OfflineHome) -> Iterator[GeneratedForm]:
    link = DaemonLink(offline.home.root, autostart=False)
    link.connect_daemon()
    qtbot.waitUntil(lambda: link.connected, timeout=20_000)
    form = GeneratedForm("d3rlpy", link)
    qtbot.addWidget(form)
    qtbot.waitUntil(lambda: form.description is not None, timeout=DESCRIBE_TIMEOUT)
    yield form
    link.close()


def test_the_form_offers_the_homes_datasets_and_the_run_takes_the_chosen_ones_env(
    qtbot: QtBot, form: GeneratedForm, offline: OfflineHome
) -> None:
    combo = form.rows.dataset_combo
    assert combo.isVisibleTo(form) and not form.env_combo.isEnabled()
    offered = [combo.itemText(index) for index in range(combo.count())]
    assert sorted(offered) == DatasetStore(offline.home).names()
    assert {"cartpole/random-v0", "frozenlake/random-v0"} <= set(offered)

    combo.setCurrentText("frozenlake/random-v0")
    assert form.env_combo.currentText() == "FrozenLake-v1"
    combo.setCurrentText("cartpole/random-v0")
    assert form.env_combo.currentText() == "CartPole-v1"
    config = form.model.to_config()
    assert (config.dataset, config.env_id) == ("cartpole/random-v0", "CartPole-v1")


def test_the_daemons_refusal_is_the_forms_badge_word_for_word(
    qtbot: QtBot, form: GeneratedForm, offline: OfflineHome
) -> None:
    form.rows.dataset_combo.setCurrentText("cartpole/random-v0")
    form.picker.set_algorithm("cql")  # continuous actions, on a dataset of discrete ones
    qtbot.waitUntil(lambda: form.preview.error() != "", timeout=DESCRIBE_TIMEOUT)
    with pytest.raises(ConfigError) as refused:
        offline.client.preview(form.model.to_config())
    assert form.preview.error() == str(refused.value)
    assert (
        "field 'algorithm': cql takes continuous actions and dataset 'cartpole/random-v0'"
        in form.preview.error()
    )

    form.picker.set_algorithm("discrete_bc")
    qtbot.waitUntil(
        lambda: form.preview.error() == "" and form.preview.plan is not None, timeout=DESCRIBE_TIMEOUT
    )
    assert form.model.to_config().algorithm == "discrete_bc"


def test_a_dataset_made_while_the_form_is_open_is_offered_when_it_shows_again(
    qtbot: QtBot, form: GeneratedForm, offline: OfflineHome, monkeypatch: pytest.MonkeyPatch
) -> None:
    form.show()
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(offline.home.datasets_dir))
    collect_random("cartpole/later-v0", episodes=2, seed=50)
    combo = form.rows.dataset_combo
    assert combo.findText("cartpole/later-v0") < 0  # nothing has looked since
    form.hide()
    form.show()  # as when the user comes back to the form
    assert combo.findText("cartpole/later-v0") >= 0


def test_the_environment_row_says_nothing_of_other_environments(form: GeneratedForm) -> None:
    assert not form.env_combo.isEnabled() and not form.env_note.isVisibleTo(form)
