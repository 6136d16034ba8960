"""The CLI warns of a low disk: `train` while following a run and at its end, `show` of a live run."""

from __future__ import annotations

import os
import subprocess
import sys

from gym_gui.core.config import parse_run_config
from gym_gui.core.controls import Control
from gym_gui.core.states import RunState
from gym_gui.storage.home import Home
from tests.support import daemon_on, gym_gui, wait_until

# The 16 MB home has about 14 MB free: every run may start, and each warns from its start.
LOW = ("--min-free-mb", "1", "--warn-free-mb", "100")


def test_train_warns_that_the_disk_is_low(small_home: Home) -> None:
    mount = small_home.root.parent
    with daemon_on(small_home, *LOW):
        result = gym_gui(
            "train", "--worker", "random", "--env", "FrozenLake-v1", "--episodes", "20", home=small_home.root
        )
    assert result.returncode == 0, result
    assert "COMPLETED" in result.stdout
    assert "WARNING: disk low: " in result.stdout and f"free on {mount}" in result.stdout, result.stdout


def test_show_warns_of_a_live_run_on_a_low_disk(small_home: Home) -> None:
    config = parse_run_config(
        {
            "worker": "random",
            "env_id": "FrozenLake-v1",
            "budget": {"episodes": 1_000_000_000},
            "telemetry": {"store_steps": False},
        }
    )
    with daemon_on(small_home, *LOW) as client:
        record, _ = client.submit(config)
        client.wait_for_state(record.run_id, RunState.RUNNING, timeout=60)
        client.control(record.run_id, Control.PAUSE)
        client.wait_for_state(record.run_id, RunState.PAUSED, timeout=60)
        wait_until(lambda: client.get_run(record.run_id).record.warning, 30, "the run's low-disk warning")
        shown = gym_gui("show", record.run_id, home=small_home.root)
        # `watch` of the live run says the warning first, then follows the run to its end.
        env = {**os.environ, "GYM_GUI_HOME": str(small_home.root), "COLUMNS": "200", "NO_COLOR": "1"}
        watching = subprocess.Popen(
            [sys.executable, "-m", "gym_gui", "watch", record.run_id],
            stdout=subprocess.PIPE,
            text=True,
            env=env,
            start_new_session=True,
        )
        try:
            assert watching.stdout is not None
            first = watching.stdout.readline()
            client.cancel(record.run_id)
            client.wait_for_end(record.run_id, timeout=60)
            rest, _ = watching.communicate(timeout=120)
        finally:
            watching.kill()
    assert first.startswith("WARNING: disk low: ") and f"free on {small_home.root.parent}" in first, first
    assert "CANCELLED" in rest, rest
    assert shown.returncode == 0, shown
    lines = [line for line in shown.stdout.splitlines() if line.strip().startswith("warning")]
    assert lines and "disk low: " in lines[0] and f"free on {small_home.root.parent}" in shown.stdout, (
        shown.stdout
    )
