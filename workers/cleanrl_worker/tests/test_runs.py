"""CleanRL runs through the real daemon: training, live metrics, artifacts, evaluation, faults."""

from __future__ import annotations

import json
import os
import queue
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from gym_gui_sdk.render import decode_payload

from gym_gui.core.config import RunConfig, parse_run_config
from gym_gui.core.controls import Control
from gym_gui.core.errors import ConfigError, RunBusy
from gym_gui.core.records import MetricBatch, StateTransition, TelemetryEvent
from gym_gui.core.states import RunState
from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.home import Home
from gym_gui.storage.registry import RunRegistry
from gym_gui.storage.run_dir import RunDir
from gym_gui.storage.telemetry import TelemetryReader
from tests.fixtures import SHARED_BUNDLES
from tests.support import (
    assert_one_line_error,
    files_containing,
    gym_gui,
    module_daemon,
    process_alive,
    wait_until,
    wait_until_stable,
)

SECRET = "gymgui-test-secret-7f3a9c"


def cleanrl_config(algo: str, env_id: str, timesteps: int, **extra: Any) -> RunConfig:
    return parse_run_config(
        {
            "worker": "cleanrl",
            "algorithm": algo,
            "env_id": env_id,
            "seed": 1,
            "budget": {"timesteps": timesteps},
            **extra,
        }
    )


@pytest.fixture(scope="module")
def cleanrl_daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[DaemonClient, Home]]:
    """One daemon for the module (CleanRL runs are the slow part; the daemon is not)."""
    root = tmp_path_factory.mktemp("cleanrl_home")
    with module_daemon(root, SHARED_BUNDLES, ["--cancel-grace", "20"]) as daemon:
        yield daemon


@pytest.fixture(scope="module")
def trained(cleanrl_daemon: tuple[DaemonClient, Home]) -> dict[str, Any]:
    """PPO on CartPole-v1 for 20k steps with periodic checkpoints, watched live by a viewer."""
    client, _home = cleanrl_daemon
    config = cleanrl_config("ppo", "CartPole-v1", 20_000, checkpoints={"every_steps": 5000})
    record, _ = client.submit(config)
    stream = client.subscribe(record.run_id, credits=1000)
    events: list[TelemetryEvent] = []
    for event in stream:
        events.append(event)
        if isinstance(event, StateTransition) and event.to_state.terminal:
            break
    stream.close()
    final = client.wait_for_end(record.run_id, timeout=300)
    return {"run_id": record.run_id, "final": final, "events": events}


def test_ppo_trains_to_completion_and_its_run_directory_holds_everything(
    trained: dict[str, Any], cleanrl_daemon: tuple[DaemonClient, Home]
) -> None:
    _client, home = cleanrl_daemon
    final = trained["final"]
    assert final.state is RunState.COMPLETED, final.reason
    run_dir = home.run_dir(trained["run_id"])
    assert list(run_dir.glob("runs/*/events.out.tfevents.*"))
    assert (run_dir / "checkpoints" / "final.cleanrl_model").stat().st_size > 0
    assert len(list(run_dir.glob("checkpoints/step_*.cleanrl_model"))) >= 3
    assert "SPS:" in (run_dir / "logs" / "worker.stdout.log").read_text()
    assert (run_dir / "logs" / "worker.stderr.log").exists()

    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["tensorboard_dir"].startswith("runs/")
    assert manifest["script"].endswith("cleanrl/ppo.py")
    flags = manifest["script_command"]
    for flag, value in [
        ("--env-id", "CartPole-v1"),
        ("--total-timesteps", "20000"),
        ("--seed", "1"),
        ("--cuda", "False"),
        ("--torch-deterministic", "True"),
    ]:
        assert flags[flags.index(flag) + 1] == value
    environment = manifest["environment"]
    assert environment["bundle"] == "cleanrl" and environment["python"].endswith("/cleanrl/bin/python")
    assert "cleanrl==1.2.0" in environment["packages"]
    assert any(p.startswith("torch==2.13.0") for p in environment["packages"])
    steps = sorted(c["step"] for c in manifest["checkpoints"])
    assert steps[-1] >= 19_000 and steps[0] < 10_000
    assert any(c["path"] == "checkpoints/final.cleanrl_model" for c in manifest["checkpoints"])


def test_metrics_reach_storage_once_each(
    trained: dict[str, Any], cleanrl_daemon: tuple[DaemonClient, Home]
) -> None:
    _client, home = cleanrl_daemon
    run_dir = home.run_dir(trained["run_id"])
    reader = TelemetryReader(RunDir(home.run_dir(trained["run_id"])).telemetry_path)
    tags = set(reader.metric_tags())
    assert {"charts/episodic_return", "charts/SPS", "losses/value_loss", "losses/policy_loss"} <= tags
    returns = reader.metrics("charts/episodic_return")
    reader.close()
    printed = re.findall(
        r"global_step=(\d+), episodic_return=", (run_dir / "logs" / "worker.stdout.log").read_text()
    )
    # Each episode's return arrives from stdout first and from the event file later: stored once.
    assert len(returns) == len(printed)
    assert max(p.step for p in returns) <= 20_000


def test_metrics_stream_live_while_training(trained: dict[str, Any]) -> None:
    events = trained["events"]
    end = next(
        i for i, e in enumerate(events) if isinstance(e, StateTransition) and e.to_state is RunState.COMPLETED
    )
    batches = [e for e in events[:end] if isinstance(e, MetricBatch)]
    live = [m.tag for batch in batches for m in batch.points]
    assert "charts/episodic_return" in live
    assert "charts/SPS" in live
    assert len(batches) > 3  # many updates during the run, not one dump at the end


def test_evaluation_plays_the_trained_model_as_a_replayable_telemetry_run(
    trained: dict[str, Any], cleanrl_daemon: tuple[DaemonClient, Home]
) -> None:
    client, home = cleanrl_daemon
    config = parse_run_config(
        {
            "worker": "cleanrl",
            "mode": "evaluate",
            "algorithm": "ppo",
            "env_id": "CartPole-v1",
            "seed": 5,
            "budget": {"episodes": 3},
            "evaluation": {"run_id": trained["run_id"]},
            "telemetry": {"render_fps": 30},
        }
    )
    record, _ = client.submit(config)
    assert record.lane == "telemetry"
    assert "ppo-eval" in record.run_id
    final = client.wait_for_end(record.run_id, timeout=180)
    assert final.state is RunState.COMPLETED, final.reason
    reader = TelemetryReader(RunDir(home.run_dir(record.run_id)).telemetry_path)
    episodes = reader.episodes()
    assert len(episodes) == 3
    per_episode = reader.steps_per_episode()
    assert all(per_episode[e.episode] == e.steps for e in episodes)
    assert all(e.total_reward == e.steps for e in episodes)  # CartPole: +1 per step
    first = reader.steps(0, 0, 1)[0]
    frame = decode_payload(first.render or b"")
    assert getattr(frame, "shape", None) is not None and frame.shape[2] == 3
    assert reader.meta("render_kind") == "pixels"
    reader.close()


def test_a_real_time_evaluation_plays_at_the_envs_own_frame_rate(
    trained: dict[str, Any], cleanrl_daemon: tuple[DaemonClient, Home]
) -> None:
    client, home = cleanrl_daemon
    config = client.evaluation_config(trained["run_id"], episodes=1, seed=3, render_fps=0, real_time=True)
    assert config.evaluation is not None and config.evaluation.real_time
    record, _ = client.submit(config)
    final = client.wait_for_end(record.run_id, timeout=180)
    assert final.state is RunState.COMPLETED, final.reason
    assert "--real-time" in json.loads((home.run_dir(record.run_id) / "manifest.json").read_text())["command"]
    reader = TelemetryReader(RunDir(home.run_dir(record.run_id)).telemetry_path)
    steps = reader.steps(0, 0, 100_000)
    reader.close()
    # CartPole's render_fps is 50: one step every 20 ms at the soonest, so the episode lasts at least
    # (steps - 1) × 20 ms of wall time (played flat out, a trained agent's 500 steps take ~0.2 s).
    assert len(steps) >= 20
    assert steps[-1].wall_time - steps[0].wall_time >= (len(steps) - 1) * 0.020 * 0.95


def test_an_evaluation_pauses_between_two_steps_and_has_nothing_to_checkpoint(
    trained: dict[str, Any], cleanrl_daemon: tuple[DaemonClient, Home]
) -> None:
    client, _home = cleanrl_daemon
    config = client.evaluation_config(trained["run_id"], episodes=50, seed=3, render_fps=0, real_time=True)
    record, _ = client.submit(config)
    run_id = record.run_id
    try:
        wait_until(lambda: client.get_run(run_id).progress.steps > 20, 120, "the evaluation to play")
        client.control(run_id, Control.PAUSE)
        assert client.wait_for_state(run_id, RunState.PAUSED, timeout=30).state is RunState.PAUSED
        held = wait_until_stable(lambda: client.get_run(run_id).progress.steps, what="the paused evaluation")
        client.control(run_id, Control.RESUME)
        assert client.wait_for_state(run_id, RunState.RUNNING, timeout=30).state is RunState.RUNNING
        wait_until(lambda: client.get_run(run_id).progress.steps > held + 20, 30, "play to go on")
        with pytest.raises(RunBusy, match="is an evaluation: it trains no model to checkpoint"):
            client.control(run_id, Control.CHECKPOINT)
    finally:
        client.cancel(run_id)
    assert client.wait_for_end(run_id, timeout=60).state is RunState.CANCELLED


def test_evaluation_of_a_periodic_checkpoint_and_refusal_of_one_outside_the_run(
    trained: dict[str, Any], cleanrl_daemon: tuple[DaemonClient, Home]
) -> None:
    client, home = cleanrl_daemon
    manifest = json.loads((home.run_dir(trained["run_id"]) / "manifest.json").read_text())
    checkpoint = min(manifest["checkpoints"], key=lambda c: c["step"])["path"]

    def evaluation(path: str) -> RunConfig:
        return parse_run_config(
            {
                "worker": "cleanrl",
                "mode": "evaluate",
                "algorithm": "ppo",
                "env_id": "CartPole-v1",
                "budget": {"episodes": 1},
                "evaluation": {"run_id": trained["run_id"], "checkpoint": path},
                "telemetry": {"render_fps": 0},
            }
        )

    record, _ = client.submit(evaluation(checkpoint))
    assert client.wait_for_end(record.run_id, timeout=180).state is RunState.COMPLETED
    with pytest.raises(ConfigError, match="outside the run"):
        client.submit(evaluation("../../registry.sqlite"))
    with pytest.raises(ConfigError, match="no model"):
        client.submit(evaluation("checkpoints/nope.cleanrl_model"))


@pytest.mark.parametrize(
    ("algo", "env_id", "timesteps", "params"),
    [
        ("dqn", "CartPole-v1", 1500, {"learning-starts": 500, "buffer-size": 2000, "train-frequency": 4}),
        ("c51", "CartPole-v1", 1500, {"learning-starts": 500, "buffer-size": 2000, "train-frequency": 4}),
        ("ppo_continuous_action", "Pendulum-v1", 2048, {"num-steps": 512}),
        ("sac_continuous_action", "Pendulum-v1", 600, {"learning-starts": 200, "batch-size": 32}),
        ("td3_continuous_action", "Pendulum-v1", 600, {"learning-starts": 200, "batch-size": 32}),
        ("ddpg_continuous_action", "Pendulum-v1", 600, {"learning-starts": 200, "batch-size": 32}),
    ],
)
def test_each_algorithm_finishes_a_short_run_with_a_model(
    cleanrl_daemon: tuple[DaemonClient, Home], algo: str, env_id: str, timesteps: int, params: dict[str, Any]
) -> None:
    client, home = cleanrl_daemon
    record, _ = client.submit(cleanrl_config(algo, env_id, timesteps, params=params))
    final = client.wait_for_end(record.run_id, timeout=300)
    assert final.state is RunState.COMPLETED, final.reason
    assert (home.run_dir(record.run_id) / "checkpoints" / "final.cleanrl_model").exists()
    reader = TelemetryReader(RunDir(home.run_dir(record.run_id)).telemetry_path)
    assert reader.metric_count() > 0
    reader.close()


@pytest.mark.parametrize(
    ("algo", "params"),
    [
        ("ppo", {"num-envs": 2, "num-steps": 256}),  # old gym's RecordVideo
        ("dqn", {"learning-starts": 500, "buffer-size": 2000}),  # gymnasium 0.29's RecordVideo
    ],
)
def test_captured_videos_are_registered_with_the_episode_they_show_and_its_return(
    cleanrl_daemon: tuple[DaemonClient, Home], algo: str, params: dict[str, Any]
) -> None:
    client, home = cleanrl_daemon
    config = cleanrl_config(algo, "CartPole-v1", 2048, params=params, tracking={"capture_video": True})
    record, _ = client.submit(config)
    final = client.wait_for_end(record.run_id, timeout=300)
    assert final.state is RunState.COMPLETED, final.reason
    run_dir = home.run_dir(record.run_id)
    videos = json.loads((run_dir / "manifest.json").read_text())["videos"]
    on_disk = {str(path.relative_to(run_dir)) for path in run_dir.glob("videos/**/*.mp4")}
    # Every video on disk is registered once; episodes 0, 1 and 8 are the capped-cubic schedule's first.
    assert sorted(v["path"] for v in videos) == sorted(on_disk)
    announced = [v for v in videos if v["meta"].get("complete")]
    assert {0, 1, 8} <= {v["meta"]["episode"] for v in announced}
    for video in announced:
        meta = video["meta"]
        assert video["path"].endswith(f"-episode-{meta['episode']}.mp4")
        # CartPole pays 1 per step: a whole filmed episode's return is its length.
        assert meta["length"] >= 8 and meta["return"] == pytest.approx(meta["length"])
    stdout = (run_dir / "logs" / "worker.stdout.log").read_text()
    assert "[gym_gui]" not in stdout  # the announcements are the worker's, not the script's output


def test_unknown_or_ill_typed_parameters_are_refused_with_the_scripts_own_names(
    cleanrl_daemon: tuple[DaemonClient, Home],
) -> None:
    client, _home = cleanrl_daemon
    with pytest.raises(ConfigError, match=r"--learning-rat .*did you mean --learning-rate"):
        client.submit(cleanrl_config("ppo", "CartPole-v1", 1000, params={"learning-rat": 0.1}))
    with pytest.raises(ConfigError, match="--num-envs"):
        client.submit(cleanrl_config("ppo", "CartPole-v1", 1000, params={"num-envs": "many"}))
    with pytest.raises(ConfigError, match="set by the run config"):
        client.submit(cleanrl_config("ppo", "CartPole-v1", 1000, params={"env-id": "Acrobot-v1"}))
    with pytest.raises(ConfigError, match="algorithm"):
        client.submit(
            parse_run_config({"worker": "cleanrl", "env_id": "CartPole-v1", "budget": {"timesteps": 10}})
        )


def test_a_flag_the_script_rejects_fails_the_run_with_the_scripts_error_line(
    cleanrl_daemon: tuple[DaemonClient, Home], cleanrl_python: Path, tmp_path: Path
) -> None:
    """A user's checkout whose ppo.py checks --num-envs itself (a type gym_gui only sees as text)."""
    client, _home = cleanrl_daemon
    bundled = subprocess.run(
        [
            str(cleanrl_python),
            "-c",
            "import importlib.util as u; print(u.find_spec('cleanrl').submodule_search_locations[0])",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    checkout = tmp_path / "my_cleanrl"
    checkout.mkdir()
    source = (Path(bundled) / "ppo.py").read_text()
    source = source.replace(
        "def parse_args():",
        "def positive_int(text):\n"
        "    value = int(text)\n"
        "    if value < 1:\n"
        "        raise argparse.ArgumentTypeError(f'{text} environments is not a positive number')\n"
        "    return value\n\n\n"
        "def parse_args():",
    ).replace(
        'parser.add_argument("--num-envs", type=int,', 'parser.add_argument("--num-envs", type=positive_int,'
    )
    (checkout / "ppo.py").write_text(source)
    config = cleanrl_config(
        "ppo", "CartPole-v1", 1000, params={"num-envs": "-2"}, source={"scripts_dir": str(checkout)}
    )
    record, _ = client.submit(config)
    final = client.wait_for_end(record.run_id, timeout=120)
    assert final.state is RunState.FAILED
    assert final.exit_code == 2
    assert "error: argument --num-envs: -2 environments is not a positive number" in final.reason


def test_sac_trains_on_its_default_mujoco_env_and_its_model_plays_with_frames_headless(
    cleanrl_daemon: tuple[DaemonClient, Home],
) -> None:
    client, home = cleanrl_daemon
    # sac's own default env id (old gym 0.23 stops at Hopper-v3; the bundle's compat reaches -v4).
    description = client.describe_worker("cleanrl", algorithm="sac_continuous_action")
    params = {p["name"]: p for p in description.details["arguments"]["params"]}
    default_env = params["env-id"]["default"]
    assert default_env == "Hopper-v4"
    config = cleanrl_config(
        "sac_continuous_action", default_env, 600, params={"learning-starts": 200, "batch-size": 64}
    )
    record, _ = client.submit(config)
    final = client.wait_for_end(record.run_id, timeout=300)
    assert final.state is RunState.COMPLETED, final.reason
    assert RunDir(home.run_dir(record.run_id)).saved_models()

    # Played back with frames (render_fps > 0): MuJoCo renders without a display.
    evaluation = client.evaluation_config(record.run_id, episodes=1, seed=3, render_fps=30, real_time=False)
    played, _ = client.submit(evaluation)
    ended = client.wait_for_end(played.run_id, timeout=300)
    assert ended.state is RunState.COMPLETED, ended.reason
    reader = TelemetryReader(RunDir(home.run_dir(played.run_id)).telemetry_path)
    try:
        steps = reader.steps(0, 0, 100_000)
    finally:
        reader.close()
    framed = [s for s in steps if s.render]
    assert framed, "no frame was stored"
    frame = decode_payload(framed[0].render or b"")
    assert isinstance(frame, np.ndarray) and frame.ndim == 3 and frame.std() > 0  # a picture, not a blank


def test_an_env_the_bundle_does_not_have_is_refused_before_anything_is_stored(
    cleanrl_daemon: tuple[DaemonClient, Home],
) -> None:
    client, home = cleanrl_daemon
    before = set(home.runs_dir.iterdir())
    # A classic-control family the bundle has, in a version its gym does not know: refused at submit,
    # with the versions it has, rather than a run that fails at start.
    with pytest.raises(
        ConfigError,
        match=r"^CartPole-v9 is not registered in gym 0\.23\.1 here, .*choose CartPole-v0 or CartPole-v1$",
    ):
        client.submit(cleanrl_config("ppo", "CartPole-v9", 2048))
    assert all(run.env_id != "CartPole-v9" for run in client.list_runs(include_archived=True))
    # A misspelt id, from the command line: one line naming the library dqn makes its envs with.
    result = gym_gui(
        "train",
        "--worker",
        "cleanrl",
        "--algo",
        "dqn",
        "--env",
        "CartPol-v1",
        "--total-timesteps",
        "1000",
        home=home.root,
    )
    assert_one_line_error(result, "CartPol-v1 is not registered in gymnasium 0.29.1 here", "which dqn makes")
    assert set(home.runs_dir.iterdir()) == before


@pytest.mark.parametrize("env_id", ["../../../escaped/x", "../../etc/passwd", "/tmp/escaped", "ALE/../../x"])
def test_an_env_id_that_is_a_path_is_refused_and_nothing_is_written_anywhere(
    cleanrl_daemon: tuple[DaemonClient, Home], env_id: str
) -> None:
    _client, home = cleanrl_daemon
    before = set(home.runs_dir.iterdir())
    result = gym_gui(
        "train",
        "--worker",
        "cleanrl",
        "--algo",
        "ppo",
        "--env",
        env_id,
        "--total-timesteps",
        "1000",
        home=home.root,
    )
    assert_one_line_error(result, f"field 'env_id': {env_id!r} is not an environment id")
    # No run and no stray directory under runs/, beside it or outside the home.
    assert set(home.runs_dir.iterdir()) == before
    assert not [path for path in home.root.rglob("*") if path.name in ("escaped", "etc", "x")]
    assert not Path("/tmp/escaped").exists()


def _processes_mentioning(text: str) -> list[int]:
    """The live processes with ``text`` in their argv or working in the directory ``text`` (a script
    the zygote forked has the zygote's argv; it works in its run directory)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                cwd = os.readlink(entry / "cwd")
            except OSError:
                continue
            if (text in cmdline or cwd == text) and process_alive(int(entry.name)):
                found.append(int(entry.name))
    return found


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


def _process_state(pid: int) -> str:
    """The one-letter state /proc gives a process (T: stopped, by SIGSTOP)."""
    with open(f"/proc/{pid}/stat") as stat:
        return stat.read().split(") ", 1)[1][:1]


def script_pid(run_dir: Path) -> int:
    """The process running the run's CleanRL script: the launcher, working in the run directory, not
    its worker (``… gym_gui_cleanrl_worker train …``) nor the worker's courier (``… gym_gui_sdk.courier …``)."""
    found = [
        pid
        for pid in _processes_mentioning(str(run_dir))
        if os.readlink(f"/proc/{pid}/cwd") == str(run_dir)
        and not any(
            name in Path(f"/proc/{pid}/cmdline").read_bytes()
            for name in (b"gym_gui_cleanrl_worker\0train", b"gym_gui_sdk.courier")
        )
    ]
    assert len(found) == 1, f"expected one script process for {run_dir}, found {found}"
    return found[0]


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
    flags = json.loads((home.run_dir(record.run_id) / "manifest.json").read_text())["script_command"]
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


def test_wandb_offline_keeps_the_key_out_of_every_file(cleanrl_daemon: tuple[DaemonClient, Home]) -> None:
    client, home = cleanrl_daemon
    config = cleanrl_config(
        "ppo",
        "CartPole-v1",
        1024,
        params={"num-steps": 128},
        tracking={"wandb_mode": "offline", "wandb_project": "gg"},
    )
    record, _ = client.submit(config, {"WANDB_API_KEY": SECRET})
    final = client.wait_for_end(record.run_id, timeout=180)
    assert final.state is RunState.COMPLETED, final.reason
    manifest = json.loads((home.run_dir(record.run_id) / "manifest.json").read_text())
    assert manifest["wandb"]["path"].startswith("wandb/offline-run-")
    assert manifest["wandb"]["mode"] == "offline"
    assert files_containing(home.root, SECRET.encode()) == []


def test_dry_run_shows_the_exact_command_with_secrets_redacted(
    cleanrl_daemon: tuple[DaemonClient, Home],
) -> None:
    _client, home = cleanrl_daemon
    env = {**os.environ, "GYM_GUI_HOME": str(home.root), "WANDB_API_KEY": SECRET, "COLUMNS": "300"}
    result = subprocess.run(
        [sys.executable, "-m", "gym_gui", "train", "--worker", "cleanrl", "--algo", "ppo", "--env", "CartPole-v1",
         "--total-timesteps", "1000", "--wandb", "online", "--dry-run"],
        capture_output=True, text=True, env=env, timeout=180,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "COMPLETED: dry-run" in out
    assert "-m gym_gui_cleanrl_worker train --script" in out and "--total-timesteps 1000" in out
    assert "working directory:" in out
    assert "WANDB_API_KEY=***" in out
    assert SECRET not in out
    run_id = re.search(r"run (\S+__ppo__\S+)", out)
    assert run_id
    registry = RunRegistry(home.registry_path)
    assert registry.get(run_id.group(1)).pid is None  # nothing was launched
    registry.close()


def test_the_key_of_a_wandb_login_for_the_runs_server_makes_it_online_and_stays_redacted(
    cleanrl_daemon: tuple[DaemonClient, Home], tmp_path: Path
) -> None:
    _client, home = cleanrl_daemon
    user = tmp_path / "user"
    user.mkdir()
    server = "http://127.0.0.1:8080"
    env = {k: v for k, v in os.environ.items() if k != "NETRC"}
    env.update({"GYM_GUI_HOME": str(home.root), "HOME": str(user), "COLUMNS": "300"})
    argv = [sys.executable, "-m", "gym_gui", "train", "--worker", "cleanrl", "--algo", "ppo",
            "--env", "CartPole-v1", "--total-timesteps", "1000", "--wandb", "online", "--dry-run"]  # fmt: skip

    def dry_run() -> str:
        result = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=180)
        assert result.returncode == 0, result.stderr
        assert SECRET not in result.stdout + result.stderr
        return result.stdout

    # No WANDB_API_KEY and no `wandb login`: the run would track offline.
    out = dry_run()
    assert "WANDB_MODE=offline" in out and "WANDB_API_KEY" not in out

    # A self-hosted server named by the shell's WANDB_BASE_URL: W&B cloud's key is not its key.
    netrc = user / ".netrc"
    netrc.write_text(f"machine api.wandb.ai\n  login user\n  password {SECRET}\n")
    env["WANDB_BASE_URL"] = server
    out = dry_run()
    assert "WANDB_MODE=offline" in out and "WANDB_API_KEY" not in out
    assert f"WANDB_BASE_URL={server}" in out

    # `wandb login --host` wrote the server's entry: the run gets that key, shown only as ***.
    netrc.write_text(netrc.read_text() + f"machine 127.0.0.1:8080\n  login user\n  password {SECRET}\n")
    out = dry_run()
    assert "WANDB_MODE=online" in out and "WANDB_API_KEY=***" in out
    assert f"WANDB_BASE_URL={server}" in out
    run_id = re.search(r"run (\S+__ppo__\S+)", out)
    assert run_id
    assert RunDir(home.run_dir(run_id.group(1))).read_config().tracking.wandb_base_url == server
    assert files_containing(home.root, SECRET.encode()) == []


def test_preview_is_the_plan_a_run_gets_and_stores_nothing(
    cleanrl_daemon: tuple[DaemonClient, Home],
) -> None:
    client, home = cleanrl_daemon
    config = cleanrl_config(
        "ppo",
        "CartPole-v1",
        1024,
        params={"learning-rate": 0.0005},
        tracking={"wandb_mode": "online", "wandb_project": "gg"},
        checkpoints={"every_steps": 512},
    )
    runs_before = sorted(path.name for path in home.runs_dir.iterdir())
    plan = client.preview(config, {"WANDB_API_KEY": SECRET})
    assert SECRET not in repr(plan)
    assert plan.env["WANDB_API_KEY"] == "***" and plan.env["WANDB_MODE"] == "online"
    assert plan.script_argv[1].endswith("/cleanrl/ppo.py")
    assert "--learning-rate" in plan.script_argv and "--checkpoint-every" in plan.argv
    # As a user would type it: the variables the worker kind sets, the key as ***, the bundle by name.
    assert plan.display.startswith(
        "MUJOCO_GL=egl PYOPENGL_PLATFORM=egl CUDA_VISIBLE_DEVICES='' WANDB_MODE=online "
    )
    assert (
        "WANDB_API_KEY=*** <cleanrl bundle>/bin/python -m gym_gui_cleanrl_worker train --script "
        in plan.display
    )
    assert "--checkpoint-every 512 -- --exp-name ppo" in plan.display
    assert "--learning-rate 0.0005" in plan.display and str(SHARED_BUNDLES) not in plan.display
    # The flags describe says gym_gui sets from the config are the ones the plan sets (entity: not given).
    mapped = client.describe_worker("cleanrl").details["mapped"]
    given = {flag for flag in mapped if f"--{flag}" in plan.script_argv}
    assert given == set(mapped) - {"wandb-entity"}

    # The launcher's validate speaks through the preview, naming the script's own flag.
    with pytest.raises(ConfigError, match="learning-rate"):
        client.preview(cleanrl_config("ppo", "CartPole-v1", 1024, params={"learning-rate": "fast"}))
    assert sorted(path.name for path in home.runs_dir.iterdir()) == runs_before

    # A dry run of the same config replies with the same plan, under the id it got.
    record, dry = client.dry_run(config, {"WANDB_API_KEY": SECRET})
    assert record.state is RunState.COMPLETED and dry is not None
    assert (dry.argv, dry.script_argv) == (plan.argv, plan.script_argv)
    assert dry.display == plan.display.replace(plan.run_id, dry.run_id)


def test_describe_serves_the_scripts_and_their_arguments(cleanrl_daemon: tuple[DaemonClient, Home]) -> None:
    client, _home = cleanrl_daemon
    description = client.describe_worker("cleanrl", algorithm="ppo")
    assert description.lane == "analytics" and description.bundle_installed
    assert description.details["gpu_available"] is False  # the bundle's torch is the CPU build
    algorithms = {a["name"]: a for a in description.details["algorithms"]}
    for name in (
        "ppo",
        "dqn",
        "c51",
        "ppo_continuous_action",
        "sac_continuous_action",
        "td3_continuous_action",
        "ddpg_continuous_action",
    ):
        assert algorithms[name]["runnable"], algorithms[name]
    assert not algorithms["dqn_atari"]["runnable"]
    params = {p["name"]: p for p in description.details["arguments"]["params"]}
    assert params["learning-rate"]["default"] == 0.00025 and params["learning-rate"]["type"] == "float"
    assert params["cuda"]["bool_style"] == "strtobool"


def test_a_missing_bundle_is_reported_with_how_to_install_it(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "GYM_GUI_HOME": str(tmp_path / "home"),
        "GYM_GUI_BUNDLES": str(tmp_path / "no_bundles"),
    }
    try:
        result = subprocess.run(
            [sys.executable, "-m", "gym_gui", "algorithms"],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
        assert result.returncode == 1
        assert "gym-gui bundles install cleanrl" in result.stderr
        check = subprocess.run(
            [sys.executable, "-m", "gym_gui", "bundles", "check", "cleanrl"],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
        assert check.returncode == 1
        assert "gym-gui bundles install cleanrl" in check.stdout + check.stderr
    finally:
        subprocess.run(
            [sys.executable, "-m", "gym_gui", "daemon", "stop"], env=env, capture_output=True, timeout=60
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
    # 39 updates of 512 steps (4 envs x 128): one losses/value_loss point each, from the event file only.
    record, _ = client.submit(cleanrl_config("ppo", "CartPole-v1", 20_000))
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
    assert value_losses() == 20_000 // 512
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
    assert watcher.wait(300) == 0
    reader.join(10)
    live_metrics()
    assert "COMPLETED" in seen


def test_atari_and_mujoco_py_variants_are_refused_before_launch_with_the_install_hint(
    cleanrl_daemon: tuple[DaemonClient, Home],
) -> None:
    client, home = cleanrl_daemon
    before = set(home.runs_dir.iterdir())
    with pytest.raises(ConfigError, match=r"dqn_atari cannot run here: .*pip install ale-py"):
        client.submit(cleanrl_config("dqn_atari", "BreakoutNoFrameskip-v4", 1000))
    # The bundle has MuJoCo's maintained bindings (-v4); the -v3 ids want the old mujoco-py.
    with pytest.raises(
        ConfigError, match=r"HalfCheetah-v3 \(mujoco environment\) needs mujoco_py.*pip install"
    ):
        client.submit(cleanrl_config("ppo_continuous_action", "HalfCheetah-v3", 1000))
    assert set(home.runs_dir.iterdir()) == before
