"""The worker contract: one validator of parameter values, and form specs checked at both ends."""

from __future__ import annotations

import json
import math

import pytest
from gym_gui_sdk.contract import (
    ContractError,
    EnvChoice,
    FormSpec,
    ManifestExtras,
    ParameterSpec,
    Section,
    Variant,
    parameter_problems,
    resolve_parameters,
)

ALPHA = ParameterSpec("alpha", "float", 0.1, "learning rate", low=0, high=1, open_low=True)
STEPS = ParameterSpec("max_steps", "int", 0, low=0, high=10**6)
MODE = ParameterSpec("mode", "str", "fast", choices=("fast", "deliberate"))
SLIPPERY = ParameterSpec("slippery", "bool", True)
LAYERS = ParameterSpec("layers", "list[int]", [64, 64], low=1)


@pytest.mark.parametrize(
    ("parameter", "value", "why"),
    [
        (ALPHA, 0.5, ""),
        (ALPHA, 1, ""),
        (ALPHA, 0, "must be in (0, 1], got 0"),
        (ALPHA, 1.5, "must be in (0, 1], got 1.5"),
        (ALPHA, math.nan, "expected a finite number, got nan"),
        (ALPHA, "0.1", "expected a number, got '0.1'"),
        (ALPHA, True, "expected a number, got True"),
        (STEPS, 3, ""),
        (STEPS, 3.0, "expected a whole number, got 3.0"),
        (STEPS, -1, "must be in [0, 1e+06], got -1"),
        (MODE, "deliberate", ""),
        (MODE, "slow", "must be one of fast, deliberate, got 'slow'"),
        (MODE, 3, "expected text, got 3"),
        (SLIPPERY, False, ""),
        (SLIPPERY, "false", "expected true or false, got 'false'"),
        (LAYERS, [32, 16], ""),
        (LAYERS, [32, 0], "must be in [1, inf], got 0"),
        (LAYERS, 32, "expected a list of int, got 32"),
        (ALPHA, None, ""),
        # A value a user gave is shown cut, whatever its length: the line stays one line to read.
        (STEPS, "9" * 10_000, "expected a whole number, got '" + "9" * 78 + "…"),
        (MODE, "s" * 10_000, "must be one of fast, deliberate, got '" + "s" * 78 + "…"),
        (LAYERS, list(range(10_000)), "must be in [1, inf], got 0"),
    ],
)
def test_one_validator_for_every_kind(parameter: ParameterSpec, value: object, why: str) -> None:
    assert parameter.problem(value) == why


def test_problems_name_unknown_bad_and_missing_required_values() -> None:
    seed_file = ParameterSpec("plans", "str", required=True)
    found = parameter_problems([ALPHA, MODE, seed_file], {"alpha": 2, "gamma": 0.9})
    assert found == [
        ("alpha", "must be in (0, 1], got 2"),
        ("gamma", "unknown parameter; the parameters are alpha, mode, plans"),
        ("plans", "a value is required"),
    ]
    assert parameter_problems([ALPHA, MODE], {"alpha": 0.2}) == []
    assert resolve_parameters([ALPHA, MODE], {"alpha": 0.2}) == {"alpha": 0.2, "mode": "fast"}


def test_a_spec_that_breaks_the_contract_is_refused_where_it_is_made() -> None:
    with pytest.raises(ContractError, match="type 'number' is not one of"):
        ParameterSpec("alpha", "number")
    with pytest.raises(ContractError, match="low 2 is above high 1"):
        ParameterSpec("alpha", "float", low=2, high=1)
    with pytest.raises(ContractError, match="its name must be a word"):
        ParameterSpec("two words")
    with pytest.raises(ContractError, match="bool_style 'maybe'"):
        ParameterSpec("cuda", "bool", bool_style="maybe")
    with pytest.raises(ContractError, match=r"\['alpha'\] are described twice"):
        FormSpec(parameters=(ALPHA, ALPHA))
    with pytest.raises(ContractError, match="budget_bounds"):
        FormSpec(budget_bounds=("minutes",))


def test_a_form_survives_its_json_form_unchanged() -> None:
    form = FormSpec(
        variant_label="Algorithm",
        variants=(
            Variant("ppo", summary="classic control", default_env="CartPole-v1"),
            Variant("qdagger", False, "needs jax"),
        ),
        variant="ppo",
        parameters=(
            ALPHA,
            MODE,
            SLIPPERY,
            LAYERS,
            ParameterSpec("cuda", "bool", True, flag="--cuda", bool_style="tyro"),
        ),
        note="tyro",
        mapped={"env-id": "env_id", "seed": "seed"},
        sections=frozenset({Section.TRACKING, Section.CHECKPOINTS}),
        budget_bounds=("timesteps",),
        gpu_available=False,
        envs=(EnvChoice("CartPole-v1"), EnvChoice("Pong-v5", "needs ale-py")),
    )
    text = json.dumps(form.to_json())
    assert FormSpec.from_json(json.loads(text)) == form
    assert form.trainable_envs() == ["CartPole-v1"]
    assert FormSpec.from_json({}) == FormSpec()


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ([], "form: expected a JSON object, got list"),
        ({"algorithms": []}, "form: unknown keys ['algorithms']"),
        ({"parameters": {"alpha": 1}}, "parameters: expected a list, got dict"),
        ({"parameters": [{"name": "alpha", "kind": "float"}]}, "parameter 'alpha': unknown keys ['kind']"),
        (
            {"parameters": [{"name": "alpha", "type": "float", "help": 3}]},
            "parameter 'alpha': help must be text",
        ),
        ({"sections": ["tracking", "cloud"]}, "sections: 'cloud' is not a valid Section"),
        ({"mapped": {"seed": 1}}, "mapped: must map parameter names"),
        ({"variants": [{"name": "ppo", "runnable": "yes"}]}, "variants: runnable must be true or false"),
        ({"variants": [{"runnable": True}]}, "variants: each needs its name"),
        ({"envs": [{"id": "CartPole-v1", "why": ""}]}, "envs: unknown keys ['why']"),
        ({"gpu_available": "no"}, "gpu_available: must be true or false"),
    ],
)
def test_a_client_refuses_a_form_that_breaks_the_contract(data: object, message: str) -> None:
    with pytest.raises(ContractError) as caught:
        FormSpec.from_json(data)
    assert message in str(caught.value)


def test_manifest_extras_hold_json_by_word_keys() -> None:
    extras = ManifestExtras(
        {"script": "/b/ppo.py", "script_command": ["python", "ppo.py"], "llm": {"model": "m"}}
    )
    assert json.loads(json.dumps(extras.to_json())) == extras.to_json()
    with pytest.raises(ContractError, match="key 'two words' must be a word"):
        ManifestExtras({"two words": 1})
    with pytest.raises(ContractError, match="manifest extras: seen: a set is not a JSON value"):
        ManifestExtras({"seen": {1, 2}})
    with pytest.raises(ContractError, match="manifest extras: loss: nan is not a finite number"):
        ManifestExtras({"loss": [1.0, float("nan")]})
