"""The worker's parameters: names, defaults, ranges and help, in one place.

Typed with the SDK's contract (``ParameterSpec``), which imports nothing of gym_gui: the plugin (in
gym_gui's process) describes and checks them, the worker process applies their defaults, and neither
needs the other's imports for it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gym_gui_sdk.contract import ParameterSpec, parameter_problems, resolve_parameters

PARAMETERS = (
    ParameterSpec(
        "alpha",
        "float",
        0.1,
        "learning rate: how far one update moves Q(s, a) to its target",
        low=0.0,
        high=1.0,
        open_low=True,
    ),
    ParameterSpec("gamma", "float", 0.99, "discount of the next state's value", low=0.0, high=1.0),
    ParameterSpec(
        "epsilon", "float", 1.0, "probability of a random action in the first episode", low=0.0, high=1.0
    ),
    ParameterSpec(
        "epsilon_decay",
        "float",
        0.999,
        "epsilon is multiplied by this after each episode",
        low=0.0,
        high=1.0,
        open_low=True,
    ),
    ParameterSpec("epsilon_min", "float", 0.01, "epsilon never decays below this", low=0.0, high=1.0),
)


def problems(params: Mapping[str, Any]) -> list[tuple[str, str]]:
    """``(name, why)`` for every unknown or bad parameter in ``params``; empty when all are fine."""
    found = parameter_problems(PARAMETERS, params)
    if not found:
        values = resolve(params)
        if values["epsilon_min"] > values["epsilon"]:
            found.append(
                (
                    "epsilon_min",
                    f"must not exceed epsilon ({values['epsilon']:g}), got {values['epsilon_min']:g}",
                )
            )
    return found


def resolve(params: Mapping[str, Any]) -> dict[str, float]:
    """Every parameter's value: the one given, else its default."""
    return {name: float(value) for name, value in resolve_parameters(PARAMETERS, params).items()}
