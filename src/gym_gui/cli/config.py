"""A run config from a JSON file and flags (`train`, `sweep start`), and the defaults the flags leave
to the worker kind (its budget, the kind that runs scripts)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from gym_gui_sdk.contract import shown
from gym_gui_sdk.json_object import json_object

from gym_gui.core.config import RunConfig, parse_run_config
from gym_gui.core.errors import ConfigError
from gym_gui.workers import worker_catalog


def _parse_param(text: str) -> tuple[str, Any]:
    if "=" not in text:
        raise ConfigError(f"--param {shown(text)}: use name=value")
    name, raw = text.split("=", 1)
    try:
        value: Any = json.loads(raw)
    except ValueError:
        value = raw
    return name.strip(), value


def apply_overrides(data: dict[str, Any], overrides: dict[str, Any]) -> None:
    """Set each dotted field path of ``overrides`` (``budget.episodes``) in ``data`` to its value,
    making the sections it passes through; a None value is a flag not given and sets nothing."""
    for path, value in overrides.items():
        if value is None:
            continue
        *parents, leaf = path.split(".")
        node = data
        for part in parents:
            child = node.get(part)
            node[part] = child = dict(child) if isinstance(child, dict) else {}
            node = child
        node[leaf] = value


# The parameters `gym-gui train` has flags of its own for, which name files: a script checkout, its
# interpreter and a script's config file (--scripts-dir, --python, --config-path). Typed relative, they
# are made absolute where they were typed: the daemon has another working directory.
PATH_PARAMS = ("scripts_dir", "python", "config_path")


def build_config(config_file: Path | None, overrides: dict[str, Any], params: list[str]) -> RunConfig:
    """A RunConfig from a JSON file and/or flags: ``overrides`` maps dotted field paths
    (``budget.episodes``) to flag values (None: not given); flags win over the file."""
    data: dict[str, Any] = {}
    if config_file is not None:
        try:
            text = config_file.read_text()
        except OSError as exc:
            raise ConfigError(f"cannot read config file {config_file}: {exc.strerror}") from None
        data = json_object(
            text,
            lambda why: ConfigError(f"config file {config_file} is not valid JSON: {why}"),
            lambda _: ConfigError(f"config file {config_file} must hold a JSON object"),
        )
        # Paths in a config file are relative to the file, as a user who keeps both together expects
        # (a config written before they were params keeps them under ``source``).
        base = config_file.resolve().parent
        for section in ("params", "source"):
            values = data.get(section)
            for key in PATH_PARAMS:
                if isinstance(values, dict) and isinstance(values.get(key), str) and values[key]:
                    values[key] = str(base / Path(values[key]).expanduser())
    apply_overrides(data, overrides)
    if params:
        data["params"] = {**(data.get("params") or {}), **dict(_parse_param(p) for p in params)}
    if not data.get("budget"):
        data["budget"] = _default_budget(data.get("worker"))
    return parse_run_config(data)


def executor_overrides(
    kind: str | None, ray_address: str | None, cpus: float | None = None, gpus: float | None = None
) -> dict[str, Any]:
    """The ``executor`` section's flags as :func:`build_config`'s dotted overrides (None: not given)."""
    return {
        "executor.kind": kind,
        "executor.ray_address": ray_address,
        "executor.cpus": cpus,
        "executor.gpus": gpus,
    }


def _default_budget(kind: object) -> dict[str, int] | None:
    """The budget of a run that names none: its worker kind's own (``WorkerSpec.default_budget``)."""
    catalog = worker_catalog()
    if not isinstance(kind, str) or kind not in catalog:
        return None  # the config's own check names the missing or unknown worker
    spec = catalog.spec(kind)
    if spec.default_budget is None:
        raise ConfigError(
            f"field 'budget': {spec.display_name} has no default budget: "
            "give --episodes or --total-timesteps (or budget in --config)"
        )
    bound, count = spec.default_budget
    return {bound: count}


# Where a run executes: `train` and `sweep start` take the same two options.
ExecutorOption = Annotated[
    str | None, typer.Option(help="Where the worker runs: local (default) or ray (a Ray job).")
]
RayAddressOption = Annotated[
    str | None,
    typer.Option(metavar="ADDR", help="With --executor ray: the Ray head's dashboard, e.g. head:8265."),
]


def scripts_worker() -> str:
    """The installed worker kind whose runs are chosen from a list of scripts (algorithms), first in the
    roster when there are several (CleanRL's: the others name theirs with --worker)."""
    plugins = [plugin for plugin in worker_catalog().plugins() if plugin.form.variant_label]
    if not plugins:
        raise ConfigError("no installed worker kind offers algorithms; `gym-gui workers` lists the kinds")
    return min(plugins, key=lambda plugin: (plugin.spec.rank, plugin.spec.kind)).spec.kind
