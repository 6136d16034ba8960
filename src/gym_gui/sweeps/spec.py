"""A sweep's specification: the config every trial starts from, the search space, the objective, the
sampler, the pruner, and how many trials run, how many at once and with how many seeds.

Read from a JSON or YAML file (:func:`load_spec`) or JSON text (:func:`parse_spec`), checked strictly:
every failure is one line naming the field. The search space is checked again against the worker's
parameter description (:func:`check_space`), the one the window's generated form is built from.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import unquote, urlsplit

from gym_gui_sdk.contract import FormSpec, shown
from gym_gui_sdk.json_object import json_object
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from gym_gui.core.config import RunConfig, format_validation_error, redact_url
from gym_gui.core.errors import ConfigError
from gym_gui.core.files import write_atomically
from gym_gui.storage.home import Home

# A sweep or study name: it names a directory under the home and is typed on command lines.
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
AGGREGATES = ("last_mean", "mean", "max", "min", "last")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class FloatRange(_Strict):
    """A float drawn from ``[low, high]``: on a log scale when ``log``, on a grid of ``step`` when given."""

    type: Literal["float"]
    low: float
    high: float
    log: bool = False
    step: float | None = Field(default=None, gt=0)

    @model_validator(mode="after")
    def _bounds(self) -> FloatRange:
        _check_bounds(self.low, self.high, self.log, self.step)
        return self


class IntRange(_Strict):
    """An integer drawn from ``[low, high]``: on a log scale when ``log``, every ``step`` otherwise."""

    type: Literal["int"]
    low: int
    high: int
    log: bool = False
    step: int = Field(default=1, ge=1)

    @model_validator(mode="after")
    def _bounds(self) -> IntRange:
        _check_bounds(self.low, self.high, self.log, self.step if self.step != 1 else None)
        return self


class Choices(_Strict):
    """One of ``choices`` (numbers, strings, booleans or null)."""

    type: Literal["categorical"]
    choices: list[float | int | str | bool | None] = Field(min_length=1)


def _check_bounds(low: float, high: float, log: bool, step: float | None) -> None:
    if low > high:
        raise ValueError(f"low ({low:g}) is above high ({high:g})")
    if log and low <= 0:
        raise ValueError(f"a log range needs low > 0 (got {low:g})")
    if log and step is not None:
        raise ValueError("a log range takes no step")


Distribution = Annotated[FloatRange | IntRange | Choices, Field(discriminator="type")]


class Objective(_Strict):
    """What a trial is judged on: ``aggregate`` over the points of the metric ``metric`` of its run.

    ``last_mean``: the mean of the last ``window`` points; ``mean``, ``max``, ``min`` of all; ``last``:
    the last point.
    """

    metric: str = Field(min_length=1, max_length=200)
    aggregate: Literal["last_mean", "mean", "max", "min", "last"] = "last_mean"
    window: int = Field(default=10, ge=1, le=100_000)
    direction: Literal["maximize", "minimize"] = "maximize"

    @property
    def label(self) -> str:
        what = f"mean of the last {self.window}" if self.aggregate == "last_mean" else self.aggregate
        return f"{what} {self.metric} ({self.direction})"


class Sampler(_Strict):
    """Optuna's sampler: TPE, random, CMA-ES or grid (the grid of every categorical and stepped range)."""

    name: Literal["tpe", "random", "cmaes", "grid"] = "tpe"
    seed: int | None = Field(default=None, ge=0, le=2**32 - 1)


# Which options each pruner takes (Optuna's own names and defaults).
# ``report_steps`` is gym_gui's: every how many steps (the metric's step, e.g. CleanRL's global step)
# a trial's objective so far is reported; default a tenth of the budget. Reports fall on the same
# steps in every trial, which Optuna's pruners compare trials at.
PRUNER_OPTIONS: dict[str, tuple[str, ...]] = {
    "none": (),
    "median": ("report_steps", "n_startup_trials", "n_warmup_steps", "interval_steps", "n_min_trials"),
    "successive_halving": ("report_steps", "min_resource", "reduction_factor", "min_early_stopping_rate"),
    "hyperband": ("report_steps", "min_resource", "max_resource", "reduction_factor"),
}


class Pruner(_Strict):
    """Optuna's pruner, fed each trial's objective so far as its run goes; ``none`` prunes nothing."""

    name: Literal["none", "median", "successive_halving", "hyperband"] = "none"
    report_steps: int | None = Field(default=None, ge=1)
    n_startup_trials: int = Field(default=5, ge=0)
    n_warmup_steps: int = Field(default=0, ge=0)
    interval_steps: int = Field(default=1, ge=1)
    n_min_trials: int = Field(default=1, ge=1)
    min_resource: int | Literal["auto"] = "auto"
    max_resource: int | Literal["auto"] = "auto"
    reduction_factor: int = Field(default=3, ge=2)
    min_early_stopping_rate: int = Field(default=0, ge=0)

    @model_validator(mode="after")
    def _options_of_the_pruner(self) -> Pruner:
        taken = PRUNER_OPTIONS[self.name]
        # An option of another pruner given a value of its own (defaults are written out in a spec
        # that went through JSON once, so being set is not enough to be foreign).
        foreign = sorted(
            option
            for option, field in type(self).model_fields.items()
            if option not in ("name", *taken) and getattr(self, option) != field.default
        )
        if foreign:
            takes = ", ".join(taken) or "no options"
            raise ValueError(f"the {self.name} pruner takes {takes}, not {', '.join(foreign)}")
        for option in ("min_resource", "max_resource"):
            value = getattr(self, option)
            if isinstance(value, int) and value < 1:
                raise ValueError(f"{option} must be at least 1 or 'auto' (got {value})")
        return self


class SweepSpec(_Strict):
    """Everything a sweep needs. ``config`` is the worker's RunConfig every trial starts from; a trial
    sets the parameters of ``space`` in its ``params`` and, with ``seeds`` > 1, plays ``seeds`` runs
    with consecutive seeds from ``config.seed`` whose objectives are averaged."""

    name: str | None = Field(default=None, description="The sweep's name; default: its algorithm and env.")
    config: RunConfig
    space: dict[str, Distribution] = Field(min_length=1)
    objective: list[Objective] = Field(min_length=1)
    sampler: Sampler = Field(default_factory=Sampler)
    pruner: Pruner = Field(default_factory=Pruner)
    trials: int = Field(ge=1, le=100_000)
    parallel: int = Field(default=1, ge=1, le=1024)
    seeds: int = Field(default=1, ge=1, le=100)
    storage: str | None = Field(
        default=None, description="An SQLAlchemy URL; default: SQLite in the sweep's own directory."
    )
    study: str | None = Field(default=None, description="The study's name; default: the sweep id.")

    @field_validator("objective", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        return [value] if isinstance(value, dict) else value

    @field_validator("name", "study")
    @classmethod
    def _name_form(cls, value: str | None) -> str | None:
        if value is not None and not _NAME.match(value):
            raise ValueError(
                f"{shown(value)} is not a name: letters, digits, '.', '_' and '-', starting with a letter or digit"
            )
        return value

    @field_validator("storage")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        if value is not None and "://" not in value:
            raise ValueError(f"{shown(value)} is not an SQLAlchemy URL (e.g. sqlite:////path/to/study.db)")
        if value is not None and redact_url(value) != value:
            raise ValueError(
                "the URL holds a password, which the spec, the sweep's files and the registry would keep: "
                "remove it and give it to the daemon the way libpq takes one (PGPASSWORD in the "
                "daemon's environment, or ~/.pgpass of the user running it)"
            )
        return value

    @model_validator(mode="after")
    def _coherent(self) -> SweepSpec:
        if self.config.mode != "train":
            raise ValueError("field 'config.mode': a sweep's trials train (mode 'train')")
        if self.config.dry_run:
            raise ValueError("field 'config.dry_run': a sweep's trials are real runs")
        if self.seeds > 1 and self.config.seed is None:
            raise ValueError("field 'config.seed': k seeds per trial count up from a seed; give one")
        if self.pruner.name != "none" and len(self.objective) > 1:
            raise ValueError("field 'pruner': Optuna prunes single-objective studies only")
        if self.sampler.name == "cmaes" and len(self.objective) > 1:
            raise ValueError("field 'sampler': CMA-ES optimises a single objective")
        if self.sampler.name == "grid":
            for name, dist in self.space.items():
                if isinstance(dist, FloatRange) and dist.step is None:
                    raise ValueError(
                        f"field 'space.{name}': a grid sampler needs choices or a step for each float range"
                    )
                if isinstance(dist, IntRange | FloatRange) and dist.log:
                    raise ValueError(f"field 'space.{name}': a grid sampler takes no log range")
        return self

    @property
    def directions(self) -> list[str]:
        return [objective.direction for objective in self.objective]

    def label(self) -> str:
        """The sweep's name: its own, or ``{algorithm or worker}-{env}``."""
        return self.name or f"{self.config.algorithm or self.config.worker}-{self.config.env_id}"


def parse_spec(data: str | bytes | dict[str, Any]) -> SweepSpec:
    """A checked sweep spec from JSON text or a mapping.

    Raises:
        ConfigError: one line naming each bad field.
    """
    try:
        if isinstance(data, str | bytes):
            return SweepSpec.model_validate_json(data)
        return SweepSpec.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(f"sweep spec: {format_validation_error(exc)}") from None


def load_spec(path: Path) -> SweepSpec:
    """The sweep spec in the JSON or YAML file ``path`` (YAML by its suffix .yaml / .yml).

    Raises:
        ConfigError: the file cannot be read or parsed, or a field is wrong (named).
    """
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"sweep spec {path}: cannot read it: {exc}") from None

    def not_mapping(value: object) -> ConfigError:
        return ConfigError(f"sweep spec {path}: holds {type(value).__name__}, not a mapping of fields")

    if path.suffix.lower() in (".yaml", ".yml"):
        import yaml

        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            where = getattr(exc, "problem_mark", None)
            line = f" (line {where.line + 1})" if where is not None else ""
            raise ConfigError(
                f"sweep spec {path}: not valid YAML{line}: {getattr(exc, 'problem', exc)}"
            ) from None
        if not isinstance(data, dict):
            raise not_mapping(data)
    else:
        data = json_object(
            text, lambda why: ConfigError(f"sweep spec {path}: not valid JSON: {why}"), not_mapping
        )
    try:
        spec = parse_spec(data)
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc}") from None
    # A relative SQLite path means the file's neighbourhood, not the daemon's working directory.
    storage = spec.storage
    if storage is not None and storage.startswith("sqlite:///") and not storage.startswith("sqlite:////"):
        relative = storage.removeprefix("sqlite:///")
        if relative and not relative.startswith(":memory:"):
            absolute = (path.parent / relative).resolve()
            spec = spec.model_copy(update={"storage": f"sqlite:///{absolute}"})
    return spec


# ------------------------------------------------------------------ against the worker's parameters

_NUMERIC = {"int", "float"}


def _key(name: str) -> str:
    return name.replace("-", "_")


def check_space(spec: SweepSpec, form: FormSpec) -> None:
    """Check the search space against the worker's parameters, as its description lists them (the
    specs the generated form reads), with the contract's one validator of values.

    A name may be written with ``-`` or ``_``. The form's ``mapped`` names parameters the config sets
    from one of its own fields (CleanRL's flags: flag → field): those cannot be swept.

    Raises:
        ConfigError: naming the field ``space.NAME`` and what is wrong: an unknown name (listing
            the names there are), a range on a non-numeric parameter, a float range on an integer
            one, a bound or a choice the parameter does not take.
    """
    if not form.parameters:
        raise ConfigError(
            f"sweep spec: field 'config.worker': {spec.config.worker} describes no parameters to sweep "
            f"(is its bundle installed? `gym-gui bundles install {spec.config.worker}`)"
        )
    by_key = {_key(p.name): p for p in form.parameters}
    fixed_keys = {_key(flag): field for flag, field in form.mapped.items()}
    for name, dist in spec.space.items():
        where = f"sweep spec: field 'space.{name}'"
        if _key(name) in fixed_keys:
            raise ConfigError(f"{where}: set by the config field '{fixed_keys[_key(name)]}', not swept")
        param = by_key.get(_key(name))
        if param is None:
            names = ", ".join(sorted(p.name for p in form.parameters if _key(p.name) not in fixed_keys))
            raise ConfigError(f"{where}: the worker has no parameter {name!r}; it has: {names or 'none'}")
        if isinstance(dist, FloatRange | IntRange):
            if param.type not in _NUMERIC or param.choices:
                raise ConfigError(
                    f"{where}: a {dist.type} range on a parameter of type {param.type}"
                    + (" with choices" if param.choices else "")
                    + "; give its values as choices"
                )
            if isinstance(dist, FloatRange) and param.type == "int":
                raise ConfigError(f"{where}: {name} is an integer parameter; use type int")
            values: list[Any] = [dist.low, dist.high]
        else:
            values = list(dist.choices)
        for value in values:
            if why := param.problem(value):
                raise ConfigError(f"{where}: {shown(value)} is not a value of {name}: {why}")


def _sqlite_files(url: str) -> list[Path]:
    """The files an SQLite storage URL may open (its path, and as SQLite's ``file:`` URI form where it
    looks like one, whether or not ``uri=true`` says so); none for a database in memory or on a server."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        parsed = make_url(url)
    except (ArgumentError, ValueError):
        return []  # not a URL sqlalchemy reads: opening it fails before any file is touched
    database = parsed.database
    if parsed.get_backend_name() != "sqlite" or not database or database.startswith(":memory:"):
        return []
    files = [Path(database)]
    if database.startswith("file:"):
        parts = urlsplit(database)
        files.append(Path(unquote(parts.path)))
    return files


def check_storage(url: str, home: Home) -> None:
    """Refuse a study storage that is a file of ``home``'s (symlinks and relative paths resolved):
    Optuna creates its tables in the database it is given, so a URL naming the registry or a run's
    database would write into gym_gui's own. The one place inside the home a study may live is a
    sweep's own, ``sweeps/<id>/study.db`` (a new sweep joining a study an earlier one made).

    Raises:
        ConfigError: naming the field ``storage`` and the file.
    """
    sweeps = home.sweeps_dir.resolve()
    for path in _sqlite_files(url):
        resolved = path.resolve()
        if not home.holds(resolved):
            continue
        if resolved.name == STUDY_FILE and resolved.parent.parent == sweeps:
            continue
        raise ConfigError(
            f"sweep spec: field 'storage': {resolved} is inside the gym_gui home {home.root}, whose "
            "databases are gym_gui's own; put the study outside the home, or leave storage out "
            "(SQLite in the sweep's directory)"
        )


# The files of a sweep's directory.
SPEC_FILE = "spec.json"  # the spec as started (mode 0600)
STUDY_FILE = "study.db"  # the study's SQLite storage, unless the spec names another


def write_spec(directory: Path, spec: SweepSpec) -> None:
    """Write the spec into the sweep's directory, readable by its owner only."""
    write_atomically(directory / SPEC_FILE, spec.model_dump_json(indent=2), private=True)


def read_spec(directory: Path) -> SweepSpec:
    """The spec a sweep was started with.

    Raises:
        ConfigError: the file is missing or no longer a valid spec.
    """
    try:
        text = (directory / SPEC_FILE).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"sweep {directory.name}: its spec cannot be read: {exc}") from None
    return parse_spec(text)
