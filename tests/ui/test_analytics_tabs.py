"""The analytics tabs (Charts, TensorBoard, W&B, Checkpoints) and the Compare view against real CleanRL runs."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from PySide6.QtWebEngineWidgets import QWebEngineView
from PySide6.QtWidgets import QApplication
from pytestqt.qtbot import QtBot

from gym_gui.core.config import RunConfig, parse_run_config
from gym_gui.core.curves import GRID_POINTS, ema, mean_std_band
from gym_gui.core.records import ArtifactRecord, MetricBatch, MetricPoint, RunRecord
from gym_gui.core.states import RunState
from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.comparison import experiment_key
from gym_gui.storage.home import Home
from gym_gui.storage.run_dir import RunDir
from gym_gui.storage.telemetry import TelemetryReader
from gym_gui.storage.telemetry_writer import TelemetryWriter
from gym_gui.ui import local_web
from gym_gui.ui.compare import CompareView
from gym_gui.ui.daemon_link import DaemonLink
from gym_gui.ui.main_window import MainWindow
from gym_gui.ui.settings import Settings
from gym_gui.ui.tabs.charts import ChartsTab
from gym_gui.ui.tabs.checkpoints import CheckpointsTab
from gym_gui.ui.tabs.live import LiveTab
from gym_gui.ui.tabs.replay import ReplayTab
from gym_gui.ui.tabs.tensorboard import TensorBoardTab
from gym_gui.ui.tabs.wandb import WandbTab
from gym_gui.workers import worker_catalog
from tests.fixtures import SHARED_BUNDLES
from tests.support import module_daemon, run_record, tensorboard_runs, wait_until_stable

# The CleanRL kind's episodic returns, as the window finds them (its spec's return metric).
RETURNS = worker_catalog().return_metric("cleanrl")

RETURN = RETURNS
FINAL_MODEL = "checkpoints/final.cleanrl_model"


def ppo(seed: int, timesteps: int = 4096, **extra: Any) -> RunConfig:
    return parse_run_config(
        {
            "worker": "cleanrl",
            "algorithm": "ppo",
            "env_id": "CartPole-v1",
            "seed": seed,
            "budget": {"timesteps": timesteps},
            "params": {"num-steps": 128},
            **extra,
        }
    )


@pytest.fixture(scope="module")
def analytics_daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[DaemonClient, Home]]:
    """One daemon for the module: CleanRL runs are the slow part, so the tests share them."""
    root = tmp_path_factory.mktemp("analytics_home")
    # Three at once: the two short runs train while the live-charts test watches a third.
    with module_daemon(root, SHARED_BUNDLES, ["--max-concurrent", "3", "--cancel-grace", "10"]) as daemon:
        yield daemon


# conftest's `link` fixture connects to whatever `home` and `client` are: here, the module's daemon.
@pytest.fixture
def home(analytics_daemon: tuple[DaemonClient, Home]) -> Home:
    return analytics_daemon[1]


@pytest.fixture
def client(analytics_daemon: tuple[DaemonClient, Home]) -> DaemonClient:
    return analytics_daemon[0]


@pytest.fixture(scope="module")
def submitted(analytics_daemon: tuple[DaemonClient, Home]) -> dict[str, str]:
    """Two short PPO runs that differ only in seed (and tracking: seed 1 logs to W&B offline), both
    filming (capture-video is one of the script's parameters, so a part of the experiment), and a dry
    run of the same script, which films nothing."""
    client, _home = analytics_daemon
    filming = {"num-steps": 128, "capture-video": True}
    seed1, _ = client.submit(ppo(1, params=filming, tracking={"wandb_mode": "offline"}))
    seed2, _ = client.submit(ppo(2, params=filming))
    dry, _ = client.submit(ppo(3, dry_run=True))
    return {"seed1": seed1.run_id, "seed2": seed2.run_id, "dry": dry.run_id}


@pytest.fixture(scope="module")
def trained(analytics_daemon: tuple[DaemonClient, Home], submitted: dict[str, str]) -> dict[str, RunRecord]:
    client, _home = analytics_daemon
    infos = {}
    for name, run_id in submitted.items():
        final = client.wait_for_end(run_id, timeout=240)
        assert final.state is RunState.COMPLETED, final.reason
        infos[name] = client.get_run(run_id).record
    return infos


def show(qtbot: QtBot, widget: Any) -> None:
    qtbot.addWidget(widget)
    widget.resize(900, 600)
    widget.show()


# ---------------------------------------------------------------- Charts


def stored_metrics(run_dir: Path, points: list[MetricPoint]) -> Path:
    """A run directory (named as a run id) whose telemetry database holds ``points``."""
    run_dir.mkdir()
    writer = TelemetryWriter(run_dir / "telemetry.sqlite")
    writer.start()
    writer.put_metrics(points)
    assert writer.close()
    return run_dir


def test_charts_tab_receives_live_points_while_a_run_trains(
    qtbot: QtBot, link: DaemonLink, client: DaemonClient, submitted: dict[str, str]
) -> None:
    record, _ = client.submit(ppo(3, timesteps=1_000_000))
    tab = ChartsTab(link)
    show(qtbot, tab)
    tab.attach(client.get_run(record.run_id).record)
    try:
        qtbot.waitUntil(lambda: len(tab.series(RETURN)[0]) > 0, timeout=90_000)
        seen = len(tab.series(RETURN)[0])
        qtbot.waitUntil(lambda: len(tab.series(RETURN)[0]) > seen, timeout=60_000)
        qtbot.waitUntil(lambda: tab.points_drawn(RETURN) > 0, timeout=5_000)
        assert tab.checked_tags() == [RETURN]
        steps, _values = tab.series(RETURN)
        assert np.all(np.diff(steps) >= 0)
    finally:
        client.cancel(record.run_id)
        tab.detach()
    assert client.wait_for_end(record.run_id, timeout=60).state is RunState.CANCELLED


def test_charts_tab_backfills_a_finished_run_from_storage(
    qtbot: QtBot, link: DaemonLink, home: Home, trained: dict[str, RunRecord]
) -> None:
    run = trained["seed1"]
    tab = ChartsTab(link)
    show(qtbot, tab)
    tab.attach(run)
    qtbot.waitUntil(lambda: tab.points_drawn(RETURN) > 0, timeout=10_000)
    reader = TelemetryReader(RunDir(home.run_dir(run.run_id)).telemetry_path)
    stored = reader.metrics(RETURN)
    tags = reader.metric_tags()
    reader.close()
    steps, values = tab.series(RETURN)
    assert len(steps) == len(stored)
    assert list(values) == [p.value for p in stored]
    assert tab.checked_tags() == [RETURN]
    assert [tab.tags.item(i).text() for i in range(tab.tags.count())] == tags

    # Several tags: one plot each, stacked; the wall-time axis and smoothing redraw them.
    tab.set_checked_tags([RETURN, "charts/SPS"])
    tab.x_axis.setCurrentText("wall time")
    tab.smoothing.setValue(0)
    qtbot.waitUntil(lambda: tab.points_drawn("charts/SPS") > 0, timeout=5_000)
    # A few hundred points are drawn as they are (downsampling only thins dense series).
    qtbot.waitUntil(lambda: tab.points_drawn(RETURN) == len(stored), timeout=5_000)
    tab.detach()
    assert tab.series(RETURN)[0].size == 0


def test_charts_keep_every_point_where_storage_and_the_live_stream_meet(
    qtbot: QtBot, link: DaemonLink, tmp_path: Path
) -> None:
    # CleanRL logs one return per env that finished, all at the same global step: the back-fill
    # may hold some of a step's points and the live stream bring the others (and repeat the first).
    run_dir = stored_metrics(
        tmp_path / "CartPole-v1__ppo__1__1",
        [
            MetricPoint(RETURN, 100, 10.0, 12.0),
            MetricPoint(RETURN, 200, 20.0, 15.0),  # env 0 at step 200
            MetricPoint(RETURN, 200, 20.0, 15.0),  # env 1: the same return at the same moment
        ],
    )
    tab = ChartsTab(link)
    show(qtbot, tab)
    tab.attach(
        run_record(run_dir.name, RunState.COMPLETED, worker="cleanrl", lane="analytics", run_dir=str(run_dir))
    )
    qtbot.waitUntil(lambda: tab.series(RETURN)[0].size == 3, timeout=10_000)
    live = MetricBatch(
        points=[
            MetricPoint(tag=RETURN, step=100, wall_time=10.0, value=12.0),  # repeats of stored points
            MetricPoint(tag=RETURN, step=200, wall_time=20.0, value=15.0),
            MetricPoint(tag=RETURN, step=200, wall_time=20.0, value=15.0),
            MetricPoint(tag=RETURN, step=200, wall_time=20.1, value=31.0),  # env 2, not stored yet
            MetricPoint(tag=RETURN, step=300, wall_time=30.0, value=40.0),
        ]
    )
    tab._on_metrics(live)  # the slot the run's subscription delivers batches to
    steps, values = tab.series(RETURN)
    assert list(steps) == [100, 200, 200, 200, 300]
    assert list(values) == [12.0, 15.0, 15.0, 31.0, 40.0]


def test_the_return_curve_arriving_after_other_metrics_takes_the_tabs_own_choice_not_the_users(
    qtbot: QtBot, link: DaemonLink, tmp_path: Path
) -> None:
    # A d3rlpy run writes the dataset's return as it starts; its own evaluation ends the first epoch.
    run_dir = stored_metrics(
        tmp_path / "CartPole-v1__discrete_bc__1__2", [MetricPoint("dataset/mean_return", 0, 1.0, 60.0)]
    )
    tab = ChartsTab(link)
    show(qtbot, tab)
    tab.attach(
        run_record(run_dir.name, RunState.COMPLETED, worker="d3rlpy", lane="analytics", run_dir=str(run_dir))
    )
    qtbot.waitUntil(lambda: tab.checked_tags() == ["dataset/mean_return"], timeout=10_000)
    tab.add_points("losses/loss", [200], [2.0], [0.4])
    assert tab.checked_tags() == ["dataset/mean_return"]
    tab.add_points("eval/return", [200], [2.0], [15.0])
    assert tab.checked_tags() == ["eval/return"]

    tab.set_checked_tags(["losses/loss"])  # the user's choice stays as more tags come
    tab.add_points("eval/normalized_score", [200], [2.0], [5.0])
    assert tab.checked_tags() == ["losses/loss"]


def test_an_offline_runs_return_chart_draws_the_datasets_own_return_across_it(
    qtbot: QtBot, link: DaemonLink, tmp_path: Path
) -> None:
    # What a d3rlpy run stores each epoch: the evaluation's return and its D4RL-style normalised score,
    # and beside them the dataset's own (the offline score the curve is read against).
    points = []
    for epoch, (evaluated, score) in enumerate([(15.0, 5.0), (40.0, 18.0)], start=1):
        step, wall = 200 * epoch, 10.0 * epoch
        points += [
            MetricPoint("eval/return", step, wall, evaluated),
            MetricPoint("eval/normalized_score", step, wall, score),
            MetricPoint("dataset/mean_return", step, wall, 60.0),
            MetricPoint("dataset/normalized_score", step, wall, 29.5),
            MetricPoint("losses/loss", step, wall, 0.5 / epoch),
        ]
    run_dir = stored_metrics(tmp_path / "CartPole-v1__discrete_bc__1__1", points)
    tab = ChartsTab(link)
    show(qtbot, tab)
    tab.attach(
        run_record(run_dir.name, RunState.COMPLETED, worker="d3rlpy", lane="analytics", run_dir=str(run_dir))
    )
    qtbot.waitUntil(lambda: tab.reference_line("eval/return") is not None, timeout=10_000)
    assert tab.checked_tags() == ["eval/return"]  # the kind's return curve, with its reference on it
    line = tab.reference_line("eval/return")
    assert line is not None and line.value() == 60.0 and line.angle == 0
    returns = tab.plot_of("eval/return")
    assert returns is not None and line in returns.items
    assert "dataset/mean_return 60" in line.label.toPlainText()
    # The dataset's return is above every evaluation: the plot's range takes it in, so it is seen.
    qtbot.waitUntil(lambda: returns.viewRange()[1][1] >= 60.0, timeout=5_000)

    # The normalised score's chart gets the dataset's normalised score; a loss has no reference.
    tab.set_checked_tags(["eval/normalized_score", "losses/loss"])
    qtbot.waitUntil(lambda: tab.reference_line("eval/normalized_score") is not None, timeout=5_000)
    score_line = tab.reference_line("eval/normalized_score")
    assert score_line is not None and score_line.value() == 29.5
    assert tab.reference_line("losses/loss") is None and tab.reference_line("eval/return") is None

    # A live point of the dataset's score moves its line.
    tab._on_metrics(MetricBatch(points=[MetricPoint("dataset/normalized_score", 600, 30.0, 31.0)]))
    qtbot.waitUntil(lambda: score_line.value() == 31.0, timeout=5_000)
    tab.detach()


def test_charts_decimate_a_million_points_and_smooth_like_tensorboard(qtbot: QtBot, link: DaemonLink) -> None:
    tab = ChartsTab(link)
    show(qtbot, tab)
    n = 1_000_000
    steps = np.arange(n, dtype=np.float64)
    values = np.sin(steps / 5e4) + np.random.default_rng(0).normal(0, 0.3, n)
    tab.add_points(RETURN, steps, 1.7e9 + steps / 1000, values)
    started = time.perf_counter()
    tab.redraw()
    QApplication.processEvents()  # the paint, where downsampling to the view happens
    first = time.perf_counter() - started
    qtbot.waitUntil(lambda: 0 < tab.points_drawn(RETURN) < 20_000, timeout=5_000)
    tab.add_points(RETURN, [n], [1.7e9 + n / 1000], [0.0])
    started = time.perf_counter()
    tab.redraw()
    QApplication.processEvents()
    again = time.perf_counter() - started
    assert 0 < tab.points_drawn(RETURN) < 20_000
    # A live point costs a redraw of the decimated curve, not of a million points.
    assert first < 2.0 and again < 0.5, (first, again)

    # TensorBoard's debiased EMA, point by point.
    raw = np.array([1.0, 5.0, 2.0, np.nan, 4.0])
    smoothed, _ = ema(raw, 0.6)
    last, expected = 0.0, []
    for k, value in enumerate([1.0, 5.0, 2.0, 4.0], start=1):
        last = last * 0.6 + 0.4 * value
        expected.append(last / (1 - 0.6**k))
    assert np.allclose(smoothed[[0, 1, 2, 4]], expected) and np.isnan(smoothed[3])


# ---------------------------------------------------------------- TensorBoard


@pytest.mark.parametrize("embedded", [True, False], ids=["embedded", "root-with-sandbox"])
def test_tensorboard_tab_serves_the_run_and_stops_on_detach(
    qtbot: QtBot,
    link: DaemonLink,
    home: Home,
    trained: dict[str, RunRecord],
    monkeypatch: pytest.MonkeyPatch,
    embedded: bool,
) -> None:
    if embedded:
        monkeypatch.setenv("QTWEBENGINE_DISABLE_SANDBOX", "1")  # what a root user sets to embed it
    else:
        # As root with Chromium's sandbox on, QtWebEngine would abort the process: the tab must not start it.
        monkeypatch.delenv("QTWEBENGINE_DISABLE_SANDBOX", raising=False)
        monkeypatch.delenv("QTWEBENGINE_CHROMIUM_FLAGS", raising=False)
        monkeypatch.setattr(local_web.os, "geteuid", lambda: 0)
    run = trained["seed1"]
    tab = TensorBoardTab(link)
    qtbot.addWidget(tab)
    tab.attach(run)
    assert tab.process is None  # nothing starts until the tab is shown
    tab.show()
    qtbot.waitUntil(lambda: tab.ready, timeout=90_000)
    url = tab.url
    assert url is not None and url.startswith("http://127.0.0.1:")
    event_dir = json.loads((home.run_dir(run.run_id) / "manifest.json").read_text())["tensorboard_dir"]
    qtbot.waitUntil(lambda: Path(event_dir).name in tensorboard_runs(url), timeout=30_000)
    if embedded:
        view = tab.web_view
        assert isinstance(view, QWebEngineView) and not tab.open_button.isVisible()
        # The page, loaded (the tab reloads a load that failed on a busy machine), then its title.
        qtbot.waitUntil(lambda: tab.page_loaded or tab.restart_button.isVisible(), timeout=240_000)
        assert tab.page_loaded, tab.message.text()
        qtbot.waitUntil(lambda: view.title() == "TensorBoard", timeout=30_000)
        assert view.url().toString().rstrip("/") == url.rstrip("/")
    else:
        assert tab.web_view is None and tab.open_button.isVisible()
        assert "QTWEBENGINE_DISABLE_SANDBOX=1" in tab.message.text() and url in tab.message.text()
    assert (home.run_dir(run.run_id) / "logs" / "tensorboard.log").exists()

    process = tab.process
    assert process is not None and process.poll() is None
    tab.detach()
    qtbot.waitUntil(lambda: process.poll() is not None, timeout=15_000)


def test_tensorboard_tab_without_the_bundle_says_how_to_install_it(
    qtbot: QtBot,
    link: DaemonLink,
    trained: dict[str, RunRecord],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("GYM_GUI_BUNDLES", str(tmp_path / "no_bundles"))
    tab = TensorBoardTab(link)
    show(qtbot, tab)
    tab.attach(trained["seed2"])
    qtbot.waitUntil(lambda: "gym-gui bundles install cleanrl" in tab.message.text(), timeout=10_000)
    assert tab.process is None


# ---------------------------------------------------------------- Checkpoints and videos


def test_checkpoints_tab_lists_the_model_and_evaluates_it(
    qtbot: QtBot, link: DaemonLink, client: DaemonClient, trained: dict[str, RunRecord]
) -> None:
    run = trained["seed1"]
    tab = CheckpointsTab(link)
    show(qtbot, tab)
    tab.attach(run)
    qtbot.waitUntil(lambda: tab.models.rowCount() > 0, timeout=10_000)
    assert tab.artifacts is not None
    final = next(m for m in tab.artifacts.models if m.path == FINAL_MODEL)
    assert final.step == 4096 and final.exists and final.kind == "model"
    tab.select_model(FINAL_MODEL)
    assert tab.selected_model() == FINAL_MODEL
    assert tab.evaluate_button.isEnabled()
    tab.episodes.setValue(2)
    tab.render_fps.setValue(0)
    assert tab.real_time.isChecked()  # watching is the default; this one only needs the returns
    tab.real_time.setChecked(False)
    with qtbot.waitSignal(tab.evaluation_started, timeout=30_000) as started:
        tab.evaluate_button.click()
    evaluation_id = started.args[0]
    final_state = client.wait_for_end(evaluation_id, timeout=180)
    assert final_state.state is RunState.COMPLETED, final_state.reason
    detail = client.get_run(evaluation_id)
    config = json.loads(detail.config_json)
    assert config["mode"] == "evaluate" and config["budget"]["episodes"] == 2
    assert config["evaluation"] == {
        "run_id": run.run_id,
        "checkpoint": FINAL_MODEL,
        "real_time": False,
        "epsilon": 0.0,
    }
    assert detail.record.lane == "telemetry"

    # An evaluation run has nothing to evaluate itself.
    tab.attach(detail.record)
    qtbot.waitUntil(lambda: tab.artifacts is not None, timeout=10_000)
    assert not tab.evaluate_button.isEnabled()


def test_captured_videos_list_their_episode_and_return_and_play_in_the_checkpoints_tab(
    qtbot: QtBot, link: DaemonLink, trained: dict[str, RunRecord]
) -> None:
    run = trained["seed2"]  # trained with capture-video
    tab = CheckpointsTab(link)
    show(qtbot, tab)
    tab.attach(run)
    panel = tab.videos
    qtbot.waitUntil(lambda: panel.table.rowCount() >= 3, timeout=10_000)
    by_episode = {video.episode: video for video in panel.videos}
    assert {0, 1, 8} <= set(by_episode)
    for row, video in enumerate(panel.videos):
        assert video.exists and video.complete
        assert video.ret == video.length and video.length is not None and video.length >= 8
        cells = [panel.table.item(row, column) for column in range(3)]
        assert [cell.text() if cell else None for cell in cells] == [
            str(video.episode),
            f"{video.ret:.6g}",
            f"{video.length:,}",
        ]
    # The first video is loaded, paused on its first frame, which shows.
    player = panel.player
    qtbot.waitUntil(lambda: player.loaded and player.duration > 0, timeout=10_000)
    assert player.path is not None and player.path.name == "rl-video-episode-0.mp4"
    qtbot.waitUntil(lambda: player.frames_shown >= 1, timeout=10_000)
    assert not player.playing and player.position == 0
    qtbot.waitUntil(lambda: player.view.image is not None, timeout=5_000)  # drawn in the tab
    image = player.view.image
    assert image is not None and (image.width(), image.height()) == (600, 400)  # CartPole's picture

    # Selecting episode 8 by mouse loads it; Play plays it to its end, frame after frame.
    row = next(r for r, video in enumerate(panel.videos) if video.episode == 8)
    cell = panel.table.visualItemRect(panel.table.item(row, 0)).center()
    QTest.mouseClick(panel.table.viewport(), Qt.MouseButton.LeftButton, pos=cell)
    assert tab.selected_video() == by_episode[8].path
    qtbot.waitUntil(lambda: player.loaded and player.path is not None and "episode-8" in player.path.name)
    qtbot.waitUntil(lambda: player.duration > 0, timeout=10_000)
    frames_before = player.frames_shown
    QTest.mouseClick(player.transport.play_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: player.playing, timeout=5_000)
    qtbot.waitUntil(lambda: not player.playing, timeout=30_000)  # it stops at the end of the video
    # A 50 fps CartPole video of N steps holds N + 1 frames; most of them reach the view.
    assert player.frames_shown - frames_before >= by_episode[8].length // 2
    assert "frame" in player.transport.position_label.text()

    # Frame steps and the slider seek; the speed is the player's playback rate.
    player.seek(0)
    qtbot.waitUntil(lambda: player.position == 0, timeout=5_000)
    QTest.mouseClick(player.transport.forward_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: player.position == player.frame_ms, timeout=5_000)
    assert player.frame_ms == 20  # the video's own 50 fps
    QTest.mouseClick(player.transport.back_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: player.position == 0, timeout=5_000)
    shown = player.frames_shown
    player.transport.slider.setValue(player.duration // 2)  # as a drag of the slider does
    qtbot.waitUntil(lambda: player.position == player.duration // 2, timeout=5_000)
    qtbot.waitUntil(lambda: player.frames_shown > shown, timeout=5_000)  # paused, the new frame shows
    assert not player.playing
    player.transport.speed_combo.setCurrentIndex(player.transport.speed_combo.findText("2×"))
    assert player.player.playbackRate() == 2.0


def test_the_replay_tab_of_a_run_without_steps_replays_its_videos(
    qtbot: QtBot, link: DaemonLink, trained: dict[str, RunRecord]
) -> None:
    tab = ReplayTab(link)
    show(qtbot, tab)
    tab.attach(trained["seed2"])
    qtbot.waitUntil(lambda: tab.showing_videos, timeout=10_000)
    assert tab.source_row.isVisible() and tab.source_combo.currentText().startswith("Captured videos (")
    player = tab.videos.player
    # Another video chosen while the first is still loading: the chosen one shows its first frame.
    last = tab.videos.videos[-1].path
    tab.videos.select_video(last)
    qtbot.waitUntil(lambda: player.loaded and player.duration > 0, timeout=10_000)
    qtbot.waitUntil(lambda: player.frames_shown >= 1, timeout=10_000)
    assert player.path is not None and str(player.path).endswith(last) and not player.playing
    tab.setFocus()
    QTest.keyClick(tab, Qt.Key.Key_Space)  # the Replay tab's play/pause key plays the video
    qtbot.waitUntil(lambda: player.frames_shown > 5, timeout=10_000)
    QTest.keyClick(tab, Qt.Key.Key_Space)
    qtbot.waitUntil(lambda: not player.playing, timeout=5_000)

    # The run filmed nothing: the tab says how to film, and offers no video source.
    tab.attach(trained["dry"])
    qtbot.waitUntil(lambda: "capture-video" in tab.env_view.message, timeout=10_000)
    assert not tab.source_row.isVisible() and not tab.showing_videos


def test_a_video_that_is_missing_or_not_a_video_says_so(
    qtbot: QtBot, link: DaemonLink, tmp_path: Path
) -> None:
    run_dir = tmp_path / "CartPole-v1__ppo__1__1"
    (run_dir / "videos" / "x").mkdir(parents=True)
    (run_dir / "videos" / "x" / "rl-video-episode-8.mp4").write_bytes(b"not a video at all" * 10)
    videos = [
        {"kind": "video", "path": "videos/x/rl-video-episode-8.mp4", "step": 900, "meta": {"episode": 8}},
        {"kind": "video", "path": "videos/x/rl-video-episode-27.mp4", "step": 1900, "meta": {"episode": 27}},
        {"kind": "video", "path": "../../outside.mp4", "step": 1, "meta": {}},  # never opened
    ]
    (run_dir / "manifest.json").write_text(json.dumps({"checkpoints": [], "videos": videos}))
    tab = CheckpointsTab(link)
    show(qtbot, tab)
    tab.attach(
        run_record(run_dir.name, RunState.COMPLETED, worker="cleanrl", lane="analytics", run_dir=str(run_dir))
    )
    panel = tab.videos
    qtbot.waitUntil(lambda: panel.table.rowCount() == 2, timeout=10_000)
    assert "No saved model yet" in tab.models_message.text()
    player = panel.player
    qtbot.waitUntil(lambda: player.error != "", timeout=10_000)
    assert "could not be played" in player.caption.text() and "episode-8" in player.caption.text()
    missing = panel.table.item(1, 4)
    assert missing is not None and missing.text().endswith("(missing)")
    tab.select_video("videos/x/rl-video-episode-27.mp4")
    assert player.caption.text().endswith("rl-video-episode-27.mp4 is missing.")
    assert not player.transport.play_button.isEnabled()


# ---------------------------------------------------------------- Compare


def test_compare_view_overlays_runs_and_bands_seeds(qtbot: QtBot, trained: dict[str, RunRecord]) -> None:
    view = CompareView()
    show(qtbot, view)
    runs = [trained["seed1"], trained["seed2"]]
    view.set_runs(runs)
    qtbot.waitUntil(lambda: len(view.curves()) == 2, timeout=10_000)
    assert RETURN in view.tags() and view.tag.currentText() == RETURN
    assert set(view.curves()) == {r.run_id for r in runs}
    (band,) = view.bands()
    assert set(band.run_ids) == {r.run_id for r in runs}
    assert len(band.steps) == GRID_POINTS
    assert np.all(band.std >= 0) and np.any(band.std > 0)

    # Another tag redraws from storage; no smoothing keeps each curve's raw points.
    view.smoothing.setValue(0)
    view.tag.setCurrentText("charts/SPS")
    qtbot.waitUntil(lambda: "charts/SPS" in view.status.text(), timeout=10_000)
    assert len(view.curves()) == 2 and len(view.bands()) == 1


def test_runs_are_grouped_by_config_without_seed_notes_or_tracking() -> None:
    base = ppo(1).model_dump()
    other_seed = ppo(2, notes="again", tracking={"wandb_mode": "offline"}).model_dump()
    other_lr = ppo(1, params={"num-steps": 128, "learning-rate": 1e-3}).model_dump()
    assert experiment_key(base) == experiment_key(other_seed)
    assert experiment_key(base) != experiment_key(other_lr)
    band = mean_std_band(
        ["a", "b"],
        [
            (np.array([0.0, 10.0]), np.array([0.0, 10.0])),
            (np.array([0.0, 5.0, 10.0]), np.array([2.0, 7.0, 12.0])),
        ],
        points=3,
    )
    assert band is not None
    assert np.allclose(band.mean, [1.0, 6.0, 11.0]) and np.allclose(band.std, [1.0, 1.0, 1.0])


# ---------------------------------------------------------------- W&B


def test_wandb_tab_on_a_run_without_wandb_says_so(
    qtbot: QtBot, link: DaemonLink, trained: dict[str, RunRecord]
) -> None:
    tab = WandbTab(link)
    show(qtbot, tab)
    tab.attach(trained["seed2"])
    qtbot.waitUntil(lambda: tab.info is not None, timeout=10_000)
    assert "does not log to Weights & Biases" in tab.message.text()
    assert not tab.sync_button.isVisible() and not tab.open_button.isVisible()


def test_wandb_tab_shows_an_offline_run_and_needs_the_api_key_to_sync(
    qtbot: QtBot, link: DaemonLink, trained: dict[str, RunRecord], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    tab = WandbTab(link)
    show(qtbot, tab)
    tab.attach(trained["seed1"])
    qtbot.waitUntil(lambda: tab.info is not None, timeout=60_000)
    assert tab.info is not None and tab.info.mode == "offline", tab.message.text()
    config = tab.config()
    assert config is not None, tab.notes.text()
    assert config["seed"] == 1 and config["env_id"] == "CartPole-v1" and config["exp_name"] == "ppo"
    summary = tab.summary()
    assert summary is not None and summary["global_step"] == 4096
    assert tab.config_tree.topLevelItemCount() == len(config)
    assert tab.sync_button.isVisible() and not tab.sync_button.isEnabled()
    assert "WANDB_API_KEY" in tab.sync_button.toolTip()
    assert "WANDB_API_KEY" in tab.sync_status.text()
    monkeypatch.setenv("WANDB_API_KEY", "not-a-real-key")
    assert tab.sync_blocked_reason() is None


# ---------------------------------------------------------------- Use trained


def test_use_trained_offers_only_finished_runs_with_a_saved_model(
    qtbot: QtBot, link: DaemonLink, client: DaemonClient, home: Home, trained: dict[str, RunRecord]
) -> None:
    # A dry run ends COMPLETED with nothing saved; a run whose model file is gone has nothing to play.
    dry, _ = client.submit(ppo(3, dry_run=True))
    assert client.wait_for_end(dry.run_id, timeout=120).state is RunState.COMPLETED
    window = MainWindow(link, Settings(home.root))
    qtbot.addWidget(window)
    window.show()
    panel = window.control.trained
    qtbot.waitUntil(lambda: window.runs.state_of(dry.run_id) == "COMPLETED", timeout=30_000)
    qtbot.waitUntil(lambda: trained["seed1"].run_id in panel.offered(), timeout=30_000)
    assert trained["seed2"].run_id in panel.offered()
    assert dry.run_id not in panel.offered()
    assert panel.empty.isHidden() and panel.button.isEnabledTo(panel)
    window.run_view.clear()


# ---------------------------------------------------------------- run controls


def test_the_window_checkpoints_pauses_and_resumes_a_cleanrl_run(
    qtbot: QtBot, link: DaemonLink, client: DaemonClient, home: Home
) -> None:
    record, _ = client.submit(ppo(7, timesteps=5_000_000))
    run_id = record.run_id
    window = MainWindow(link, Settings(home.root))
    qtbot.addWidget(window)
    window.show()
    table = window.runs
    try:
        qtbot.waitUntil(lambda: table.state_of(run_id) == "RUNNING", timeout=120_000)
        qtbot.waitUntil(lambda: client.get_run(run_id).progress.global_step > 1000, timeout=120_000)
        table.select(run_id)
        live = window.run_view.tab_list()[0]
        assert isinstance(live, LiveTab) and live.banner_text
        # An analytics-lane run streams no frames: no render rate; the CleanRL worker checkpoints.
        assert live.controls.render_spin.isHidden() and not live.controls.checkpoint_button.isHidden()
        assert table.checkpoint_button.isEnabled() and table.pause_button.isEnabled()

        qtbot.mouseClick(table.checkpoint_button, Qt.MouseButton.LeftButton)
        qtbot.waitUntil(lambda: f"checkpoint asked of {run_id}" in table.message_label.text(), timeout=10_000)
        qtbot.waitUntil(lambda: bool(_requested_checkpoints(home, run_id)), timeout=60_000)
        assert (home.run_dir(run_id) / _requested_checkpoints(home, run_id)[0].path).is_file()

        qtbot.mouseClick(table.pause_button, Qt.MouseButton.LeftButton)
        qtbot.waitUntil(lambda: table.state_of(run_id) == "PAUSED", timeout=30_000)
        qtbot.waitUntil(lambda: not live.paused_badge.isHidden(), timeout=10_000)
        assert not table.checkpoint_button.isEnabled()
        assert table.checkpoint_button.toolTip() == "the run is PAUSED: resume it to checkpoint"
        assert not live.controls.checkpoint_button.isEnabled()
        held = wait_until_stable(
            lambda: client.get_run(run_id).progress.global_step, interval=1.5, what="the paused global step"
        )

        qtbot.mouseClick(live.controls.resume_button, Qt.MouseButton.LeftButton)
        qtbot.waitUntil(lambda: table.state_of(run_id) == "RUNNING", timeout=30_000)
        qtbot.waitUntil(lambda: client.get_run(run_id).progress.global_step > held, timeout=60_000)
        assert table.checkpoint_button.isEnabled()
    finally:
        window.run_view.clear()
        client.cancel(run_id)
    assert client.wait_for_end(run_id, timeout=120).state is RunState.CANCELLED


def _requested_checkpoints(home: Home, run_id: str) -> list[ArtifactRecord]:
    reader = TelemetryReader(RunDir(home.run_dir(run_id)).telemetry_path)
    try:
        return [
            a
            for a in reader.artifacts()
            if a.kind == "checkpoint" and json.loads(a.meta).get("requested") is True
        ]
    finally:
        reader.close()
