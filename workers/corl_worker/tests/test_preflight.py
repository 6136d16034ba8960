"""What a CORL run is refused for before anything is stored: one line each, the same line the form's
preview shows as its badge, and nothing of the home touched."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from gym_gui.core.config import RunConfig
from gym_gui.core.errors import ConfigError
from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.home import Home
from tests.support import assert_one_line_error, gym_gui
from workers.corl_worker.tests.support import CHECKOUT, PENDULUM, corl_config, make_dataset

CHANGED = "pendulum/changed-v0"
CARTPOLE = "cartpole/random-v0"


@pytest.fixture(scope="module")
def home_with_datasets(corl_daemon: tuple[DaemonClient, Home]) -> Iterator[tuple[DaemonClient, Home]]:
    """The module's home with two datasets more: a Pendulum one whose data file was changed after gym_gui
    first used it, and a CartPole one (discrete actions)."""
    client, home = corl_daemon
    make_dataset(home, CHANGED, "Pendulum-v1", 2, seed=7)
    make_dataset(home, CARTPOLE, "CartPole-v1", 2)
    # A dataset's first use (a form's preview is one) records its digests; then a byte of one changes.
    client.preview(corl_config(10))
    client.preview(corl_config(10, dataset=CHANGED))
    with pytest.raises(ConfigError, match="discrete actions"):
        client.preview(corl_config(10, dataset=CARTPOLE, env_id="CartPole-v1"))
    data = home.datasets_dir / CHANGED / "data" / "main_data.hdf5"
    with open(data, "ab") as file:
        file.write(b"\0")
    yield client, home


def digests(home: Home) -> dict[str, str]:
    """Every file under the home's datasets by its sha256 (what a refusal must leave as it was)."""
    return {
        str(path.relative_to(home.datasets_dir)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(home.datasets_dir.rglob("*"))
        if path.is_file()
    }


def config_with(**changes: Any) -> Callable[[Path], RunConfig]:
    def make(tmp: Path) -> RunConfig:
        data = json.loads(corl_config(300).model_dump_json())
        for path, value in changes.items():
            *parents, leaf = path.split(".")
            node = data
            for part in parents:
                node = node.setdefault(part, {})
            node[leaf] = value(tmp) if callable(value) else value
        return RunConfig.model_validate(data)

    return make


def _bad_yaml(tmp: Path) -> str:
    path = tmp / "bad.yaml"
    path.write_text("lr: 3e-4\nnot_a_field: 1\n")
    return str(path)


BAD_INPUTS = {
    "changed dataset": (config_with(dataset=CHANGED), "field 'dataset': dataset 'pendulum/changed-v0': data/main_data.hdf5 changed since it was first-use"),
    "missing checkout": (config_with(**{"params.scripts_dir": "/nowhere/CORL"}), "field 'params.scripts_dir': /nowhere/CORL is not a directory"),
    "missing script": (config_with(algorithm="nope"), "field 'algorithm': " + str(CHECKOUT) + " has no algorithms/offline/nope.py (its offline algorithms: tiny_bc)"),
    "dataset of another env": (config_with(env_id="MountainCarContinuous-v0"), f"field 'dataset': dataset '{PENDULUM}' was recorded on Pendulum-v1, not on the run's env MountainCarContinuous-v0"),
    "online W&B without a key": (config_with(**{"tracking.wandb_mode": "online"}), "field 'tracking.wandb_mode': online W&B tracking needs an API key"),
    "GPU mandatory without one": (config_with(**{"resources.gpu": True, "resources.gpu_mandatory": True}), "field 'resources.gpu_mandatory': a GPU is mandatory for this run, but torch in the corl bundle sees none"),
    "discrete dataset": (config_with(dataset=CARTPOLE, env_id="CartPole-v1"), "field 'dataset': dataset 'cartpole/random-v0' has discrete actions"),
    "no dataset": (config_with(dataset=None), "field 'dataset': a CORL run learns from a dataset of the home"),
    "a value of the wrong type": (config_with(**{"params.lr": "fast"}), "field 'params.lr': expected a number, got 'fast'"),
    "a field gym_gui sets": (config_with(**{"params.max_timesteps": 5}), "field 'params.max_timesteps': gym_gui sets it from budget.timesteps"),
    "the checkpoints path": (config_with(**{"params.checkpoints_path": "/tmp"}), "field 'params.checkpoints_path': gym_gui sets it"),
    "a config file pyrallis refuses": (config_with(**{"params.config_path": _bad_yaml}), "field 'params.config_path': pyrallis refused"),
}  # fmt: skip


@pytest.mark.parametrize("case", list(BAD_INPUTS))
def test_each_bad_input_is_refused_before_launch_in_one_line_the_forms_badge_shows(
    home_with_datasets: tuple[DaemonClient, Home], tmp_path: Path, case: str
) -> None:
    client, home = home_with_datasets
    make, expected = BAD_INPUTS[case]
    config = make(tmp_path)
    runs, datasets = client.list_runs(), digests(home)

    # The form's badge: the preview's refusal.
    with pytest.raises(ConfigError) as preview:
        client.preview(config)
    assert expected in str(preview.value) and "\n" not in str(preview.value)

    # The CLI's submit: the same line, and nothing stored or touched.
    config_file = tmp_path / "run.json"
    config_file.write_text(config.model_dump_json())
    result = gym_gui("train", "--config", str(config_file), home=home.root, timeout=300)
    assert_one_line_error(result, expected)
    assert result.stderr.strip() == f"error: {preview.value}"
    assert client.list_runs() == runs
    assert digests(home) == datasets


def test_a_gpu_asked_for_and_missing_is_said_and_the_run_goes_on_the_cpu(
    corl_daemon: tuple[DaemonClient, Home],
) -> None:
    client, _home = corl_daemon
    preview = client.preview(corl_config(300, resources={"gpu": True}))
    assert preview.warnings == [
        "no GPU is available to torch in the corl bundle: the run goes on the CPU (device=cpu)"
    ]
    assert "--device=cpu" in preview.script_argv
    assert preview.env["CUDA_VISIBLE_DEVICES"] == ""
