"""The sweep form's model: a sweep's fields as plain values, turned into the spec `gym-gui sweep start` takes.

No Qt here (an import-linter contract): the view (``view.SweepDialog``) writes the user's edits into a
:class:`SweepModel`; :meth:`SweepModel.errors` says why a field is not valid yet, by the spec's own
field names (``space.learning-rate.low``, ``objective.metric``, ``trials``); :meth:`SweepModel.to_spec`
is the :class:`SweepSpec` (checked by :func:`parse_spec`, the CLI's one check) for a base run's config,
and :func:`spec_text` the file `gym-gui sweep start FILE` reads back as that spec.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Literal

import yaml
from gym_gui_sdk.contract import FormSpec, ParameterSpec

from gym_gui.core.config import RunConfig
from gym_gui.sweeps.spec import PRUNER_OPTIONS, Pruner, SweepSpec, parse_spec
from gym_gui.ui.forms.params import display, parse_int, parse_scalar
from gym_gui.ui.forms.sections import refuse_first

# The parameter types a space can search: numbers by range or choices, bools and text by choices
# (a spec's choices are scalars, so lists and multi-line text cannot be swept).
SWEEPABLE_TYPES = ("int", "float", "bool", "str")
SAMPLERS = ("tpe", "random", "cmaes", "grid")
DIRECTIONS = ("maximize", "minimize")
# An option of the hyperband and successive-halving pruners that may be left to Optuna.
AUTO = "auto"
# "field 'NAME'" in parse_spec's messages: the field a message is about.
_FIELD = re.compile(r"field '([^']+)'")

Searched = Literal["range", "categorical"]


def sweepable(form: FormSpec) -> list[ParameterSpec]:
    """The parameters of ``form`` a sweep can search, in its order: scalars the config does not set
    from one of its own fields (``mapped``: seed, env, budget)."""
    return [p for p in form.parameters if p.name not in form.mapped and p.type in SWEEPABLE_TYPES]


def _ranged(spec: ParameterSpec) -> bool:
    """Whether ``spec`` can be searched by a range (a number that takes any value of its type)."""
    return spec.type in ("int", "float") and not spec.choices


@dataclass
class SpaceEntry:
    """How one parameter is searched, as typed: a range (``low``, ``high``, ``log``, ``step``) for a
    number, or ``choices`` (comma-separated) for any sweepable parameter; ``searched`` puts it in
    the space."""

    spec: ParameterSpec
    searched: bool = False
    kind: Searched = "categorical"
    low: str = ""
    high: str = ""
    log: bool = False
    step: str = ""
    choices: str = ""

    @classmethod
    def of(cls, spec: ParameterSpec) -> SpaceEntry:
        """A parameter not searched yet: a range within its bounds for a number, else its choices
        (true, false for a bool; its default for free text)."""
        if _ranged(spec):
            low, high = (display(bound) if bound is not None else "" for bound in (spec.low, spec.high))
            return cls(spec, kind="range", low=low, high=high, choices=display(spec.default))
        if spec.type == "bool":
            return cls(spec, choices="true, false")
        offered = spec.choices or ((spec.default,) if spec.default is not None else ())
        return cls(spec, choices=", ".join(display(choice) for choice in offered))

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def kinds(self) -> tuple[Searched, ...]:
        """How this parameter can be searched."""
        return ("range", "categorical") if _ranged(self.spec) else ("categorical",)

    def _check_number(self, text: str, what: str) -> None:
        if why := self.spec.problem(parse_scalar(self.spec.type, text)):
            raise ValueError(f"{what} {why}")

    def errors(self) -> dict[str, str]:
        """``space.NAME.FIELD`` → why the field is not a value of the parameter (its own validator)."""
        where = f"space.{self.name}"
        errors: dict[str, str] = {}
        if self.kind == "categorical":
            try:
                self.choice_values()
            except ValueError as exc:
                errors[f"{where}.choices"] = str(exc)
            return errors
        for bound in ("low", "high"):
            try:
                self._check_number(getattr(self, bound), bound)
            except ValueError as exc:
                errors[f"{where}.{bound}"] = str(exc) if getattr(self, bound).strip() else "give a number"
        if self.step.strip():
            try:
                self._check_number(self.step, "step")
            except ValueError as exc:
                errors[f"{where}.step"] = str(exc)
        return errors

    def choice_values(self) -> list[Any]:
        """The typed choices, in their order.

        Raises:
            ValueError: an item that is not a value of the parameter (named), or no item at all.
        """
        items = [item.strip() for item in self.choices.split(",")]
        items = [item for item in items if item]
        if not items:
            raise ValueError("give at least one choice, separated by commas")
        values: list[Any] = []
        for item in items:
            try:
                value = parse_scalar(self.spec.type, item)
            except ValueError as exc:
                raise ValueError(f"{item!r}: {exc}") from None
            if why := self.spec.problem(value):
                raise ValueError(f"{item!r}: {why}")
            values.append(value)
        return values

    def distribution(self) -> dict[str, Any]:
        """The entry as the spec writes it (called only when :meth:`errors` is empty)."""
        if self.kind == "categorical":
            return {"type": "categorical", "choices": self.choice_values()}
        data: dict[str, Any] = {
            "type": self.spec.type,
            "low": parse_scalar(self.spec.type, self.low),
            "high": parse_scalar(self.spec.type, self.high),
        }
        if self.log:
            data["log"] = True
        if self.step.strip():
            data["step"] = parse_scalar(self.spec.type, self.step)
        return data


def pruner_default(option: str) -> str:
    """An option's default as its field shows it ("" for the pruner's own default, none given)."""
    default = Pruner.model_fields[option].default
    return "" if default is None else str(default)


@dataclass
class SweepModel:
    """What the sweep form holds besides its base run: the space (one :class:`SpaceEntry` per sweepable
    parameter of the base run's form), one objective, the sampler, the pruner and its options, how
    many trials, how many at once, seeds per trial, and the sweep's name. Numbers are text as typed
    (``1e6`` works), judged by :meth:`errors`."""

    entries: dict[str, SpaceEntry] = field(default_factory=dict)
    name: str = ""
    metric: str = ""  # the view starts it at the kind's return metric (WorkerSpec.return_metric)
    aggregate: str = "last_mean"
    window: str = "10"
    direction: str = "maximize"
    sampler: str = "tpe"
    sampler_seed: str = ""
    pruner: str = "none"
    # Options of the chosen pruner as typed ("" leaves one to its default); others' are kept, not sent.
    pruner_options: dict[str, str] = field(default_factory=dict)
    trials: str = "20"
    parallel: str = "1"
    seeds: str = "1"

    # -------------------------------------------------------- the space

    def take_form(self, form: FormSpec) -> None:
        """Offer the sweepable parameters of ``form``: an entry typed for a parameter of the same name
        and type is kept, the others start anew."""
        entries: dict[str, SpaceEntry] = {}
        for spec in sweepable(form):
            kept, fresh = self.entries.get(spec.name), SpaceEntry.of(spec)
            if kept is not None and kept.spec.type == spec.type and kept.kinds == fresh.kinds:
                kept.spec = spec
                fresh = kept
            entries[spec.name] = fresh
        self.entries = entries

    def searched(self) -> list[SpaceEntry]:
        return [entry for entry in self.entries.values() if entry.searched]

    def pruner_fields(self) -> tuple[str, ...]:
        """The options the chosen pruner takes (Optuna's names, and gym_gui's ``report_steps``)."""
        return PRUNER_OPTIONS.get(self.pruner, ())

    def pruner_option(self, option: str) -> str:
        return self.pruner_options.get(option, pruner_default(option))

    # -------------------------------------------------------- validation and the spec

    def errors(self) -> dict[str, str]:
        """Field → why it is not valid yet, by the spec's field names, in the order the form shows them."""
        errors: dict[str, str] = {}
        if not self.entries:
            errors["space"] = "the base run's form describes no parameter a sweep can search"
        elif not self.searched():
            errors["space"] = "tick at least one parameter to search"
        for entry in self.searched():
            errors.update(entry.errors())
        if not self.metric.strip():
            errors["objective.metric"] = "name the metric a trial is judged on"
        if self.aggregate == "last_mean":
            _count(errors, "objective.window", self.window)
        if self.sampler_seed.strip():
            _count(errors, "sampler.seed", self.sampler_seed, low=0)
        for option in self.pruner_fields():
            text = self.pruner_option(option).strip()
            if text and text != AUTO:
                _count(errors, f"pruner.{option}", text, low=0)
        for key in ("trials", "parallel", "seeds"):
            _count(errors, key, getattr(self, key))
        return errors

    def spec_data(self, config: RunConfig) -> dict[str, Any]:
        """The spec as plain data, ``config`` its base run (called only when :meth:`errors` is empty)."""
        objective: dict[str, Any] = {
            "metric": self.metric.strip(),
            "aggregate": self.aggregate,
            "direction": self.direction,
        }
        if self.aggregate == "last_mean":
            objective["window"] = parse_int(self.window)
        sampler: dict[str, Any] = {"name": self.sampler}
        if self.sampler_seed.strip():
            sampler["seed"] = parse_int(self.sampler_seed)
        pruner: dict[str, Any] = {"name": self.pruner}
        for option in self.pruner_fields():
            text = self.pruner_option(option).strip()
            if text:
                pruner[option] = text if text == AUTO else parse_int(text)
        data: dict[str, Any] = {
            "config": config.model_dump(mode="json"),
            "space": {entry.name: entry.distribution() for entry in self.searched()},
            "objective": objective,
            "sampler": sampler,
            "pruner": pruner,
            "trials": parse_int(self.trials),
            "parallel": parse_int(self.parallel),
            "seeds": parse_int(self.seeds),
        }
        if self.name.strip():
            data["name"] = self.name.strip()
        return data

    def to_spec(self, config: RunConfig) -> SweepSpec:
        """The sweep these fields and the base run ``config`` describe, checked as `gym-gui sweep start`
        checks a spec file.

        Raises:
            ConfigError: naming the first field that is not valid.
        """
        refuse_first(self.errors(), "sweep spec: ")
        return parse_spec(self.spec_data(config))


def _count(errors: dict[str, str], key: str, text: str, low: int = 1) -> None:
    """Put why ``text`` is not a whole number of at least ``low`` into ``errors[key]``."""
    try:
        value = parse_int(text)
    except ValueError as exc:
        errors[key] = str(exc)
        return
    if value < low:
        errors[key] = f"must be at least {low}, got {value}"


def fields_named(message: str) -> list[str]:
    """The fields a spec's message names, as :meth:`SweepModel.errors` names them: ``field
    'objective.0.metric': …`` → ``objective.metric`` (the form has one objective)."""
    return [re.sub(r"\.\d+(?=\.|$)", "", name) for name in _FIELD.findall(message)]


def spec_text(spec: SweepSpec, yaml_file: bool) -> str:
    """``spec`` as the file `gym-gui sweep start FILE` takes: YAML (``yaml_file``) or JSON, fields at
    their defaults left out (:func:`load_spec` reads the file back as the same spec)."""
    data = spec.model_dump(mode="json", exclude_defaults=True)
    if yaml_file:
        return yaml.safe_dump(data, sort_keys=False)
    return json.dumps(data, indent=2) + "\n"
