"""The CORL kind's form, from a checkout's scripts and a script's own pyrallis TrainConfig, as the daemon
describes it to the window and the CLI."""

from __future__ import annotations

import shutil
from pathlib import Path

from gym_gui_sdk.contract import ParameterSpec, Section

from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.home import Home
from tests.support import gym_gui
from workers.corl_worker.tests.support import CHECKOUT


def test_a_scripts_train_config_is_its_form_with_the_fields_gym_gui_sets_mapped(
    corl_daemon: tuple[DaemonClient, Home],
) -> None:
    client, _home = corl_daemon
    form = client.describe_worker("corl", algorithm="tiny_bc", scripts_dir=str(CHECKOUT)).form
    assert [variant.name for variant in form.variants] == ["tiny_bc"] and form.variants[0].runnable
    assert form.variant_label == "Algorithm" and form.variant == "tiny_bc"
    assert form.sections == frozenset({Section.DATASETS, Section.TRACKING, Section.GPU})
    assert form.mapped == {
        "max_timesteps": "budget.timesteps",
        "seed": "seed",
        "device": "resources.gpu",
        "project": "tracking.wandb_project",
        "env": "env_id",
    }
    by_name = {parameter.name: parameter for parameter in form.parameters}
    # Each field with its type, its default and the comment above it; the run's own checkpoints path is
    # not one of them, and the env (a D4RL dataset's name by default) is the dataset's.
    assert by_name["lr"] == ParameterSpec("lr", "float", 0.001, "learning rate", flag="--lr")
    assert by_name["hidden"] == ParameterSpec(
        "hidden", "list[int]", [32], "hidden layer sizes", flag="--hidden"
    )
    assert by_name["normalize"].default is True and by_name["normalize"].type == "bool"
    assert by_name["max_timesteps"].default == 1_000_000
    assert by_name["env"].default is None
    assert "checkpoints_path" not in by_name


def test_a_checkout_lists_its_offline_scripts_greying_those_the_bundle_cannot_run(
    corl_daemon: tuple[DaemonClient, Home], tmp_path: Path
) -> None:
    client, home = corl_daemon
    checkout = tmp_path / "CORL"
    shutil.copytree(CHECKOUT, checkout)
    offline = checkout / "algorithms" / "offline"
    (offline / "rebrac.py").write_text(
        "# source: https://github.com/tinkoff-ai/ReBRAC\nimport jax\nimport pyrallis\n"
    )
    (offline / "plain.py").write_text("import gym\n\ndef train():\n    pass\n")
    form = client.describe_worker("corl", scripts_dir=str(checkout)).form
    assert [(v.name, v.runnable, v.reason, v.summary) for v in form.variants] == [
        ("plain", False, "it has no pyrallis TrainConfig", ""),
        (
            "rebrac",
            False,
            "needs jax, which the corl bundle lacks",
            "source: https://github.com/tinkoff-ai/ReBRAC",
        ),
        ("tiny_bc", True, "", ""),
    ]
    # Without a checkout the form says where the scripts come from.
    assert "--scripts-dir" in client.describe_worker("corl").form.note

    listed = gym_gui("algorithms", "--worker", "corl", "--scripts-dir", str(checkout), home=home.root)
    assert listed.returncode == 0, listed.stderr
    assert "needs jax, which the corl bundle lacks" in listed.stdout
    fields = gym_gui(
        "algorithms", "--worker", "corl", "--scripts-dir", str(checkout), "--algo", "tiny_bc", home=home.root
    )
    assert fields.returncode == 0, fields.stderr
    assert "--eval_freq" in fields.stdout and "evaluation frequency" in fields.stdout
