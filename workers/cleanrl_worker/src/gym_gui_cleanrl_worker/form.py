"""The CleanRL kind's run form as the SDK's contract types it: scripts as variants, their arguments as parameters.

The describe helper (``describe.py``, run in the bundle) answers plain JSON about the scripts; this
module turns those answers into the :class:`FormSpec` the plugin hands gym_gui. It imports the SDK's
contract only, so it is plain Python in either environment.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from gym_gui_sdk.contract import EnvChoice, FormSpec, ParameterSpec, Section, Variant

# The script flags gym_gui sets from a RunConfig field (CleanRLLauncher._mapped), each with that field.
# The form offers these through the config's own fields, never as parameters.
MAPPED_FLAGS: dict[str, str] = {
    "exp-name": "algorithm",
    "env-id": "env_id",
    "seed": "seed",
    "total-timesteps": "budget.timesteps",
    "cuda": "resources.gpu",
    "track": "tracking.wandb_mode",
    "wandb-project-name": "tracking.wandb_project",
    "wandb-entity": "tracking.wandb_entity",
}
# Script flags the form does not offer and a run may not set, each with why. dqn's and c51's
# --upload-model and --hf-entity push the model to the Hugging Face Hub, which cannot work here:
# the bundle has no huggingface_hub and no token reaches a script. Withheld until gym_gui
# publishes models itself.
_NO_PUBLISHING = (
    "is not offered: publishing a model to the Hugging Face Hub is not available yet "
    "(the cleanrl bundle has no huggingface_hub, and no token reaches a script)"
)
WITHHELD_FLAGS: dict[str, str] = {"upload-model": _NO_PUBLISHING, "hf-entity": _NO_PUBLISHING}
# The kind's own parameters (never a script's flag): where the scripts and their interpreter come from.
SOURCE_PARAMS = ("scripts_dir", "python")


@dataclass(frozen=True)
class ScriptSource:
    """Where a run's scripts and interpreter come from: a user's CleanRL checkout (``scripts_dir``) and
    interpreter (``python``), each None for the bundle's own (the run's params of those names)."""

    scripts_dir: str | None = None
    python: str | None = None

    @classmethod
    def of(cls, values: Mapping[str, Any]) -> ScriptSource:
        """The source a run's params (or a describe query) name; empty values are the bundle's."""
        found = {name: values.get(name) or None for name in SOURCE_PARAMS}
        return cls(**{name: value if isinstance(value, str) else None for name, value in found.items()})

    @property
    def bundled(self) -> bool:
        """Whether the bundle's own scripts run in the bundle's own interpreter."""
        return self.scripts_dir is None and self.python is None


def script_params(params: Mapping[str, Any]) -> dict[str, Any]:
    """A run's params without the kind's own (:data:`SOURCE_PARAMS`): the script's flags."""
    return {name: value for name, value in params.items() if name not in SOURCE_PARAMS}


# The metric CleanRL's scripts log each finished episode's return under (the bridge reads it from
# their output; the kind's WorkerSpec.return_metric).
RETURN_METRIC = "charts/episodic_return"
# What a CleanRL form offers besides the script's arguments.
SECTIONS = frozenset({Section.TRACKING, Section.GPU, Section.WARM_START, Section.CHECKPOINTS})
# A form no one has filled yet starts on ppo's own setting: a first run made before the bundle is
# installed (it comes with that run) is one ppo can train on.
STARTING = {"algorithm": "ppo", "env_id": "CartPole-v1", "seed": 1, "budget.timesteps": 500_000}


def _base(**fields: Any) -> FormSpec:
    """The parts of every CleanRL form: a script to choose, steps as its budget, the mapped flags."""
    return FormSpec(
        variant_label="Algorithm",
        mapped=MAPPED_FLAGS,
        sections=SECTIONS,
        budget_bounds=("timesteps",),
        starting=STARTING,
        **fields,
    )


def variants(algorithms: Sequence[Mapping[str, Any]]) -> tuple[Variant, ...]:
    """The scripts of a ``--list`` answer as variants (those that cannot run here greyed with why)."""
    return tuple(
        Variant(
            name=str(entry["name"]),
            runnable=bool(entry.get("runnable", True)),
            reason=str(entry.get("reason") or ""),
            summary=str(entry.get("env_family") or ""),
            default_env=str(entry.get("default_env") or ""),
        )
        for entry in algorithms
    )


# The scripts' flags that count things, with the least each takes: the scripts declare no bounds, and
# with fewer they fail once running (no environments, a batch divided into no minibatches) or
# learn nothing. C51 spreads its value distribution over at least two atoms.
COUNTS: dict[str, int] = {
    "num-envs": 1,
    "num-steps": 1,
    "num-minibatches": 1,
    "update-epochs": 1,
    "batch-size": 1,
    "buffer-size": 1,
    "train-frequency": 1,
    "target-network-frequency": 1,
    "policy-frequency": 1,
    "n-atoms": 2,
}


def parameter(argument: Mapping[str, Any]) -> ParameterSpec:
    """One of a script's arguments (an item of a ``--algo`` answer's ``params``) as the parameter its
    flag takes, a count bounded from below (:data:`COUNTS`)."""
    spec = ParameterSpec.from_json(dict(argument))
    least = COUNTS.get(spec.name)
    if least is not None and spec.item_type == "int" and spec.low is None:
        return replace(spec, low=least)
    return spec


def parameters(arguments: Mapping[str, Any]) -> tuple[ParameterSpec, ...]:
    """A script's arguments (a ``--algo`` answer) as parameters: the ones its flags take, but for
    :data:`WITHHELD_FLAGS`."""
    return tuple(
        parameter(argument)
        for argument in arguments.get("params") or []
        if argument.get("name") not in WITHHELD_FLAGS
    )


def env_choices(answer: Mapping[str, Any]) -> tuple[tuple[EnvChoice, ...] | None, str]:
    """The environments an ``--envs`` answer says the script trains on here, and why not known."""
    envs = answer.get("envs")
    choices = (
        None if envs is None else tuple(EnvChoice(str(e["id"]), str(e.get("reason") or "")) for e in envs)
    )
    return choices, str(answer.get("error") or "")


def without_bundle() -> FormSpec:
    """The form while no interpreter can read the scripts: a script typed by name, no parameters."""
    return _base()


def script_parameters(algorithm: str, arguments: Mapping[str, Any]) -> FormSpec:
    """A sweep's check of its space: the script's parameters and the mapped flags, nothing else."""
    return _base(variant=algorithm, parameters=parameters(arguments) if arguments else ())


def form_spec(
    algorithms: Sequence[Mapping[str, Any]],
    gpu_available: bool,
    algorithm: str = "",
    arguments: Mapping[str, Any] | None = None,
    envs: Mapping[str, Any] | None = None,
) -> FormSpec:
    """The whole form: the scripts, whether torch sees a GPU, and with ``algorithm`` that script's
    arguments (``note``: argparse or tyro) and the environments it trains on here."""
    choices, envs_error = env_choices(envs or {})
    return _base(
        variants=variants(algorithms),
        variant=algorithm,
        parameters=parameters(arguments or {}),
        note=str((arguments or {}).get("style") or ""),
        gpu_available=gpu_available,
        envs=choices,
        envs_error=envs_error,
    )
