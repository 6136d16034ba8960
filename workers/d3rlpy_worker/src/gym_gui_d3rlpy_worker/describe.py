"""``python -m gym_gui_d3rlpy_worker.describe``: d3rlpy's algorithms and their config's scalar fields, as JSON.

Runs in the d3rlpy bundle, asked by the plugin. Every config class of ``d3rlpy.algos`` whose algorithm
learns with ``fit`` from transitions (d3rlpy's Q-learning family; not the random baselines, not the
transformers, which learn from whole trajectories and act with a stateful wrapper) is one algorithm,
named by its own type name (``discrete_cql`` for DiscreteCQLConfig). Its parameters are the dataclass's
fields of type int, float, bool or str, with their defaults and the help of the class's docstring; the
factories (encoders, optimisers, scalers) are left to their defaults. The answer is kept in the bundle's
prefix until d3rlpy's version or this module changes: importing d3rlpy (and torch) takes seconds.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import re
import sys
import typing
from pathlib import Path
from typing import Any

from gym_gui_d3rlpy_worker.run_params import ALGORITHM_GROUP, RUN_PARAMETER_NAMES

ANSWER_FORMAT = 1
_SCALARS = {int: "int", float: "float", bool: "bool", str: "str"}
# The random baselines learn nothing.
_NOT_LEARNING = ("random_policy", "discrete_random_policy")
# The values d3rlpy 2.8.1's code accepts for its text fields (its docstrings do not list them).
_CHOICES = {
    "policy_type": ("deterministic", "stochastic"),
    "advantage_type": ("mean", "max"),
    "weight_type": ("exp", "binary"),
    "target_update_type": ("hard", "soft"),
    "mmd_kernel": ("laplacian", "gaussian"),
}
# A docstring's "Args:" entry: ``name (type): text`` and its indented continuation lines.
_ARG = re.compile(r"^\s{8}(\w+) \(([^)]*)\):\s*(.*)$")


def _arg_help(doc: str) -> dict[str, str]:
    """Each argument's help from a Google-style docstring's ``Args:`` section, on one line."""
    helps: dict[str, str] = {}
    current = ""
    inside = False
    for line in doc.splitlines():
        if line.strip() == "Args:":
            inside = True
            continue
        if not inside:
            continue
        match = _ARG.match(line)
        if match:
            current = match.group(1)
            helps[current] = match.group(3).strip()
        elif current and line.startswith(" " * 12) and line.strip():
            helps[current] = f"{helps[current]} {line.strip()}".strip()
        elif line.strip() and not line.startswith(" " * 8):
            break
    return {name: re.sub(r":math:`([^`]*)`|math:`([^`]*)`", r"\1\2", text) for name, text in helps.items()}


def _summary(doc: str) -> str:
    first = next((line.strip() for line in doc.splitlines() if line.strip()), "")
    return re.sub(r"^Config(?: of)? ", "", first).rstrip(".")


def describe_algorithm(config_class: Any) -> dict[str, Any]:
    """One algorithm: its name, the action space it acts in, a summary and its scalar parameters."""
    from d3rlpy.constants import ActionSpace

    algorithm = config_class().create(device="cpu:0")
    action_type = algorithm.get_action_type()
    action = {ActionSpace.DISCRETE: "discrete", ActionSpace.CONTINUOUS: "continuous"}.get(action_type, "both")
    doc = config_class.__doc__ or ""
    helps = _arg_help(doc)
    hints = typing.get_type_hints(config_class)
    params = []
    for field in dataclasses.fields(config_class):
        kind = _SCALARS.get(hints[field.name]) if field.name in hints else None
        if kind is None or field.default is dataclasses.MISSING:
            continue  # factories, scalers: their defaults
        if field.name in RUN_PARAMETER_NAMES:
            raise RuntimeError(f"{config_class.__name__}.{field.name} has the name of a gym_gui parameter")
        spec: dict[str, Any] = {
            "name": field.name,
            "type": kind,
            "default": field.default,
            "help": helps.get(field.name, ""),
            "group": ALGORITHM_GROUP,
        }
        if kind == "int" and field.name in ("batch_size", "n_critics", "n_action_samples"):
            spec["low"] = 1
        if kind == "float" and ("learning_rate" in field.name or field.name == "gamma"):
            spec["low"] = 0
        if field.name == "gamma":
            spec["high"] = 1
        if kind == "str" and field.name in _CHOICES:
            spec["choices"] = list(_CHOICES[field.name])
        params.append(spec)
    return {
        "name": config_class.get_type(),
        "class": config_class.__name__,
        "algorithm": type(algorithm).__name__,
        "action": action,
        "summary": _summary(doc),
        "params": params,
    }


def _is_config(candidate: Any) -> bool:
    from d3rlpy.base import LearnableConfig

    return isinstance(candidate, type) and issubclass(candidate, LearnableConfig)


def config_classes() -> dict[str, Any]:
    """d3rlpy's algorithm config classes (``d3rlpy.algos.*Config``) by their type name (``discrete_cql``)."""
    import d3rlpy.algos

    found: dict[str, Any] = {}
    for name in sorted(dir(d3rlpy.algos)):
        candidate = getattr(d3rlpy.algos, name)
        if not (name.endswith("Config") and _is_config(candidate)):
            continue
        try:
            found[candidate.get_type()] = candidate
        except NotImplementedError:
            continue  # an abstract base (TransformerConfig)
    return found


def build_answer() -> dict[str, Any]:
    """Every algorithm d3rlpy trains with ``fit`` on transitions, by name."""
    import d3rlpy
    from d3rlpy.algos.qlearning.base import QLearningAlgoBase

    algorithms = []
    for kind, config_class in config_classes().items():
        if kind in _NOT_LEARNING:
            continue
        try:
            created = config_class().create(device="cpu:0")
        except Exception:
            continue
        if not isinstance(created, QLearningAlgoBase):
            continue  # the transformers: trajectories, not transitions
        algorithms.append(describe_algorithm(config_class))
    algorithms.sort(key=lambda entry: entry["name"])
    return {"format": ANSWER_FORMAT, "d3rlpy": d3rlpy.__version__, "algorithms": algorithms}


def _cache_file() -> Path:
    import importlib.metadata

    here = Path(__file__).parent
    sources = [
        f"{path.name}:{path.stat().st_mtime_ns}:{path.stat().st_size}"
        for path in (here / "describe.py", here / "run_params.py")
    ]
    key = "\n".join([sys.version, importlib.metadata.version("d3rlpy"), *sources])
    digest = hashlib.sha256(key.encode()).hexdigest()[:24]
    return Path(sys.prefix) / ".gym_gui_describe_cache" / f"d3rlpy-{digest}.json"


def answer() -> dict[str, Any]:
    """:func:`build_answer`, kept in this interpreter's prefix until d3rlpy or this code changes."""
    cache = _cache_file()
    with contextlib.suppress(OSError, ValueError):
        return json.loads(cache.read_text(encoding="utf-8"))
    # d3rlpy's imports print (old gym's notice, structlog): stdout is the JSON answer's alone.
    with contextlib.redirect_stdout(sys.stderr):
        result = build_answer()
    with contextlib.suppress(OSError):
        cache.parent.mkdir(exist_ok=True)
        tmp = cache.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(result), encoding="utf-8")
        os.replace(tmp, cache)
    return result


def main() -> int:
    try:
        print(json.dumps(answer()))
    except Exception as exc:  # the plugin shows this line as the reason
        print(json.dumps({"error": f"d3rlpy's algorithms could not be listed: {type(exc).__name__}: {exc}"}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
