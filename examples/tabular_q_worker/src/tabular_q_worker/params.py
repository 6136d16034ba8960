"""The worker's parameters: names, defaults, ranges and help, in one place.

Plain Python on purpose: the plugin (in gym_gui's process) describes and checks them, the worker
process applies their defaults, and neither needs the other's imports for it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Parameter:
    """One number the user may set; its range is ``[low, high]``, or ``(low, high]`` when ``open_low``."""

    name: str
    default: float
    low: float
    high: float
    help: str
    open_low: bool = False

    def problem(self, value: Any) -> str:
        """Why ``value`` is not a value of this parameter; empty when it is one."""
        if isinstance(value, bool) or not isinstance(value, int | float):
            return f"expected a number, got {value!r}"
        if not math.isfinite(value):
            return f"expected a finite number, got {value!r}"
        too_low = value <= self.low if self.open_low else value < self.low
        if too_low or value > self.high:
            return f"must be in {'(' if self.open_low else '['}{self.low:g}, {self.high:g}], got {value!r}"
        return ""

    def describe(self) -> dict[str, Any]:
        """The parameter as gym_gui's generated form shows it (one editor per parameter)."""
        return {"name": self.name, "type": "float", "default": self.default, "help": self.help}


PARAMETERS = (
    Parameter(
        "alpha", 0.1, 0.0, 1.0, "learning rate: how far one update moves Q(s, a) to its target", open_low=True
    ),
    Parameter("gamma", 0.99, 0.0, 1.0, "discount of the next state's value"),
    Parameter("epsilon", 1.0, 0.0, 1.0, "probability of a random action in the first episode"),
    Parameter(
        "epsilon_decay", 0.999, 0.0, 1.0, "epsilon is multiplied by this after each episode", open_low=True
    ),
    Parameter("epsilon_min", 0.01, 0.0, 1.0, "epsilon never decays below this"),
)
_BY_NAME = {parameter.name: parameter for parameter in PARAMETERS}


def problems(params: Mapping[str, Any]) -> list[tuple[str, str]]:
    """``(name, why)`` for every unknown or bad parameter in ``params``; empty when all are fine."""
    found: list[tuple[str, str]] = []
    for name, value in params.items():
        parameter = _BY_NAME.get(name)
        if parameter is None:
            found.append((name, f"unknown parameter; the parameters are {', '.join(_BY_NAME)}"))
        elif problem := parameter.problem(value):
            found.append((name, problem))
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
    return {p.name: float(params.get(p.name, p.default)) for p in PARAMETERS}
