"""CleanRL's extras through the real daemon: Atari (ppo_atari on Breakout) and MuJoCo (ppo_continuous_action
on HalfCheetah) trained a few thousand steps with their metrics bridged and their models played; the
extras a bundle holds in `gym-gui bundles list`; a run that needs an extra the bundle lacks refused."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from gym_gui_sdk.render import decode_payload

from gym_gui.core.errors import ConfigError
from gym_gui.core.states import RunState
from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.home import Home
from gym_gui.storage.run_dir import RunDir
from gym_gui.storage.telemetry import TelemetryReader
from gym_gui.workers import worker_catalog
from tests.fixtures import SHARED_BUNDLES
from tests.support import assert_one_line_error, gym_gui, linked_bundle, module_daemon
from workers.cleanrl_worker.tests.support import cleanrl_config

ATARI_HINT = "run `gym-gui bundles install cleanrl --extra atari`"
# The metrics every PPO script writes, bridged from its stdout and its TensorBoard files.
PPO_TAGS = {"charts/episodic_return", "charts/SPS", "losses/value_loss", "losses/policy_loss"}


@pytest.fixture(scope="module")
def atari_bundles(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A bundles directory whose cleanrl bundle holds the atari extra: the suite's bundle, linked, with
    the extra added."""
    shared = worker_catalog().bundle_directory(Path(SHARED_BUNDLES)).status("cleanrl")
    assert shared.installed, f"{shared.reason}; the suite expects it pre-installed (`make bundles`)"
    bundles = tmp_path_factory.mktemp("atari_bundles")
    linked_bundle(Path(SHARED_BUNDLES), "cleanrl", bundles)
    status = worker_catalog().bundle_directory(bundles).install("cleanrl", extras=["atari"])
    assert status.extras == ("atari", "mujoco"), status
    return bundles


@pytest.fixture(scope="module")
def atari_daemon(
    tmp_path_factory: pytest.TempPathFactory, atari_bundles: Path
) -> Iterator[tuple[DaemonClient, Home]]:
    """A daemon on :func:`atari_bundles`."""
    home = tmp_path_factory.mktemp("atari_home")
    with module_daemon(home, str(atari_bundles), ["--cancel-grace", "20"]) as daemon:
        yield daemon


def train_and_play(
    daemon: tuple[DaemonClient, Home], algo: str, env_id: str, timesteps: int, params: dict[str, Any]
) -> dict[str, Any]:
    """Train ``algo`` on ``env_id`` for ``timesteps`` steps, then play one episode of its final model with
    frames, as the window's "Use trained" does; what both stored."""
    client, home = daemon
    record, _ = client.submit(cleanrl_config(algo, env_id, timesteps, params=params))
    final = client.wait_for_end(record.run_id, timeout=300)
    assert final.state is RunState.COMPLETED, final.reason
    run = RunDir(home.run_dir(record.run_id))
    reader = TelemetryReader(run.telemetry_path)
    try:
        tags = set(reader.metric_tags())
        last_step = max(point.step for point in reader.metrics("charts/SPS"))
    finally:
        reader.close()

    # Frames a few times a second: drawing MuJoCo in software costs tens of ms a frame.
    evaluation = client.evaluation_config(record.run_id, episodes=1, seed=3, render_fps=4)
    played, _ = client.submit(evaluation)
    ended = client.wait_for_end(played.run_id, timeout=300)
    assert ended.state is RunState.COMPLETED, ended.reason
    reader = TelemetryReader(RunDir(home.run_dir(played.run_id)).telemetry_path)
    try:
        episodes = reader.episodes()
        steps = reader.steps(0, 0, 100_000)
    finally:
        reader.close()
    frames = [decode_payload(step.render or b"") for step in steps if step.render]
    return {
        "models": [entry.path for entry in run.saved_models()],
        "tags": tags,
        "last_step": last_step,
        "episodes": episodes,
        "steps": steps,
        "frames": frames,
    }


def test_ppo_atari_trains_on_breakout_and_its_model_plays_it(atari_daemon: tuple[DaemonClient, Home]) -> None:
    # ppo_atari makes BreakoutNoFrameskip-v4 with old gym 0.23 and wraps it in stable-baselines3's
    # gymnasium Atari wrappers: the bundle's compat lends old gym ale-py's ids and adapts the wrappers.
    params = {"num-envs": 2, "num-steps": 128, "update-epochs": 1}
    run = train_and_play(atari_daemon, "ppo_atari", "BreakoutNoFrameskip-v4", 2048, params)

    assert "checkpoints/final.cleanrl_model" in run["models"]
    assert run["tags"] >= PPO_TAGS
    assert run["last_step"] >= 1792  # its last update's step: the budget was trained
    # One episode of the trained model (a life: the script's EpisodicLifeEnv ends it), with the screen.
    assert len(run["episodes"]) == 1 and run["episodes"][0].steps == len(run["steps"]) > 0
    frame = run["frames"][0]
    assert isinstance(frame, np.ndarray) and frame.shape == (210, 160, 3) and frame.std() > 0


def test_ppo_continuous_action_trains_on_halfcheetah_and_its_model_plays_it(
    atari_daemon: tuple[DaemonClient, Home],
) -> None:
    # MuJoCo is in the bundle's own requirements: every cleanrl bundle holds the mujoco extra.
    params = {"num-steps": 512, "update-epochs": 1}
    run = train_and_play(atari_daemon, "ppo_continuous_action", "HalfCheetah-v4", 2048, params)

    assert "checkpoints/final.cleanrl_model" in run["models"]
    assert run["tags"] >= PPO_TAGS
    assert run["last_step"] >= 1536
    # HalfCheetah's episodes are cut at 1000 steps, drawn headless.
    assert len(run["episodes"]) == 1 and run["episodes"][0].steps == len(run["steps"]) == 1000
    frame = run["frames"][0]
    assert isinstance(frame, np.ndarray) and frame.ndim == 3 and frame.std() > 0


def test_bundles_list_shows_the_extras_each_bundle_holds_and_offers(
    atari_bundles: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = Home(tmp_path / "home").ensure()
    monkeypatch.setenv("GYM_GUI_BUNDLES", str(atari_bundles))
    listed = gym_gui("bundles", "list", "cleanrl", home=home.root)
    assert listed.returncode == 0, listed.stderr
    row = next(line for line in listed.stdout.splitlines() if "cleanrl" in line)
    assert "atari, mujoco; can add: envpool" in row
    shown = gym_gui("bundles", "list", "cleanrl", "--json", home=home.root)
    assert '"extras": [\n      "atari",\n      "mujoco"\n    ]' in shown.stdout

    # Adding an extra the bundle holds changes nothing.
    again = gym_gui("bundles", "install", "cleanrl", "--extra", "atari", "--extra", "mujoco", home=home.root)
    assert again.returncode == 0, again.stderr
    assert again.stdout.startswith("bundle cleanrl is installed at")
    assert again.stdout.rstrip().endswith("; extras: atari, mujoco")


@pytest.fixture(scope="module")
def plain_daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[DaemonClient, Home]]:
    """A daemon on the suite's cleanrl bundle, which `make bundles` installs without extras."""
    with module_daemon(
        tmp_path_factory.mktemp("plain_home"), SHARED_BUNDLES, ["--cancel-grace", "20"]
    ) as daemon:
        yield daemon


def test_an_atari_run_in_a_bundle_without_the_atari_extra_is_refused_in_one_line(
    plain_daemon: tuple[DaemonClient, Home],
) -> None:
    client, home = plain_daemon
    before = set(home.runs_dir.iterdir())
    result = gym_gui(
        "train",
        *("--worker", "cleanrl", "--algo", "ppo_atari", "--env", "BreakoutNoFrameskip-v4"),
        *("--total-timesteps", "1000"),
        home=home.root,
    )
    assert_one_line_error(
        result,
        "field 'env_id': BreakoutNoFrameskip-v4 (atari environment) needs the cleanrl bundle's atari extra, "
        f"which it does not have: {ATARI_HINT}",
    )
    # Whichever script: the env is what needs the extra.
    with pytest.raises(
        ConfigError, match=r"^field 'env_id': ALE/Pong-v5 \(atari environment\) needs .*extra atari`$"
    ):
        client.submit(cleanrl_config("dqn_atari", "ALE/Pong-v5", 1000))
    # A script bound to its own library's envs needs that extra, whatever the id.
    with pytest.raises(
        ConfigError,
        match=r"^field 'algorithm': ppo_atari_envpool \(envpool script\) needs the cleanrl bundle's envpool "
        r"extra, which it does not have: run `gym-gui bundles install cleanrl --extra envpool`$",
    ):
        client.submit(cleanrl_config("ppo_atari_envpool", "Breakout-v5", 1000))
    assert set(home.runs_dir.iterdir()) == before


def test_a_run_needing_an_extra_installed_from_older_requirements_is_refused(
    atari_daemon: tuple[DaemonClient, Home], atari_bundles: Path
) -> None:
    client, home = atari_daemon
    marker = worker_catalog().bundle_directory(atari_bundles).marker_path("cleanrl")
    original = marker.read_bytes()
    recorded = json.loads(original)
    recorded["extras"]["atari"]["hash"] = "the hash of an older requirements-atari.txt"
    before = set(home.runs_dir.iterdir())
    try:
        marker.write_text(json.dumps(recorded))
        with pytest.raises(
            ConfigError,
            match=r"^field 'env_id': BreakoutNoFrameskip-v4 \(atari environment\) needs the cleanrl bundle's "
            r"atari extra, which is out of date: run `gym-gui bundles install cleanrl --extra atari`$",
        ):
            client.submit(cleanrl_config("ppo_atari", "BreakoutNoFrameskip-v4", 1000))
    finally:
        marker.write_bytes(original)
    assert set(home.runs_dir.iterdir()) == before
