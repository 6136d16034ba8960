"""Render the cockpit's main views into PNG files (`make screenshots`, a real window under Xvfb).

A fresh temporary GYM_GUI_HOME and a real daemon: a human FrozenLake episode, a random-agent run
live on CartPole, a short CleanRL PPO run's charts, saved models and captured videos, and the
replay of the human episode.
"""

from __future__ import annotations

import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QCoreApplication
from PySide6.QtWidgets import QApplication

from gym_gui.core.config import parse_run_config
from gym_gui.core.states import RunState
from gym_gui.storage.home import Home
from gym_gui.ui.control_panel import AGENT, HUMAN
from gym_gui.ui.daemon_link import DaemonLink
from gym_gui.ui.main_window import MainWindow
from gym_gui.ui.settings import Settings
from gym_gui.ui.tabs.replay import ReplayTab


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


def open_tab(window: MainWindow, title: str) -> None:
    tabs = window.run_view.tabs
    index = next((i for i in range(tabs.count()) if tabs.tabText(i) == title), -1)
    if index < 0:
        raise SystemExit(f"screenshots: the selected run has no {title} tab")
    tabs.setCurrentIndex(index)


def main(out_dir: str) -> int:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    app = QApplication(sys.argv)
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
            # Human play: a few moves on FrozenLake.
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

            # A random agent live on CartPole.
            record, _ = client.submit(
                parse_run_config(
                    {
                        "worker": "random",
                        "env_id": "CartPole-v1",
                        "budget": {"timesteps": 50_000_000},
                        "telemetry": {"render_fps": 30},
                    }
                )
            )
            window.control.set_mode(AGENT)
            pump(lambda: window.runs.info(record.run_id) is not None, 30, "the random run")
            window.select_run(record.run_id)
            settle(3)
            shoot(window, out, "live")
            client.cancel(record.run_id)

            # CleanRL PPO: its charts.
            window.control.roster.select("cleanrl")
            ppo, _ = client.submit(
                parse_run_config(
                    {
                        "worker": "cleanrl",
                        "algorithm": "ppo",
                        "env_id": "CartPole-v1",
                        "budget": {"timesteps": 30_000},
                        "tracking": {"capture_video": True},
                    }
                )
            )
            pump(lambda: window.runs.info(ppo.run_id) is not None, 30, "the PPO run")
            window.select_run(ppo.run_id)
            open_tab(window, "Charts")
            final = client.wait_for_end(ppo.run_id, timeout=600)
            if final.state is not RunState.COMPLETED:
                raise SystemExit(f"screenshots: PPO run ended {final.state.value}: {final.reason}")
            settle(2)
            shoot(window, out, "charts")
            open_tab(window, "Checkpoints")
            shoot(window, out, "checkpoints")

            # Its captured videos, in its Replay tab: the latest one, paused halfway.
            open_tab(window, "Replay")
            replay = window.run_view.tabs.currentWidget()
            assert isinstance(replay, ReplayTab)
            panel = replay.videos
            pump(lambda: bool(panel.videos), 30, "the captured videos")
            panel.select_video(panel.videos[-1].path)
            pump(lambda: panel.player.loaded and panel.player.duration > 0, 30, "the video")
            panel.player.seek(panel.player.duration // 2)
            pump(lambda: panel.player.frames_shown > 0, 30, "a video frame")
            shoot(window, out, "videos")

            # The human episode, replayed.
            if human_run:
                play.close_session()
                pump(lambda: window.runs.info(human_run) is not None, 30, "the human run row")
                window.select_run(human_run)
                open_tab(window, "Replay")
                settle(1)
                shoot(window, out, "replay")
        finally:
            # The human episode ends (its run is confirmed) before the daemon stops and the home goes.
            human = window.human_play
            if human.run_id:
                human.close_session()
                pump(
                    lambda: client.get_run(human.run_id).record.state != "RUNNING", 30, "the human run to end"
                )
            client.shutdown()
            window.close()
    app.quit()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "docs/screenshots"))
