"""CleanRL's event files and output read into metrics: damaged files, garbage mid-run, watch, refused variants."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from gym_gui.core.errors import ConfigError
from gym_gui.core.states import RunState
from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.home import Home
from gym_gui.storage.run_dir import RunDir
from gym_gui.storage.telemetry import TelemetryReader
from tests.support import (
    wait_until,
)
from workers.cleanrl_worker.tests.support import (  # noqa: F401
    SECRET,
    _process_state,
    _processes_mentioning,
    cleanrl_config,
    script_pid,
)

DAMAGED_EVENTS = r"""
import json, os, sys
from pathlib import Path
from torch.utils.tensorboard import SummaryWriter
from gym_gui_cleanrl_worker.bridge import EventFileTail

root = Path(sys.argv[1])
writer = SummaryWriter(str(root / "runs" / "a"))
step = 0
def write(n):
    global step
    for _ in range(n):
        writer.add_scalar("losses/value_loss", float(step), step)
        step += 1
    writer.flush()

tail = EventFileTail(root / "runs")
path = next((root / "runs" / "a").glob("events.out.tfevents.*"))
got = {}
write(5)
got["clean"] = tail.poll()
# Garbage appended to the file the writer goes on appending to.
with open(path, "ab") as f:
    f.write(b"\x07\x00\x00\x00\x00\x00\x00\x00garbage-not-a-record" * 3)
write(5)
got["after garbage"] = tail.poll()
# A record damaged in place: its data no longer matches its checksum.
before = path.stat().st_size
write(3)
with open(path, "r+b") as f:
    f.seek(before + 20)
    byte = f.read(1)
    f.seek(before + 20)
    f.write(bytes([byte[0] ^ 0xFF]))
got["one record damaged"] = tail.poll()
# Truncated into its last record, then written again.
with open(path, "r+b") as f:
    f.truncate(path.stat().st_size - 10)
write(4)
got["truncated"] = tail.poll()
# Zeros where a file was cut and its writer went on past the end.
with open(path, "ab") as f:
    f.write(bytes(300))
write(2)
got["zeros"] = tail.poll(final=True)
print(json.dumps({"steps": {k: [p[1] for p in v] for k, v in got.items()}, "damage": tail.damage(),
                  "summary": tail.summary()}))
"""


def test_a_damaged_event_file_keeps_every_readable_point_and_says_what_was_skipped(
    cleanrl_python: Path, tmp_path: Path
) -> None:
    result = subprocess.run(
        [str(cleanrl_python), "-c", DAMAGED_EVENTS, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["steps"] == {
        "clean": [0, 1, 2, 3, 4],
        "after garbage": [5, 6, 7, 8, 9],
        "one record damaged": [11, 12],  # step 10's record is the damaged one
        "truncated": [13, 14, 15, 16],  # step 12's record was cut (read before), then 13… appended
        "zeros": [17, 18],
    }
    damage = report["damage"]
    name = "runs/a/events.out.tfevents."
    assert all(line.startswith(name) for line in damage), damage
    assert any("bytes that are no record skipped at byte" in line for line in damage)
    assert any(
        "is unreadable (its data does not match its checksum): its point is lost" in line for line in damage
    )
    assert any("truncated and written again" in line for line in damage)
    assert any(
        "300 bytes that are no record skipped" in line or "bytes that are no record" in line
        for line in damage
    )
    [summary] = report["summary"]
    assert (
        summary.startswith(name)
        and "1 unreadable records" in summary
        and "every readable point was read" in summary
    )


def test_garbage_in_a_running_ppos_event_file_loses_no_point_written_after_it_and_warns(
    cleanrl_daemon: tuple[DaemonClient, Home],
) -> None:
    client, home = cleanrl_daemon
    # 19 updates of 512 steps (4 envs x 128): one losses/value_loss point each, from the event file only.
    record, _ = client.submit(cleanrl_config("ppo", "CartPole-v1", 10_000))
    run_dir = home.run_dir(record.run_id)
    telemetry = RunDir(run_dir).telemetry_path

    def value_losses() -> int:
        if not telemetry.exists():
            return 0
        reader = TelemetryReader(telemetry)
        try:
            return reader.metric_count("losses/value_loss")
        finally:
            reader.close()

    wait_until(lambda: value_losses() >= 3, 240, "the first value_loss points")
    event_file = next(run_dir.glob("runs/*/events.out.tfevents.*"))
    with open(event_file, "ab") as damaged:
        damaged.write(b"\x07\x00\x00\x00\x00\x00\x00\x00garbage-not-a-record" * 4)

    final = client.wait_for_end(record.run_id, timeout=300)
    assert final.state is RunState.COMPLETED, final.reason
    assert value_losses() == 10_000 // 512
    reader = TelemetryReader(telemetry)
    try:
        warnings = [e.message for e in reader.events() if e.level == "WARNING" and "event file" in e.message]
    finally:
        reader.close()
    assert any(event_file.name in w and "bytes that are no record skipped at byte" in w for w in warnings), (
        warnings
    )
    assert any("every readable point was read" in w for w in warnings), warnings


def test_watch_shows_return_and_sps_while_cleanrl_trains(cleanrl_daemon: tuple[DaemonClient, Home]) -> None:
    client, home = cleanrl_daemon
    record, _ = client.submit(cleanrl_config("ppo", "CartPole-v1", 60_000))
    env = {**os.environ, "GYM_GUI_HOME": str(home.root), "COLUMNS": "200"}
    lines: queue.Queue[str] = queue.Queue()
    watcher = subprocess.Popen(
        [sys.executable, "-m", "gym_gui", "watch", record.run_id], stdout=subprocess.PIPE, text=True, env=env
    )
    assert watcher.stdout is not None
    reader = threading.Thread(target=lambda: [lines.put(line) for line in watcher.stdout], daemon=True)  # type: ignore[union-attr]
    reader.start()
    seen = ""

    def live_metrics() -> bool:
        nonlocal seen
        while not lines.empty():
            seen += lines.get()
        return "charts/episodic_return" in seen and "charts/SPS" in seen

    wait_until(live_metrics, 120, "watch to show return and SPS")
    assert client.get_run(record.run_id).record.state == "RUNNING"  # shown while CleanRL trains
    # The run need not train on: watch follows it to whatever end it comes to, then exits.
    client.cancel(record.run_id)
    assert watcher.wait(120) == 0
    reader.join(10)
    live_metrics()
    assert "CANCELLED" in seen


def test_atari_and_mujoco_py_variants_are_refused_before_launch_with_the_install_hint(
    cleanrl_daemon: tuple[DaemonClient, Home],
) -> None:
    client, home = cleanrl_daemon
    before = set(home.runs_dir.iterdir())
    with pytest.raises(
        ConfigError,
        match=r"^field 'env_id': BreakoutNoFrameskip-v4 \(atari environment\) needs the cleanrl bundle's atari "
        r"extra, which it does not have: run `gym-gui bundles install cleanrl --extra atari`$",
    ):
        client.submit(cleanrl_config("dqn_atari", "BreakoutNoFrameskip-v4", 1000))
    # The bundle has MuJoCo's maintained bindings (-v4); the -v3 ids want the old mujoco-py.
    with pytest.raises(
        ConfigError, match=r"HalfCheetah-v3 \(mujoco environment\) needs mujoco_py.*pip install"
    ):
        client.submit(cleanrl_config("ppo_continuous_action", "HalfCheetah-v3", 1000))
    assert set(home.runs_dir.iterdir()) == before
