"""The forms' parameter model on its own: no Qt, no widgets — fields in, RunConfig and saved values out."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from gym_gui_sdk.contract import EnvChoice, FormSpec, ParameterSpec, Section

from gym_gui.core.errors import ConfigError
from gym_gui.storage.home import Home
from gym_gui.ui.forms.model import RunModel
from gym_gui.ui.forms.params import Param, Params, parse_float, parse_int
from gym_gui.workers import LaunchContext, worker_catalog

# A script's form in the shape the CleanRL worker's describe gives it.
MAPPED = {"exp-name": "algorithm", "env-id": "env_id", "seed": "seed", "total-timesteps": "budget.timesteps"}
DQN = FormSpec(
    variant_label="Algorithm",
    variant="dqn",
    mapped=MAPPED,
    sections=frozenset({Section.TRACKING, Section.GPU, Section.WARM_START, Section.CHECKPOINTS}),
    budget_bounds=("timesteps",),
    parameters=(
        ParameterSpec("exp-name", "str", "dqn"),
        ParameterSpec("seed", "int", 7),
        ParameterSpec("env-id", "str", "Acrobot-v1"),
        ParameterSpec("total-timesteps", "int", 300000),
        ParameterSpec("learning-rate", "float", 0.00025),
        ParameterSpec("buffer-size", "int", 10000),
        ParameterSpec("save-model", "bool", False, bool_style="store_true"),
        ParameterSpec("layers", "list[int]", [64, 64]),
        ParameterSpec("schedule", "str", None, choices=("linear", "cosine")),
    ),
)


def _with_envs(*envs: EnvChoice) -> FormSpec:
    return FormSpec.from_json({**DQN.to_json(), "envs": [vars(env) for env in envs]})


def _dqn() -> RunModel:
    model = RunModel("cleanrl", streams_steps=False)
    model.use_parameters(DQN)
    return model


def test_numbers_are_read_as_people_type_them() -> None:
    assert parse_int("500_000") == 500_000 and parse_int("1e6") == 1_000_000 and parse_int(" 12 ") == 12
    with pytest.raises(ValueError, match="whole number"):
        parse_int("12.5")
    assert parse_float("2.5e-4") == 0.00025
    with pytest.raises(ValueError, match="expected a number"):
        parse_float("fast")
    with pytest.raises(ValueError, match="NaN"):
        parse_float("nan")


def test_a_param_holds_its_field_and_knows_its_default() -> None:
    rate = Param(ParameterSpec("lr", "float", 0.00025))
    assert rate.editor == "text" and rate.raw == "0.00025" and rate.is_pristine()
    assert rate.changed_value() == (False, 0.00025)
    rate.raw = "3e-4"
    assert rate.changed_value() == (True, 0.0003) and not rate.is_pristine()
    rate.raw = ""  # empty: the script's default
    assert rate.value() is None and rate.changed_value() == (False, None)
    rate.raw = "fast"
    assert "expected a number" in rate.error()

    layers = Param(ParameterSpec("layers", "list[int]", [64, 64]))
    assert layers.raw == "64 64" and layers.changed_value() == (False, [64, 64])
    layers.raw = "32, 32 16"
    assert layers.value() == [32, 32, 16]

    choice = Param(ParameterSpec("schedule", "str", None, choices=("linear", "cosine")))
    assert choice.editor == "choice" and choice.options()[0] == ("(script default)", None)
    choice.set_raw("exponential")  # not one of its choices: skipped
    assert choice.raw is None
    choice.set_raw("cosine")
    assert choice.changed_value() == (True, "cosine")

    flag = Param(ParameterSpec("anneal", "bool", True, flag="--anneal", bool_style="store_true"))
    assert flag.editor == "check" and flag.raw is True
    flag.raw = False
    assert "--anneal cannot be turned off" in flag.error()


def test_a_script_brings_its_arguments_and_its_defaults_for_the_common_fields() -> None:
    model = _dqn()
    # The flags the daemon sets from a field are not parameters; their defaults fill the fields.
    assert model.params.names() == ["learning-rate", "buffer-size", "save-model", "layers", "schedule"]
    assert (model.env_id, model.seed, model.budget_kind, model.budget) == (
        "Acrobot-v1",
        7,
        "timesteps",
        "300000",
    )
    assert model.errors() == {}
    config = model.to_config()
    assert (config.algorithm, config.env_id, config.seed, config.budget.timesteps) == (
        "dqn",
        "Acrobot-v1",
        7,
        300000,
    )
    assert config.params == {}  # nothing changed: the script's defaults apply

    model.params.items["learning-rate"].raw = "1e-3"
    model.params.items["save-model"].raw = True
    assert model.to_config().params == {"learning-rate": 0.001, "save-model": True}


def test_each_field_says_why_it_is_not_valid() -> None:
    model = _dqn()
    model.env_id = " "
    model.budget = "many"
    model.checkpoint_every = "0"
    model.params.items["buffer-size"].raw = "12.5"
    assert model.errors() == {
        "env_id": "choose an environment",
        "budget.timesteps": "expected a whole number, got 'many'",
        "checkpoints.every_steps": "must be at least 1",
        "params.buffer-size": "expected a whole number, got '12.5'",
    }
    with pytest.raises(ConfigError, match="field 'env_id': choose an environment"):
        model.to_config()
    model.env_id, model.budget, model.checkpoint_every = "CartPole-v1", "1e4", ""
    model.params.items["buffer-size"].raw = "5000"
    config = model.to_config()
    assert config.budget.timesteps == 10_000 and config.checkpoints.every_steps is None
    assert config.params == {"buffer-size": 5000}


def test_only_an_env_the_script_trains_on_in_its_bundle_makes_a_run() -> None:
    envs = (
        EnvChoice("CartPole-v1"),
        EnvChoice("Acrobot-v1"),
        EnvChoice("Taxi-v4", "Taxi-v4 is not registered in gym 0.23.1 here; it has Taxi-v3, but …"),
    )
    # A remembered env the script cannot train on gives way to the script's default env …
    model = RunModel("cleanrl", streams_steps=False)
    model.restore({"algorithm": "dqn", "defaults_from": "dqn", "env_id": "Taxi-v4"})
    model.use_parameters(_with_envs(*envs), "Acrobot-v1")
    assert model.env_id == "Acrobot-v1" and model.errors() == {}
    assert model.trainable_envs() == ["CartPole-v1", "Acrobot-v1"]
    # … or, when that is not among them either, to the first one it trains on.
    model.use_parameters(_with_envs(*envs, EnvChoice("Pendulum-v1", "continuous")), "Pendulum-v1")
    model.env_id = "Pendulum-v1"
    assert model.errors() == {"env_id": "continuous"}
    model.use_parameters(_with_envs(*envs, EnvChoice("Pendulum-v1", "continuous")), "Pendulum-v1")
    assert model.env_id == "CartPole-v1"

    # Set anyway (a config file, a stale value), it is not a run: the reason names it.
    model.env_id = "Taxi-v4"
    assert model.errors() == {"env_id": envs[2].reason}
    with pytest.raises(ConfigError, match="field 'env_id': Taxi-v4 is not registered"):
        model.to_config()
    model.env_id = "MiniGrid-Empty-5x5-v0"
    assert "not among the environments dqn trains on" in model.errors()["env_id"]
    # While the bundle's word is not there (no bundle yet), any id goes to the daemon to judge.
    model.use_parameters(DQN)
    assert model.form.envs is None and "env_id" not in model.errors()


def test_tracking_and_the_key_that_is_never_remembered() -> None:
    model = _dqn()
    model.tracking.wandb_api_key = "key-9c1e"
    model.tracking.wandb_project = "cockpit"
    assert model.secret_env() == {}  # W&B disabled: the key goes nowhere
    assert model.to_config().tracking.wandb_project is None
    model.tracking.wandb_mode = "online"
    model.resources.gpu_mandatory = True  # without gpu it is not asked for
    assert model.secret_env() == {"WANDB_API_KEY": "key-9c1e"}
    config = model.to_config()
    assert config.tracking.wandb_project == "cockpit" and not config.resources.gpu_mandatory
    assert "key-9c1e" not in config.model_dump_json() and "key-9c1e" not in repr(model.values())


def test_a_self_hosted_wandb_server_and_its_login(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    netrc = tmp_path / "netrc"
    netrc.write_text("machine wandb.lab:8080\n  login user\n  password key-lab-51f2\n")
    netrc.chmod(0o600)
    monkeypatch.setenv("NETRC", str(netrc))
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    model = _dqn()
    model.tracking.wandb_mode = "online"
    model.tracking.wandb_server = "http://wandb.lab:8080/"
    assert model.to_config().tracking.wandb_base_url == "http://wandb.lab:8080"
    assert model.secret_env() == {"WANDB_API_KEY": "key-lab-51f2"}  # the `wandb login` of that server
    assert RunModel.from_values("cleanrl", model.values()).tracking.wandb_server == "http://wandb.lab:8080/"
    model.tracking.wandb_server = "ftp://wandb.lab"
    with pytest.raises(ConfigError, match="wandb_base_url"):
        model.to_config()
    model.tracking.wandb_mode = "disabled"  # not tracked: the server is not part of the run
    assert model.to_config().tracking.wandb_base_url is None and model.secret_env() == {}


def test_saved_values_come_back_and_typed_params_return_with_their_script() -> None:
    model = _dqn()
    model.params.items["learning-rate"].raw = "0.01"
    model.tracking.wandb_mode = "offline"
    model.notes = "first try"
    model.keep_typed()  # another script is chosen: what was typed for dqn is kept
    assert model.params.names() == [] and model.saved_params == {"dqn": {"learning-rate": "0.01"}}

    values = model.values()
    again = RunModel.from_values("cleanrl", values)
    assert again.values() == values
    assert (again.algorithm, again.tracking.wandb_mode, again.notes) == ("dqn", "offline", "first try")
    again.env_id = "CartPole-v1"  # changed after the defaults were taken: a remembered script keeps it
    again.use_parameters(DQN)
    assert again.env_id == "CartPole-v1"
    assert again.to_config().params == {"learning-rate": 0.01}

    # Entries of the wrong type are skipped, never taken.
    broken = RunModel.from_values("cleanrl", {"seed": "7", "gpu": "yes", "wandb_mode": "loud", "params": []})
    assert broken.values() == RunModel("cleanrl").values()

    # What CleanRL's own form remembered before there was one form comes back too.
    old = RunModel.from_values(
        "cleanrl", {"algorithm": "ppo", "total_timesteps": "4096", "params": {"ppo": {}}}
    )
    assert (old.algorithm, old.budget_kind, old.budget) == ("ppo", "timesteps", "4096")


def test_a_kind_without_variants_keeps_parameters_until_they_are_described() -> None:
    # Remembered by a version whose forms of kinds without variants kept a spin box and flat params.
    model = RunModel.from_values(
        "random",
        {"env_id": "Taxi-v4", "budget_kind": "timesteps", "budget": 77, "params": {"epsilon": "0.5"}},
    )
    assert model.params.names() == []
    model.use_parameters(FormSpec(parameters=(ParameterSpec("epsilon", "float", 0.1, low=0, high=1),)))
    assert model.params.raws() == {"epsilon": "0.5"}
    config = model.to_config()
    assert (config.env_id, config.budget.timesteps, config.params) == ("Taxi-v4", 77, {"epsilon": 0.5})
    model.budget = "0"
    assert model.errors() == {"budget.timesteps": "must be at least 1"}
    model.budget = "77"
    model.params.items["epsilon"].raw = "1.5"  # the contract's validator judges a typed value
    assert model.errors() == {"params.epsilon": "must be in [0, 1], got 1.5"}
    model.params.items["epsilon"].raw = "0.5"
    # A kind declaring no variant and no sections sends none of their fields.
    assert "algorithm" not in model.config_data() and "tracking" not in model.config_data()


def test_the_real_ppo_arguments_leave_nothing_changed(home: Home) -> None:
    launcher = (
        worker_catalog()
        .plugin("cleanrl")
        .launcher(LaunchContext(home, worker_catalog().bundle_directory(home.bundles_dir)))
    )
    assert launcher is not None
    described = launcher.describe({"algorithm": "ppo"})
    model = RunModel("cleanrl", streams_steps=False)
    model.use_parameters(described)
    assert not set(described.mapped) & set(model.params.names())
    assert "learning-rate" in model.params.names() and model.errors() == {}
    assert model.env_id == "CartPole-v1" and "Acrobot-v1" in model.trainable_envs()
    assert model.to_config().params == {}


def test_the_model_loads_without_qt() -> None:
    code = "import sys, gym_gui.ui.forms.model, gym_gui.ui.forms.sections, gym_gui.ui.forms.params; print(sorted(m for m in sys.modules if m.startswith('PySide6')))"
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert result.stdout.strip() == "[]"


def test_params_are_in_the_scripts_order() -> None:
    params = Params(DQN.parameters, skip=MAPPED)
    assert [p.name for p in params] == params.names() and len(params) == 5


def test_the_llm_form_keeps_its_prompt_as_typed_its_key_secret_and_its_env_dependent_defaults(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    launcher = (
        worker_catalog()
        .plugin("llm")
        .launcher(LaunchContext(Home(), worker_catalog().bundle_directory(Home().bundles_dir)))
    )
    assert launcher is not None
    model = RunModel("llm", env_id="FrozenLake-v1", secrets={"LLM_API_KEY": ""})
    model.use_parameters(launcher.describe({"env_id": "FrozenLake-v1"}))
    prompt = model.params.get("system_prompt")
    assert prompt is not None and prompt.editor == "multiline" and prompt.raw.endswith("\n")
    model.secrets["LLM_API_KEY"] = ""  # nothing typed: the key of gym_gui's environment
    monkeypatch.setenv("LLM_API_KEY", "sk-shell")
    assert model.secret_env() == {"LLM_API_KEY": "sk-shell"}
    model.secrets["LLM_API_KEY"] = " sk-typed "
    assert model.to_config().params == {} and model.secret_env() == {"LLM_API_KEY": "sk-typed"}
    assert "sk-typed" not in str(model.values())

    # Another family's description brings its template, unless the prompt was edited.
    model.env_id = "MiniGrid-DoorKey-5x5-v0"
    model.use_parameters(launcher.describe({"env_id": model.env_id}))
    prompt = model.params.get("system_prompt")
    assert prompt is not None and prompt.raw.startswith("You control an agent in the grid world")
    prompt.raw = "Play $env_id.\n  Actions:\n$actions\n"
    model.use_parameters(launcher.describe({"env_id": "Taxi-v4"}))
    assert model.to_config().params == {"system_prompt": "Play $env_id.\n  Actions:\n$actions\n"}
    assert model.values()["params"] == {"": {"system_prompt": "Play $env_id.\n  Actions:\n$actions\n"}}


def test_start_from_names_a_run_and_is_not_remembered() -> None:
    model = _dqn()
    model.env_id = "CartPole-v1"
    assert model.to_config().warm_start is None
    model.warm_start = "../registry"
    assert "invalid run id" in model.errors()["warm_start.run_id"]
    model.warm_start = " CartPole-v1__dqn__1__1700000000 "
    config = model.to_config()
    assert config.warm_start is not None and config.warm_start.run_id == "CartPole-v1__dqn__1__1700000000"
    assert config.warm_start.checkpoint is None  # the parent's final model
    assert "warm_start" not in model.values()  # a choice per run: the next form starts from new weights
    model.warm_start = "CartPole-v1__dqn__1__1700000000:checkpoints/step_1024.cleanrl_model"
    started = model.to_config().warm_start
    assert started is not None and started.checkpoint == "checkpoints/step_1024.cleanrl_model"
    model.warm_start = "CartPole-v1__dqn__1__1700000000:bad\x00path"
    assert "control character" in model.errors()["warm_start.run_id"]
