"""The run form's model: every kind's form as plain values, shaped by the kind's form spec.

No Qt here: the view (``form.GeneratedForm``) shows a model and writes the user's edits into it;
:meth:`RunModel.to_config` is the run it describes, :meth:`RunModel.values` what the window
remembers of it (never a secret), :meth:`RunModel.errors` why a field is not valid yet. What the
model offers comes from the kind's :class:`FormSpec` (the plugin's ``describe``): a variant picker
(CleanRL's scripts), the parameters, the mapped fields, the declared sections, the budget's bounds.
Field names are RunConfig's (``budget.timesteps``, ``params.learning-rate``), so a message names the
same field whether the form or the daemon refuses it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from gym_gui_sdk.contract import BUDGET_BOUNDS, FormSpec, Section

from gym_gui.core.config import MAX_RENDER_FPS, RunConfig, WarmStart, parse_run_config
from gym_gui.ui.forms.params import Params, parse_int
from gym_gui.ui.forms.sections import (
    ExecutorChoice,
    ResourcesModel,
    TrackingModel,
    checkpoint_data,
    checkpoint_error,
    positive_error,
    refuse_first,
    text_value,
    warm_start_error,
    warm_start_text,
)

SEED_MAX = 2**31 - 1  # what a seed field holds (an int32 spin box); RunConfig allows up to 2**32 - 1
# The key under which the parameters of a kind without variants are remembered.
NO_VARIANT = ""


@dataclass(frozen=True)
class FollowUp:
    """What a training form is filled with for a follow-up run: a RunConfig's JSON form (a sweep's base
    config, a saved model's run and warm start; None for a study made elsewhere: the form's own worker
    and script are kept), then parameters over it; ``origin`` says where from, in the status line."""

    config: dict[str, Any] | None
    params: dict[str, Any]
    origin: str


def _config_values(config: dict[str, Any]) -> dict[str, Any]:
    """The remembered-form values (:meth:`RunModel.values`) a RunConfig's JSON form gives."""
    values: dict[str, Any] = {}
    for key in ("env_id", "seed", "algorithm", "notes", "dataset"):
        if key in config:
            values[key] = config[key]
    if isinstance(config.get("algorithm"), str):
        values["defaults_from"] = config["algorithm"]  # the config's env, seed and budget stay
    budget = config.get("budget") or {}
    for kind in BUDGET_BOUNDS:
        if isinstance(budget.get(kind), int):
            values["budget_kind"], values["budget"] = kind, str(budget[kind])
    every = (config.get("checkpoints") or {}).get("every_steps")
    if isinstance(every, int):
        values["checkpoint_every"] = str(every)
    values.update(config.get("resources") or {})
    fps = (config.get("telemetry") or {}).get("render_fps")
    if isinstance(fps, int | float):
        values["render_fps"] = fps
    executor = config.get("executor") or {}
    values["executor"], values["ray_address"] = executor.get("kind"), executor.get("ray_address")
    return {key: value for key, value in values.items() if value is not None}


def _seed(value: Any) -> int | None:
    return (
        value if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= SEED_MAX else None
    )


@dataclass
class RunModel:
    """What a run form holds, for any kind: the common fields (env, seed, budget, render rate, where it
    runs, notes), the chosen variant, the parameters its form spec describes, the kind's secrets, and
    every section (tracking, GPU, checkpoints, warm start), of which the spec's are shown and sent.

    ``form`` is the kind's word on its form (``FormSpec``); ``shown`` the variant whose parameters are
    in :attr:`params` (None while none are described). ``defaults_from`` is the variant whose defaults
    for the mapped fields (env, seed, budget) the fields hold: a variant chosen anew brings its own.
    """

    worker: str
    form: FormSpec = field(default_factory=FormSpec)
    streams_steps: bool = True  # the kind's runs stream their steps: the render rate is theirs to set
    algorithm: str = ""
    env_id: str = "FrozenLake-v1"
    seed: int = 0
    budget_kind: str = "episodes"
    budget: str = "100"
    render_fps: float = 10.0
    notes: str = ""
    dry_run: bool = False
    executor: ExecutorChoice = field(default_factory=ExecutorChoice)
    tracking: TrackingModel = field(default_factory=TrackingModel)
    resources: ResourcesModel = field(default_factory=ResourcesModel)
    checkpoint_every: str = ""
    # The run whose final model training starts from ("": new weights); a choice per run, not remembered.
    warm_start: str = ""
    # The home dataset an offline kind learns from (Section.DATASETS; "": none chosen yet).
    dataset: str = ""
    params: Params = field(default_factory=Params)
    shown: str | None = None
    defaults_from: str = ""
    # Remembered field values by variant (NO_VARIANT for a kind's own), kept until its parameters are
    # described: what was typed for a script comes back with it.
    saved_params: dict[str, dict[str, Any]] = field(default_factory=dict)
    # The kind's secrets (WorkerSpec.secrets) as typed, "" where nothing was: handed to the worker only
    # (secret_env), never in values() or the config.
    secrets: dict[str, str] = field(default_factory=dict)
    fresh: bool = True  # nothing remembered or filled in yet: the form spec's starting values apply

    # -------------------------------------------------------- what the kind describes

    def has(self, section: Section) -> bool:
        return self.form.has(section)

    def take_form(self, form: FormSpec) -> None:
        """Take the kind's form spec: its sections, bounds and variants; a fresh form takes its starting
        values. The parameters come with :meth:`use_parameters`."""
        self.form = form
        if form.budget_bounds and self.budget_kind not in form.budget_bounds:
            self.budget_kind = form.budget_bounds[0]
        if self.fresh and form.starting:
            self._start(form.starting)
            self.fresh = False

    def _start(self, starting: Any) -> None:
        for key in ("algorithm", "env_id"):
            if isinstance(starting.get(key), str) and starting[key]:
                setattr(self, key, starting[key])
        if (seed := _seed(starting.get("seed"))) is not None:
            self.seed = seed
        for bound in BUDGET_BOUNDS:
            if isinstance(starting.get(f"budget.{bound}"), int):
                self.budget_kind, self.budget = bound, str(starting[f"budget.{bound}"])

    def use_parameters(self, form: FormSpec, default_env: str = "") -> None:
        """Show the parameters ``form`` describes (of its variant, if any): what was typed for them comes
        back, and the fields the variant sets from its own defaults (``mapped``: env, seed, budget) take
        those when the variant is chosen anew (``default_env`` first). With the environments it trains on
        known, an env it cannot train on gives way to its default, else to the first one it trains on."""
        self.keep_typed()
        self.take_form(form)
        self.algorithm = form.variant or self.algorithm
        self.shown = form.variant
        self.params = Params(form.parameters, skip=form.mapped)
        if form.variant and self.defaults_from != form.variant:
            defaults = {form.mapped[p.name]: p.default for p in form.parameters if p.name in form.mapped}
            self._start({"env_id": default_env or defaults.get("env_id"), "seed": defaults.get("seed")})
            steps = defaults.get("budget.timesteps")
            if isinstance(steps, int) and not isinstance(steps, bool) and steps > 0:
                self.budget_kind, self.budget = "timesteps", str(steps)
            self.defaults_from = form.variant
        if self.env_refusal():
            trains = form.trainable_envs()
            fallback = default_env if default_env in trains else next(iter(trains), "")
            if fallback:
                self.env_id = fallback
        self.params.restore(self.saved_params.get(form.variant, {}))

    def keep_typed(self) -> None:
        """Keep what was typed for the shown parameters (it comes back with them), then show none."""
        if self.shown is not None:
            self.saved_params[self.shown] = {
                **self.saved_params.get(self.shown, {}),
                **self.params.raws(edited_only=True),
            }
        self.shown = None
        self.params = Params()

    def trainable_envs(self) -> list[str]:
        """The env ids the chosen variant trains on here (empty while not known)."""
        return self.form.trainable_envs()

    def env_refusal(self, env_id: str | None = None) -> str:
        """Why the chosen variant cannot train on ``env_id`` (the model's env by default); "" when it can
        or when that is not known."""
        env_id = (self.env_id if env_id is None else env_id).strip()
        if self.form.envs is None or not env_id or self.shown is None:
            return ""
        for env in self.form.envs:
            if env.id == env_id:
                return env.reason
        return f"{env_id} is not among the environments {self.algorithm} trains on here"

    # -------------------------------------------------------- validation and the run

    def errors(self) -> dict[str, str]:
        """Field → why it is not valid yet, in the order the form shows the fields."""
        errors: dict[str, str] = {}
        if self.has(Section.DATASETS) and not self.dataset.strip():
            errors["dataset"] = (
                "choose a dataset of the home (`gym-gui dataset create` makes one from stored runs)"
            )
        if not self.env_id.strip():
            errors["env_id"] = "choose an environment"
        elif refusal := self.env_refusal():
            errors["env_id"] = refusal
        if error := positive_error(self.budget, required=True):
            errors[f"budget.{self.budget_kind}"] = error
        if self.streams_steps and not 0.0 <= self.render_fps <= MAX_RENDER_FPS:
            errors["telemetry.render_fps"] = f"must be between 0 and {MAX_RENDER_FPS:g}"
        errors.update(self.executor.errors())
        if self.has(Section.CHECKPOINTS):
            errors.update(checkpoint_error(self.checkpoint_every))
        if self.has(Section.WARM_START):
            errors.update(warm_start_error(self.warm_start))
        return {**errors, **self.params.errors()}

    def config_data(self) -> dict[str, Any]:
        """The RunConfig fields as plain data, the declared sections' included (called only when
        :meth:`errors` is empty)."""
        data: dict[str, Any] = {
            "worker": self.worker,
            "env_id": self.env_id.strip(),
            "seed": self.seed,
            "budget": {self.budget_kind: parse_int(self.budget)},
            "params": self.params.changed(),
            "notes": self.notes,
            "executor": self.executor.config_data(),
            "dry_run": self.dry_run,
        }
        if self.form.variant_label:
            data["algorithm"] = self.algorithm.strip() or None
        if self.streams_steps:
            data["telemetry"] = {"render_fps": self.render_fps}
        if self.has(Section.TRACKING):
            data["tracking"] = self.tracking.config_data()
        if self.has(Section.GPU):
            data["resources"] = self.resources.config_data()
        if self.has(Section.CHECKPOINTS):
            data["checkpoints"] = checkpoint_data(self.checkpoint_every)
        if self.has(Section.WARM_START) and self.warm_start.strip():
            data["warm_start"] = WarmStart.reference(self.warm_start)
        if self.has(Section.DATASETS):
            data["dataset"] = self.dataset.strip()
        return data

    def to_config(self) -> RunConfig:
        """The run this model describes.

        Raises:
            ConfigError: naming the first field that is not valid.
        """
        refuse_first(self.errors())
        return parse_run_config(self.config_data())

    def secret_env(self) -> dict[str, str]:
        """Secrets for the worker's environment only (never stored, never part of the config): each of
        the kind's as typed, else as the environment gym_gui was started from holds it, and W&B's key
        when the run is tracked."""
        found = {
            name: value.strip() or os.environ.get(name, "").strip() for name, value in self.secrets.items()
        }
        secrets = {name: value for name, value in found.items() if value}
        if self.has(Section.TRACKING):
            secrets.update(self.tracking.secret_env())
        return secrets

    # -------------------------------------------------------- remembered values

    def values(self) -> dict[str, Any]:
        """What the window remembers of the form (JSON-able, never a secret). Fields as they started
        are not remembered: a default that depends on the env (a prompt template) or changed with the
        plugin's version comes back new."""
        saved = {variant: dict(raws) for variant, raws in self.saved_params.items()}
        if self.shown is not None:
            saved[self.shown] = {**saved.get(self.shown, {}), **self.params.raws(edited_only=True)}
        return {
            "algorithm": self.algorithm,
            "defaults_from": self.defaults_from,
            "env_id": self.env_id.strip(),
            "seed": self.seed,
            "budget_kind": self.budget_kind,
            "budget": self.budget,
            "render_fps": self.render_fps,
            "checkpoint_every": self.checkpoint_every,
            "dataset": self.dataset,
            "notes": self.notes,
            "params": {variant: raws for variant, raws in saved.items() if raws},
            **self.resources.values(),
            **self.tracking.values(),
            **self.executor.values(),
        }

    def restore(self, values: dict[str, Any]) -> None:
        """Take remembered values back; unknown or bad entries are skipped."""
        if not values:
            return
        self.fresh = False
        for key in ("algorithm", "env_id"):
            if text_value(values, key):
                setattr(self, key, values[key])
        self.defaults_from = text_value(values, "defaults_from") or ""
        if (seed := _seed(values.get("seed"))) is not None:
            self.seed = seed
        if values.get("budget_kind") in BUDGET_BOUNDS:
            self.budget_kind = values["budget_kind"]
        budget = values.get("budget")
        if isinstance(budget, int) and not isinstance(budget, bool):
            budget = str(budget)  # remembered by a version whose budget field was a spin box
        if isinstance(budget, str):
            self.budget = budget
        if isinstance(values.get("total_timesteps"), str):  # remembered by CleanRL's own form
            self.budget_kind, self.budget = "timesteps", values["total_timesteps"]
        fps = values.get("render_fps")
        if isinstance(fps, int | float) and not isinstance(fps, bool) and 0.0 <= fps <= MAX_RENDER_FPS:
            self.render_fps = float(fps)
        for key in ("checkpoint_every", "dataset", "notes"):
            if (text := text_value(values, key)) is not None:
                setattr(self, key, text)
        self.resources.restore(values)
        self.tracking.restore(values)
        self.executor.restore(values)
        params = values.get("params")
        if isinstance(params, dict):
            if all(isinstance(raws, dict) for raws in params.values()):
                self.saved_params = {str(variant): dict(raws) for variant, raws in params.items()}
            else:  # a kind's own parameters, remembered by a version without variants
                self.saved_params = {NO_VARIANT: dict(params)}
            if self.shown is not None:
                self.params.restore(self.saved_params.get(self.shown, {}))

    @classmethod
    def from_values(cls, worker: str, values: dict[str, Any]) -> RunModel:
        model = cls(worker)
        model.restore(values)
        return model

    def take_config(self, config: dict[str, Any]) -> None:
        """Take a RunConfig's common fields (JSON form: a study's base config) into the model, as a
        remembered form is taken back (:meth:`restore`); its ``params`` go through :meth:`apply_params`,
        its warm start into "Start from"."""
        self.restore(self.values() | _config_values(config))
        self.warm_start = warm_start_text(config)

    def apply_params(self, params: dict[str, Any]) -> list[str]:
        """Put ``params`` (a study's, named by flag or destination) into their fields; a parameter the
        config sets from a common field (``mapped``: ``total-timesteps``, ``seed``, ``env-id``) goes into
        that field. Returns the names no field of this form takes, in their order (reported to the user,
        never dropped silently)."""
        mapped = {flag.replace("_", "-"): name for flag, name in self.form.mapped.items()}
        unknown: list[str] = []
        for key, value in params.items():
            field_name = mapped.get(key.strip().lstrip("-").replace("_", "-"))
            if field_name == "budget.timesteps":
                self.budget_kind, self.budget = "timesteps", str(value)
            elif field_name == "seed" and (seed := _seed(value)) is not None:
                self.seed = seed
            elif field_name == "env_id" and isinstance(value, str):
                self.env_id = value
            elif (param := self.params.find(key)) is not None:
                param.set_raw(value)
            else:
                unknown.append(key)
        return unknown
