"""Warm starts: a CleanRL run starting from another run's saved model, refused before launch when it
cannot fit, failing at start when only loading can tell, and training on from the parent's weights."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gym_gui.core.config import RunConfig, parse_run_config
from gym_gui.core.errors import ConfigError
from gym_gui.core.states import RunState
from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.home import Home
from gym_gui.storage.run_dir import RunDir, file_sha256
from gym_gui.storage.telemetry import TelemetryReader
from tests.fixtures import SHARED_BUNDLES
from tests.support import assert_one_line_error, gym_gui, module_daemon

FINAL = "checkpoints/final.cleanrl_model"
# A learning rate of 0 trains nothing: the child's final model is exactly what it started from.
FROZEN = {"learning-rate": 0.0}


def config(algo: str, env_id: str, timesteps: int = 2048, **extra: Any) -> RunConfig:
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
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[DaemonClient, Home]]:
    root = tmp_path_factory.mktemp("warm_start_home")
    with module_daemon(root, SHARED_BUNDLES, ["--cancel-grace", "20"]) as daemon:
        yield daemon


def _trained(client: DaemonClient, run_config: RunConfig) -> str:
    record, _ = client.submit(run_config)
    final = client.wait_for_end(record.run_id, timeout=300)
    assert final.state is RunState.COMPLETED, final.reason
    return record.run_id


@pytest.fixture(scope="module")
def ppo_parent(daemon: tuple[DaemonClient, Home]) -> str:
    client, _home = daemon
    params = {"num-envs": 2, "num-steps": 128}
    return _trained(client, config("ppo", "CartPole-v1", params=params, checkpoints={"every_steps": 1024}))


@pytest.fixture(scope="module")
def dqn_parent(daemon: tuple[DaemonClient, Home]) -> str:
    client, _home = daemon
    # Training starts after 500 steps, so the saved q_network is a trained one, not its initial weights.
    params = {"learning-starts": 500, "train-frequency": 10}
    return _trained(client, config("dqn", "CartPole-v1", timesteps=1500, params=params))


def _tensors_equal(python: Path, first: Path, second: Path, module: str) -> dict[str, Any]:
    """Compare one network of two model files tensor by tensor, in the bundle (it has torch)."""
    code = (
        "import json, sys, torch\n"
        "a, b = (torch.load(p, map_location='cpu', weights_only=True)['modules'][sys.argv[3]]['state_dict'] "
        "for p in sys.argv[1:3])\n"
        "print(json.dumps({'names': sorted(a) == sorted(b), 'equal': [k for k in a if torch.equal(a[k], b[k])], "
        "'count': len(a)}))\n"
    )
    result = subprocess.run(
        [str(python), "-c", code, str(first), str(second), module], capture_output=True, text=True, check=True
    )
    return json.loads(result.stdout)


def _run_ids(text: str) -> list[str]:
    return re.findall(r"run (\S+__\S+__\S+__\d+(?:-\d+)?)", text)


def _events(files: RunDir) -> list[str]:
    reader = TelemetryReader(files.telemetry_path)
    try:
        return [event.message for event in reader.events()]
    finally:
        reader.close()


def test_mismatched_models_are_refused_before_anything_is_stored(
    daemon: tuple[DaemonClient, Home], ppo_parent: str, dqn_parent: str
) -> None:
    client, _home = daemon
    runs_before = len(client.list_runs(include_archived=True))
    refusals = [
        (config("ppo", "CartPole-v1", warm_start={"run_id": dqn_parent}), "trained dqn (dqn family)"),
        (config("ppo", "Acrobot-v1", warm_start={"run_id": ppo_parent}), "trained on CartPole-v1"),
        (
            config(
                "ppo",
                "CartPole-v1",
                warm_start={"run_id": ppo_parent, "checkpoint": "checkpoints/nope.cleanrl_model"},
            ),
            "is not a saved model of run",
        ),
        (
            config(
                "dqn",
                "CartPole-v1",
                warm_start={"run_id": dqn_parent, "checkpoint": f"../{ppo_parent}/{FINAL}"},
            ),
            "is not a saved model of run",
        ),
        (config("ppo", "CartPole-v1", warm_start={"run_id": "CartPole-v1__ppo__1__1"}), "there is no run"),
        (config("sac_continuous_action", "Pendulum-v1", warm_start={"run_id": ppo_parent}), "ppo family"),
        (
            parse_run_config(
                {
                    "worker": "random",
                    "env_id": "CartPole-v1",
                    "budget": {"episodes": 1},
                    "warm_start": {"run_id": ppo_parent},
                }
            ),
            "cannot start from another run's saved model",
        ),
    ]
    for refused, reason in refusals:
        with pytest.raises(ConfigError, match="warm_start") as caught:
            client.submit(refused)
        assert reason in str(caught.value)
    assert len(client.list_runs(include_archived=True)) == runs_before


def test_the_cli_takes_run_and_checkpoint_and_refuses_in_one_line(
    daemon: tuple[DaemonClient, Home], ppo_parent: str
) -> None:
    _client, home = daemon
    refused = gym_gui(
        "train", "--worker", "cleanrl", "--algo", "ppo", "--env", "CartPole-v1", "--total-timesteps", "256",
        "--warm-start", f"{ppo_parent}:checkpoints/step_999.cleanrl_model",
        home=home.root,
    )  # fmt: skip
    assert_one_line_error(refused, "field 'warm_start.checkpoint'", "step_999", "final.cleanrl_model")


def test_a_ppo_run_starts_from_the_parents_checkpoint(
    daemon: tuple[DaemonClient, Home], ppo_parent: str, cleanrl_python: Path
) -> None:
    _client, home = daemon
    parent = RunDir(home.run_dir(ppo_parent))
    checkpoint = next(entry.path for entry in parent.saved_models() if "step_" in entry.path)
    result = gym_gui(
        "train", "--worker", "cleanrl", "--algo", "ppo", "--env", "CartPole-v1", "--total-timesteps", "512",
        "--seed", "5", "--param", "learning-rate=0", "--param", "num-envs=2", "--param", "num-steps=128",
        "--warm-start", f"{ppo_parent}:{checkpoint}",
        home=home.root, timeout=600,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    child = RunDir(home.run_dir(next(r for r in _run_ids(result.stdout) if r != ppo_parent)))

    started_from = child.read_manifest().warm_start_from
    assert started_from is not None
    assert (started_from.run_id, started_from.checkpoint) == (ppo_parent, checkpoint)
    assert started_from.sha256 == file_sha256(parent.path / checkpoint)
    compared = _tensors_equal(cleanrl_python, parent.path / checkpoint, child.path / FINAL, "agent")
    assert compared["names"] and len(compared["equal"]) == compared["count"] > 0
    # The parent's final model is another one: the child loaded the checkpoint it was given.
    other = _tensors_equal(cleanrl_python, parent.path / FINAL, child.path / FINAL, "agent")
    assert len(other["equal"]) < other["count"]
    assert any(message.startswith("warm start: agent loaded from") for message in _events(child))


def test_a_dqn_run_starts_from_the_parents_q_network_and_a_reshaped_model_fails_at_start(
    daemon: tuple[DaemonClient, Home], dqn_parent: str, cleanrl_python: Path
) -> None:
    client, home = daemon
    parent = RunDir(home.run_dir(dqn_parent))
    child_id = _trained(
        client,
        config(
            "dqn",
            "CartPole-v1",
            timesteps=800,
            params={**FROZEN, "learning-starts": 200},
            warm_start={"run_id": dqn_parent},
        ),
    )
    child = RunDir(home.run_dir(child_id))
    compared = _tensors_equal(cleanrl_python, parent.path / FINAL, child.path / FINAL, "q_network")
    assert compared["names"] and len(compared["equal"]) == compared["count"] > 0
    started_from = child.read_manifest().warm_start_from
    assert started_from is not None and started_from.checkpoint == FINAL

    # A model whose first layer takes 5 inputs (saved by another version of the script, say): only
    # loading it can tell, so the run fails at start naming the tensor.
    reshape = (
        "import sys, torch\n"
        "m = torch.load(sys.argv[1], map_location='cpu', weights_only=True)\n"
        "s = m['modules']['q_network']['state_dict']\n"
        "s['network.0.weight'] = torch.zeros(s['network.0.weight'].shape[0], 5)\n"
        "torch.save(m, sys.argv[1])\n"
    )
    subprocess.run([str(cleanrl_python), "-c", reshape, str(parent.path / FINAL)], check=True)
    record, _ = client.submit(config("dqn", "CartPole-v1", timesteps=800, warm_start={"run_id": dqn_parent}))
    final = client.wait_for_end(record.run_id, timeout=300)
    assert final.state is RunState.FAILED
    assert (
        "warm start failed: tensor 'network.0.weight' has shape [120, 4] in the script's q_network"
        in final.reason
    )
    assert "[120, 5] in the saved model" in final.reason
