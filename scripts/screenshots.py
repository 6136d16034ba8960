"""Render the cockpit's main views into PNG files (`make screenshots`, a real window under Xvfb).

A fresh temporary GYM_GUI_HOME and a real daemon, one scene after the other: ``human`` (a human
FrozenLake episode and its replay), ``hybrid`` (the random operator driving Taxi while a held key
takes over), ``arena`` (operators side by side on one seed with a person's pane, and an evaluation
batch's table and box plot), ``live`` (a random-agent run live on CartPole), ``cleanrl`` (a
short CleanRL PPO run's charts, saved models and captured videos), ``bdi`` (a deliberate Spade BDI
run live, with its value map and its mind), ``llm`` (an LLM run live with its conversation,
against the test suite's chat server), ``optuna`` (a study made by ``cleanrl_utils.tuner``,
attached) and ``offline`` (a DQN's ε-greedy play as a dataset in the Datasets browser, then d3rlpy's
DiscreteBC learning it, its charts). Usage::

    python scripts/screenshots.py OUT_DIR [SCENE ...]     # every scene when none is named
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from PySide6.QtCore import QCoreApplication, Qt
from PySide6.QtWidgets import QApplication, QWidget

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the suite's chat server

from gym_gui.core.config import parse_run_config  # noqa: E402
from gym_gui.core.states import RunState  # noqa: E402
from gym_gui.datasets import DatasetStore, RunSource, record_dataset  # noqa: E402
from gym_gui.play.seat import Control  # noqa: E402
from gym_gui.protocol.client import DaemonClient  # noqa: E402
from gym_gui.storage.home import BUNDLES_ENV_VAR, Home  # noqa: E402
from gym_gui.ui.control_panel import AGENT, HUMAN  # noqa: E402
from gym_gui.ui.daemon_link import DaemonLink  # noqa: E402
from gym_gui.ui.forms.form import GeneratedForm  # noqa: E402
from gym_gui.ui.main_window import MainWindow  # noqa: E402
from gym_gui.ui.settings import Settings  # noqa: E402
from gym_gui.ui.tabs.live import LiveTab  # noqa: E402
from gym_gui.ui.tabs.replay import ReplayTab  # noqa: E402
from gym_gui.workers import worker_catalog  # noqa: E402
from workers.llm_worker.tests.chat_server import MODEL, ChatServer, solver  # noqa: E402


def pump(until: Callable[[], bool], timeout: float, what: str) -> None:
    """Run the event loop until ``until()`` holds (or fail after ``timeout`` seconds)."""
    deadline = time.monotonic() + timeout
    while not until():
        if time.monotonic() > deadline:
            raise SystemExit(f"screenshots: timed out waiting for {what}")
        QCoreApplication.processEvents()
        time.sleep(0.01)


def settle(seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        QCoreApplication.processEvents()
        time.sleep(0.01)


def shoot(window: MainWindow, out: Path, name: str) -> None:
    settle(0.5)
    path = out / f"{name}.png"
    window.grab().save(str(path))
    print(f"wrote {path}")


def open_tab(window: MainWindow, title: str) -> QWidget:
    """Show the selected run's tab called ``title``; the tab."""
    tabs = window.run_view.tabs
    index = next((i for i in range(tabs.count()) if tabs.tabText(i) == title), -1)
    if index < 0:
        raise SystemExit(f"screenshots: the selected run has no {title} tab")
    tabs.setCurrentIndex(index)
    page = tabs.widget(index)
    assert page is not None
    return page


def start(window: MainWindow, client: DaemonClient, config: dict[str, Any]) -> str:
    """Submit the run ``config`` describes with its worker's form beside it, and select it; its id."""
    window.control.set_mode(AGENT)
    window.control.roster.select(config["worker"])
    form = window.control.forms.currentWidget()
    if isinstance(form, GeneratedForm):  # shown with its parameters described, not while they are asked
        pump(lambda: form.description is not None, 300, f"the {config['worker']} form")
    record, _ = client.submit(parse_run_config(config))
    pump(lambda: window.runs.info(record.run_id) is not None, 30, f"the {config['worker']} run")
    window.select_run(record.run_id)
    return record.run_id


def human_scene(window: MainWindow, client: DaemonClient, out: Path) -> None:
    """A few moves on FrozenLake by hand, then their replay."""
    window.control.set_mode(HUMAN)
    window.control.env_picker.set_env("FrozenLake-v1")
    play = window.human_play
    play.start_episode()
    pump(lambda: play.session_ready(), 30, "the human episode")
    for key in ("Right", "Right", "Down"):
        play.press(key)
        settle(0.2)
    shoot(window, out, "human-play")
    human_run = play.run_id
    if not human_run:
        return
    # The episode ends (its run is confirmed) before it is replayed.
    play.close_session()
    pump(lambda: client.get_run(human_run).record.state != "RUNNING", 30, "the human run to end")
    pump(lambda: window.runs.info(human_run) is not None, 30, "the human run row")
    window.select_run(human_run)
    open_tab(window, "Replay")
    settle(1)
    shoot(window, out, "replay")


def hybrid_scene(window: MainWindow, client: DaemonClient, out: Path) -> None:
    """Hybrid on Taxi: the random operator drives at the env's rate, then a held key takes over."""
    window.control.set_mode(HUMAN)
    window.control.env_picker.set_env("Taxi-v4")
    play = window.human_play
    play.set_mode(Control.HYBRID)
    pump(lambda: play.picker.operator() == "random", 60, "the operator listing")
    play.start_episode()
    pump(lambda: play.session_ready(), 60, "the hybrid episode")
    pump(lambda: play.outcome is not None and play.outcome.step >= 6, 30, "the operator's steps")
    play.press("Down")
    pump(lambda: play.outcome is not None and play.outcome.human_steps >= 2, 30, "the person's steps")
    shoot(window, out, "hybrid")
    play.release("Down")
    run_id = play.run_id
    play.close_session()
    pump(lambda: client.get_run(run_id).record.state != "RUNNING", 30, "the hybrid run to end")


def arena_scene(window: MainWindow, client: DaemonClient, out: Path) -> None:
    """The Arena on Taxi: a Spade BDI Q-table (learned here in seconds), the random baseline and a person
    side by side on one seed; then a batch of the Q-table and the baseline, 200 episodes each."""
    record, _ = client.submit(
        parse_run_config(
            {
                "worker": "spade_bdi",
                "env_id": "Taxi-v4",
                "seed": 0,
                "budget": {"episodes": 3000},
                "params": {"epsilon_decay": 0.998},
            }
        )
    )
    trained = client.wait_for_end(record.run_id, timeout=900)
    if trained.state is not RunState.COMPLETED:
        raise SystemExit(f"screenshots: the Spade BDI run ended {trained.state.value}: {trained.reason}")
    q_table = record.run_id
    pump(lambda: window.runs.info(q_table) is not None, 30, "the Spade BDI run row")
    window.compare_dock.hide()
    window.models_dock.hide()
    arena = window.show_arena()
    window.resizeDocks([window.arena_dock], [1300], Qt.Orientation.Horizontal)
    arena.env_picker.set_env("Taxi-v4")
    pump(lambda: any(e.ref.text == q_table for e in arena.listing), 60, "the operator listing")
    arena.seats.set_operators([q_table, "random", "human"])
    arena.seed.setValue(11)
    side = arena.side_by_side
    side.episodes.setValue(3)
    side.start_from_setup()
    pump(lambda: side.lock is not None and side.lock.idle, 60, "the panes to be seated")
    lock = side.lock
    assert lock is not None
    # The Q-table's episode is over in about 20 steps; the baseline and the person play on.
    keys = ("Down", "Down", "Right", "Right", "Up", "Left")
    for press in range(24):
        if lock.finished:
            break
        rounds = lock.rounds
        if lock.waits_for_person:
            side.press(keys[press % len(keys)])
        else:
            side.step_all()
        pump(lambda r=rounds: lock.rounds > r and lock.idle, 30, "a round")
    settle(1)
    shoot(window, out, "arena")
    side.stop()

    arena.seats.set_operators([q_table, "random"])
    arena.parts.setCurrentWidget(arena.batch)
    batch = arena.batch
    batch.episodes.setValue(200)
    batch.run_from_setup()
    pump(lambda: not batch.running, 300, "the evaluation batch")
    settle(1)
    shoot(window, out, "arena-batch")
    window.arena_dock.hide()


def live_scene(window: MainWindow, client: DaemonClient, out: Path) -> None:
    """A random agent live on CartPole."""
    run_id = start(
        window,
        client,
        {
            "worker": "random",
            "env_id": "CartPole-v1",
            "budget": {"timesteps": 50_000_000},
            "telemetry": {"render_fps": 30},
        },
    )
    open_tab(window, "Live")
    settle(3)
    shoot(window, out, "live")
    client.cancel(run_id)


def cleanrl_scene(window: MainWindow, client: DaemonClient, out: Path) -> None:
    """CleanRL PPO: its charts, its saved models, and its captured videos in its Replay tab."""
    run_id = start(
        window,
        client,
        {
            "worker": "cleanrl",
            "algorithm": "ppo",
            "env_id": "CartPole-v1",
            "budget": {"timesteps": 30_000},
            "params": {"capture-video": True},
        },
    )
    open_tab(window, "Charts")
    final = client.wait_for_end(run_id, timeout=600)
    if final.state is not RunState.COMPLETED:
        raise SystemExit(f"screenshots: PPO run ended {final.state.value}: {final.reason}")
    settle(2)
    shoot(window, out, "charts")
    open_tab(window, "Checkpoints")
    shoot(window, out, "checkpoints")

    # The latest captured video, paused halfway.
    replay = open_tab(window, "Replay")
    assert isinstance(replay, ReplayTab)
    panel = replay.videos
    pump(lambda: bool(panel.videos), 30, "the captured videos")
    panel.select_video(panel.videos[-1].path)
    pump(lambda: panel.player.loaded and panel.player.duration > 0, 30, "the video")
    panel.player.seek(panel.player.duration // 2)
    pump(lambda: panel.player.frames_shown > 0, 30, "a video frame")
    shoot(window, out, "videos")


def bdi_scene(window: MainWindow, client: DaemonClient, out: Path) -> None:
    """A deliberate Spade BDI run on the 8x8 lake: its value map filling in, its intention and beliefs."""
    run_id = start(
        window,
        client,
        {
            "worker": "spade_bdi",
            "env_id": "FrozenLake-v1",
            "seed": 0,
            "budget": {"episodes": 100_000},
            "params": {"map": "8x8", "slippery": False, "mode": "deliberate", "epsilon_decay": 0.99},
        },
    )
    live = open_tab(window, "Live")
    assert isinstance(live, LiveTab)
    value_map = live.panes.value_map
    # The bundle may be built first (minutes); then the way to the goal is learned in seconds.
    pump(lambda: value_map.best is not None and int((value_map.best > 0).sum()) >= 14, 900, "a value map")
    shoot(window, out, "bdi-live")
    client.cancel(run_id)


def llm_scene(window: MainWindow, client: DaemonClient, out: Path) -> None:
    """An LLM run on FrozenLake live with its conversation, against the suite's scripted chat server."""
    with ChatServer(solver, latency=0.4) as server:
        run_id = start(
            window,
            client,
            {
                "worker": "llm",
                "env_id": "FrozenLake-v1",
                "seed": 0,
                "budget": {"episodes": 1000},
                "env_kwargs": {"is_slippery": False},
                "params": {"base_url": server.url, "model": MODEL, "parallel": 1, "plan_length": 2},
            },
        )
        live = open_tab(window, "Live")
        assert isinstance(live, LiveTab)
        pump(
            lambda: live.steps_seen >= 8 and "reply" in live.panes.conversation.text(), 900, "a conversation"
        )
        settle(1)
        shoot(window, out, "llm-live")
        client.cancel(run_id)
        pump(lambda: client.get_run(run_id).record.state.terminal, 60, "the LLM run to end")


def optuna_scene(window: MainWindow, client: DaemonClient, out: Path) -> None:
    """A PPO CartPole study made by cleanrl_utils.tuner (6 trials), attached read-only beside the runs."""
    bundles = worker_catalog().bundle_directory(Home(window.link.home).bundles_dir)
    path = Path(window.link.home) / "cleanrl_hpopt.db"
    subprocess.run(
        [
            str(bundles.python("cleanrl")),
            str(ROOT / "tests" / "ui" / "tuner_study.py"),
            f"sqlite:///{path}",
            "6",
            "4096",
        ],
        cwd=path.parent,
        check=True,
        capture_output=True,
        start_new_session=True,
    )
    window.compare_dock.hide()
    dock = window.open_study(f"sqlite:///{path}", "tuner_cartpole")
    window.resizeDocks([dock], [900], Qt.Orientation.Horizontal)
    pump(lambda: dock.study.reads > 0 and dock.study.importance_bars is not None, 60, "the study")
    shoot(window, out, "optuna")


def offline_scene(window: MainWindow, client: DaemonClient, out: Path) -> None:
    """The offline lane: a CleanRL DQN's play with 30 % random steps recorded as a dataset, the Datasets
    browser on it, then d3rlpy's DiscreteBC learning it from its form (the Dataset row) and its charts."""
    trained = start(
        window,
        client,
        {"worker": "cleanrl", "algorithm": "dqn", "env_id": "CartPole-v1", "budget": {"timesteps": 30_000}},
    )
    final = client.wait_for_end(trained, timeout=900)
    if final.state is not RunState.COMPLETED:
        raise SystemExit(f"screenshots: DQN run ended {final.state.value}: {final.reason}")
    evaluation, _ = client.submit(client.evaluation_config(trained, episodes=30, seed=0, epsilon=0.3))
    ended = client.wait_for_end(evaluation.run_id, timeout=600)
    if ended.state is not RunState.COMPLETED:
        raise SystemExit(f"screenshots: the evaluation ended {ended.state.value}: {ended.reason}")
    datasets = DatasetStore(Home(window.link.home))
    record_dataset(datasets, "cartpole/dqn-eps30-v0", [RunSource.of(ended.run_id, ended.run_dir)])
    browser = window.show_datasets()
    pump(lambda: browser.table.topLevelItemCount() > 0, 30, "the datasets listed")
    browser.select("cartpole/dqn-eps30-v0")
    pump(lambda: browser.detail is not None, 60, "the dataset's returns")
    shoot(window, out, "datasets")
    window.datasets_dock.hide()

    learner = start(
        window,
        client,
        {
            "worker": "d3rlpy",
            "algorithm": "discrete_bc",
            "env_id": "CartPole-v1",
            "dataset": "cartpole/dqn-eps30-v0",
            "budget": {"timesteps": 5_000},
            "params": {"steps_per_epoch": 500, "eval_episodes": 5},
        },
    )
    open_tab(window, "Charts")
    final = client.wait_for_end(learner, timeout=900)
    if final.state is not RunState.COMPLETED:
        raise SystemExit(f"screenshots: the d3rlpy run ended {final.state.value}: {final.reason}")
    settle(2)
    shoot(window, out, "offline-charts")


SCENES: dict[str, Callable[[MainWindow, DaemonClient, Path], None]] = {
    "human": human_scene,
    "hybrid": hybrid_scene,
    "arena": arena_scene,
    "live": live_scene,
    "cleanrl": cleanrl_scene,
    "bdi": bdi_scene,
    "llm": llm_scene,
    "optuna": optuna_scene,
    "offline": offline_scene,
}


def main(out_dir: str, scenes: list[str]) -> int:
    unknown = [name for name in scenes if name not in SCENES]
    if unknown:
        raise SystemExit(f"screenshots: no scene {', '.join(unknown)}; the scenes are {', '.join(SCENES)}")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    app = QApplication(sys.argv)
    # The temporary home uses the user's bundles (`make bundles` built them), as the test suite does.
    os.environ.setdefault(BUNDLES_ENV_VAR, str(Home().bundles_dir))
    with tempfile.TemporaryDirectory(prefix="gym_gui_shots_") as tmp:
        home = Home(Path(tmp)).ensure()
        link = DaemonLink(home.root)
        window = MainWindow(link, Settings(home.root))
        window.resize(1500, 950)
        window.show()
        link.connect_daemon()
        pump(lambda: link.connected, 60, "the daemon")
        client = link.client
        assert client is not None
        try:
            for name in scenes or SCENES:
                SCENES[name](window, client, out)
        finally:
            # A human episode still open ends (its run is confirmed) before the daemon stops and the home goes.
            human = window.human_play
            if human.run_id:
                human.close_session()
                pump(
                    lambda: client.get_run(human.run_id).record.state != "RUNNING", 30, "the human run to end"
                )
            client.stop()  # the daemon writes to the home until its process is gone
            window.close()
    app.quit()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "docs/screenshots", sys.argv[2:]))
