"""The worker's parameters: names, types, defaults, ranges and help, in one place.

Typed with the SDK's contract (``ParameterSpec``), which imports nothing of gym_gui: the plugin (in
gym_gui's process) describes and checks them, the worker process (in its bundle) applies their
defaults, and neither needs the other's imports for it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gym_gui_sdk.contract import ParameterSpec, parameter_problems, resolve_parameters

MODES = ("fast", "deliberate")
XMPP_SERVERS = ("embedded", "external")
# The secret a run against an external XMPP server gets in its environment (never in its config).
PASSWORD_ENV = "XMPP_PASSWORD"
# What the name of a plans file (``asl``) ends in.
PLANS_SUFFIX = ".asl"


_LEARNING = "Learning"
_ENVIRONMENT = "Environment"
_XMPP = "XMPP server"
PARAMETERS = (
    ParameterSpec(
        "alpha",
        "float",
        0.1,
        "learning rate: how far one update moves Q(s, a) to its target",
        _LEARNING,
        low=0,
        high=1,
        open_low=True,
    ),
    ParameterSpec("gamma", "float", 0.99, "discount of the next state's value", _LEARNING, low=0, high=1),
    ParameterSpec(
        "epsilon_start",
        "float",
        1.0,
        "probability of a random action in the first episode",
        _LEARNING,
        low=0,
        high=1,
    ),
    ParameterSpec("epsilon_end", "float", 0.01, "epsilon never decays below this", _LEARNING, low=0, high=1),
    ParameterSpec(
        "epsilon_decay",
        "float",
        None,
        "epsilon is multiplied by this after each episode, down to epsilon_end (in the last of N "
        "episodes it is max(epsilon_end, epsilon_start * decay^(N-1))); empty: the schedule fits the "
        "budget, and epsilon ends at epsilon_end (see exploration_fraction)",
        _LEARNING,
        low=0,
        high=1,
        open_low=True,
    ),
    ParameterSpec(
        "exploration_fraction",
        "float",
        0.5,
        "with epsilon_decay empty: the share of the budget (its episodes, else its steps) over which "
        "epsilon falls in a straight line from epsilon_start to epsilon_end, where it stays to the end "
        "(CleanRL's exploration fraction)",
        _LEARNING,
        low=0,
        high=1,
        open_low=True,
    ),
    ParameterSpec(
        "max_steps",
        "int",
        0,
        "steps per episode before it is cut short (0: the environment's own limit)",
        _ENVIRONMENT,
        low=0,
        high=10**6,
    ),
    ParameterSpec(
        "mode",
        "str",
        "fast",
        "fast: the plans deliberate at episode boundaries and an episode's steps run in one action; "
        "deliberate: every step goes through the reasoning cycle (its beliefs and intention are stored)",
        choices=MODES,
    ),
    ParameterSpec(
        "checkpoint_every",
        "int",
        0,
        "save the Q-table every N episodes (0: only at the end)",
        low=0,
        high=10**9,
    ),
    ParameterSpec(
        "success_window",
        "int",
        100,
        "episodes the success rate is averaged over",
        _LEARNING,
        low=1,
        high=10**6,
    ),
    ParameterSpec(
        "asl",
        "str",
        "",
        "the agent's plans: an absolute path to an .asl file of AgentSpeak plans with a plan for +!run, "
        "checked before the run starts (empty: the shipped plans)",
    ),
    ParameterSpec(
        "map",
        "str",
        "",
        "FrozenLake only: 4x4, 8x8, or the rows of a map, e.g. SFFF/FHFH/FFFH/HFFG",
        _ENVIRONMENT,
    ),
    ParameterSpec("slippery", "bool", True, "FrozenLake only: the ice makes the agent slide", _ENVIRONMENT),
    ParameterSpec(
        "warm_start",
        "str",
        "",
        "start from a saved Q-table: RUN_ID (its final table) or RUN_ID/checkpoints/FILE",
    ),
    ParameterSpec(
        "xmpp_server",
        "str",
        "embedded",
        "embedded: an XMPP server on loopback started with the worker; external: the server below "
        f"(its password in the run's environment as {PASSWORD_ENV})",
        _XMPP,
        choices=XMPP_SERVERS,
    ),
    ParameterSpec("xmpp_host", "str", "", "external XMPP server: host name or address", _XMPP),
    ParameterSpec("xmpp_port", "int", 5222, "external XMPP server: client port", _XMPP, low=1, high=65535),
    ParameterSpec(
        "xmpp_jid", "str", "", "external XMPP server: the agent's account, e.g. bdi@example.org", _XMPP
    ),
)


def problems(params: Mapping[str, Any]) -> list[tuple[str, str]]:
    """``(name, why)`` for every unknown or bad parameter in ``params``; empty when all are fine."""
    found = parameter_problems(PARAMETERS, params)
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
    if params.get("epsilon_decay") is not None and params.get("exploration_fraction") is not None:
        found.append(
            (
                "exploration_fraction",
                "fits the schedule to the budget when epsilon_decay is empty; give one of the two",
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
    return resolve_parameters(PARAMETERS, params)


def scheduled_epsilon(values: Mapping[str, Any], done: float) -> float:
    """Epsilon when ``done`` of the budget (0 to 1) is spent, on the schedule fitted to it (no
    ``epsilon_decay``): CleanRL's linear schedule, from ``epsilon_start`` to ``epsilon_end`` over
    ``exploration_fraction`` of the budget, then ``epsilon_end``."""
    start, end = float(values["epsilon_start"]), float(values["epsilon_end"])
    return start + (end - start) * min(1.0, done / float(values["exploration_fraction"]))


def final_epsilon(values: Mapping[str, Any], episodes: int) -> float:
    """Epsilon in the last of ``episodes`` episodes with the shipped plans' schedule (resolved
    ``values``): ``epsilon_end`` on the fitted schedule, else ``epsilon_start`` decayed by
    ``epsilon_decay`` after each earlier episode, never below ``epsilon_end``."""
    start, end, decay = float(values["epsilon_start"]), float(values["epsilon_end"]), values["epsilon_decay"]
    if decay is None:
        return scheduled_epsilon(values, (episodes - 1) / episodes) if episodes > 0 else start
    return max(end, start * float(decay) ** max(episodes - 1, 0))
