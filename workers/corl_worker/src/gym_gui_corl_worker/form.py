"""The CORL kind's run form as the SDK's contract types it, and a run's command line for pyrallis.

The scripts of a checkout are the variants, a script's ``TrainConfig`` fields its parameters (the describe
helper reads them in the bundle); this module turns those answers into a :class:`FormSpec` and a run's
values into the script's arguments. Plain Python: it imports the SDK's contract only.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from gym_gui_sdk.contract import FormSpec, ParameterSpec, Section, Variant

# The TrainConfig fields gym_gui sets from the run's config, each with that config field (where the script
# has the field). The env field (``env`` or ``env_name``) is the dataset's env, which is the run's env_id.
MAPPED_FIELDS: dict[str, str] = {
    "device": "resources.gpu",
    "project": "tracking.wandb_project",
}
# A script's count of gradient steps, by the names CORL's scripts give it (iql, any_percent_bc, cql,
# td3_bc: max_timesteps; awac: num_train_ops; dt: update_steps), which the run's budget sets; edac, sac_n
# and lb_sac count epochs of num_updates_on_epoch updates instead (:func:`epochs`).
STEP_FIELDS = ("max_timesteps", "num_train_ops", "update_steps")
EPOCHS, UPDATES_PER_EPOCH = "num_epochs", "num_updates_on_epoch"
# Its seed: train_seed in the scripts that also have an eval_seed.
SEED_FIELDS = ("seed", "train_seed")
# Set by gym_gui, never by a run's params: where the script saves its checkpoints (the run's own).
CHECKPOINTS_FIELD = "checkpoints_path"
# The kind's own parameters, never a script's field: the user's CORL checkout and a pyrallis config file
# (CORL's own configs/offline/<algo>/<dataset>.yaml, or one of the user's).
SCRIPTS_DIR, CONFIG_PATH = "scripts_dir", "config_path"
SOURCE_PARAMS = (SCRIPTS_DIR, CONFIG_PATH)
# The metric each evaluation's raw return is recorded under (the bridge's, from the score the script normalises).
RETURN_METRIC = "eval/return"
SECTIONS = frozenset({Section.DATASETS, Section.TRACKING, Section.GPU})
STARTING = {"algorithm": "iql", "seed": 0, "budget.timesteps": 10_000}
NO_CHECKOUT = (
    "CORL's scripts come from your checkout (git clone https://github.com/corl-team/CORL): "
    "name it with --scripts-dir"
)


def budget_field(names: Sequence[str]) -> str | None:
    """The field of a script's config the run's budget (gradient steps) sets: its step count, else its
    epoch count; None when it has neither."""
    found = next((name for name in STEP_FIELDS if name in names), None)
    return found or (EPOCHS if EPOCHS in names and UPDATES_PER_EPOCH in names else None)


def epochs(steps: int, updates_per_epoch: int) -> int:
    """The epochs of ``updates_per_epoch`` updates that make at least ``steps`` gradient steps."""
    return max(1, -(-steps // max(1, updates_per_epoch)))


def mapped(env_field: str | None, names: Sequence[str]) -> dict[str, str]:
    """The fields of a script gym_gui sets from its run's config, in the order its command line gives
    them: its env field, its step (or epoch) count, its seed, then :data:`MAPPED_FIELDS`."""
    found = {env_field: "env_id"} if env_field else {}
    budget = budget_field(names)
    if budget:
        found[budget] = "budget.timesteps"
    seed = next((name for name in SEED_FIELDS if name in names), None)
    if seed:
        found[seed] = "seed"
    found.update({name: field for name, field in MAPPED_FIELDS.items() if name in names})
    return found


def parameters(answer: Mapping[str, Any]) -> tuple[ParameterSpec, ...]:
    """A ``--algo`` answer's fields as parameters, without the checkpoints path (the run's own). The
    env field's default, a D4RL dataset's name, is dropped: the run's env is its dataset's."""
    found = []
    for entry in answer.get("params") or []:
        if entry.get("name") == CHECKPOINTS_FIELD:
            continue
        if entry.get("name") == answer.get("env_field"):
            entry = {key: value for key, value in entry.items() if key != "default"}
        found.append(ParameterSpec.from_json(dict(entry)))
    return tuple(found)


def variants(listing: Sequence[Mapping[str, Any]]) -> tuple[Variant, ...]:
    """The scripts of a ``--list`` answer (name, runnable, reason, summary) as variants."""
    return tuple(
        Variant(**{key: entry[key] for key in ("name", "runnable", "reason", "summary")}) for entry in listing
    )


def form_spec(
    listing: Sequence[Mapping[str, Any]] = (),
    algorithm: str = "",
    answer: Mapping[str, Any] | None = None,
    gpu_available: bool = False,
    note: str = "",
) -> FormSpec:
    """The whole form: the checkout's scripts and, with ``algorithm``, its fields (``answer``)."""
    params = parameters(answer) if answer else ()
    unsupported = list((answer or {}).get("unsupported") or [])
    if answer and not note:
        note = "pyrallis TrainConfig" + (f" (not offered: {', '.join(unsupported)})" if unsupported else "")
    return FormSpec(
        variant_label="Algorithm",
        variants=variants(listing),
        variant=algorithm,
        parameters=params,
        note=note,
        mapped=mapped((answer or {}).get("env_field"), [p.name for p in params]),
        sections=SECTIONS,
        budget_bounds=("timesteps",),
        gpu_available=gpu_available,
        starting=STARTING,
    )


def flag_value(value: Any) -> str:
    """A value as pyrallis reads it from ``--field=value``: YAML's words and flow lists."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return json.dumps(value)
    return str(value)


def script_args(config_path: str | None, values: Mapping[str, Any]) -> list[str]:
    """The script's argv after its path: pyrallis's ``--config_path=FILE`` first, then each value as
    ``--field=value``, which pyrallis lets win over the file's."""
    argv = [f"--config_path={config_path}"] if config_path else []
    return argv + [f"--{name}={flag_value(value)}" for name, value in values.items() if value is not None]
