"""What a d3rlpy run is given besides its algorithm's own config: the kind's parameters, the metric tags it
logs, and the spaces of a dataset as an operator declares them.

Plain Python (the SDK's contract only): the plugin reads it in gym_gui's venv, the worker in the bundle.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from gym_gui_sdk.contract import ParameterSpec
from gym_gui_sdk.operator import SpaceSpec

# The form's heading of the kind's own parameters (the algorithm's are under "algorithm").
RUN_GROUP = "training"
ALGORITHM_GROUP = "algorithm"

# The kind's own parameters: how d3rlpy's fit is driven, not what the algorithm is. No d3rlpy config
# field has these names (describe refuses to answer if one ever does).
RUN_PARAMETERS = (
    ParameterSpec(
        "steps_per_epoch",
        "int",
        1000,
        "gradient steps between two evaluations and logged points (d3rlpy's n_steps_per_epoch); "
        "the run's steps must be a whole number of epochs",
        group=RUN_GROUP,
        low=1,
    ),
    ParameterSpec(
        "eval_episodes",
        "int",
        10,
        "episodes the policy plays in the dataset's environment after each epoch "
        "(d3rlpy's EnvironmentEvaluator; 0: none)",
        group=RUN_GROUP,
        low=0,
    ),
    ParameterSpec(
        "td_error_episodes",
        "int",
        10,
        "dataset episodes d3rlpy's TDErrorEvaluator measures after each epoch (0: none)",
        group=RUN_GROUP,
        low=0,
    ),
)
RUN_PARAMETER_NAMES = frozenset(parameter.name for parameter in RUN_PARAMETERS)

# Metric tags. Losses and timings are d3rlpy's names under their prefix (loss, td_loss, time_step, …).
LOSS_PREFIX = "losses/"
TIME_PREFIX = "time/"
RETURN_METRIC = "eval/return"  # EnvironmentEvaluator's mean return, each epoch
TD_ERROR_METRIC = "eval/td_error"  # TDErrorEvaluator, each epoch
NORMALIZED_METRIC = "eval/normalized_score"  # 100 (R - ref_min) / (ref_max - ref_min), with reference scores
DATASET_RETURN_METRIC = "dataset/mean_return"  # the dataset's own mean episode return, beside the curve
DATASET_NORMALIZED_METRIC = "dataset/normalized_score"
STEPS_PER_SECOND_METRIC = "time/steps_per_second"  # gradient steps a second over the whole fit
# The evaluators' names in d3rlpy's fit (its metrics dict) and the tags they are logged under.
EVALUATOR_TAGS = {"environment": RETURN_METRIC, "td_error": TD_ERROR_METRIC}

# The files a run writes (relative to its directory).
CHECKPOINTS_DIR = "checkpoints"
FINAL_MODEL = f"{CHECKPOINTS_DIR}/final.d3"
INTERRUPTED_MODEL = f"{CHECKPOINTS_DIR}/interrupted.d3"  # saved when a stop ends training
MODEL_SUFFIX = ".d3"


def checkpoint_path(step: int) -> str:
    return f"{CHECKPOINTS_DIR}/step_{step}{MODEL_SUFFIX}"


def split_params(params: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """A run's params as (the kind's own, the algorithm config's)."""
    own = {name: value for name, value in params.items() if name in RUN_PARAMETER_NAMES}
    return own, {name: value for name, value in params.items() if name not in RUN_PARAMETER_NAMES}


def run_values(params: Mapping[str, Any]) -> dict[str, Any]:
    """The kind's own parameters' values: the ones given, else their defaults."""
    return {parameter.name: params.get(parameter.name, parameter.default) for parameter in RUN_PARAMETERS}


def normalized_score(value: float, ref_min: float | None, ref_max: float | None) -> float | None:
    """D4RL's normalised score of a return, 100 (R - min) / (max - min); None without both references."""
    if ref_min is None or ref_max is None or ref_max == ref_min:
        return None
    return 100.0 * (value - ref_min) / (ref_max - ref_min)


def space_spec(minari_space: str) -> SpaceSpec:
    """The operator's view of a space as Minari serialises it into a dataset's metadata
    (``{"type": "Box", "shape": [4], ...}``, ``{"type": "Discrete", "n": 2, ...}``).

    Raises:
        ValueError: not such a JSON text, or a space kind the worker does not learn from.
    """
    try:
        data = json.loads(minari_space)
    except (TypeError, ValueError):
        raise ValueError(f"not a space Minari wrote: {minari_space[:80]!r}") from None
    if not isinstance(data, dict):
        raise ValueError(f"not a space Minari wrote: {minari_space[:80]!r}")
    kind = data.get("type")
    if kind == "Discrete":
        return SpaceSpec("Discrete", n=int(data["n"]))
    if kind == "Box":
        return SpaceSpec("Box", shape=tuple(int(d) for d in data.get("shape") or ()))
    raise ValueError(f"a {kind} space: d3rlpy learns from Box and Discrete spaces only")
