"""The worker's parameters: names, types, defaults, ranges and help, in one place.

Plain Python on purpose: the plugin (in gym_gui's process) describes and checks them, the worker
process applies their defaults, and neither needs the other's imports for it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

MODES = ("fast", "deliberate")
XMPP_SERVERS = ("embedded", "external")
# The secret a run against an external XMPP server gets in its environment (never in its config).
PASSWORD_ENV = "XMPP_PASSWORD"


@dataclass(frozen=True)
class Parameter:
    """One value the user may set: a number in ``[low, high]`` (``(low, high]`` when ``open_low``),
    a bool, or text (one of ``choices`` when there are some)."""

    name: str
    kind: str  # "float", "int", "bool" or "str"
    default: Any
    help: str
    low: float = -math.inf
    high: float = math.inf
    open_low: bool = False
    choices: tuple[str, ...] = ()

    def problem(self, value: Any) -> str:
        """Why ``value`` is not a value of this parameter; empty when it is one."""
        if self.kind == "bool":
            return "" if isinstance(value, bool) else f"expected true or false, got {value!r}"
        if self.kind == "str":
            if not isinstance(value, str):
                return f"expected text, got {value!r}"
            if self.choices and value not in self.choices:
                return f"must be one of {', '.join(self.choices)}, got {value!r}"
            return ""
        if self.kind == "int" and (isinstance(value, bool) or not isinstance(value, int)):
            return f"expected a whole number, got {value!r}"
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
        spec: dict[str, Any] = {
            "name": self.name,
            "type": self.kind,
            "default": self.default,
            "help": self.help,
        }
        if self.choices:
            spec["choices"] = list(self.choices)
        return spec


PARAMETERS = (
    Parameter(
        "alpha", "float", 0.1, "learning rate: how far one update moves Q(s, a) to its target", 0, 1, True
    ),
    Parameter("gamma", "float", 0.99, "discount of the next state's value", 0, 1),
    Parameter("epsilon_start", "float", 1.0, "probability of a random action in the first episode", 0, 1),
    Parameter("epsilon_end", "float", 0.01, "epsilon never decays below this", 0, 1),
    Parameter(
        "epsilon_decay", "float", 0.999, "epsilon is multiplied by this after each episode", 0, 1, True
    ),
    Parameter(
        "max_steps",
        "int",
        0,
        "steps per episode before it is cut short (0: the environment's own limit)",
        0,
        10**6,
    ),
    Parameter(
        "mode",
        "str",
        "fast",
        "fast: the plans deliberate at episode boundaries and an episode's steps run in one action; "
        "deliberate: every step goes through the reasoning cycle (its beliefs and intention are stored)",
        choices=MODES,
    ),
    Parameter(
        "checkpoint_every", "int", 0, "save the Q-table every N episodes (0: only at the end)", 0, 10**9
    ),
    Parameter("success_window", "int", 100, "episodes the success rate is averaged over", 1, 10**6),
    Parameter(
        "asl", "str", "", "the agent's plans: an absolute path to an .asl file (empty: the shipped plans)"
    ),
    Parameter("map", "str", "", "FrozenLake only: 4x4, 8x8, or the rows of a map, e.g. SFFF/FHFH/FFFH/HFFG"),
    Parameter("slippery", "bool", True, "FrozenLake only: the ice makes the agent slide"),
    Parameter(
        "warm_start",
        "str",
        "",
        "start from a saved Q-table: RUN_ID (its final table) or RUN_ID/checkpoints/FILE",
    ),
    Parameter(
        "xmpp_server",
        "str",
        "embedded",
        "embedded: an XMPP server on loopback started with the worker; external: the server below "
        f"(its password in the run's environment as {PASSWORD_ENV})",
        choices=XMPP_SERVERS,
    ),
    Parameter("xmpp_host", "str", "", "external XMPP server: host name or address"),
    Parameter("xmpp_port", "int", 5222, "external XMPP server: client port", 1, 65535),
    Parameter("xmpp_jid", "str", "", "external XMPP server: the agent's account, e.g. bdi@example.org"),
)
BY_NAME = {parameter.name: parameter for parameter in PARAMETERS}


def problems(params: Mapping[str, Any]) -> list[tuple[str, str]]:
    """``(name, why)`` for every unknown or bad parameter in ``params``; empty when all are fine."""
    found: list[tuple[str, str]] = []
    for name, value in params.items():
        parameter = BY_NAME.get(name)
        if parameter is None:
            found.append((name, f"unknown parameter; the parameters are {', '.join(BY_NAME)}"))
        elif problem := parameter.problem(value):
            found.append((name, problem))
    if found:
        return found
    values = resolve(params)
    if values["epsilon_end"] > values["epsilon_start"]:
        found.append(
            (
                "epsilon_end",
                f"must not exceed epsilon_start ({values['epsilon_start']:g}), got {values['epsilon_end']:g}",
            )
        )
    if values["xmpp_server"] == "external":
        for name in ("xmpp_host", "xmpp_jid"):
            if not values[name].strip():
                found.append((name, "an external XMPP server needs it"))
        jid = values["xmpp_jid"]
        if jid.strip() and (jid.count("@") != 1 or not all(jid.split("@"))):
            found.append(("xmpp_jid", f"expected user@domain, got {jid!r}"))
    return found


def resolve(params: Mapping[str, Any]) -> dict[str, Any]:
    """Every parameter's value: the one given, else its default."""
    return {p.name: params.get(p.name, p.default) for p in PARAMETERS}
