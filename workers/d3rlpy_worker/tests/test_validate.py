"""What the d3rlpy kind offers and refuses before anything is stored: its form from d3rlpy's own config classes,
and one line naming the field for an unknown algorithm, a bad parameter, a budget of part of an epoch,
a run without a dataset, and a continuous algorithm on a discrete dataset."""

from __future__ import annotations

import pytest

from tests.support import assert_one_line_error, gym_gui
from workers.d3rlpy_worker.tests.support import OfflineHome

TRAIN = ("train", "--worker", "d3rlpy", "--dataset", "cartpole/random-v0", "--steps", "200")


def test_the_form_comes_from_d3rlpys_config_dataclasses(offline: OfflineHome) -> None:
    description = offline.client.describe_worker("d3rlpy", algorithm="discrete_cql")
    form = description.form
    names = [variant.name for variant in form.variants]
    assert {"discrete_cql", "discrete_bc", "nfq", "dqn", "double_dqn", "discrete_sac"} <= set(names)
    assert {"bc", "cql", "iql", "td3_plus_bc", "awac", "bcq", "plas"} <= set(names)
    assert "random_policy" not in names and "decision_transformer" not in names  # no fit on transitions
    learning_rate = form.parameter("learning_rate")
    assert learning_rate is not None and learning_rate.type == "float" and learning_rate.default == 6.25e-05
    assert learning_rate.help == "Learning rate."  # the config class's docstring
    assert form.parameter("alpha") is not None and form.parameter("steps_per_epoch") is not None
    assert form.parameter("encoder_factory") is None  # factories keep d3rlpy's defaults
    listed = gym_gui("algorithms", "--worker", "d3rlpy", home=offline.home.root)
    assert listed.returncode == 0 and "discrete_cql" in listed.stdout, listed.stderr


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (("--algo", "nope"), ("field 'algorithm'", "d3rlpy has no algorithm 'nope'")),
        (("--algo", "discrete_cql", "--param", "learning_rate=-1"), ("field 'params.learning_rate'",)),
        (
            ("--algo", "discrete_cql", "--param", "batch_size=2.5"),
            ("field 'params.batch_size'", "whole number"),
        ),
        (("--algo", "discrete_cql", "--param", "bogus=1"), ("field 'params.bogus'", "unknown parameter")),
        (
            ("--algo", "discrete_cql", "--param", "steps_per_epoch=150"),
            ("field 'budget.timesteps'", "epochs"),
        ),
        (
            (
                "--algo",
                "cql",
            ),
            ("field 'algorithm'", "cql takes continuous actions", "'cartpole/random-v0'"),
        ),
        (("--algo", "iql"), ("field 'algorithm'", "iql takes continuous actions")),
    ],
)
def test_bad_input_is_refused_before_anything_is_stored(
    offline: OfflineHome, args: tuple[str, ...], needles: tuple[str, ...]
) -> None:
    before = len(offline.client.list_runs())
    assert_one_line_error(gym_gui(*TRAIN, *args, home=offline.home.root), *needles)
    assert len(offline.client.list_runs()) == before


def test_a_run_without_a_dataset_or_with_one_not_in_the_home_is_refused(offline: OfflineHome) -> None:
    before = len(offline.client.list_runs())
    bare = ("train", "--worker", "d3rlpy", "--algo", "discrete_bc", "--env", "CartPole-v1", "--steps", "200")
    assert_one_line_error(gym_gui(*bare, home=offline.home.root), "field 'dataset'")
    missing = gym_gui(*bare, "--dataset", "cartpole/absent-v0", home=offline.home.root)
    assert_one_line_error(missing, "cartpole/absent-v0")
    assert len(offline.client.list_runs()) == before
