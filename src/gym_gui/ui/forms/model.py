"""The parameter model behind the training forms: plain values, their validation, the saved form of them.

No Qt here: the views (the other modules of this package) show a model and write the user's edits
into it; :meth:`RunModel.to_config` is the run it describes, :meth:`RunModel.values` what the
window remembers of it (never a secret), :meth:`RunModel.errors` why a field is not valid yet.
Parameters are ``params.Params``. Field names are RunConfig's (``budget.timesteps``, ``params.learning-rate``), so a message names
the same field whether the form or the daemon refuses it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from gym_gui.core import wandb_auth
from gym_gui.core.config import MAX_RENDER_FPS, RunConfig, WarmStart, parse_run_config
from gym_gui.core.errors import ConfigError
from gym_gui.core.workers import BUDGET_BOUNDS
from gym_gui.ui.forms.params import Params, parse_int

WANDB_MODES = ("disabled", "offline", "online")
SEED_MAX = 2**31 - 1  # what a seed field holds (an int32 spin box); RunConfig allows up to 2**32 - 1


# ------------------------------------------------------------------ the common model


def _positive(text: str, required: bool) -> str:
    """Why ``text`` is not a whole number of at least 1 ("" when it is, or when empty and optional)."""
    if not text.strip() and not required:
        return ""
    try:
        return "" if parse_int(text) > 0 else "must be at least 1"
    except ValueError as exc:
        return str(exc)


def _text(values: dict[str, Any], key: str) -> str | None:
    value = values.get(key)
    return value if isinstance(value, str) else None


@dataclass(frozen=True)
class FollowUp:
    """What a training form is filled with for a follow-up run: a RunConfig's JSON form (a sweep's base
    config, a saved model's run and warm start; None for a study made elsewhere: the form's own worker
    and script are kept), then parameters over it; ``origin`` says where from, in the status line."""

    config: dict[str, Any] | None
    params: dict[str, Any]
    origin: str


EXECUTORS = ("local", "ray")


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
        if _text(values, "executor") in EXECUTORS:
            self.kind = values["executor"]
        if (address := _text(values, "ray_address")) is not None:
            self.ray_address = address


def _config_values(config: dict[str, Any]) -> dict[str, Any]:
    """The remembered-form values (:meth:`RunModel.values`) a RunConfig's JSON form gives."""
    values: dict[str, Any] = {}
    for key in ("env_id", "seed", "algorithm", "notes"):
        if key in config:
            values[key] = config[key]
    if isinstance(config.get("algorithm"), str):
        values["defaults_from"] = config["algorithm"]  # the config's env, seed and budget stay
    budget = config.get("budget") or {}
    for kind in BUDGET_BOUNDS:
        if isinstance(budget.get(kind), int):
            values["budget_kind"], values["budget"] = kind, budget[kind]
            if kind == "timesteps":
                values["total_timesteps"] = str(budget[kind])
    every = (config.get("checkpoints") or {}).get("every_steps")
    if isinstance(every, int):
        values["checkpoint_every"] = str(every)
    for key in ("gpu", "gpu_mandatory", "torch_deterministic"):
        if isinstance((config.get("resources") or {}).get(key), bool):
            values[key] = config["resources"][key]
    fps = (config.get("telemetry") or {}).get("render_fps")
    if isinstance(fps, int | float):
        values["render_fps"] = fps
    executor = config.get("executor") or {}
    values["executor"], values["ray_address"] = executor.get("kind"), executor.get("ray_address")
    return {key: value for key, value in values.items() if value is not None}


def _seed(values: dict[str, Any]) -> int | None:
    seed = values.get("seed")
    return seed if isinstance(seed, int) and not isinstance(seed, bool) and 0 <= seed <= SEED_MAX else None


@dataclass
class RunModel:
    """What every training form holds: the worker kind, the env, the seed, a dry-run switch and the
    worker's parameters. Subclasses add their fields and implement :meth:`config_data`,
    :meth:`values` and :meth:`restore`."""

    worker: str
    env_id: str = ""
    seed: int = 0
    dry_run: bool = False
    params: Params = field(default_factory=Params)
    executor: ExecutorChoice = field(default_factory=ExecutorChoice)

    def errors(self) -> dict[str, str]:
        """Field → why it is not valid yet, in the order the form shows the fields."""
        errors = {"env_id": "choose an environment"} if not self.env_id.strip() else {}
        return {**errors, **self.executor.errors()}

    def config_data(self) -> dict[str, Any]:
        """The RunConfig fields as plain data (called only when :meth:`errors` is empty)."""
        raise NotImplementedError

    def to_config(self) -> RunConfig:
        """The run this model describes.

        Raises:
            ConfigError: naming the first field that is not valid.
        """
        errors = self.errors()
        if errors:
            name, reason = next(iter(errors.items()))
            raise ConfigError(f"field '{name}': {reason}")
        return parse_run_config(self.config_data())

    def secret_env(self) -> dict[str, str]:
        """Secrets for the worker's environment only (never stored, never part of the config)."""
        return {}

    def values(self) -> dict[str, Any]:
        """What the window remembers of the form (JSON-able, never a secret)."""
        raise NotImplementedError

    def restore(self, values: dict[str, Any]) -> None:
        """Take remembered values back; unknown or bad entries are skipped."""
        raise NotImplementedError

    @classmethod
    def from_values(cls, worker: str, values: dict[str, Any]) -> RunModel:
        model = cls(worker)
        model.restore(values)
        return model

    def take_config(self, config: dict[str, Any]) -> None:
        """Take a RunConfig's common fields (JSON form: a study's base config) into the model, as a
        remembered form is taken back (:meth:`restore`); its ``params`` go through :meth:`apply_params`."""
        self.restore(self.values() | _config_values(config))

    def apply_params(self, params: dict[str, Any]) -> list[str]:
        """Put ``params`` (a study's, named by flag or destination) into their fields; returns the names
        no field of this form takes, in their order (reported to the user, never dropped silently)."""
        unknown: list[str] = []
        for key, value in params.items():
            param = self.params.find(key)
            if param is None:
                unknown.append(key)
            else:
                param.set_raw(value)
        return unknown


# ------------------------------------------------------------------ any worker kind


@dataclass
class WorkerModel(RunModel):
    """The generated form of a worker kind: env, seed, a budget, the render rate, and the parameters
    its plugin describes (``parameters`` in its DescribeWorker answer)."""

    env_id: str = "FrozenLake-v1"
    budget_kind: str = "episodes"
    budget: int = 100
    render_fps: float = 10.0
    # Remembered field values, kept until the plugin's description arrives and builds the parameters.
    saved_params: dict[str, Any] = field(default_factory=dict)
    # The kind's secrets (WorkerSpec.secrets) as typed, "" where nothing was: handed to the worker only
    # (secret_env), never in values() or the config.
    secrets: dict[str, str] = field(default_factory=dict)

    def use_parameters(self, specs: list[dict[str, Any]]) -> None:
        """Show the parameters the plugin describes; what was typed into fields the user edited stays
        (an env's new description brings new defaults, not a lost edit)."""
        self.saved_params.update(self.params.raws(edited_only=True))
        self.params = Params(specs)
        self.params.restore(self.saved_params)

    def secret_env(self) -> dict[str, str]:
        """Each secret as typed, else as the environment gym_gui was started from holds it."""
        found = {
            name: value.strip() or os.environ.get(name, "").strip() for name, value in self.secrets.items()
        }
        return {name: value for name, value in found.items() if value}

    def errors(self) -> dict[str, str]:
        errors = super().errors()
        if self.budget < 1:
            errors[f"budget.{self.budget_kind}"] = "must be at least 1"
        if not 0.0 <= self.render_fps <= MAX_RENDER_FPS:
            errors["telemetry.render_fps"] = f"must be between 0 and {MAX_RENDER_FPS:g}"
        return {**errors, **self.params.errors()}

    def config_data(self) -> dict[str, Any]:
        return {
            "worker": self.worker,
            "env_id": self.env_id.strip(),
            "seed": self.seed,
            "budget": {self.budget_kind: self.budget},
            "params": self.params.changed(),
            "telemetry": {"render_fps": self.render_fps},
            "executor": self.executor.config_data(),
            "dry_run": self.dry_run,
        }

    def values(self) -> dict[str, Any]:
        return {
            "env_id": self.env_id.strip(),
            "seed": self.seed,
            "budget_kind": self.budget_kind,
            "budget": self.budget,
            "render_fps": self.render_fps,
            # Fields as they started are not remembered: a default that depends on the env (a prompt
            # template) or changed with the plugin's version comes back new.
            "params": {**self.saved_params, **self.params.raws(edited_only=True)},
            **self.executor.values(),
        }

    def restore(self, values: dict[str, Any]) -> None:
        if _text(values, "env_id"):
            self.env_id = values["env_id"]
        if (seed := _seed(values)) is not None:
            self.seed = seed
        if values.get("budget_kind") in BUDGET_BOUNDS:
            self.budget_kind = values["budget_kind"]
        budget = values.get("budget")
        if isinstance(budget, int) and not isinstance(budget, bool) and 0 < budget <= SEED_MAX:
            self.budget = budget
        fps = values.get("render_fps")
        if isinstance(fps, int | float) and not isinstance(fps, bool) and 0.0 <= fps <= MAX_RENDER_FPS:
            self.render_fps = float(fps)
        if isinstance(values.get("params"), dict):
            self.saved_params = dict(values["params"])
            self.params.restore(self.saved_params)
        self.executor.restore(values)


# ------------------------------------------------------------------ CleanRL


@dataclass
class TrackingModel:
    """Where a run's metrics go besides gym_gui's storage, and whether it records videos."""

    wandb_mode: str = "disabled"
    wandb_project: str = ""
    wandb_entity: str = ""
    wandb_run_name: str = ""
    wandb_server: str = ""  # a self-hosted W&B server's address; empty: W&B's cloud
    # Typed in the form, else the key W&B's own tools find (WANDB_API_KEY, a `wandb login`): handed to
    # the worker only (secret_env); never in values() or the config.
    wandb_api_key: str = ""
    capture_video: bool = False

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
            "capture_video": self.capture_video,
        }

    def secret_env(self) -> dict[str, str]:
        if not self.tracked:
            return {}
        key = self.wandb_api_key.strip() or wandb_auth.api_key(self.wandb_server.strip() or None)
        return {wandb_auth.API_KEY_VAR: key} if key else {}


@dataclass
class CleanRLModel(RunModel):
    """A CleanRL run: the chosen script, the common fields gym_gui sets flags from, tracking, and
    the chosen script's own arguments (those the daemon does not set from a field).

    ``mapped`` is the daemon's word on which script flags come from which RunConfig field
    (DescribeWorker's ``mapped``); a newly chosen script brings its defaults for those fields.
    ``envs`` is the worker's word on the environments the chosen script trains on in its bundle
    (DescribeWorker's ``envs``: ``{"id", "reason"}`` each, reason "" when it trains on it); None while
    that is not known (no bundle yet, or a script whose environments no registry lists).
    """

    algorithm: str = "ppo"  # the chosen script, or the one wanted until the scripts are listed
    # ppo's own env until the bundle describes the script: a first run made before the bundle is
    # installed (it comes with that run) is one ppo can train on.
    env_id: str = "CartPole-v1"
    seed: int = 1  # CleanRL's own default seed
    total_timesteps: str = "500000"
    gpu: bool = False
    gpu_mandatory: bool = False
    torch_deterministic: bool = True
    tracking: TrackingModel = field(default_factory=TrackingModel)
    checkpoint_every: str = ""
    # The run whose final model training starts from ("": new weights); a choice per run, not remembered.
    warm_start: str = ""
    notes: str = ""
    script: dict[str, Any] | None = None  # the chosen script's arguments, as the daemon described them
    mapped: dict[str, str] = field(default_factory=dict)
    defaults_from: str = ""  # the script whose env, seed and budget defaults the fields hold
    saved_params: dict[str, dict[str, Any]] = field(default_factory=dict)  # script → name → raw
    envs: list[dict[str, str]] | None = None

    def take_config(self, config: dict[str, Any]) -> None:
        """The common fields, and the run (and checkpoint) the config's training starts from."""
        super().take_config(config)
        warm = config.get("warm_start")
        if isinstance(warm, dict):
            try:
                self.warm_start = WarmStart.model_validate(warm).text()
            except ValidationError:  # shown as typed, so the field says what is wrong with it
                self.warm_start = f"{warm.get('run_id', '')}:{warm.get('checkpoint') or ''}".rstrip(":")

    # -------------------------------------------------------- the chosen script

    def use_script(
        self,
        algorithm: str,
        arguments: dict[str, Any],
        default_env: str = "",
        envs: list[dict[str, str]] | None = None,
    ) -> None:
        """Show ``algorithm``'s own arguments: a script chosen anew brings its env, seed and budget
        (``default_env`` first, then its own env default); what was typed for it comes back. With
        ``envs`` known, an env the script cannot train on gives way to its default, else to the first
        one it trains on."""
        self.forget_script()
        self.algorithm = algorithm
        self.script = arguments
        self.envs = envs
        specs: list[dict[str, Any]] = arguments["params"]
        self.params = Params(specs, skip=frozenset(self.mapped))
        if self.defaults_from != algorithm:
            defaults = {self.mapped[s["name"]]: s.get("default") for s in specs if s["name"] in self.mapped}
            env = default_env or defaults.get("env_id")
            if isinstance(env, str) and env:
                self.env_id = env
            steps = defaults.get("budget.timesteps")
            if isinstance(steps, int) and not isinstance(steps, bool) and steps > 0:
                self.total_timesteps = str(steps)
            if (seed := _seed({"seed": defaults.get("seed")})) is not None:
                self.seed = seed
            self.defaults_from = algorithm
        if self.env_refusal():
            trains = self.trainable_envs()
            fallback = default_env if default_env in trains else next(iter(trains), "")
            if fallback:
                self.env_id = fallback
        self.params.restore(self.saved_params.get(algorithm, {}))

    def trainable_envs(self) -> list[str]:
        """The env ids the chosen script trains on in its bundle (empty while not known)."""
        return [env["id"] for env in self.envs or [] if not env.get("reason")]

    def env_refusal(self, env_id: str | None = None) -> str:
        """Why the chosen script cannot train on ``env_id`` (the model's env by default); "" when it can
        or when that is not known."""
        env_id = (self.env_id if env_id is None else env_id).strip()
        if self.envs is None or not env_id:
            return ""
        for env in self.envs:
            if env["id"] == env_id:
                return env.get("reason") or ""
        return f"{env_id} is not among the environments {self.algorithm} trains on in its bundle"

    def apply_params(self, params: dict[str, Any]) -> list[str]:
        """As :meth:`RunModel.apply_params`; a script flag gym_gui sets from a common field
        (``total-timesteps``, ``seed``, ``env-id``: ``mapped``) goes into that field."""
        mapped = {flag.replace("_", "-"): field_name for flag, field_name in self.mapped.items()}
        rest: dict[str, Any] = {}
        for key, value in params.items():
            field_name = mapped.get(key.strip().lstrip("-").replace("_", "-"))
            if field_name == "budget.timesteps":
                self.total_timesteps = str(value)
            elif field_name == "seed" and (seed := _seed({"seed": value})) is not None:
                self.seed = seed
            elif field_name == "env_id" and isinstance(value, str):
                self.env_id = value
            else:
                rest[key] = value
        return super().apply_params(rest)

    def forget_script(self) -> None:
        """Keep what was typed for the shown script (it comes back with it), then show none."""
        if self.script is not None:
            self.saved_params[self.script.get("algo", self.algorithm)] = self.params.raws(edited_only=True)
        self.script = None
        self.envs = None
        self.params = Params()

    # -------------------------------------------------------- validation and the run

    def errors(self) -> dict[str, str]:
        errors = super().errors()
        if "env_id" not in errors and (refusal := self.env_refusal()):
            errors["env_id"] = refusal
        if error := _positive(self.total_timesteps, required=True):
            errors["budget.timesteps"] = error
        if error := _positive(self.checkpoint_every, required=False):
            errors["checkpoints.every_steps"] = error
        if self.warm_start.strip():
            try:
                WarmStart.model_validate(WarmStart.reference(self.warm_start))
            except ValidationError as exc:
                errors["warm_start.run_id"] = "; ".join(
                    str(error["msg"]).removeprefix("Value error, ") for error in exc.errors()
                )
        return {**errors, **self.params.errors()}

    def config_data(self) -> dict[str, Any]:
        every = self.checkpoint_every.strip()
        return {
            "worker": self.worker,
            "env_id": self.env_id.strip(),
            "seed": self.seed,
            "budget": {"timesteps": parse_int(self.total_timesteps)},
            "algorithm": self.algorithm.strip() or None,
            "params": self.params.changed(),
            "checkpoints": {"every_steps": parse_int(every) if every else None},
            "warm_start": WarmStart.reference(self.warm_start) if self.warm_start.strip() else None,
            "tracking": self.tracking.config_data(),
            "resources": {
                "gpu": self.gpu,
                "gpu_mandatory": self.gpu and self.gpu_mandatory,
                "torch_deterministic": self.torch_deterministic,
            },
            "notes": self.notes,
            "executor": self.executor.config_data(),
            "dry_run": self.dry_run,
        }

    def secret_env(self) -> dict[str, str]:
        return self.tracking.secret_env()

    # -------------------------------------------------------- remembered values

    def values(self) -> dict[str, Any]:
        saved = dict(self.saved_params)
        if self.script is not None:
            saved[self.script.get("algo", self.algorithm)] = self.params.raws(edited_only=True)
        tracking = self.tracking
        return {
            "algorithm": self.algorithm,
            "defaults_from": self.defaults_from,
            "env_id": self.env_id.strip(),
            "seed": self.seed,
            "total_timesteps": self.total_timesteps,
            "gpu": self.gpu,
            "gpu_mandatory": self.gpu_mandatory,
            "torch_deterministic": self.torch_deterministic,
            "wandb_mode": tracking.wandb_mode,
            "wandb_project": tracking.wandb_project,
            "wandb_entity": tracking.wandb_entity,
            "wandb_run_name": tracking.wandb_run_name,
            "wandb_server": tracking.wandb_server,
            "capture_video": tracking.capture_video,
            "checkpoint_every": self.checkpoint_every,
            "notes": self.notes,
            "params": {algo: dict(raws) for algo, raws in saved.items() if raws},
            **self.executor.values(),
        }

    def restore(self, values: dict[str, Any]) -> None:
        if _text(values, "algorithm"):
            self.algorithm = values["algorithm"]
        self.defaults_from = _text(values, "defaults_from") or ""
        if _text(values, "env_id"):
            self.env_id = values["env_id"]
        if (seed := _seed(values)) is not None:
            self.seed = seed
        for key in ("total_timesteps", "checkpoint_every", "notes"):
            if (text := _text(values, key)) is not None:
                setattr(self, key, text)
        for key in ("gpu", "gpu_mandatory", "torch_deterministic"):
            if isinstance(values.get(key), bool):
                setattr(self, key, values[key])
        for key in ("wandb_project", "wandb_entity", "wandb_run_name", "wandb_server"):
            if (text := _text(values, key)) is not None:
                setattr(self.tracking, key, text)
        if isinstance(values.get("capture_video"), bool):
            self.tracking.capture_video = values["capture_video"]
        if _text(values, "wandb_mode") in WANDB_MODES:
            self.tracking.wandb_mode = values["wandb_mode"]
        self.executor.restore(values)
        params = values.get("params")
        if isinstance(params, dict):
            self.saved_params = {
                str(algo): dict(raws) for algo, raws in params.items() if isinstance(raws, dict)
            }
