"""The sweep spec: read from JSON or YAML, every failure one line naming the field; the search space
checked against the worker's parameter description; the objective's aggregates."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from gym_gui_sdk.contract import FormSpec, ParameterSpec

from gym_gui.core.errors import ConfigError
from gym_gui.core.records import MetricPoint
from gym_gui.storage.home import Home
from gym_gui.sweeps.optimise import aggregate, grid
from gym_gui.sweeps.spec import Objective, check_space, check_storage, load_spec, parse_spec

REPO = Path(__file__).resolve().parents[2]
CONFIG = {
    "worker": "cleanrl",
    "algorithm": "ppo",
    "env_id": "CartPole-v1",
    "seed": 1,
    "budget": {"timesteps": 2048},
}
# What CleanRL's DescribeWorker answers for ppo (a part of it): the script's own arguments by flag
# name, and the flags the config's fields set.
PPO = FormSpec(
    variant="ppo",
    parameters=(
        ParameterSpec("seed", "int"),
        ParameterSpec("total-timesteps", "int"),
        ParameterSpec("learning-rate", "float"),
        ParameterSpec("num-envs", "int"),
        ParameterSpec("ent-coef", "float"),
        ParameterSpec("anneal-lr", "bool"),
        ParameterSpec("exp-name", "str"),
    ),
    mapped={"seed": "seed", "total-timesteps": "budget.timesteps", "exp-name": "exp_name"},
)


def spec(**fields: Any) -> dict[str, Any]:
    return {
        "config": CONFIG,
        "space": {"learning-rate": {"type": "float", "low": 1e-4, "high": 1e-2, "log": True}},
        "objective": {"metric": "charts/episodic_return"},
        "trials": 4,
        **fields,
    }


def refusal(data: dict[str, Any]) -> str:
    with pytest.raises(ConfigError) as caught:
        parse_spec(data)
    message = str(caught.value)
    assert "\n" not in message
    return message


def test_the_example_of_the_issue_reads_as_its_scenario_says() -> None:
    example = load_spec(REPO / "examples" / "sweeps" / "ppo_cartpole.yaml")
    assert example.trials == 24 and example.parallel == 2
    assert example.sampler.name == "tpe" and example.pruner.name == "median"
    rate, envs, ent = (example.space[k] for k in ("learning-rate", "num-envs", "ent-coef"))
    assert rate.type == "float" and rate.log
    assert envs.type == "categorical"
    assert ent.type == "float" and not ent.log
    (objective,) = example.objective
    assert (objective.metric, objective.aggregate, objective.window) == (
        "charts/episodic_return",
        "last_mean",
        20,
    )
    check_space(example, PPO)


def test_json_and_yaml_files_give_the_same_spec(tmp_path: Path) -> None:
    import yaml

    data = spec(objective=[{"metric": "a"}, {"metric": "b", "direction": "minimize"}])
    (tmp_path / "s.json").write_text(json.dumps(data))
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(data))
    assert load_spec(tmp_path / "s.json") == load_spec(tmp_path / "s.yaml")
    assert load_spec(tmp_path / "s.json").directions == ["maximize", "minimize"]


@pytest.mark.parametrize(
    ("fields", "needles"),
    [
        ({"trials": 0}, ["field 'trials'", "greater than or equal to 1"]),
        ({"space": {}}, ["field 'space'"]),
        (
            {"space": {"lr": {"type": "float", "low": 2, "high": 1}}},
            ["field 'space.lr.float'", "low (2) is above high (1)"],
        ),
        (
            {"space": {"lr": {"type": "float", "low": 0, "high": 1, "log": True}}},
            ["space.lr.float", "low > 0"],
        ),
        ({"space": {"lr": {"type": "beta", "low": 0, "high": 1}}}, ["field 'space.lr'", "beta"]),
        ({"space": {"n": {"type": "categorical", "choices": []}}}, ["field 'space.n.categorical.choices'"]),
        ({"objective": {"metric": "x", "aggregate": "median"}}, ["field 'objective.0.aggregate'", "median"]),
        ({"objective": {"metric": "x", "window": 0}}, ["field 'objective.0.window'"]),
        ({"objective": {"metric": "x", "direction": "up"}}, ["field 'objective.0.direction'"]),
        ({"sampler": {"name": "bayes"}}, ["field 'sampler.name'", "bayes"]),
        (
            {"pruner": {"name": "median", "reduction_factor": 4}},
            ["field 'pruner'", "median pruner takes", "reduction_factor"],
        ),
        ({"pruner": {"name": "hyperband", "min_resource": 0}}, ["field 'pruner'", "min_resource"]),
        ({"parallel": 0}, ["field 'parallel'"]),
        ({"seeds": 0}, ["field 'seeds'"]),
        ({"storage": "/tmp/study.db"}, ["field 'storage'", "not an SQLAlchemy URL"]),
        ({"study": "../x"}, ["field 'study'", "not a name"]),
        ({"name": "a b"}, ["field 'name'", "not a name"]),
        ({"config": {**CONFIG, "budget": {}}}, ["field 'config.budget'"]),
        ({"config": {**CONFIG, "mode": "evaluate"}}, ["config"]),
        ({"frobnicate": 1}, ["field 'frobnicate'", "Extra inputs"]),
        ({"sampler": {"name": "grid"}}, ["field 'space.learning-rate'", "grid sampler"]),
        (
            {"objective": [{"metric": "a"}, {"metric": "b"}], "pruner": {"name": "median"}},
            ["field 'pruner'", "single-objective"],
        ),
        ({"seeds": 3, "config": {**CONFIG, "seed": None}}, ["field 'config.seed'"]),
    ],
)
def test_each_spec_error_is_one_line_naming_the_field(fields: dict[str, Any], needles: list[str]) -> None:
    message = refusal(spec(**fields))
    assert message.startswith("sweep spec: ")
    for needle in needles:
        assert needle in message, message


def test_a_relative_sqlite_storage_is_next_to_the_spec_file(tmp_path: Path) -> None:
    (tmp_path / "s.json").write_text(json.dumps(spec(storage="sqlite:///studies/x.db")))
    assert load_spec(tmp_path / "s.json").storage == f"sqlite:///{tmp_path.resolve()}/studies/x.db"
    (tmp_path / "t.json").write_text(json.dumps(spec(storage="postgresql+psycopg://u@host/db")))
    assert load_spec(tmp_path / "t.json").storage == "postgresql+psycopg://u@host/db"


@pytest.mark.parametrize(
    "url",
    ["postgresql+psycopg://u:s3cr3t-pw@host:5432/db", "postgresql+psycopg://u@host/db?password=s3cr3t-pw"],
)
def test_a_storage_url_with_a_password_is_refused_without_showing_it(url: str) -> None:
    with pytest.raises(ConfigError) as refused:
        parse_spec(spec(storage=url))
    message = str(refused.value)
    assert "field 'storage': the URL holds a password" in message and "PGPASSWORD" in message
    assert "s3cr3t-pw" not in message and "***" in message


def test_a_file_that_is_not_a_spec_says_so_in_one_line(tmp_path: Path) -> None:
    bad_yaml = tmp_path / "bad.yaml"
    bad_yaml.write_text("config: [unclosed\n")
    listed = tmp_path / "list.json"
    listed.write_text("[1, 2]")
    for path, needle in [
        (bad_yaml, "not valid YAML"),
        (listed, "not a mapping"),
        (tmp_path / "missing.yaml", "cannot read it"),
    ]:
        with pytest.raises(ConfigError) as caught:
            load_spec(path)
        assert needle in str(caught.value) and str(path) in str(caught.value)
        assert "\n" not in str(caught.value)


@pytest.mark.parametrize(
    ("space", "needles"),
    [
        (
            {"learning-rat": {"type": "float", "low": 0.1, "high": 1}},
            ["space.learning-rat", "no parameter 'learning-rat'", "ent-coef, learning-rate, num-envs"],
        ),
        (
            {"anneal-lr": {"type": "float", "low": 0.1, "high": 1}},
            ["space.anneal-lr", "float range on a parameter of type bool"],
        ),
        ({"num-envs": {"type": "float", "low": 1, "high": 8}}, ["space.num-envs", "integer parameter"]),
        (
            {"num-envs": {"type": "categorical", "choices": [1, "two"]}},
            ["space.num-envs", "'two' is not a value of num-envs: expected a whole number, got 'two'"],
        ),
        ({"seed": {"type": "int", "low": 1, "high": 8}}, ["space.seed", "set by the config field 'seed'"]),
        (
            {"total_timesteps": {"type": "int", "low": 1, "high": 8}},
            ["space.total_timesteps", "budget.timesteps"],
        ),
    ],
)
def test_the_space_is_checked_against_the_workers_parameters(
    space: dict[str, Any], needles: list[str]
) -> None:
    with pytest.raises(ConfigError) as caught:
        check_space(parse_spec(spec(space=space)), PPO)
    for needle in needles:
        assert needle in str(caught.value), caught.value


def test_a_described_worker_with_generated_parameters_is_swept_by_its_names() -> None:
    # Spade BDI's description: its own parameters, ranges and choices included.
    described = FormSpec(
        parameters=(
            ParameterSpec("alpha", "float", 0.1, low=0, high=1, open_low=True),
            ParameterSpec("mode", "str", "fast", choices=("fast", "deliberate")),
        )
    )
    good = spec(
        space={
            "alpha": {"type": "float", "low": 0.1, "high": 0.9},
            "mode": {"type": "categorical", "choices": ["fast"]},
        }
    )
    check_space(parse_spec(good), described)
    with pytest.raises(ConfigError, match="'slow' is not a value of mode: must be one of fast, deliberate"):
        check_space(parse_spec(spec(space={"mode": {"type": "categorical", "choices": ["slow"]}})), described)
    with pytest.raises(ConfigError, match="int range on a parameter of type str with choices"):
        check_space(parse_spec(spec(space={"mode": {"type": "int", "low": 1, "high": 2}})), described)
    # The range's bounds are values of the parameter too: alpha is in (0, 1].
    with pytest.raises(ConfigError, match=r"space.alpha'.*1.5 is not a value of alpha: must be in \(0, 1\]"):
        check_space(parse_spec(spec(space={"alpha": {"type": "float", "low": 0.5, "high": 1.5}})), described)
    with pytest.raises(ConfigError, match="describes no parameters"):
        check_space(parse_spec(good), FormSpec())


def points(*values: float) -> list[MetricPoint]:
    return [MetricPoint("r", step=i * 10, wall_time=float(i), value=v) for i, v in enumerate(values)]


def test_the_objective_aggregates_the_metric_as_named() -> None:
    series = points(1, 5, 3, 4)
    assert aggregate(Objective(metric="r", aggregate="last_mean", window=2), series) == 3.5
    assert aggregate(Objective(metric="r", aggregate="last_mean", window=20), series) == 13 / 4
    assert aggregate(Objective(metric="r", aggregate="mean"), series) == 13 / 4
    assert aggregate(Objective(metric="r", aggregate="max"), series) == 5
    assert aggregate(Objective(metric="r", aggregate="min"), series) == 1
    assert aggregate(Objective(metric="r", aggregate="last"), series) == 4
    assert aggregate(Objective(metric="r"), []) is None


def test_a_grid_holds_every_choice_and_stepped_value() -> None:
    data = spec(
        space={
            "num-envs": {"type": "categorical", "choices": [1, 2]},
            "ent-coef": {"type": "float", "low": 0.0, "high": 0.1, "step": 0.05},
            "num-steps": {"type": "int", "low": 16, "high": 64, "step": 16},
        },
        sampler={"name": "grid"},
    )
    assert grid(parse_spec(data)) == {
        "num-envs": [1, 2],
        "ent-coef": [0.0, 0.05, 0.1],
        "num-steps": [16, 32, 48, 64],
    }


# ------------------------------------------------------------------ where the study may live


@pytest.fixture
def sweeps_home(tmp_path: Path) -> Home:
    """A home with a registry, a run's database and one sweep's study in it."""
    home = Home(tmp_path / "home").ensure()
    home.registry_path.touch()
    run = home.run_dir("CartPole-v1__ppo__1__1700000000")
    run.mkdir()
    (run / "telemetry.sqlite").touch()
    home.sweep_dir("ppo-CartPole-v1-1700000000").mkdir(parents=True)
    (tmp_path / "through").symlink_to(home.root)
    return home


@pytest.mark.parametrize(
    "url",
    [
        "sqlite:///{home}/registry.sqlite",
        "sqlite+pysqlite:///{home}/registry.sqlite",
        "sqlite:///{home}/runs/CartPole-v1__ppo__1__1700000000/telemetry.sqlite",
        "sqlite:///{home}/runs/../registry.sqlite",
        "sqlite:///{tmp}/through/registry.sqlite",  # a symlink into the home
        "sqlite:///file:{home}/registry.sqlite?mode=rwc&uri=true",  # SQLite's URI form
        "sqlite:///file://{home}/registry.sqlite?uri=true",
        "sqlite:///registry.sqlite",  # relative: where the daemon runs, here the home
        "sqlite:///{home}/optuna.db",  # a file of no owner yet, still the home's
        "sqlite:///{home}/sweeps/ppo-CartPole-v1-1700000000/other.db",
    ],
)
def test_a_study_in_a_database_of_the_homes_is_refused_naming_the_field(
    sweeps_home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, url: str
) -> None:
    monkeypatch.chdir(sweeps_home.root)
    given = url.format(home=sweeps_home.root, tmp=tmp_path)
    with pytest.raises(ConfigError) as refused:
        check_storage(given, sweeps_home)
    message = str(refused.value)
    assert message.startswith("sweep spec: field 'storage': ") and "\n" not in message
    assert "inside the gym_gui home" in message


@pytest.mark.parametrize(
    "url",
    [
        "sqlite:///{home}/sweeps/ppo-CartPole-v1-1700000000/study.db",  # a sweep's own study, joined again
        "sqlite:///{tmp}/studies/study.db",
        "sqlite:///:memory:",
        "sqlite://",
        "postgresql+psycopg://u@host/db",
    ],
)
def test_a_study_outside_the_home_or_in_a_sweeps_own_place_is_taken(
    sweeps_home: Home, tmp_path: Path, url: str
) -> None:
    check_storage(url.format(home=sweeps_home.root, tmp=tmp_path), sweeps_home)
