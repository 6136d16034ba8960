"""`gym-gui models`: the saved models of real CleanRL runs (and an imported one) as the window's browser
lists them, filtered by environment and algorithm; a filter that matches nothing says what there is."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from gym_gui.core.config import parse_run_config
from gym_gui.core.states import RunState
from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.home import Home
from gym_gui.storage.run_dir import RunDir
from gym_gui.storage.telemetry import TelemetryReader
from gym_gui.workers import worker_catalog
from tests.fixtures import SHARED_BUNDLES
from tests.support import assert_one_line_error, gym_gui, module_daemon

FINAL = "checkpoints/final.cleanrl_model"


def _train(client: DaemonClient, algo: str, env_id: str, timesteps: int, params: dict[str, Any]) -> str:
    config = parse_run_config(
        {
            "worker": "cleanrl",
            "algorithm": algo,
            "env_id": env_id,
            "seed": 1,
            "budget": {"timesteps": timesteps},
            "params": params,
        }
    )
    record, _ = client.submit(config)
    return record.run_id


@dataclass(frozen=True)
class Trained:
    home: Home
    ppo: str  # PPO on CartPole-v1
    dqn: str  # DQN on Acrobot-v1


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Trained]:
    root = tmp_path_factory.mktemp("models_home")
    with module_daemon(root, SHARED_BUNDLES, ["--cancel-grace", "20"]) as (client, home):
        ppo = _train(client, "ppo", "CartPole-v1", 512, {"num-steps": 128})
        dqn = _train(client, "dqn", "Acrobot-v1", 600, {"learning-starts": 200, "buffer-size": 600})
        for run_id in (ppo, dqn):
            final = client.wait_for_end(run_id, timeout=400)
            assert final.state is RunState.COMPLETED, final.reason
        yield Trained(home, ppo, dqn)


def _rows(output: str) -> dict[str, list[str]]:
    """The table's rows by run id: their cells."""
    rows = {}
    for line in output.splitlines():
        cells = [cell.strip() for cell in line.split("│")[1:-1]]
        if len(cells) == 8 and re.fullmatch(r"\S+__\S+__\S+__\d+(-\d+)?", cells[2]):
            rows[cells[2]] = cells
    return rows


def test_every_saved_model_is_listed_with_its_run_step_return_size_and_sha256(trained: Trained) -> None:
    listed = gym_gui("models", home=trained.home.root)
    assert listed.returncode == 0, listed.stderr
    rows = _rows(listed.stdout)
    assert {trained.ppo, trained.dqn} <= set(rows)  # (the next test imports one more)
    # By environment, as the browser's tree: Acrobot-v1 before CartPole-v1.
    assert listed.stdout.index(trained.dqn) < listed.stdout.index(trained.ppo)
    files = RunDir(trained.home.run_dir(trained.ppo))
    model = files.path / FINAL
    reader = TelemetryReader(files.telemetry_path)
    try:
        final_return = reader.final_return(worker_catalog().return_metric("cleanrl"))
    finally:
        reader.close()
    assert final_return is not None
    assert rows[trained.ppo] == [
        "CartPole-v1",
        "cleanrl / ppo",
        trained.ppo,
        "final.cleanrl_model",
        "512",
        f"{final_return[0]:.6g}",
        f"{model.stat().st_size / 1024:,.1f} KiB",
        hashlib.sha256(model.read_bytes()).hexdigest()[:12],
    ]
    assert rows[trained.dqn][:2] == ["Acrobot-v1", "cleanrl / dqn"]


def test_filters_by_environment_and_algorithm_include_imported_models(
    trained: Trained, tmp_path: Path
) -> None:
    root = trained.home.root
    source = tmp_path / "mine.cleanrl_model"
    source.write_bytes((RunDir(trained.home.run_dir(trained.ppo)).path / FINAL).read_bytes())
    imported = gym_gui("import-model", str(source), "--algo", "ppo", "--env", "CartPole-v1", home=root)
    assert imported.returncode == 0, imported.stderr
    imported_id = re.search(r"run (\S+) ", imported.stdout)
    assert imported_id is not None

    by_env = gym_gui("models", "--env", "CartPole-v1", home=root)
    assert by_env.returncode == 0, by_env.stderr
    assert set(_rows(by_env.stdout)) == {trained.ppo, imported_id.group(1)}
    by_algo = gym_gui("models", "--algo", "dqn", home=root)
    assert by_algo.returncode == 0, by_algo.stderr
    assert set(_rows(by_algo.stdout)) == {trained.dqn}
    both = gym_gui("models", "--env", "Acrobot-v1", "--algo", "dqn", home=root)
    assert set(_rows(both.stdout)) == {trained.dqn}

    assert_one_line_error(
        gym_gui("models", "--env", "Acrobot-v1", "--algo", "ppo", home=root),
        "no saved model matches --env Acrobot-v1 and --algo ppo",
        "Acrobot-v1 (cleanrl / dqn), CartPole-v1 (cleanrl / ppo)",
    )
    assert_one_line_error(gym_gui("models", "--env", "MountainCar-v0", home=root), "--env MountainCar-v0")


def test_a_home_without_models_says_how_to_get_one(tmp_path: Path) -> None:
    root = tmp_path / "empty_home"
    try:
        listed = gym_gui("models", home=root)
        assert listed.returncode == 0, listed.stderr
        assert "no saved model yet" in listed.stdout and "gym-gui import-model" in listed.stdout
        assert_one_line_error(
            gym_gui("models", "--algo", "ppo", home=root), "--algo ppo", "there is none yet"
        )
    finally:
        gym_gui("daemon", "stop", home=root)
