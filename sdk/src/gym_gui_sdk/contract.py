"""The typed contract between a worker kind and gym_gui: its parameters, its form and its manifest extras.

A kind's plugin answers ``describe`` with a :class:`FormSpec`; the daemon checks it before it leaves
(:meth:`FormSpec.to_json`) and every client checks it again on arrival (:meth:`FormSpec.from_json`),
so the window's generated form, the CLI and a sweep's check of its space read typed fields, never
keys of a dict. One validator of parameter values (:meth:`ParameterSpec.problem`,
:func:`parameter_problems`) serves every kind, in the plugin (gym_gui's process) and in the worker
(its bundle): this module is plain Python and imports nothing of gym_gui.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields
from enum import StrEnum
from typing import Any

# The value types a parameter may have: scalars, multi-line text, and lists of scalars.
SCALAR_TYPES = ("int", "float", "bool", "str")
TYPES = (*SCALAR_TYPES, "text", "list[int]", "list[float]", "list[str]", "list[bool]")
# How a bool parameter is written on a command line (CleanRL scripts): a flag that sets it
# (store_true), one that clears it (store_false), --x/--no-x (tyro), or --x true|false (strtobool).
BOOL_STYLES = ("store_true", "store_false", "tyro", "strtobool")
# What a run's budget counts (RunConfig.budget's fields).
BUDGET_BOUNDS = ("episodes", "timesteps")
# describe's query asking for the parameters alone (a sweep's check of its space): ``{ONLY: PARAMETERS, ...}``.
ONLY = "only"
PARAMETERS = "parameters"
# The RunConfig fields a form's starting values may set.
STARTING_FIELDS = ("algorithm", "env_id", "seed", "budget.episodes", "budget.timesteps")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]{0,99}")


class ContractError(ValueError):
    """A description that breaks the contract; the message names the field and what is wrong."""


class Section(StrEnum):
    """A part of the run form a kind switches on by declaring it (each maps to RunConfig fields)."""

    TRACKING = "tracking"  # Weights & Biases and captured videos (``tracking``)
    GPU = "gpu"  # use a GPU, fail without one (``resources``)
    WARM_START = "warm_start"  # start training from another run's saved model (``warm_start``)
    CHECKPOINTS = "checkpoints"  # save the model every N steps (``checkpoints.every_steps``)
    DATASETS = "datasets"  # record or read episodes as a dataset (the offline lane; no form rows yet)


# The most of a value a user gave that an error line repeats: a 10,000-character id is shown by its start.
SHOWN_CHARACTERS = 80


def cut(text: str) -> str:
    """``text`` as an error line shows it: whole, or its first :data:`SHOWN_CHARACTERS` with an ellipsis."""
    return text if len(text) <= SHOWN_CHARACTERS else text[: SHOWN_CHARACTERS - 1] + "…"


def shown(value: Any) -> str:
    """A value a user gave, as an error line shows it: its ``repr``, :func:`cut`."""
    return cut(repr(value))


def _fail(where: str, message: str) -> ContractError:
    return ContractError(f"{where}: {message}")


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _fits(kind: str, value: Any) -> bool:
    if kind == "bool":
        return isinstance(value, bool)
    if kind == "int":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "float":
        return _number(value)
    return isinstance(value, str)


@dataclass(frozen=True)
class ParameterSpec:
    """One value a run of the kind may be given (``RunConfig.params[name]``).

    Attributes:
        name: the key in ``params`` (a CleanRL script's flag without its dashes).
        type: one of :data:`TYPES`; ``text`` is multi-line text (a prompt template).
        default: what the worker uses when the run gives nothing (None: the program's own default).
        help: one or two lines for the form's tooltip and ``gym-gui algorithms``.
        group: the heading the form shows it under ("" for the kind's main group).
        choices: the only values it takes (each item's, for a list); empty: any value of its type.
        low, high: a number's range, inclusive; ``open_low`` excludes ``low``. None: unbounded.
        required: the run must give it (there is no default).
        flag: its command-line form where the worker passes it as one (``--learning-rate``).
        dest: the name the program stores it under, where it differs from ``name``.
        bool_style: how a bool is written on that command line (:data:`BOOL_STYLES`).
    """

    name: str
    type: str = "str"
    default: Any = None
    help: str = ""
    group: str = ""
    choices: tuple[Any, ...] = ()
    low: float | None = None
    high: float | None = None
    open_low: bool = False
    required: bool = False
    flag: str = ""
    dest: str = ""
    bool_style: str | None = None

    def __post_init__(self) -> None:
        where = f"parameter {self.name!r}"
        if not isinstance(self.name, str) or not _NAME.fullmatch(self.name):
            raise _fail(where, "its name must be a word of letters, digits, _, - or . (at most 100)")
        if self.type not in TYPES:
            raise _fail(where, f"type {self.type!r} is not one of {', '.join(TYPES)}")
        if self.bool_style is not None and self.bool_style not in BOOL_STYLES:
            raise _fail(where, f"bool_style {self.bool_style!r} is not one of {', '.join(BOOL_STYLES)}")
        for bound in ("low", "high"):
            value = getattr(self, bound)
            if value is not None and not (_number(value) and not math.isnan(value)):
                raise _fail(where, f"{bound} must be a number, got {value!r}")
        if self.low is not None and self.high is not None and self.low > self.high:
            raise _fail(where, f"low {self.low:g} is above high {self.high:g}")
        if not isinstance(self.choices, tuple):
            object.__setattr__(self, "choices", tuple(self.choices))

    @property
    def item_type(self) -> str:
        """The type of one value: the type itself, or a list's item type."""
        return self.type[5:-1] if self.is_list else ("str" if self.type == "text" else self.type)

    @property
    def is_list(self) -> bool:
        return self.type.startswith("list[")

    @property
    def command_flag(self) -> str:
        """The flag it is passed with (``--name`` unless the kind names another)."""
        return self.flag or f"--{self.name}"

    def problem(self, value: Any) -> str:
        """Why ``value`` is not a value of this parameter; "" when it is one (None always is: the default)."""
        if value is None:
            return "a value is required" if self.required else ""
        if self.is_list:
            if not isinstance(value, list):
                return f"expected a list of {self.item_type}, got {shown(value)}"
            return next((why for item in value if (why := self._item_problem(item))), "")
        return self._item_problem(value)

    def _item_problem(self, value: Any) -> str:
        kind = self.item_type
        if kind == "bool":
            return "" if isinstance(value, bool) else f"expected true or false, got {shown(value)}"
        if kind == "str":
            if not isinstance(value, str):
                return f"expected text, got {shown(value)}"
        elif kind == "int" and not _fits("int", value):
            return f"expected a whole number, got {shown(value)}"
        elif not _number(value):
            return f"expected a number, got {shown(value)}"
        elif not math.isfinite(value):
            return f"expected a finite number, got {shown(value)}"
        if self.choices and value not in self.choices:
            return f"must be one of {', '.join(map(str, self.choices))}, got {shown(value)}"
        if kind in ("int", "float"):
            low = -math.inf if self.low is None else self.low
            high = math.inf if self.high is None else self.high
            too_low = value <= low if self.open_low else value < low
            if too_low or value > high:
                return f"must be in {'(' if self.open_low else '['}{low:g}, {high:g}], got {shown(value)}"
        return ""

    def to_json(self) -> dict[str, Any]:
        """Its JSON form: the fields that differ from their defaults, ``name`` and ``type`` always."""
        data: dict[str, Any] = {"name": self.name, "type": self.type}
        for item in fields(self):
            value = getattr(self, item.name)
            if item.name not in data and value != item.default:
                data[item.name] = list(value) if isinstance(value, tuple) else value
        return data

    @classmethod
    def from_json(cls, data: Any) -> ParameterSpec:
        """Check and build one from its JSON form.

        Raises:
            ContractError: a missing name, an unknown key, or a value of the wrong type.
        """
        where = f"parameter {data.get('name')!r}" if isinstance(data, dict) else "parameter"
        if not isinstance(data, dict):
            raise _fail(where, f"expected a JSON object, got {type(data).__name__}")
        known = {item.name for item in fields(cls)}
        if unknown := sorted(set(data) - known):
            raise _fail(where, f"unknown keys {unknown}; a parameter has {sorted(known)}")
        for key in ("help", "group", "flag", "dest"):
            if not isinstance(data.get(key, ""), str):
                raise _fail(where, f"{key} must be text")
        for key in ("open_low", "required"):
            if not isinstance(data.get(key, False), bool):
                raise _fail(where, f"{key} must be true or false")
        choices = data.get("choices") or ()
        if not isinstance(choices, list | tuple):
            raise _fail(where, "choices must be a list")
        return cls(**{**data, "choices": tuple(choices)})


def parameter_problems(
    parameters: Iterable[ParameterSpec], values: Mapping[str, Any]
) -> list[tuple[str, str]]:
    """``(name, why)`` for every value in ``values`` that no parameter takes or that its parameter
    refuses, and for every required parameter left out; empty when the values are a valid set."""
    by_name = {parameter.name: parameter for parameter in parameters}
    found: list[tuple[str, str]] = []
    for name, value in values.items():
        parameter = by_name.get(name)
        if parameter is None:
            found.append((cut(name), f"unknown parameter; the parameters are {', '.join(by_name) or 'none'}"))
        elif why := parameter.problem(value):
            found.append((name, why))
    found.extend(
        (name, "a value is required")
        for name, parameter in by_name.items()
        if parameter.required and name not in values
    )
    return found


def resolve_parameters(parameters: Iterable[ParameterSpec], values: Mapping[str, Any]) -> dict[str, Any]:
    """Every parameter's value: the one given, else its default."""
    return {p.name: values.get(p.name, p.default) for p in parameters}


@dataclass(frozen=True)
class Variant:
    """One program a kind can run, chosen in the form above the parameters (a CleanRL script).

    ``summary`` is one line for its tooltip and ``gym-gui algorithms``; ``default_env`` the environment
    a run of it starts on; ``runnable`` False greys it with ``reason``.
    """

    name: str
    runnable: bool = True
    reason: str = ""
    summary: str = ""
    default_env: str = ""


@dataclass(frozen=True)
class EnvChoice:
    """An environment the form offers for the chosen variant; ``reason`` says why it cannot train on it ("" when it can)."""

    id: str
    reason: str = ""


@dataclass(frozen=True)
class FormSpec:
    """What a kind's run form offers: the answer of its plugin's ``describe``.

    Attributes:
        variant_label: what a variant is called in the form ("Algorithm"); "" when the kind has none.
        variants: the programs it can run, in the order the picker lists them.
        variant: the variant ``parameters``, ``envs`` and ``note`` are of ("" for the kind's own).
        parameters: the values a run may give (``RunConfig.params``).
        note: one line about the parameters (where they were read from).
        mapped: parameter name → the RunConfig field gym_gui sets it from (the form shows that field
            instead, with the parameter's default as the field's).
        sections: the parts of the form the kind's runs use (:class:`Section`).
        budget_bounds: what its budget may count (``episodes``, ``timesteps``), the first one offered first.
        gpu_available: whether its interpreter sees a GPU (shown beside the GPU section).
        envs: with a variant, the environments it trains on here; None while that is not known.
        envs_error: why ``envs`` could not be listed ("" when it could).
        env_dependent: the parameters' defaults depend on the environment: the form asks again
            (with ``env_id`` in the query) whenever the environment changes.
        starting: the common fields' values in a form no one has filled yet, by RunConfig field
            (:data:`STARTING_FIELDS`: the variant's ``algorithm``, ``env_id``, ``seed``, a budget).
    """

    variant_label: str = ""
    variants: tuple[Variant, ...] = ()
    variant: str = ""
    parameters: tuple[ParameterSpec, ...] = ()
    note: str = ""
    mapped: Mapping[str, str] = field(default_factory=dict)
    sections: frozenset[Section] = frozenset()
    budget_bounds: tuple[str, ...] = BUDGET_BOUNDS
    gpu_available: bool = False
    envs: tuple[EnvChoice, ...] | None = None
    envs_error: str = ""
    env_dependent: bool = False
    starting: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for key, value in self.starting.items():
            wanted = str if key in ("algorithm", "env_id") else int
            if key not in STARTING_FIELDS:
                raise _fail("starting", f"{key!r} is not one of {', '.join(STARTING_FIELDS)}")
            if not _fits(wanted.__name__, value):
                raise _fail(
                    "starting",
                    f"{key} must be {'text' if wanted is str else 'a whole number'}, got {value!r}",
                )
        if bad := [bound for bound in self.budget_bounds if bound not in BUDGET_BOUNDS]:
            raise _fail("budget_bounds", f"{bad} are not among {', '.join(BUDGET_BOUNDS)}")
        if not self.budget_bounds:
            raise _fail("budget_bounds", "a run's budget must count something")
        counts = Counter(parameter.name for parameter in self.parameters)
        if twice := sorted(name for name, count in counts.items() if count > 1):
            raise _fail("parameters", f"{twice} are described twice")

    def parameter(self, name: str) -> ParameterSpec | None:
        return next((p for p in self.parameters if p.name == name), None)

    def has(self, section: Section) -> bool:
        return section in self.sections

    def trainable_envs(self) -> list[str]:
        """The env ids the chosen variant trains on (empty while not known)."""
        return [env.id for env in self.envs or () if not env.reason]

    def to_json(self) -> dict[str, Any]:
        """Its JSON form (what ``DescribeWorker`` carries)."""
        return {
            "variant_label": self.variant_label,
            "variants": [vars(variant) for variant in self.variants],
            "variant": self.variant,
            "parameters": [parameter.to_json() for parameter in self.parameters],
            "note": self.note,
            "mapped": dict(self.mapped),
            "sections": sorted(self.sections),
            "budget_bounds": list(self.budget_bounds),
            "gpu_available": self.gpu_available,
            "envs": None if self.envs is None else [vars(env) for env in self.envs],
            "envs_error": self.envs_error,
            "env_dependent": self.env_dependent,
            "starting": dict(self.starting),
        }

    @classmethod
    def from_json(cls, data: Any) -> FormSpec:
        """Check and build one from its JSON form (an empty object is the form of a kind with nothing to set).

        Raises:
            ContractError: naming the field that breaks the contract.
        """
        if not isinstance(data, dict):
            raise _fail("form", f"expected a JSON object, got {type(data).__name__}")
        known = {item.name for item in fields(cls)}
        if unknown := sorted(set(data) - known):
            raise _fail("form", f"unknown keys {unknown}; a form has {sorted(known)}")
        for key in ("variant_label", "variant", "note", "envs_error"):
            if not isinstance(data.get(key, ""), str):
                raise _fail(key, "must be text")
        for key in ("gpu_available", "env_dependent"):
            if not isinstance(data.get(key, False), bool):
                raise _fail(key, "must be true or false")
        mapped = _mapping(data, "mapped")
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in mapped.items()):
            raise _fail("mapped", "must map parameter names to RunConfig field names (text to text)")
        try:
            sections = frozenset(Section(name) for name in _list(data, "sections"))
        except ValueError as exc:
            raise _fail("sections", f"{exc}; the sections are {', '.join(Section)}") from None
        envs = data.get("envs")
        return cls(
            variant_label=data.get("variant_label", ""),
            variants=tuple(_record(Variant, item, "variants") for item in _list(data, "variants")),
            variant=data.get("variant", ""),
            parameters=tuple(ParameterSpec.from_json(item) for item in _list(data, "parameters")),
            note=data.get("note", ""),
            mapped=dict(mapped),
            sections=sections,
            budget_bounds=tuple(_list(data, "budget_bounds") or BUDGET_BOUNDS),
            gpu_available=data.get("gpu_available", False),
            envs=None
            if envs is None
            else tuple(_record(EnvChoice, item, "envs") for item in _list(data, "envs")),
            envs_error=data.get("envs_error", ""),
            env_dependent=data.get("env_dependent", False),
            starting=_mapping(data, "starting"),
        )


def _mapping(data: dict[str, Any], key: str) -> dict[str, Any]:
    value = data.get(key) or {}
    if not isinstance(value, dict):
        raise _fail(key, f"expected a JSON object, got {type(value).__name__}")
    return value


def _list(data: dict[str, Any], key: str) -> list[Any]:
    value = data.get(key) or []
    if not isinstance(value, list):
        raise _fail(key, f"expected a list, got {type(value).__name__}")
    return value


def _record(cls: type[Any], data: Any, where: str) -> Any:
    """A :class:`Variant` or :class:`EnvChoice` from its JSON object, every field of its declared type."""
    if not isinstance(data, dict):
        raise _fail(where, f"expected JSON objects, got {type(data).__name__}")
    declared = {item.name: item for item in fields(cls)}
    if unknown := sorted(set(data) - set(declared)):
        raise _fail(where, f"unknown keys {unknown}; each has {sorted(declared)}")
    for key, value in data.items():
        wanted = bool if isinstance(declared[key].default, bool) else str
        if not isinstance(value, wanted):
            raise _fail(
                where, f"{key} must be {'true or false' if wanted is bool else 'text'}, got {value!r}"
            )
    key = "id" if "id" in declared else "name"
    if key not in data:
        raise _fail(where, "each needs its name (id)")
    return cls(**data)


@dataclass(frozen=True)
class ManifestExtras:
    """What a kind records of a run besides the fields every run's manifest has (CleanRL: its script
    and the script's command line): JSON values by key, kept as the manifest's ``extras``.

    Raises:
        ContractError: a key that is not a word, or a value JSON cannot hold (naming the key).
    """

    values: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for key, value in self.values.items():
            if not isinstance(key, str) or not _NAME.fullmatch(key):
                raise _fail("manifest extras", f"key {key!r} must be a word of letters, digits, _, - or .")
            if (why := _json_problem(value)) is not None:
                raise _fail(f"manifest extras: {key}", why)

    def to_json(self) -> dict[str, Any]:
        return dict(self.values)


def _json_problem(value: Any) -> str | None:
    """Why ``value`` is not a JSON value (None when it is one: text, a finite number, a bool, null,
    and lists and objects of them)."""
    if value is None or isinstance(value, str | bool | int):
        return None
    if isinstance(value, float):
        return None if math.isfinite(value) else f"{value!r} is not a finite number"
    if isinstance(value, list | tuple):
        return next((why for item in value if (why := _json_problem(item)) is not None), None)
    if isinstance(value, dict):
        if not all(isinstance(key, str) for key in value):
            return "an object's keys must be text"
        return next((why for item in value.values() if (why := _json_problem(item)) is not None), None)
    return f"a {type(value).__name__} is not a JSON value"
