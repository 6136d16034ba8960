"""Replay tab against real stored runs: a human FrozenLake episode step by step, a 200k-step episode,
the timeline coloured by who acted, and playback at the env's own rate."""

from __future__ import annotations

import sqlite3
import time

import numpy as np
from gym_gui_sdk.render import decode_payload
from PySide6.QtCore import Qt
from pytestqt.qtbot import QtBot

from gym_gui.core.config import parse_run_config
from gym_gui.core.records import RunRecord
from gym_gui.core.states import RunState
from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.home import Home
from gym_gui.storage.run_dir import RunDir
from gym_gui.storage.telemetry import TelemetryReader
from gym_gui.ui.daemon_link import DaemonLink
from gym_gui.ui.tabs.actor_strip import ACTOR_COLOURS
from gym_gui.ui.tabs.replay import ReplayTab
from gym_gui.ui.tabs.replay_model import MAX_TICK_HZ, WINDOW
from tests.support import publish_acted_run
from tests.ui.test_human_play import play_frozenlake_episode, wait_for_state


def make_tab(qtbot: QtBot, link: DaemonLink, run: RunRecord) -> ReplayTab:
    tab = ReplayTab(link)
    qtbot.addWidget(tab)
    tab.resize(900, 600)
    tab.show()
    tab.attach(run)
    return tab


def wait_for_grid(qtbot: QtBot, tab: ReplayTab, expected: object) -> None:
    """Wait until the tab's view has drawn ``expected`` (it draws at most ~30 pictures a second)."""
    qtbot.waitUntil(lambda: tab.env_view.grid == expected, timeout=2_000)


def test_human_episode_replays_step_by_step(
    qtbot: QtBot, link: DaemonLink, client: DaemonClient, home: Home
) -> None:
    widget, pressed = play_frozenlake_episode(qtbot, link)
    run_id = widget.run_id
    wait_for_state(qtbot, client, run_id, "COMPLETED")
    tab = make_tab(qtbot, link, client.get_run(run_id).record)
    assert tab.title == "Replay"

    reader = TelemetryReader(RunDir(home.run_dir(run_id)).telemetry_path)
    try:
        stored = reader.steps(0)
        episode = reader.episode(0)
    finally:
        reader.close()
    assert len(stored) == len(pressed)
    assert tab.episode_combo.count() == 1
    assert (
        tab.episode_combo.itemText(0) == f"episode 0 — return {episode.total_reward:.6g}, {len(stored)} steps"
    )
    tab.select_episode(0)
    assert tab.last_step == len(stored) - 1

    drawn_before = tab.env_view.frames_drawn
    for record in stored:
        tab.seek(record.step)
        current = tab.current_step()
        assert current is not None
        assert (current.step, current.action, current.observation) == (
            record.step,
            record.action,
            record.observation,
        )
        assert tab.step_fields["action"].text() == record.action
        wait_for_grid(qtbot, tab, decode_payload(record.render or b""))
    assert tab.env_view.frames_drawn > drawn_before
    last = tab.current_step()
    assert last is not None and (last.terminated or last.truncated)
    assert tab.step_fields["terminated"].text() == ("yes" if last.terminated else "no")

    # The tab's keys: Left and Right step, Space plays to the end at the chosen speed.
    tab.seek(0)
    tab.setFocus()
    qtbot.keyClick(tab, Qt.Key.Key_Right)
    assert tab.step == min(1, tab.last_step)
    qtbot.keyClick(tab, Qt.Key.Key_Left)
    assert tab.step == 0
    tab.set_speed(8.0)
    qtbot.keyClick(tab, Qt.Key.Key_Space)
    assert tab.playing
    qtbot.waitUntil(lambda: not tab.playing, timeout=10_000)
    assert tab.step == tab.last_step
    qtbot.keyClick(tab, Qt.Key.Key_Space)
    assert tab.playing and tab.step == 0  # played again from the start
    tab.pause()
    assert not tab.playing

    tab.detach()
    assert tab.current_step() is None


def test_seeking_a_200k_step_episode_is_immediate(
    qtbot: QtBot, link: DaemonLink, client: DaemonClient, home: Home
) -> None:
    # MountainCar ends at the flag only when faster than goal_velocity, which it never reaches (its top
    # speed is 0.07): one episode runs the whole budget. Random actions alone reach the flag now and then.
    record, _ = client.submit(
        parse_run_config(
            {
                "worker": "random",
                "env_id": "MountainCar-v0",
                "seed": 0,
                "budget": {"timesteps": 200_000},
                "env_kwargs": {"max_episode_steps": 200_000, "goal_velocity": 1.0},
                "telemetry": {"render_fps": 10, "batch_steps": 4096},
            }
        )
    )
    final = client.wait_for_end(record.run_id, timeout=120)
    assert final.state is RunState.COMPLETED, final.reason
    path = RunDir(home.run_dir(record.run_id)).telemetry_path

    tab = make_tab(qtbot, link, client.get_run(record.run_id).record)
    assert tab.episode == 0
    assert tab.last_step == 199_999
    assert tab.rows_loaded <= WINDOW

    started = time.perf_counter()
    tab.seek(100_000)
    elapsed = time.perf_counter() - started
    current = tab.current_step()
    assert current is not None and current.step == 100_000
    assert elapsed < 0.5, f"seeking took {elapsed:.3f}s"
    assert tab.rows_loaded < 5000
    # A pixel run stores frames at its render rate: the step shows the latest frame at or before it,
    # found with one query.
    assert tab.render_queries <= 1
    with sqlite3.connect(path.as_uri() + "?mode=ro", uri=True) as db:
        frame_step, payload = db.execute(
            "SELECT step, render FROM steps WHERE episode = 0 AND step <= 100000 AND render IS NOT NULL "
            "ORDER BY step DESC LIMIT 1"
        ).fetchone()
    assert frame_step < 100_000  # sparse frames: the picture is an earlier step's
    expected = decode_payload(payload)
    assert isinstance(expected, np.ndarray)
    qtbot.waitUntil(lambda: tab.env_view.frame is not None and np.array_equal(tab.env_view.frame, expected))

    # Stepping on from there reads no more rows and asks storage for no other frame.
    loaded, queries = tab.rows_loaded, tab.render_queries
    for _ in range(20):
        tab.step_forward()
    assert tab.step == 100_020
    assert tab.rows_loaded == loaded
    assert tab.render_queries == queries

    # The far end and back to the start stay just as quick.
    for target in (199_999, 0, 150_000):
        started = time.perf_counter()
        tab.seek(target)
        assert time.perf_counter() - started < 0.5
        step = tab.current_step()
        assert step is not None and step.step == target
    assert tab.rows_loaded < 5000


def test_the_timeline_colours_each_step_by_who_acted(
    qtbot: QtBot, link: DaemonLink, client: DaemonClient
) -> None:
    # Episode 0: the operator plays 10 steps, a person takes over for 5 (overriding action 0), the
    # operator plays the last 5. Episode 1: steps that do not say who acted.
    final = publish_acted_run(client, "o" * 10 + "h" * 5 + "o" * 5, "-" * 5)
    tab = make_tab(qtbot, link, final)
    qtbot.waitUntil(lambda: tab.episode == 0 and tab.actor_strip.isVisible(), timeout=5_000)
    strip = tab.actor_strip
    width = strip.width()
    assert width > 100  # as wide as the slider above it
    image = strip.grab().toImage()
    middle = strip.height() // 2

    def colour_at_step(step: float) -> str:
        return image.pixelColor(int(width * step / 20), middle).name()

    assert [colour_at_step(s) for s in (0.5, 9.5, 10.5, 14.5, 15.5, 19.5)] == [
        ACTOR_COLOURS["operator"],
        ACTOR_COLOURS["operator"],
        ACTOR_COLOURS["human"],
        ACTOR_COLOURS["human"],
        ACTOR_COLOURS["operator"],
        ACTOR_COLOURS["operator"],
    ]
    tab.seek(12)
    assert tab.details.actor_label.text() == "human (the operator proposed 0)"
    tab.seek(3)
    assert tab.details.actor_label.text() == "operator"

    tab.select_episode(1)  # its steps do not say: no strip, no "acted by"
    assert not strip.isVisible()
    assert tab.details.actor_label.text() == "" and not tab.details.form.isRowVisible(tab.details.actor_label)
    tab.select_episode(0)
    assert strip.isVisible()


def test_playback_draws_at_the_env_s_own_rate(qtbot: QtBot, link: DaemonLink, client: DaemonClient) -> None:
    lander = publish_acted_run(client, "o" * 40, env_id="LunarLander-v3")
    lake = publish_acted_run(client, "o" * 40)
    tab = make_tab(qtbot, link, lander)
    qtbot.waitUntil(lambda: tab.episode_combo.count() == 1, timeout=10_000)
    tab.select_episode(0)
    # The view draws every picture playback gives it, up to 60 a second; playback gives them at the
    # env's metadata["render_fps"] × speed: LunarLander's 50 at 1× is a tick every 20 ms.
    assert tab.env_view.max_fps == MAX_TICK_HZ == 60.0
    tab.play()
    assert tab.model.fps == 50.0 and tab.model.tick_ms() == 20
    tab.set_speed(8.0)  # 400 steps a second: a tick at the view's 60 a second, several steps each
    assert tab.model.tick_ms() == int(1000 / 60)
    tab.pause()
    tab.set_speed(1.0)

    tab.attach(lake)
    qtbot.waitUntil(lambda: tab.episode_combo.count() == 1, timeout=10_000)
    tab.select_episode(0)
    tab.play()
    assert tab.model.fps == 4.0 and tab.model.tick_ms() == 250  # toy text: 4 a second
    tab.pause()
    tab.detach()
