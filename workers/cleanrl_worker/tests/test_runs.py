"""CleanRL runs through the real daemon: training, live metrics, artifacts, evaluation, each algorithm, refusals."""

from __future__ import annotations

import json
import re
import subprocess
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
    assert manifest["extras"]["script"].endswith("cleanrl/ppo.py")
    flags = manifest["extras"]["script_command"]
    for flag, value in [
        ("--env-id", "CartPole-v1"),
        ("--total-timesteps", "20000"),
        ("--seed", "1"),
        ("--cuda", "False"),
    ]:
        assert flags[flags.index(flag) + 1] == value
    # The script's own switches are the run's parameters: none given, the script's defaults apply.
    assert "--torch-deterministic" not in flags and "--capture-video" not in flags
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
    config = cleanrl_config(algo, "CartPole-v1", 2048, params={**params, "capture-video": True})
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
        "ppo", "CartPole-v1", 1000, params={"num-envs": "-2", "scripts_dir": str(checkout)}
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
    env_id = description.form.parameter("env-id")
    assert env_id is not None
    default_env = env_id.default
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
        match=r"^field 'env_id': CartPole-v9 is not registered in gym 0\.23\.1 here, .*choose CartPole-v0 or CartPole-v1$",
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
    assert_one_line_error(
        result, "field 'env_id': CartPol-v1 is not registered in gymnasium 0.29.1 here", "which dqn makes"
    )
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
