"""Worker parameters as the forms hold them: one ``Param`` per parameter a worker describes, with the
raw content of its field, its default, and how typed text becomes a value. No Qt here."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator
from typing import Any, Literal

from gym_gui_sdk.contract import ParameterSpec

from gym_gui.core.errors import ConfigError

SCRIPT_DEFAULT = "(script default)"  # the choice that leaves a choice argument to the script

Editor = Literal["check", "choice", "text", "multiline"]


# ------------------------------------------------------------------ values typed by hand


def parse_int(text: str) -> int:
    """An int as people type it: ``128``, ``500_000``, ``1e6`` (a whole number).

    Raises:
        ValueError: with the reason shown next to the field.
    """
    cleaned = text.strip().replace("_", "")
    try:
        return int(cleaned)
    except ValueError:
        pass
    try:
        number = float(cleaned)
    except ValueError:
        raise ValueError(f"expected a whole number, got {text.strip()!r}") from None
    if not number.is_integer():
        raise ValueError(f"expected a whole number, got {text.strip()!r}")
    return int(number)


def parse_float(text: str) -> float:
    """A float, scientific notation included (``2.5e-4``).

    Raises:
        ValueError: with the reason shown next to the field.
    """
    try:
        value = float(text.strip().replace("_", ""))
    except ValueError:
        raise ValueError(f"expected a number such as 0.00025 or 2.5e-4, got {text.strip()!r}") from None
    if math.isnan(value):
        raise ValueError("expected a number, got NaN")
    return value


def parse_scalar(kind: str, text: str) -> Any:
    """``text`` as a value of a parameter type (``int``, ``float``, ``bool``; anything else is text)."""
    if kind == "int":
        return parse_int(text)
    if kind == "float":
        return parse_float(text)
    if kind == "bool":
        lowered = text.strip().lower()
        if lowered in ("true", "1", "yes", "on"):
            return True
        if lowered in ("false", "0", "no", "off"):
            return False
        raise ValueError(f"expected true or false, got {text.strip()!r}")
    return text


def display(value: Any) -> str:
    """A default as pre-filled text (None: empty, lists space-separated)."""
    if value is None:
        return ""
    if isinstance(value, list):
        return " ".join(display(item) for item in value)
    return str(value)


# ------------------------------------------------------------------ one parameter


class Param:
    """One parameter as its worker describes it (a :class:`ParameterSpec`: a CleanRL script argument,
    or one of a plugin's parameters) and ``raw``, what its field holds: a bool (``check``), a choice
    (``choice``) or text (``text``, and ``multiline`` for parameters of type ``text``, such as a prompt
    template).

    int and float are text validated as typed (so ``1e6`` and an empty "script default" work),
    lists are text of space-separated items; a typed value is then judged by the contract's one
    validator (:meth:`ParameterSpec.problem`: ranges, choices).
    """

    def __init__(self, spec: ParameterSpec) -> None:
        self.spec = spec
        self.name = spec.name
        self.kind = spec.type
        self.default: Any = spec.default
        self.required = spec.required
        self.help = spec.help
        self.group = spec.group
        self.flag = spec.command_flag
        self.bool_style = spec.bool_style
        self.choices: list[Any] | None = list(spec.choices) if spec.choices else None
        self.editor: Editor
        if self.kind == "bool":
            self.editor = "check"
        elif self.choices is not None and not self.is_list:
            self.editor = "choice"
        elif self.kind == "text":
            self.editor = "multiline"
        else:
            self.editor = "text"
        self.raw: Any = self.pristine()

    def __repr__(self) -> str:
        return f"Param({self.name!r}, raw={self.raw!r})"

    @property
    def is_list(self) -> bool:
        return self.spec.is_list

    def options(self) -> list[tuple[str, Any]]:
        """A choice parameter's entries (label, value); ``None`` leaves it to the script."""
        entries = [] if self.default in (self.choices or []) else [(SCRIPT_DEFAULT, None)]
        return entries + [(str(choice), choice) for choice in self.choices or []]

    def pristine(self) -> Any:
        """What the field holds before anyone edits it."""
        if self.editor == "check":
            return bool(self.default)
        if self.editor == "choice":
            return self.default if self.default in (self.choices or []) else None
        return display(self.default)

    def is_pristine(self) -> bool:
        return bool(self.raw == self.pristine())

    def set_raw(self, raw: Any) -> None:
        """Put a remembered field value back; one this parameter cannot hold is skipped."""
        if self.editor == "check":
            self.raw = bool(raw)
        elif self.editor == "choice":
            if any(value == raw for _label, value in self.options()):
                self.raw = raw
        else:
            self.raw = raw if isinstance(raw, str) else display(raw)

    def value(self) -> Any:
        """The typed value, or None for "the script's default".

        Raises:
            ValueError: the reason the field's content is not a value of this parameter.
        """
        value = self._typed()
        if value is not None and (why := self.spec.problem(value)):
            raise ValueError(why)
        return value

    def _typed(self) -> Any:
        if self.editor == "check":
            checked = bool(self.raw)
            # A store_true flag that defaults to True has no command-line form for False.
            if self.bool_style == "store_true" and bool(self.default) and not checked:
                raise ValueError(f"{self.flag} cannot be turned off: the script has no flag for it")
            if self.bool_style == "store_false" and not bool(self.default) and checked:
                raise ValueError(f"{self.flag} cannot be turned on: the script has no flag for it")
            return checked
        if self.editor == "choice":
            return self.raw
        if self.editor == "multiline":  # kept as typed: its lines and spacing are the value
            return str(self.raw) if str(self.raw).strip() else None
        text = str(self.raw).strip()
        if not text:
            if self.required:
                raise ValueError("a value is required")
            return None
        if self.is_list:
            return [parse_scalar(self.spec.item_type, item) for item in re.split(r"[,\s]+", text) if item]
        return parse_scalar(self.kind, text)

    def error(self) -> str:
        try:
            self.value()
        except ValueError as exc:
            return str(exc)
        return ""

    def _default_value(self) -> Any:
        if self.default is None:
            return None
        if self.kind == "float":
            return float(self.default)
        if self.kind == "bool":
            return bool(self.default)
        if self.is_list and isinstance(self.default, list):
            return [parse_scalar(self.spec.item_type, str(v)) for v in self.default]
        return self.default

    def changed_value(self) -> tuple[bool, Any]:
        """(whether the value differs from the default, the value); raises as :meth:`value` does."""
        value = self.value()
        if value is None:
            return False, None
        try:
            default = self._default_value()
        except ValueError:  # a default the form cannot parse: anything given counts as a change
            return True, value
        return value != default, value


class Params:
    """The parameters of one script or worker kind, in their order."""

    def __init__(self, specs: Iterable[ParameterSpec] = (), skip: Iterable[str] = ()) -> None:
        skipped = frozenset(skip)
        self.items: dict[str, Param] = {spec.name: Param(spec) for spec in specs if spec.name not in skipped}

    def __iter__(self) -> Iterator[Param]:
        return iter(self.items.values())

    def __len__(self) -> int:
        return len(self.items)

    def names(self) -> list[str]:
        return list(self.items)

    def get(self, name: str) -> Param | None:
        return self.items.get(name)

    def find(self, key: str) -> Param | None:
        """The parameter ``key`` names: by its name, its destination (``learning_rate``) or its flag
        spelled either way (``--learning-rate``, ``learning_rate``); None when none is."""
        wanted = key.strip().lstrip("-")
        for param in self:
            if wanted in (param.name, param.spec.dest, param.flag.lstrip("-")):
                return param
        dashed = wanted.replace("_", "-")
        return next((param for param in self if param.name.replace("_", "-") == dashed), None)

    def errors(self) -> dict[str, str]:
        """``params.<name>`` → why its value is not valid."""
        return {f"params.{p.name}": error for p in self if (error := p.error())}

    def changed(self) -> dict[str, Any]:
        """The values that differ from their defaults, by name (what goes into ``RunConfig.params``).

        Raises:
            ConfigError: naming the first parameter whose value is not valid.
        """
        result: dict[str, Any] = {}
        for param in self:
            try:
                changed, value = param.changed_value()
            except ValueError as exc:
                raise ConfigError(f"field 'params.{param.name}': {exc}") from None
            if changed:
                result[param.name] = value
        return result

    def raws(self, edited_only: bool = False) -> dict[str, Any]:
        """What the fields hold, by name (``edited_only``: those not as they started)."""
        return {p.name: p.raw for p in self if not (edited_only and p.is_pristine())}

    def restore(self, raws: dict[str, Any]) -> None:
        for name, raw in raws.items():
            param = self.items.get(name)
            if param is not None:
                param.set_raw(raw)
