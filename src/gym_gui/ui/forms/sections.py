"""The run form's sections as plain values: where a run runs, its GPU, its tracking, its checkpoints, its warm start.

No Qt here. Each section holds its fields and answers the same four questions: why a field is not
valid yet (``errors``), its part of the RunConfig (``config_data``), what the window remembers of it
(``values``, never a secret) and how that comes back (``restore``, skipping what it cannot take).
The one model (``model.RunModel``) has every section; a kind's form spec decides which are shown and
sent (``FormSpec.sections``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from gym_gui.core import wandb_auth
from gym_gui.core.config import WarmStart
from gym_gui.core.errors import ConfigError
from gym_gui.ui.forms.params import parse_int

WANDB_MODES = ("disabled", "offline", "online")
EXECUTORS = ("local", "ray")


def text_value(values: dict[str, Any], key: str) -> str | None:
    """``values[key]`` when it is text, else None (a remembered value of the wrong type is skipped)."""
    value = values.get(key)
    return value if isinstance(value, str) else None


def refuse_first(errors: dict[str, str], prefix: str = "") -> None:
    """Raise the first of a form's ``errors`` (field → why), as the daemon words a refusal.

    Raises:
        ConfigError: ``{prefix}field 'NAME': why`` when there is any.
    """
    if errors:
        name, reason = next(iter(errors.items()))
        raise ConfigError(f"{prefix}field '{name}': {reason}")


def positive_error(text: str, required: bool) -> str:
    """Why ``text`` is not a whole number of at least 1 ("" when it is, or when empty and optional)."""
    if not text.strip() and not required:
        return ""
    try:
        return "" if parse_int(text) > 0 else "must be at least 1"
    except ValueError as exc:
        return str(exc)


@dataclass
class ExecutorChoice:
    """Where a run's worker runs (RunConfig's ``executor``): this machine, or a Ray cluster's head."""

    kind: str = "local"
    ray_address: str = ""

    def errors(self) -> dict[str, str]:
        if self.kind == "ray" and not self.ray_address.strip():
            return {"executor.ray_address": "give the Ray head's dashboard address, e.g. head:8265"}
        return {}

    def config_data(self) -> dict[str, Any]:
        return {"kind": self.kind, "ray_address": self.ray_address.strip() or None}

    def values(self) -> dict[str, Any]:
        return {"executor": self.kind, "ray_address": self.ray_address.strip()}

    def restore(self, values: dict[str, Any]) -> None:
        if text_value(values, "executor") in EXECUTORS:
            self.kind = values["executor"]
        if (address := text_value(values, "ray_address")) is not None:
            self.ray_address = address


@dataclass
class TrackingModel:
    """Where a run's metrics go besides gym_gui's storage, and whether it records videos (``tracking``)."""

    wandb_mode: str = "disabled"
    wandb_project: str = ""
    wandb_entity: str = ""
    wandb_run_name: str = ""
    wandb_server: str = ""  # a self-hosted W&B server's address; empty: W&B's cloud
    # Typed in the form, else the key W&B's own tools find (WANDB_API_KEY, a `wandb login`): handed to
    # the worker only (secret_env); never in values() or the config.
    wandb_api_key: str = ""

    @property
    def tracked(self) -> bool:
        return self.wandb_mode != "disabled"

    def config_data(self) -> dict[str, Any]:
        def given(text: str) -> str | None:
            return (text.strip() or None) if self.tracked else None

        return {
            "wandb_mode": self.wandb_mode,
            "wandb_project": given(self.wandb_project),
            "wandb_entity": given(self.wandb_entity),
            "wandb_run_name": given(self.wandb_run_name),
            "wandb_base_url": given(self.wandb_server),
        }

    def secret_env(self) -> dict[str, str]:
        if not self.tracked:
            return {}
        key = self.wandb_api_key.strip() or wandb_auth.api_key(self.wandb_server.strip() or None)
        return {wandb_auth.API_KEY_VAR: key} if key else {}

    def values(self) -> dict[str, Any]:
        return {
            "wandb_mode": self.wandb_mode,
            "wandb_project": self.wandb_project,
            "wandb_entity": self.wandb_entity,
            "wandb_run_name": self.wandb_run_name,
            "wandb_server": self.wandb_server,
        }

    def restore(self, values: dict[str, Any]) -> None:
        for key in ("wandb_project", "wandb_entity", "wandb_run_name", "wandb_server"):
            if (text := text_value(values, key)) is not None:
                setattr(self, key, text)
        if text_value(values, "wandb_mode") in WANDB_MODES:
            self.wandb_mode = values["wandb_mode"]


@dataclass
class ResourcesModel:
    """The GPU a run asks for (``resources``): wanted, and whether the run fails without one."""

    gpu: bool = False
    gpu_mandatory: bool = False

    def config_data(self) -> dict[str, Any]:
        return {
            "gpu": self.gpu,
            "gpu_mandatory": self.gpu and self.gpu_mandatory,  # without gpu it is not asked for
        }

    def values(self) -> dict[str, Any]:
        return {"gpu": self.gpu, "gpu_mandatory": self.gpu_mandatory}

    def restore(self, values: dict[str, Any]) -> None:
        for key in ("gpu", "gpu_mandatory"):
            if isinstance(values.get(key), bool):
                setattr(self, key, values[key])


def checkpoint_error(every: str) -> dict[str, str]:
    """``checkpoints.every_steps`` → why the "Checkpoint every" text is not a step count (empty: final only)."""
    error = positive_error(every, required=False)
    return {"checkpoints.every_steps": error} if error else {}


def checkpoint_data(every: str) -> dict[str, Any]:
    return {"every_steps": parse_int(every) if every.strip() else None}


def warm_start_error(reference: str) -> dict[str, str]:
    """``warm_start.run_id`` → why "Start from" (``RUN[:CHECKPOINT]``, empty: new weights) names no model."""
    if not reference.strip():
        return {}
    try:
        WarmStart.model_validate(WarmStart.reference(reference))
    except ValidationError as exc:
        return {
            "warm_start.run_id": "; ".join(
                str(error["msg"]).removeprefix("Value error, ") for error in exc.errors()
            )
        }
    return {}


def warm_start_text(config: dict[str, Any]) -> str:
    """The "Start from" text of a RunConfig's ``warm_start`` (shown as typed when it is not valid)."""
    warm = config.get("warm_start")
    if not isinstance(warm, dict):
        return ""
    try:
        return WarmStart.model_validate(warm).text()
    except ValidationError:  # shown as typed, so the field says what is wrong with it
        return f"{warm.get('run_id', '')}:{warm.get('checkpoint') or ''}".rstrip(":")
