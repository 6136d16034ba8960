"""RunConfig's retired settings: accepted and dropped, while every other unknown key is refused."""

from __future__ import annotations

import re
from typing import Any

import pytest

from gym_gui.core.config import RETIRED, looks_secret, parse_run_config, run_config_schema
from gym_gui.core.errors import ConfigError


def config(**sections: dict[str, Any]) -> dict[str, Any]:
    return {"worker": "random", "env_id": "CartPole-v1", "budget": {"episodes": 1}, **sections}


def test_retired_settings_are_accepted_and_dropped() -> None:
    parsed = parse_run_config(
        config(tracking={"tensorboard": False, "wandb_mode": "offline"}, resources={"cpus": 8, "gpu": True})
    )
    assert parsed.tracking.wandb_mode == "offline" and parsed.resources.gpu
    dumped = parsed.model_dump()
    assert "tensorboard" not in dumped["tracking"] and "cpus" not in dumped["resources"]
    assert parsed == parse_run_config(config(tracking={"wandb_mode": "offline"}, resources={"gpu": True}))


def test_the_schema_offers_no_retired_setting() -> None:
    schema = run_config_schema()
    for section, names in RETIRED.items():
        # The section's own model (executor has a cpus of its own: retired from resources only).
        reference = schema["properties"][section]["$ref"].rsplit("/", 1)[1]
        assert not names & schema["$defs"][reference]["properties"].keys()


@pytest.mark.parametrize(
    ("sections", "field"),
    [
        ({"resources": {"cpu": 8}}, "resources.cpu"),
        ({"tracking": {"tensorboard_dir": "x"}}, "tracking.tensorboard_dir"),
        ({"telemetry": {"cpus": 2}}, "telemetry.cpus"),  # retired from resources only
    ],
)
def test_any_other_unknown_setting_is_still_refused(sections: dict[str, Any], field: str) -> None:
    with pytest.raises(ConfigError, match=rf"field '{field}': Extra inputs are not permitted"):
        parse_run_config(config(**sections))


def test_a_count_of_tokens_is_a_parameter_and_a_token_a_secret() -> None:
    assert not looks_secret("max_tokens") and not looks_secret("tokens_in")
    assert all(looks_secret(name) for name in ("token", "run_token", "GYM_GUI_RUN_TOKEN", "LLM_API_KEY"))
    config = parse_run_config(
        {"worker": "llm", "env_id": "FrozenLake-v1", "budget": {"episodes": 1}, "params": {"max_tokens": 64}}
    )
    assert config.params == {"max_tokens": 64}
    with pytest.raises(ConfigError, match="parameter 'access_token' looks like a secret"):
        parse_run_config(
            {
                "worker": "llm",
                "env_id": "FrozenLake-v1",
                "budget": {"episodes": 1},
                "params": {"access_token": "x"},
            }
        )


RANDOM = {"worker": "random", "env_id": "FrozenLake-v1", "budget": {"episodes": 1}}


def test_a_ray_executor_needs_an_address_and_says_which_field() -> None:
    with pytest.raises(ConfigError, match=r"field 'executor'.*ray_address"):
        parse_run_config({**RANDOM, "executor": {"kind": "ray"}})
    local = parse_run_config(RANDOM)
    assert (local.executor.kind, local.executor.cpus, local.executor.gpus) == ("local", 1.0, 0.0)


@pytest.mark.parametrize(
    ("address", "url"),
    [
        ("head:8265", "http://head:8265"),
        ("http://10.0.0.1:8265", "http://10.0.0.1:8265"),
        ("https://ray.lab/", "https://ray.lab/"),
    ],
)
def test_a_ray_address_is_a_dashboard_url(address: str, url: str) -> None:
    config = parse_run_config({**RANDOM, "executor": {"kind": "ray", "ray_address": address}})
    assert config.executor.ray_url == url


@pytest.mark.parametrize(
    "address", ["head:port", "ftp://head:8265", "http://head:8265/jobs", "http://:8265", "head:99999"]
)
def test_a_malformed_ray_address_is_refused_naming_it(address: str) -> None:
    with pytest.raises(ConfigError, match=r"executor\.ray_address"):
        parse_run_config({**RANDOM, "executor": {"kind": "ray", "ray_address": address}})


def test_ray_resources_are_bounded() -> None:
    with pytest.raises(ConfigError, match=r"executor\.cpus"):
        parse_run_config({**RANDOM, "executor": {"kind": "ray", "ray_address": "h:1", "cpus": -1}})


@pytest.mark.parametrize(
    ("budget", "field", "why"),
    [
        ({"timesteps": 10**30}, "budget.timesteps", "at most 10^12 environment steps"),
        ({"timesteps": 1e18}, "budget.timesteps", "at most 10^12 environment steps"),
        ({"timesteps": 10**12 + 1}, "budget.timesteps", "at most 10^12 environment steps"),
        ({"episodes": 10**9 + 1}, "budget.episodes", "at most 10^9 episodes"),
        ({"timesteps": 5000, "episodes": 10**30}, "budget.episodes", "at most 10^9 episodes"),
    ],
)
def test_a_budget_beyond_any_experiment_is_refused_saying_why(
    budget: dict[str, Any], field: str, why: str
) -> None:
    with pytest.raises(
        ConfigError, match=rf"field '{field}': must be {re.escape(why)}.*: a larger one is a typo"
    ):
        parse_run_config({**RANDOM, "budget": budget})


def test_the_largest_budgets_are_taken() -> None:
    taken = parse_run_config({**RANDOM, "budget": {"timesteps": 10**12, "episodes": 10**9}})
    assert (taken.budget.timesteps, taken.budget.episodes) == (10**12, 10**9)
