"""RunConfig: the validated description of one run, with its published JSON schema."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Mapping
from typing import Any, Literal
from urllib.parse import urlsplit

from gym_gui_sdk.contract import cut, shown
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from gym_gui.core.errors import ConfigError, GymGuiError
from gym_gui.core.ids import DATASET_ID_PATTERN, validate_env_id, validate_run_id
from gym_gui.core.workers import KIND_PATTERN

# "tokens" (plural) counts text, as in a model's max_tokens; a token (singular) is a credential.
_SECRET_KEY = re.compile(r"(api[_-]?key|token(?!s)|secret|password)", re.IGNORECASE)


def looks_secret(key: object) -> bool:
    """Whether a setting or parameter named ``key`` would hold a secret (never stored, always redacted)."""
    return _SECRET_KEY.search(str(key)) is not None


REDACTED = "***"


def redact_url(url: str) -> str:
    """``url`` with its password and every secret-looking query parameter's value replaced by ``***``
    (``postgresql://me:pw@db/x?password=pw`` → ``postgresql://me:***@db/x?password=***``)."""
    parts = urlsplit(url)
    userinfo, at, hostport = parts.netloc.rpartition("@")
    netloc = f"{userinfo.partition(':')[0]}:{REDACTED}@{hostport}" if at and ":" in userinfo else parts.netloc
    pairs = [pair.partition("=") for pair in parts.query.split("&")] if parts.query else []
    query = "&".join(f"{k}{eq}{REDACTED if eq and looks_secret(k) else v}" for k, eq, v in pairs)
    # By text, not urlunsplit: that would drop the empty host of sqlite:////path.
    if netloc != parts.netloc:
        url = url.replace(f"//{parts.netloc}", f"//{netloc}", 1)
    if query != parts.query:
        url = url.replace(f"?{parts.query}", f"?{query}", 1)
    return url


# The most frames per second a run may ask a worker to encode (at start or while it runs).
MAX_RENDER_FPS = 240.0


# The longest path and file name Linux takes (PATH_MAX, NAME_MAX): a longer one names no file.
_PATH_MAX = 4096
_NAME_MAX = 255


def check_path_text(path: str) -> str:
    """Return ``path`` unchanged if it could name a file at all, else raise.

    Raises:
        ConfigError: it holds a NUL or another control character, or it or one of its parts is
            longer than the filesystem allows (the message says which, without repeating the path).
    """
    if any(ord(char) < 32 or ord(char) == 127 for char in path):
        raise ConfigError("holds a control character (NUL, newline, …), which no path has")
    size = len(path.encode("utf-8", errors="surrogatepass"))
    if size > _PATH_MAX:
        raise ConfigError(f"is {size} bytes long; a path has at most {_PATH_MAX}")
    longest = max((len(part.encode("utf-8", errors="surrogatepass")) for part in path.split("/")), default=0)
    if longest > _NAME_MAX:
        raise ConfigError(f"has a part of {longest} bytes; a file or directory name has at most {_NAME_MAX}")
    return path


def path_param(params: Mapping[str, Any], name: str) -> str | None:
    """A run's parameter ``name`` that names a file or directory (a kind's checkout, its interpreter, a
    config file): None when it is not given, else the absolute path it holds.

    Raises:
        ConfigError: naming ``params.NAME``: not text, not a path, or not absolute (the daemon has another
            working directory; clients resolve what a user typed before sending it).
    """
    value = params.get(name)
    if value is None or value == "":
        return None
    field = f"field 'params.{name}'"
    if not isinstance(value, str):
        raise ConfigError(f"{field}: expected a path, got {value!r}")
    try:
        check_path_text(value)
    except ConfigError as exc:
        raise ConfigError(f"{field}: {exc}") from None
    if not os.path.isabs(value):
        raise ConfigError(
            f"{field}: must be an absolute path (got {value!r}); the daemon has another working directory"
        )
    return value


def _field_check(check: Callable[[str], str], value: str) -> str:
    """``check(value)``, its refusal raised as the ValueError pydantic reports under the field's name."""
    try:
        return check(value)
    except GymGuiError as exc:
        raise ValueError(str(exc)) from None


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


# Settings RunConfig once had that nothing ever read, by section. Every run stored before they
# were retired has them in its config.json (defaults are written out), so they are accepted and
# dropped wherever a config is validated; any other unknown key is still an error.
RETIRED: dict[str, frozenset[str]] = {
    "tracking": frozenset({"tensorboard"}),  # CleanRL always writes TensorBoard event files
    "resources": frozenset({"cpus"}),  # no launcher or scheduler ever looked at it
}


# Settings RunConfig once had that one kind alone read, and that are now that kind's parameters. A
# config stored before they moved carries them: a value other than the one it had by default moves to
# ``params`` under the setting's own name (the kind takes it by that name), the rest is dropped.
MOVED_TO_PARAMS: dict[tuple[str, str], Any] = {
    ("source", "scripts_dir"): None,
    ("source", "python"): None,
    ("resources", "torch_deterministic"): True,
    ("tracking", "capture_video"): False,
}


def _move_to_params(data: Any) -> Any:
    """``data`` (a config's JSON form) with the settings of :data:`MOVED_TO_PARAMS` moved into its params."""
    if not isinstance(data, dict) or not any(
        isinstance(data.get(section), dict) and name in data[section] for section, name in MOVED_TO_PARAMS
    ):
        return data
    data = {**data, "params": dict(data.get("params") or {})}
    for (section, name), default in MOVED_TO_PARAMS.items():
        part = data.get(section)
        if not isinstance(part, dict) or name not in part:
            continue
        part = dict(part)
        value = part.pop(name)
        if value != default:
            data["params"].setdefault(name, value)
        if part or section != "source":
            data[section] = part
        else:
            del data[section]
    return data


def _drop_retired(section: str, data: Any) -> Any:
    retired = RETIRED[section]
    if isinstance(data, dict) and retired & data.keys():
        return {key: value for key, value in data.items() if key not in retired}
    return data


# The largest budgets taken: beyond any experiment a researcher runs (Budget's messages say why).
MOST_TIMESTEPS = 10**12
MOST_EPISODES = 10**9


class Budget(_Strict):
    """How long the run goes on: a number of environment steps, of episodes, or both (first reached)."""

    timesteps: int | None = Field(default=None, gt=0, description="Environment steps to run.")
    episodes: int | None = Field(default=None, gt=0, description="Episodes to run.")

    @field_validator("timesteps")
    @classmethod
    def _steps_within_reach(cls, value: int | None) -> int | None:
        if value is not None and value > MOST_TIMESTEPS:
            raise ValueError(
                "must be at most 10^12 environment steps, ten times the longest published runs "
                "(Agent57 played ~10^11 frames): a larger one is a typo that would run for months or longer"
            )
        return value

    @field_validator("episodes")
    @classmethod
    def _episodes_within_reach(cls, value: int | None) -> int | None:
        if value is not None and value > MOST_EPISODES:
            raise ValueError(
                "must be at most 10^9 episodes, a hundred times what the longest tabular studies play "
                "(~10^7): a larger one is a typo that would run for months or longer"
            )
        return value

    @model_validator(mode="after")
    def _one_bound(self) -> Budget:
        if self.timesteps is None and self.episodes is None:
            raise ValueError("give timesteps or episodes (or both)")
        return self


class Tracking(_Strict):
    """Where metrics go besides gym_gui's own storage."""

    wandb_mode: Literal["disabled", "offline", "online"] = Field(
        default="disabled", description="Weights & Biases: disabled, offline (sync later) or online."
    )
    wandb_project: str | None = Field(default=None, description="W&B project name.")
    wandb_entity: str | None = Field(default=None, description="W&B entity (user or team).")
    wandb_run_name: str | None = Field(default=None, description="W&B run name; default: the run id.")
    wandb_base_url: str | None = Field(
        default=None,
        description="The W&B server to log to, for a self-hosted one (what WANDB_BASE_URL takes, "
        "e.g. http://wandb.lab:8080); default: W&B's cloud.",
    )
    # Not ``tensorboard``: that name is retired (RETIRED), and configs stored before carry it.
    tensorboard_export: bool = Field(
        default=False,
        description="When the run ends, write its stored episodes and metrics as TensorBoard event files "
        "in its tensorboard/ directory (what `gym-gui export-tensorboard` writes), for any kind.",
    )

    @field_validator("wandb_base_url")
    @classmethod
    def _server_address(cls, value: str | None) -> str | None:
        if value is None:
            return None
        address = value.strip().rstrip("/")
        parts = urlsplit(address)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError("must be an http(s) address such as http://wandb.lab:8080")
        if parts.username or parts.password:
            raise ValueError("must not hold credentials (the API key goes in the worker's environment)")
        if parts.query or parts.fragment:
            raise ValueError("must be the server's address, without a query or fragment")
        return address

    @model_validator(mode="before")
    @classmethod
    def _retired(cls, data: Any) -> Any:
        return _drop_retired("tracking", data)


class Resources(_Strict):
    """What the run would like from the machine."""

    gpu: bool = Field(default=False, description="Use a GPU when one is available.")
    gpu_mandatory: bool = Field(default=False, description="Fail before launch when no GPU is available.")

    @model_validator(mode="before")
    @classmethod
    def _retired(cls, data: Any) -> Any:
        return _drop_retired("resources", data)

    @model_validator(mode="after")
    def _mandatory_means_wanted(self) -> Resources:
        if self.gpu_mandatory and not self.gpu:
            raise ValueError("gpu_mandatory needs gpu: a GPU cannot be mandatory and unwanted")
        return self


class ExecutorOptions(_Strict):
    """Where the run's worker process runs: on this machine, or as a job on a Ray cluster."""

    kind: Literal["local", "ray"] = Field(
        default="local", description="local: a process of the daemon's machine; ray: a Ray job."
    )
    ray_address: str | None = Field(
        default=None,
        min_length=1,
        max_length=300,
        description="With kind ray: the Ray head's dashboard address, e.g. http://head:8265.",
    )
    cpus: float = Field(default=1.0, ge=0.0, le=1024.0, description="CPUs the run's Ray job reserves.")
    gpus: float = Field(default=0.0, ge=0.0, le=64.0, description="GPUs the run's Ray job reserves.")

    @field_validator("ray_address")
    @classmethod
    def _address_form(cls, value: str | None) -> str | None:
        if value is None:
            return None
        parts = urlsplit(value if "://" in value else f"http://{value}")
        if parts.scheme not in ("http", "https") or not parts.hostname or parts.path not in ("", "/"):
            raise ValueError(f"{shown(value)} is not a Ray dashboard address (host:port or http://host:port)")
        try:
            parts.port  # noqa: B018 (raises on a port that is not a number)
        except ValueError:
            raise ValueError(f"{shown(value)} has an invalid port") from None
        return value

    @model_validator(mode="after")
    def _ray_needs_address(self) -> ExecutorOptions:
        if self.kind == "ray" and self.ray_address is None:
            raise ValueError("kind ray needs ray_address (the Ray head's dashboard address)")
        return self

    @property
    def ray_url(self) -> str:
        """The dashboard's URL (``http://`` added to a bare host:port)."""
        assert self.ray_address is not None
        return self.ray_address if "://" in self.ray_address else f"http://{self.ray_address}"


class TelemetryOptions(_Strict):
    """What a telemetry-lane run streams and stores."""

    render_fps: float = Field(
        default=10.0,
        ge=0.0,
        le=MAX_RENDER_FPS,
        description="Encoded frames per second for pixel environments (0: none).",
    )
    store_steps: bool = Field(default=True, description="Store every step (needed for replay).")
    store_render: bool = Field(default=True, description="Store render payloads with the steps.")
    batch_steps: int = Field(default=2048, ge=1, le=65536, description="Steps per batch sent to the daemon.")
    batch_seconds: float = Field(
        default=0.2, gt=0.0, le=10.0, description="Longest a step waits before its batch is sent."
    )


class CheckpointOptions(_Strict):
    """When a training run saves its model besides the final one."""

    every_steps: int | None = Field(
        default=None, gt=0, description="Save a checkpoint every N environment steps."
    )


class _SavedModel(_Strict):
    """A trained run's saved model: the run, and a checkpoint inside its directory (default: the final model)."""

    run_id: str = Field(min_length=1, max_length=200, description="The trained run whose model it is.")
    checkpoint: str | None = Field(
        default=None, description="Checkpoint path inside that run's directory; default: its final model."
    )

    @field_validator("run_id")
    @classmethod
    def _safe_run_id(cls, value: str) -> str:
        return _field_check(validate_run_id, value)

    @field_validator("checkpoint")
    @classmethod
    def _checkpoint_path(cls, value: str | None) -> str | None:
        return None if value is None else _field_check(check_path_text, value)


class WarmStart(_SavedModel):
    """What a training run starts from: another run's saved model, loaded into the script's model before
    training (CleanRL: the ppo family's ``agent``, the dqn family's ``q_network``)."""

    @classmethod
    def reference(cls, text: str) -> dict[str, str | None]:
        """The fields ``RUN[:CHECKPOINT]`` names (the form the CLI's --warm-start and the window's
        "Start from" take): a run id holds no ":", so the first one ends it."""
        run_id, _, checkpoint = text.strip().partition(":")
        return {"run_id": run_id, "checkpoint": checkpoint or None}

    def text(self) -> str:
        """The ``RUN[:CHECKPOINT]`` form of this warm start."""
        return f"{self.run_id}:{self.checkpoint}" if self.checkpoint else self.run_id


class EvaluationOptions(_SavedModel):
    """What an evaluation run plays: a trained run's saved model."""

    real_time: bool = Field(
        default=False,
        description="Play at the environment's own frame rate (its render_fps), so a person can watch; "
        "otherwise as fast as the machine allows.",
    )
    epsilon: float = Field(
        default=0.0,
        ge=0.0,
        le=1.0,
        description="The share of steps played with a random action instead of the model's (ε-greedy "
        "noise, for datasets of mixed quality); drawn from the run's seed.",
    )


class RunConfig(_Strict):
    """Everything that defines a run. Stored in the run directory exactly as run (see ``storage.run_dir``).

    Secrets (W&B API keys and the like) are never part of it: they travel only in the worker's
    environment.
    """

    worker: str = Field(
        pattern=f"^{KIND_PATTERN.pattern}$",
        description="Worker kind (`gym-gui workers` lists the installed ones), e.g. random.",
    )
    env_id: str = Field(
        min_length=1, max_length=200, description="Gymnasium environment id, e.g. FrozenLake-v1."
    )
    seed: int | None = Field(default=0, ge=0, le=2**32 - 1, description="Seed of the first episode.")
    budget: Budget = Field(description="How long the run goes on.")
    mode: Literal["train", "evaluate", "play"] = Field(default="train", description="What the run does.")
    algorithm: str | None = Field(
        default=None, description="The variant the kind runs, as its form lists them (an algorithm's script)."
    )
    params: dict[str, Any] = Field(default_factory=dict, description="Algorithm parameters by name.")
    env_kwargs: dict[str, Any] = Field(
        default_factory=dict, description="Keyword arguments for gymnasium.make."
    )
    checkpoints: CheckpointOptions = Field(default_factory=CheckpointOptions)
    evaluation: EvaluationOptions | None = Field(
        default=None, description="With mode evaluate: what to play."
    )
    warm_start: WarmStart | None = Field(
        default=None,
        description="With mode train: start from another run's saved model instead of new weights.",
    )
    rerun_of: str | None = Field(
        default=None,
        max_length=200,
        description="The run this one re-runs (same config, seed and package set); its returns are compared at the end.",
    )
    comparison: str | None = Field(
        default=None,
        pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$",
        description="The comparison it is one side of (an arena session, an evaluation batch): its runs open together.",
    )
    dataset: str | None = Field(
        default=None,
        pattern=DATASET_ID_PATTERN,
        description="The dataset an offline run learns from: a Minari dataset id under the home's datasets/.",
    )
    tracking: Tracking = Field(default_factory=Tracking)
    resources: Resources = Field(default_factory=Resources)
    telemetry: TelemetryOptions = Field(default_factory=TelemetryOptions)
    executor: ExecutorOptions = Field(default_factory=ExecutorOptions)
    notes: str = Field(default="", max_length=10_000, description="Free text kept with the run.")
    dry_run: bool = Field(default=False, description="Resolve and show what would run, launch nothing.")

    @model_validator(mode="before")
    @classmethod
    def _moved(cls, data: Any) -> Any:
        return _move_to_params(data)

    @field_validator("env_id")
    @classmethod
    def _env_id_form(cls, value: str) -> str:
        return _field_check(validate_env_id, value)

    @field_validator("rerun_of")
    @classmethod
    def _rerun_of_id(cls, value: str | None) -> str | None:
        return None if value is None else _field_check(validate_run_id, value)

    @field_validator("params")
    @classmethod
    def _no_secret_params(cls, value: dict[str, Any]) -> dict[str, Any]:
        for key in value:
            if looks_secret(key):
                raise ValueError(
                    f"parameter {key!r} looks like a secret; pass secrets in the worker's environment"
                )
        return value

    @model_validator(mode="after")
    def _evaluation_matches_mode(self) -> RunConfig:
        if self.mode == "evaluate" and self.evaluation is None:
            raise ValueError("mode 'evaluate' needs 'evaluation' (the trained run to play)")
        if self.warm_start is not None and self.mode != "train":
            raise ValueError(f"'warm_start' is for training runs; a run of mode {self.mode!r} trains nothing")
        return self

    def to_json(self) -> str:
        return self.model_dump_json(indent=2)


def _describe_error(error: Any) -> str:
    where = ".".join(str(part) for part in error["loc"]) or "config"
    message = error["msg"]
    if error["type"] == "value_error":
        message = str(error.get("ctx", {}).get("error", message))  # our own words, without pydantic's prefix
    if error["type"] in ("missing",):
        return f"field '{where}': {message}"
    value = error.get("input")
    if isinstance(value, str) and "://" in value:
        value = redact_url(value)  # an error names the URL, never its password
    given = cut(json.dumps(value, default=str)) if not isinstance(value, dict) else "{…}"
    return f"field '{where}': {message} (got {given})"


def format_validation_error(exc: ValidationError) -> str:
    """One line per problem, each naming the field and the bad value."""
    return "; ".join(_describe_error(error) for error in exc.errors())


def parse_run_config(data: str | bytes | dict[str, Any]) -> RunConfig:
    """Validate a RunConfig from JSON text or a mapping.

    Raises:
        ConfigError: naming every bad field and its value.
    """
    try:
        if isinstance(data, dict):
            return RunConfig.model_validate(data)
        return RunConfig.model_validate_json(data)
    except ValidationError as exc:
        if any(error["type"] == "json_invalid" for error in exc.errors()):
            raise ConfigError(f"config is not valid JSON: {exc.errors()[0]['msg']}") from None
        raise ConfigError(f"invalid run config: {format_validation_error(exc)}") from None


def redact(mapping: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``mapping`` (nested) with every secret-looking key's value replaced by ``***``."""
    out: dict[str, Any] = {}
    for key, value in mapping.items():
        if looks_secret(key):
            out[key] = REDACTED
        elif isinstance(value, dict):
            out[key] = redact(value)
        else:
            out[key] = value
    return out


def run_config_schema() -> dict[str, Any]:
    """The published JSON schema of RunConfig."""
    return RunConfig.model_json_schema()
