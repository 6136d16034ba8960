"""The Datasets browser in the real window: the home's datasets, one's card and return histogram, and an
episode replayed in the stored run it came from."""

from __future__ import annotations

import pytest
from pytestqt.qtbot import QtBot

from gym_gui.core.config import parse_run_config
from gym_gui.core.states import RunState
from gym_gui.datasets import DatasetStore, RunSource, record_dataset
from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.home import Home
from gym_gui.ui.main_window import MainWindow
from gym_gui.ui.tabs.replay import ReplayTab


def test_a_datasets_card_histogram_and_episodes_open_the_runs_replay_at_that_episode(
    qtbot: QtBot, window: MainWindow, client: DaemonClient, home: Home, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(home.datasets_dir))
    config = parse_run_config(
        {"worker": "random", "env_id": "FrozenLake-v1", "seed": 2, "budget": {"episodes": 6}}
    )
    record, _ = client.submit(config)
    final = client.wait_for_end(record.run_id, timeout=60)
    assert final.state is RunState.COMPLETED, final.reason
    recorded = record_dataset(
        DatasetStore(home), "frozenlake/random-v0", [RunSource.of(final.run_id, final.run_dir)]
    )
    qtbot.waitUntil(lambda: window.runs.info(record.run_id) is not None, timeout=20_000)

    window.datasets_action.trigger()
    browser = window.datasets
    assert window.datasets_dock.isVisible()
    qtbot.waitUntil(lambda: browser.table.topLevelItemCount() == 1, timeout=20_000)
    row = browser.table.topLevelItem(0)
    assert [row.text(i) for i in range(4)] == [
        "frozenlake/random-v0",
        "FrozenLake-v1",
        "6",
        str(recorded.steps),
    ]

    browser.table.setCurrentItem(row)
    qtbot.waitUntil(lambda: browser.detail is not None, timeout=30_000)
    card = browser.card.text()
    assert record.run_id in card and recorded.card.sha256 in card
    assert browser.bars is not None
    assert int(sum(browser.bars.opts["height"])) == 6  # every episode in the histogram
    assert browser.episodes.count() == 6

    browser.episodes.setCurrentRow(4)
    assert browser.replay_button.isEnabled()
    browser.replay_button.click()
    replay = next(tab for tab in window.run_view.tab_list() if isinstance(tab, ReplayTab))
    assert window.run_view.run is not None and window.run_view.run.run_id == record.run_id
    assert window.run_view.tabs.currentWidget() is replay
    assert replay.episode == 4


def test_a_dataset_made_outside_gym_gui_is_listed_but_has_no_run_to_replay(
    qtbot: QtBot, window: MainWindow, home: Home, monkeypatch: pytest.MonkeyPatch
) -> None:
    import gymnasium as gym
    import minari

    monkeypatch.setenv("MINARI_DATASETS_PATH", str(home.datasets_dir))
    env = minari.DataCollector(gym.make("CartPole-v1"))
    for episode in range(3):
        env.reset(seed=episode)
        done = False
        while not done:
            _, _, terminated, truncated, _ = env.step(env.action_space.sample())
            done = terminated or truncated
    env.create_dataset("cartpole/outside-v0", algorithm_name="random")

    browser = window.show_datasets()
    qtbot.waitUntil(lambda: browser.table.topLevelItemCount() == 1, timeout=20_000)
    browser.table.setCurrentItem(browser.table.topLevelItem(0))
    qtbot.waitUntil(lambda: browser.detail is not None, timeout=30_000)
    assert "made outside gym_gui" in browser.card.text()
    assert browser.episodes.count() == 3
    browser.episodes.setCurrentRow(0)
    assert not browser.replay_button.isEnabled()
    assert "names no stored run" in browser.replay_button.toolTip()
