"""The Datasets browser in the real window: the home's datasets, one's card and return histogram, and an
episode replayed in the stored run it came from (or, for a dataset made outside gym_gui, played again
as a run first)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from pytestqt.qtbot import QtBot

from gym_gui.core.config import parse_run_config
from gym_gui.core.states import RunState
from gym_gui.datasets import DatasetStore, RunSource, record_dataset
from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.home import Home
from gym_gui.storage.run_dir import RunDir
from gym_gui.storage.telemetry import TelemetryReader
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


def test_an_episode_of_a_dataset_made_outside_gym_gui_is_played_again_as_a_run_and_replays(
    qtbot: QtBot,
    window: MainWindow,
    client: DaemonClient,
    home: Home,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import gymnasium as gym
    import minari

    monkeypatch.setenv("MINARI_DATASETS_PATH", str(home.datasets_dir))
    env = minari.DataCollector(gym.make("CartPole-v1"))
    env.action_space.seed(5)
    for episode in range(3):
        env.reset(seed=10 + episode)
        done = False
        while not done:
            _, _, terminated, truncated, _ = env.step(env.action_space.sample())
            done = terminated or truncated
    env.create_dataset("cartpole/outside-v0", algorithm_name="random")
    dataset = minari.load_dataset("cartpole/outside-v0")
    recorded = next(iter(dataset.iterate_episodes([1])))

    browser = window.show_datasets()
    qtbot.waitUntil(lambda: browser.table.topLevelItemCount() == 1, timeout=20_000)
    browser.table.setCurrentItem(browser.table.topLevelItem(0))
    qtbot.waitUntil(lambda: browser.detail is not None, timeout=30_000)
    assert "made outside gym_gui" in browser.card.text()
    assert browser.episodes.count() == 3
    browser.episodes.setCurrentRow(1)
    assert browser.replay_button.isEnabled()
    assert "played again in its environment" in browser.replay_button.toolTip()
    runs_before = {run.run_id for run in client.list_runs()}
    browser.replay_button.click()

    # Played again as a run of its own, whose Replay opens at its one episode.
    def replaying_the_new_run() -> bool:
        run = window.run_view.run
        replay = window.run_view.tabs.currentWidget()
        return (
            run is not None
            and run.run_id not in runs_before
            and isinstance(replay, ReplayTab)
            and replay.episode == 0
        )

    qtbot.waitUntil(replaying_the_new_run, timeout=60_000)
    run = window.run_view.run
    assert run is not None and run.worker == "operator"
    assert "every observation as recorded" in window.statusBar().currentMessage()
    final = client.wait_for_end(run.run_id, timeout=60)
    assert final.state is RunState.COMPLETED, final.reason
    reader = TelemetryReader(RunDir(home.run_dir(run.run_id)).telemetry_path)
    try:
        stored = reader.transitions(0)
    finally:
        reader.close()
    assert [json.loads(row[4]) for row in stored] == recorded.actions.tolist()
    assert [row[1] for row in stored] == recorded.rewards.tolist()

    # An episode written without its seed (by another tool) says why it cannot be played again, and
    # starts no run.
    from minari.data_collector import EpisodeBuffer

    env = gym.make("CartPole-v1")
    first, _ = env.reset(seed=0)
    seen, actions = [first], []
    for action in (0, 1, 0):
        actions.append(action)
        seen.append(env.step(action)[0])
    buffer = EpisodeBuffer(
        observations=np.array(seen),
        actions=np.array(actions),
        rewards=[1.0, 1.0, 1.0],
        terminations=[False, False, False],
        truncations=[False, False, True],
    )
    minari.create_dataset_from_buffers("cartpole/unseeded-v0", [buffer], env=env, algorithm_name="scripted")
    runs_now = {r.run_id for r in client.list_runs()}
    browser.refresh()
    qtbot.waitUntil(lambda: browser.table.topLevelItemCount() == 2, timeout=20_000)
    browser.select("cartpole/unseeded-v0")
    qtbot.waitUntil(
        lambda: browser.detail is not None and browser.detail.card.name == "cartpole/unseeded-v0",
        timeout=30_000,
    )
    browser.episodes.setCurrentRow(0)
    browser.replay_button.click()
    qtbot.waitUntil(lambda: "recorded without a seed" in window.statusBar().currentMessage(), timeout=30_000)
    assert {r.run_id for r in client.list_runs()} == runs_now
