"""CleanRL runs controlled while they train: cancel, checkpoint now, pause and resume, warnings, the GPU wish."""

from __future__ import annotations

import json
import os
import queue
import re
import subprocess
import sys
import threading
from pathlib import Path

from gym_gui.core.states import RunState
from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.home import Home
from gym_gui.storage.registry import RunRegistry
from gym_gui.storage.run_dir import RunDir
from gym_gui.storage.telemetry import TelemetryReader
from tests.support import (
    assert_one_line_error,
    gym_gui,
    wait_until,
    wait_until_stable,
)
from workers.cleanrl_worker.tests.support import (  # noqa: F401
    SECRET,
    _process_state,
    _processes_mentioning,
    cleanrl_config,
    script_pid,
)


def test_cancel_mid_training_ends_the_process_tree_and_keeps_metrics_and_model(
    cleanrl_daemon: tuple[DaemonClient, Home],
) -> None:
    client, home = cleanrl_daemon
    record, _ = client.submit(cleanrl_config("ppo", "CartPole-v1", 5_000_000))
    run_dir = str(home.run_dir(record.run_id))
    wait_until(
        lambda: client.get_run(record.run_id).progress.global_step > 2000, 120, "training to be under way"
    )
    assert len(_processes_mentioning(run_dir)) >= 1  # the worker and its script work in the run directory
    client.cancel(record.run_id)
    final = client.wait_for_end(record.run_id, timeout=120)
    assert final.state is RunState.CANCELLED
    wait_until(lambda: not _processes_mentioning(run_dir), 30, "every process of the run to be gone")
    registry = RunRegistry(home.registry_path)
    assert registry.get(record.run_id).pid is None
    registry.close()
    assert (home.run_dir(record.run_id) / "checkpoints" / "interrupted.cleanrl_model").exists()
    reader = TelemetryReader(RunDir(home.run_dir(record.run_id)).telemetry_path)
    assert reader.metric_count() > 0
    reader.close()


def test_checkpoint_now_pause_resume_and_cancel_while_paused_from_the_cli(
    cleanrl_daemon: tuple[DaemonClient, Home],
) -> None:
    client, home = cleanrl_daemon
    record, _ = client.submit(cleanrl_config("ppo", "CartPole-v1", 5_000_000))
    run_id, run_dir = record.run_id, home.run_dir(record.run_id)
    wait_until(lambda: client.get_run(run_id).progress.global_step > 2000, 120, "training to be under way")
    registry = RunRegistry(home.registry_path)
    try:
        worker = registry.get(run_id).pid
        assert worker is not None
        script = script_pid(run_dir)

        asked = gym_gui("checkpoint", run_id, home=home.root)
        assert asked.returncode == 0, asked.stderr
        assert f"checkpoint asked of run {run_id}" in asked.stdout
        saved = re.search(r"checkpoint saved: (\S+\.cleanrl_model) \(step (\d+)\)", asked.stdout)
        assert saved, asked.stdout
        assert Path(saved.group(1)).parent == run_dir / "checkpoints" and Path(saved.group(1)).is_file()
        assert int(saved.group(2)) > 0

        paused = gym_gui("pause", run_id, home=home.root)
        assert paused.returncode == 0, paused.stderr
        assert f"run {run_id} PAUSED" in paused.stdout
        assert _process_state(script) == "T", "the script's process must be stopped while paused"
        assert _process_state(worker) != "T", "the worker must stay awake (it heart-beats)"
        # The worker passes on what the script wrote before it stopped (event files: within ~1 s).
        held = wait_until_stable(
            lambda: client.get_run(run_id).progress.global_step, interval=1.5, what="the paused global step"
        )
        assert_one_line_error(gym_gui("checkpoint", run_id, home=home.root), "resume it to checkpoint")

        resumed = gym_gui("resume", run_id, home=home.root)
        assert resumed.returncode == 0, resumed.stderr
        assert f"run {run_id} RUNNING" in resumed.stdout
        assert _process_state(script) != "T"
        wait_until(
            lambda: client.get_run(run_id).progress.global_step > held + 2048, 120, "training to go on"
        )
        assert script_pid(run_dir) == script and registry.get(run_id).pid == worker, "same processes"

        # The same training went on: a loss logged once per update keeps climbing in global steps
        # (a script started again would log from its first steps).
        def loss_steps() -> list[int]:
            reader = TelemetryReader(RunDir(home.run_dir(run_id)).telemetry_path)
            try:
                return [point.step for point in reader.metrics("losses/value_loss")]
            finally:
                reader.close()

        # Losses come from the event files (read about once a second), returns from stdout: wait for
        # a loss logged after the pause before reading the series.
        wait_until(lambda: (loss_steps() or [0])[-1] > held, 60, "a loss logged after the pause")
        steps = loss_steps()
        assert steps == sorted(set(steps)) and steps[-1] > held, steps

        # Cancelled while paused, the script is continued to take its SIGTERM: it saves and ends.
        assert gym_gui("pause", run_id, home=home.root).returncode == 0
        assert _process_state(script) == "T"
        cancelled = gym_gui("cancel", run_id, home=home.root)
        assert f"run {run_id} CANCELLED" in cancelled.stdout, cancelled.stderr
        wait_until(lambda: not _processes_mentioning(str(run_dir)), 30, "every process of the run to be gone")
        assert (run_dir / "checkpoints" / "interrupted.cleanrl_model").is_file()
    finally:
        registry.close()


def test_gym_gui_train_shows_a_runs_warning_while_it_runs(cleanrl_daemon: tuple[DaemonClient, Home]) -> None:
    client, home = cleanrl_daemon
    command = [sys.executable, "-m", "gym_gui", "train", "--worker", "cleanrl", "--algo", "ppo"]
    command += ["--env", "CartPole-v1", "--total-timesteps", "5000000", "--gpu"]  # no GPU here: a warning
    env = {**os.environ, "GYM_GUI_HOME": str(home.root), "NO_COLOR": "1", "COLUMNS": "200"}
    train = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    out: queue.Queue[str | None] = queue.Queue()

    def read() -> None:
        assert train.stdout is not None
        for line in train.stdout:
            out.put(line)
        out.put(None)

    threading.Thread(target=read, daemon=True).start()
    try:
        lines: list[str] = []
        while not (lines and lines[-1].startswith("WARNING:")):
            line = out.get(timeout=180)
            assert line is not None, f"gym-gui train ended without a warning: {lines}"
            lines.append(line)
        assert "CPU" in lines[-1], lines
        run_id = lines[0].split()[1]
        # Shown while the run goes on, not only once it has ended.
        assert not client.get_run(run_id).record.state.terminal
        client.cancel(run_id)
        assert train.wait(timeout=120) == 1  # a cancelled run is not a success
        rest = []
        while (line := out.get(timeout=30)) is not None:
            rest.append(line)
        assert any(f"run {run_id} CANCELLED" in line for line in rest), rest
        assert not any(line.startswith("WARNING:") for line in rest), rest  # each warning once
    finally:
        if train.poll() is None:
            train.kill()
            train.wait(timeout=30)


def test_gpu_wish_falls_back_to_cpu_with_a_warning_and_a_mandatory_gpu_fails_before_launch(
    cleanrl_daemon: tuple[DaemonClient, Home],
) -> None:
    client, home = cleanrl_daemon
    record, _ = client.submit(
        cleanrl_config("ppo", "CartPole-v1", 1024, resources={"gpu": True}, params={"num-steps": 128})
    )
    assert client.wait_for_end(record.run_id, timeout=120).state is RunState.COMPLETED
    reader = TelemetryReader(RunDir(home.run_dir(record.run_id)).telemetry_path)
    warnings = [e.message for e in reader.events() if e.level == "WARNING"]
    reader.close()
    assert any("runs on the CPU" in w or "goes on the CPU" in w for w in warnings), warnings
    flags = json.loads((home.run_dir(record.run_id) / "manifest.json").read_text())["extras"][
        "script_command"
    ]
    assert flags[flags.index("--cuda") + 1] == "False"

    record, _ = client.submit(
        cleanrl_config("ppo", "CartPole-v1", 1024, resources={"gpu": True, "gpu_mandatory": True})
    )
    final = client.wait_for_end(record.run_id, timeout=120)
    assert final.state is RunState.FAILED
    assert "GPU is mandatory" in final.reason
    registry = RunRegistry(home.registry_path)
    assert [c.to_state for c in registry.history(record.run_id)] == ["QUEUED", "STARTING", "FAILED"]
    registry.close()
