"""The plugin as gym_gui loads it: found through the installed entry point, described, and strict about configs.

Run with the interpreter of the environment this package is installed in (gym_gui's)::

    python -m pytest examples/tabular_q_worker/tests
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from gym_gui_sdk.contract import FormSpec, Section
from tabular_q_worker.plugin import PLUGIN

from gym_gui.core.config import RunConfig, parse_run_config
from gym_gui.core.errors import ConfigError
from gym_gui.core.workers import Lane
from gym_gui.storage.home import Home
from gym_gui.workers import LaunchContext, WorkerLauncher, worker_catalog
from gym_gui.workers.registry import load_catalog


@pytest.fixture
def launcher(tmp_path: Path) -> WorkerLauncher:
    launcher = PLUGIN.launcher(
        LaunchContext(Home(tmp_path / "home"), worker_catalog().bundle_directory(tmp_path / "bundles"))
    )
    assert launcher is not None
    return launcher


def config(env_id: str = "FrozenLake-v1", **params: Any) -> RunConfig:
    return parse_run_config(
        {"worker": "tabular_q", "env_id": env_id, "budget": {"episodes": 10}, "params": params}
    )


def test_the_installed_entry_point_gives_gym_gui_this_plugin() -> None:
    catalog = load_catalog()
    assert "tabular_q" in catalog.kinds
    assert catalog.plugin("tabular_q") is PLUGIN
    assert not [broken for broken in catalog.broken if broken.name == "tabular_q"]
    spec = catalog.spec("tabular_q")
    assert spec.available and spec.lane is Lane.TELEMETRY
    assert spec.capabilities.pause and spec.capabilities.checkpoint and not spec.capabilities.evaluation
    assert PLUGIN.bundle is None  # it runs in gym_gui's own environment
    assert PLUGIN.tabs(Lane.TELEMETRY) == ("live", "charts", "replay")


def test_describe_lists_the_form_parameters_and_its_checkpoints_section(launcher: WorkerLauncher) -> None:
    form = launcher.describe({})
    assert [p.name for p in form.parameters] == ["alpha", "gamma", "epsilon", "epsilon_decay", "epsilon_min"]
    assert all(p.type == "float" and isinstance(p.default, float) and p.help for p in form.parameters)
    assert form.sections == {Section.CHECKPOINTS} and not form.variant_label
    assert FormSpec.from_json(form.to_json()) == form  # what gym_gui receives is what it describes


def test_a_good_config_is_accepted(launcher: WorkerLauncher) -> None:
    launcher.validate(config())
    launcher.validate(config("CliffWalking-v1", alpha=1, gamma=0.9, epsilon=0.2, epsilon_min=0.2))
    plan = launcher.plan("run", config(), Path("."), {})
    assert plan.argv[1:] == ["-m", "tabular_q_worker"]


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"beta": 0.1}, "field 'params.beta': unknown parameter; the parameters are alpha, gamma"),
        ({"alpha": 0}, r"field 'params.alpha': must be in \(0, 1\], got 0"),
        ({"alpha": 1.5}, r"field 'params.alpha': must be in \(0, 1\], got 1.5"),
        ({"gamma": "high"}, "field 'params.gamma': expected a number, got 'high'"),
        ({"epsilon": True}, "field 'params.epsilon': expected a number, got True"),
        ({"epsilon": 0.005}, r"field 'params.epsilon_min': must not exceed epsilon \(0.005\), got 0.01"),
    ],
)
def test_bad_parameters_are_refused_by_name(
    launcher: WorkerLauncher, params: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        launcher.validate(config(**params))


def test_environments_without_a_table_are_refused(launcher: WorkerLauncher) -> None:
    with pytest.raises(ConfigError, match=r"field 'env_id': .* CartPole-v1 has observations Box"):
        launcher.validate(config("CartPole-v1"))
    with pytest.raises(ConfigError, match=r"field 'env_id': .* Blackjack-v1 has observations Tuple"):
        launcher.validate(config("Blackjack-v1"))
