"""The d3rlpy kind's run form as the SDK's contract types it: d3rlpy's algorithms as variants, their config's
scalar fields (the describe helper's answer) and the kind's own parameters as parameters.

Plain Python (the SDK's contract only), for the plugin in gym_gui's venv.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from gym_gui_sdk.contract import FormSpec, ParameterSpec, Section, Variant

from gym_gui_d3rlpy_worker.run_params import RUN_PARAMETERS

# An offline run reads a dataset, saves checkpoints and counts gradient steps as its budget.
SECTIONS = frozenset({Section.DATASETS, Section.CHECKPOINTS})
STARTING = {"algorithm": "discrete_cql", "seed": 1, "budget.timesteps": 20_000}


def _base(**fields: Any) -> FormSpec:
    return FormSpec(
        variant_label="Algorithm",
        sections=SECTIONS,
        budget_bounds=("timesteps",),
        starting=STARTING,
        **fields,
    )


def variants(algorithms: Sequence[Mapping[str, Any]]) -> tuple[Variant, ...]:
    """The algorithms of a describe answer, each with the actions it takes and what it is."""
    return tuple(
        Variant(name=str(entry["name"]), summary=f"{entry['action']} actions: {entry['summary']}")
        for entry in algorithms
    )


def algorithm_parameters(entry: Mapping[str, Any]) -> tuple[ParameterSpec, ...]:
    """An algorithm's parameters: the kind's own, then its config's scalar fields."""
    return RUN_PARAMETERS + tuple(ParameterSpec.from_json(dict(param)) for param in entry.get("params") or [])


def without_bundle() -> FormSpec:
    """The form while the bundle is not installed: an algorithm typed by name, the kind's own parameters."""
    return _base(parameters=RUN_PARAMETERS, note="install the d3rlpy bundle to list its algorithms")


def form_spec(answer: Mapping[str, Any], algorithm: str = "") -> FormSpec:
    """The whole form: the algorithms, and with ``algorithm`` its parameters."""
    entry = find(answer, algorithm) if algorithm else None
    return _base(
        variants=variants(answer.get("algorithms") or []),
        variant=algorithm,
        parameters=algorithm_parameters(entry) if entry is not None else RUN_PARAMETERS,
        note=f"d3rlpy {answer.get('d3rlpy', '?')}: the fields of {entry['class']}"
        if entry is not None
        else "",
    )


def find(answer: Mapping[str, Any], algorithm: str) -> Mapping[str, Any] | None:
    """The describe answer's entry for ``algorithm``, None when d3rlpy has no such algorithm here."""
    return next((entry for entry in answer.get("algorithms") or [] if entry["name"] == algorithm), None)
