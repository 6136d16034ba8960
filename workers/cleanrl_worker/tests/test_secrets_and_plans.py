"""CleanRL runs' secrets, dry runs, previews and what describe serves: keys never in a file, plans as run."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from gym_gui.core.errors import ConfigError
from gym_gui.core.states import RunState
from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.home import Home
from gym_gui.storage.registry import RunRegistry
from gym_gui.storage.run_dir import RunDir
from tests.fixtures import SHARED_BUNDLES
from tests.support import (
    files_containing,
)
from workers.cleanrl_worker.tests.support import (  # noqa: F401
    SECRET,
    _process_state,
    _processes_mentioning,
    cleanrl_config,
    script_pid,
)


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
    mapped = client.describe_worker("cleanrl").form.mapped
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
    form = description.form
    assert form.gpu_available is False  # the bundle's torch is the CPU build
    assert form.variant_label == "Algorithm" and form.variant == "ppo" and form.note == "argparse"
    algorithms = {variant.name: variant for variant in form.variants}
    for name in (
        "ppo",
        "dqn",
        "c51",
        "ppo_continuous_action",
        "sac_continuous_action",
        "td3_continuous_action",
        "ddpg_continuous_action",
    ):
        assert algorithms[name].runnable, algorithms[name]
    assert not algorithms["dqn_atari"].runnable and algorithms["dqn_atari"].reason
    params = {p.name: p for p in form.parameters}
    assert params["learning-rate"].default == 0.00025 and params["learning-rate"].type == "float"
    assert params["cuda"].bool_style == "strtobool"
    assert "CartPole-v1" in form.trainable_envs()


def test_the_scripts_own_publishing_flags_are_not_offered_and_are_refused_as_parameters(
    cleanrl_daemon: tuple[DaemonClient, Home],
) -> None:
    """dqn's and c51's --upload-model and --hf-entity push to the Hugging Face Hub, which cannot work
    here (no huggingface_hub in the bundle, no token for the script): withheld until gym_gui publishes."""
    client, home = cleanrl_daemon
    for algorithm in ("dqn", "c51"):
        names = {p.name for p in client.describe_worker("cleanrl", algorithm=algorithm).form.parameters}
        assert "save-model" in names and "learning-rate" in names  # the script's other flags stay
        assert not names & {"upload-model", "hf-entity"}
    runs_before = sorted(path.name for path in home.runs_dir.iterdir())
    for given, flag in (
        ({"upload-model": True}, "upload-model"),
        ({"--upload-model": "true"}, "upload-model"),
        ({"hf_entity": "someone"}, "hf-entity"),
    ):
        with pytest.raises(ConfigError) as refused:
            client.submit(cleanrl_config("dqn", "CartPole-v1", 1000, params=given))
        assert str(refused.value) == (
            f"--{flag} is not offered: publishing a model to the Hugging Face Hub is not available yet "
            "(the cleanrl bundle has no huggingface_hub, and no token reaches a script)"
        )
    assert sorted(path.name for path in home.runs_dir.iterdir()) == runs_before


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
