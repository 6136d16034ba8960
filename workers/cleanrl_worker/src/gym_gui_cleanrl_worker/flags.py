"""A script's flags from a run's values: checked strictly against the script's own definitions (the
describe helper's ``params``), then written as the exact argv its parser takes."""

from __future__ import annotations

import contextlib
import difflib
import re
from collections.abc import Mapping
from typing import Any

from gym_gui_sdk.contract import cut, shown

from gym_gui_cleanrl_worker.form import parameter

_TRUE = {"y", "yes", "t", "true", "on", "1"}
_FALSE = {"n", "no", "f", "false", "off", "0"}


def resolve_command(
    description: dict[str, Any],
    values: dict[str, Any],
    mapped: dict[str, Any],
    withheld: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The script and its exact flags for a run.

    ``values`` are the user's parameters, checked strictly (an unknown or ill-typed one raises
    ValueError naming the script's own flag); ``mapped`` are the flags gym_gui derives from the
    run config (env id, seed, budget, tracking …), given only where the script declares them.
    A user parameter that a config field already sets is refused, so there is one source for it;
    so is one of ``withheld`` (flag → why it is not offered), with its reason.
    """
    known = {param["name"] for param in description["params"]}
    given = {key.lstrip("-") for key in validate(description, values)}
    withheld = withheld or {}
    refused = sorted(given & set(withheld))
    if refused:
        raise ValueError(f"--{refused[0]} {withheld[refused[0]]}")
    clash = sorted(given & set(mapped))
    if clash:
        raise ValueError(
            f"--{clash[0]} is set by the run config (env, seed, budget, tracking fields), not as a parameter"
        )
    merged = {name: value for name, value in mapped.items() if name in known}
    merged.update(values)
    return {"script": description["path"], "argv": build_argv(description, merged)}


def _lookup(description: dict[str, Any], key: str) -> dict[str, Any]:
    params: list[dict[str, Any]] = description["params"]
    wanted = key.strip().lstrip("-")
    for param in params:
        if wanted in (param["name"], param["dest"]):
            return param
    for param in params:
        if wanted.replace("_", "-") == param["name"]:
            return param
    names = [p["name"] for p in params]
    close = difflib.get_close_matches(wanted.replace("_", "-"), names, n=1)
    hint = f"; did you mean --{close[0]}?" if close else ""
    raise ValueError(f"unknown parameter --{cut(wanted)} for {description.get('algo', 'this script')}{hint}")


def _coerce_scalar(kind: str, value: Any, flag: str) -> Any:
    def bad(expected: str) -> ValueError:
        return ValueError(f"{flag}: expected {expected}, got {shown(value)}")

    if kind == "bool":
        if isinstance(value, bool):
            return value
        if isinstance(value, int) and value in (0, 1):
            return bool(value)
        if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
            return value.strip().lower() in _TRUE
        raise bad("a bool (true/false)")
    if kind == "int":
        if isinstance(value, bool):
            raise bad("an int")
        if isinstance(value, int):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, str):
            text = value.strip().replace("_", "")
            with contextlib.suppress(ValueError):
                return int(text)
            # "1e6" is how people write step counts; accepted when it is a whole number.
            with contextlib.suppress(ValueError, OverflowError):
                number = float(text)
                if number.is_integer():
                    return int(number)
        raise bad("an int")
    if kind == "float":
        if isinstance(value, bool):
            raise bad("a float")
        if isinstance(value, (int, float)):
            return float(value)
        if isinstance(value, str):
            with contextlib.suppress(ValueError):
                return float(value.strip())
        raise bad("a float")
    if isinstance(value, (str, int, float)):
        return str(value)
    raise bad("a str")


def _coerce(param: dict[str, Any], value: Any) -> Any:
    flag = param["flag"]
    if value is None:
        if param["required"]:
            raise ValueError(f"{flag}: a value is required")
        return None
    kind: str = param["type"]
    if kind.startswith("list[") and kind.endswith("]"):
        items = (
            value if isinstance(value, (list, tuple)) else [v for v in re.split(r"[,\s]+", str(value)) if v]
        )
        result: Any = [_coerce_scalar(kind[5:-1], item, flag) for item in items]
        checked = result
    else:
        result = _coerce_scalar(kind, value, flag)
        checked = [result]
    choices = param.get("choices")
    if choices:
        for item in checked:
            if item not in choices:
                raise ValueError(f"{flag}: {shown(item)} is not one of {', '.join(map(str, choices))}")
    # The contract's one validator of values: finite numbers, a count's least (form.COUNTS).
    if why := parameter(param).problem(result):
        raise ValueError(f"{flag}: {why}")
    return result


def validate(description: dict[str, Any], values: dict[str, Any]) -> dict[str, Any]:
    """values coerced to each parameter's declared type, keyed by the script's own name for it.

    Keys may be the name ("learning-rate"), the flag ("--learning-rate") or the dest ("learning_rate");
    values may be strings as typed on a command line. Raises ValueError naming the script's flag: an unknown
    key (with the closest known name), a value of the wrong type, a value outside the choices, or None for a
    required parameter. None otherwise means "the script's default".
    """
    if "params" not in description:
        raise ValueError(
            f"{description.get('algo', 'script')}: no parameters known ({description.get('error')})"
        )
    result: dict[str, Any] = {}
    for key, value in values.items():
        param = _lookup(description, key)
        result[param["name"]] = _coerce(param, value)
    return result


def _format(value: Any) -> str:
    if isinstance(value, float):
        return repr(value)  # the shortest text that reads back as the same float
    return str(value)


def _negated(flag: str) -> str:
    head, dot, last = flag.lstrip("-").rpartition(".")
    return f"--{head}{dot}no-{last}"


def build_argv(description: dict[str, Any], values: dict[str, Any]) -> list[str]:
    """The command-line arguments that set values in the script's own flag style, in the script's order.

    Values go through validate first. Booleans: strtobool scripts get "--cuda True"/"--cuda False",
    store_true flags are present or absent, tyro gets "--cuda"/"--no-cuda". Lists: "--x 1 2 3". Everything
    else: "--name value". A None value is left out, so the script's default applies. Raises ValueError as
    validate does, and when a store_true flag that defaults to True is asked to be False (there is no flag for it).
    """
    clean = validate(description, values)
    argv: list[str] = []
    for param in description["params"]:
        name = param["name"]
        if name not in clean or clean[name] is None:
            continue
        value, flag, style = clean[name], param["flag"], param["bool_style"]
        if param["type"] == "bool":
            if style in ("store_true", "store_false"):
                wanted = value if style == "store_true" else not value
                if wanted:
                    argv.append(flag)
                elif bool(param["default"]) != bool(value):
                    raise ValueError(f"{flag}: the script has no flag to set it to {value}")
            elif style == "tyro":
                argv.append(flag if value else _negated(flag))
            else:
                argv += [flag, "True" if value else "False"]
        elif param["type"].startswith("list["):
            argv += [flag, *(_format(v) for v in value)]
        else:
            argv += [flag, _format(value)]
    return argv


# ---------------------------------------------------------------- command line
