"""The sweep form's model on its own: no Qt, no daemon — fields and a base run in, the spec
`gym-gui sweep start` takes out, and errors that name the field."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from gym_gui_sdk.contract import FormSpec, ParameterSpec

from gym_gui.core.config import RunConfig, parse_run_config
from gym_gui.core.errors import ConfigError
from gym_gui.sweeps.spec import load_spec, parse_spec
from gym_gui.ui.sweep_form.model import SweepModel, fields_named, spec_text, sweepable
from gym_gui.workers import worker_catalog

# A script's form in the shape the CleanRL worker's describe gives it (a part of PPO's).
PPO = FormSpec(
    variant_label="Algorithm",
    variant="ppo",
    mapped={"seed": "seed", "env-id": "env_id", "total-timesteps": "budget.timesteps"},
    parameters=(
        ParameterSpec("seed", "int", 1),
        ParameterSpec("env-id", "str", "CartPole-v1"),
        ParameterSpec("total-timesteps", "int", 500000),
        ParameterSpec("learning-rate", "float", 0.00025),
        ParameterSpec("num-envs", "int", 4),
        ParameterSpec("ent-coef", "float", 0.01, low=0.0, high=1.0),
        ParameterSpec("anneal-lr", "bool", True, bool_style="tyro"),
        ParameterSpec("optimizer", "str", "adam", choices=("adam", "sgd")),
        ParameterSpec("hidden", "list[int]", [64, 64]),
        ParameterSpec("prompt", "text", "Hello"),
    ),
)


def _base() -> RunConfig:
    return parse_run_config(
        {
            "worker": "cleanrl",
            "algorithm": "ppo",
            "env_id": "CartPole-v1",
            "seed": 1,
            "budget": {"timesteps": 100000},
        }
    )


def _filled() -> SweepModel:
    """The fields of examples/sweeps/ppo_cartpole.yaml, as a user fills them."""
    model = SweepModel(metric=worker_catalog().return_metric("cleanrl"))
    model.take_form(PPO)
    lr, envs, ent = model.entries["learning-rate"], model.entries["num-envs"], model.entries["ent-coef"]
    lr.searched, lr.low, lr.high, lr.log = True, "1e-4", "0.01", True
    envs.searched, envs.kind, envs.choices = True, "categorical", "1, 2, 4, 8"
    ent.searched, ent.low, ent.high = True, "0", "0.05"
    model.name, model.window = "ppo-cartpole", "20"
    model.sampler, model.sampler_seed = "tpe", "0"
    model.pruner = "median"
    model.pruner_options.update(n_startup_trials="5", n_warmup_steps="20000", report_steps="10000")
    model.trials, model.parallel = "24", "2"
    return model


def test_the_space_offers_what_a_sweep_can_search_and_how() -> None:
    model = SweepModel(metric=worker_catalog().return_metric("cleanrl"))
    model.take_form(PPO)
    # Not the fields the config sets (seed, env, budget), not lists or multi-line text.
    assert [p.name for p in sweepable(PPO)] == list(model.entries)
    assert list(model.entries) == ["learning-rate", "num-envs", "ent-coef", "anneal-lr", "optimizer"]
    entries = model.entries
    assert entries["learning-rate"].kinds == ("range", "categorical")
    assert entries["learning-rate"].kind == "range" and entries["learning-rate"].choices == "0.00025"
    assert (entries["ent-coef"].low, entries["ent-coef"].high) == ("0.0", "1.0")  # its own bounds
    assert entries["anneal-lr"].kinds == ("categorical",) and entries["anneal-lr"].choices == "true, false"
    assert entries["optimizer"].kinds == ("categorical",) and entries["optimizer"].choices == "adam, sgd"
    assert model.errors() == {"space": "tick at least one parameter to search"}
    assert SweepModel().errors()["space"].startswith("the base run's form describes no parameter")


def test_the_fields_make_the_example_spec_and_its_file_reads_back_as_the_same_spec(tmp_path: Path) -> None:
    model = _filled()
    assert model.errors() == {}
    spec = model.to_spec(_base())
    example = load_spec(Path(__file__).parents[2] / "examples" / "sweeps" / "ppo_cartpole.yaml")
    assert spec == example
    for name in ("spec.yaml", "spec.json"):
        path = tmp_path / name
        path.write_text(spec_text(spec, yaml_file=name.endswith(".yaml")))
        assert load_spec(path) == spec
    assert parse_spec(spec.model_dump_json()) == spec  # what Start sends the daemon


def test_each_field_is_judged_by_the_parameters_own_validator_and_named() -> None:
    model = _filled()
    lr, envs, ent = model.entries["learning-rate"], model.entries["num-envs"], model.entries["ent-coef"]
    lr.low, envs.choices, ent.high = "fast", "1, two", "2"
    model.metric, model.trials, model.window = " ", "0", "1.5"
    model.pruner_options["n_warmup_steps"] = "-3"
    errors = model.errors()
    assert errors == {
        "space.learning-rate.low": "expected a number such as 0.00025 or 2.5e-4, got 'fast'",
        "space.num-envs.choices": "'two': expected a whole number, got 'two'",
        "space.ent-coef.high": "high must be in [0, 1], got 2.0",
        "objective.metric": "name the metric a trial is judged on",
        "objective.window": "expected a whole number, got '1.5'",
        "pruner.n_warmup_steps": "must be at least 0, got -3",
        "trials": "must be at least 1, got 0",
    }
    with pytest.raises(ConfigError, match=r"^sweep spec: field 'space.learning-rate.low': expected a number"):
        model.to_spec(_base())
    # An unticked parameter is not judged.
    lr.searched = envs.searched = ent.searched = False
    model.entries["anneal-lr"].searched = True
    assert "space.learning-rate.low" not in model.errors()


def test_what_only_the_whole_spec_can_judge_is_named_by_parse_spec() -> None:
    model = _filled()
    lr = model.entries["learning-rate"]
    lr.low, lr.high = "0.1", "0.01"
    with pytest.raises(ConfigError) as raised:
        model.to_spec(_base())
    assert "field 'space.learning-rate.float': low (0.1) is above high (0.01)" in str(raised.value)
    assert fields_named(str(raised.value)) == ["space.learning-rate.float"]
    lr.low, model.sampler = "1e-4", "grid"
    with pytest.raises(
        ConfigError, match=r"field 'space\.learning-rate': a grid sampler needs choices or a step"
    ):
        model.to_spec(_base())
    model.sampler, model.name = "tpe", "a sweep"
    with pytest.raises(ConfigError, match="field 'name': 'a sweep' is not a name"):
        model.to_spec(_base())
    assert fields_named("field 'objective.0.metric': x; field 'trials': y") == ["objective.metric", "trials"]


def test_only_the_chosen_pruners_options_are_sent_and_auto_is_kept() -> None:
    model = _filled()
    model.pruner = "hyperband"  # the median pruner's own options stay typed, not sent; report_steps is both's
    assert model.pruner_fields() == ("report_steps", "min_resource", "max_resource", "reduction_factor")
    assert model.pruner_option("min_resource") == "auto" and model.pruner_option("report_steps") == "10000"
    model.pruner_options["max_resource"] = "100"
    spec = model.to_spec(_base())
    assert spec.pruner.model_dump(exclude_defaults=True) == {
        "name": "hyperband",
        "report_steps": 10000,
        "max_resource": 100,
    }
    model.pruner, model.sampler_seed, model.aggregate = "none", "", "max"
    spec = model.to_spec(_base())
    assert spec.pruner.name == "none" and spec.sampler.seed is None
    assert spec.objective[0].aggregate == "max" and spec.objective[0].window == 10  # not asked for max


def test_another_variant_keeps_what_was_typed_for_a_parameter_it_shares() -> None:
    model = _filled()
    dqn = FormSpec(
        variant_label="Algorithm",
        variant="dqn",
        parameters=(
            ParameterSpec("learning-rate", "float", 0.0001),
            ParameterSpec("ent-coef", "str", "auto"),  # another type: starts anew
            ParameterSpec("buffer-size", "int", 10000),
        ),
    )
    model.take_form(dqn)
    assert list(model.entries) == ["learning-rate", "ent-coef", "buffer-size"]
    kept = model.entries["learning-rate"]
    assert (kept.searched, kept.low, kept.high, kept.log) == (True, "1e-4", "0.01", True)
    assert kept.spec.default == 0.0001
    assert not model.entries["ent-coef"].searched and model.entries["ent-coef"].choices == "auto"


def test_the_model_loads_without_qt() -> None:
    code = "import sys, gym_gui.ui.sweep_form.model; print(sorted(m for m in sys.modules if m.startswith('PySide6')))"
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert result.stdout.strip() == "[]"
