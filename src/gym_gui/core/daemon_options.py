"""The daemon's options a user chooses (`gym-gui daemon start --max-concurrent …`), kept in the home's daemon-options.json."""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from gym_gui.core.errors import ConfigError
from gym_gui.core.files import write_atomically

# The unit each option is shown in, by field (none: a count).
_UNITS = {
    "min_free_mb": "MB",
    "warn_free_mb": "MB",
    "heartbeat_timeout": "s",
    "cancel_grace": "s",
}


class DaemonOptions(BaseModel):
    """The options a daemon reads once, when it starts; None: the daemon's default.

    The home's file holds only what a user chose; a running daemon publishes every value it runs
    with in ``daemon.json`` (``DaemonFile.options``).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_concurrent: int | None = Field(
        default=None, ge=1, description="runs at once (default: the usable CPUs)"
    )
    min_free_mb: float | None = Field(
        default=None,
        ge=0,
        description="no run starts with less free space on the home's disk (0: never refuse)",
    )
    warn_free_mb: float | None = Field(
        default=None,
        ge=0,
        description="live runs warn below this free space on the home's disk (0: never warn)",
    )
    heartbeat_timeout: float | None = Field(
        default=None, gt=0, description="a run fails when its worker sends nothing for this long"
    )
    cancel_grace: float | None = Field(
        default=None,
        ge=0,
        description="after a cancel's SIGTERM, the worker's group is killed this long later",
    )

    def chosen(self) -> dict[str, int | float]:
        """The options set (not left to the daemon's default), by field name."""
        return self.model_dump(exclude_none=True)

    def updated(self, other: DaemonOptions) -> DaemonOptions:
        """These options with every one ``other`` sets replaced by its value."""
        return DaemonOptions.model_validate({**self.chosen(), **other.chosen()})


def option_flag(name: str) -> str:
    """The command-line option that sets field ``name`` (``--max-concurrent``)."""
    return "--" + name.replace("_", "-")


def shown_option(name: str, value: float | None) -> str:
    """A value as a user reads it: its unit, no trailing ``.0`` ("(default)" for None)."""
    if value is None:
        return "(default)"
    unit = _UNITS.get(name)
    return f"{value:g} {unit}" if unit else f"{value:g}"


def option_differences(running: DaemonOptions | None, asked: DaemonOptions) -> list[str]:
    """One sentence per option the home's file asks that the running daemon does not have.

    Options the file leaves to the default, and a daemon that published none (an older one), are
    not compared.
    """
    if running is None:
        return []
    have = running.chosen()
    notes = []
    for name, value in asked.chosen().items():
        if name in have and have[name] != value:
            notes.append(
                f"the running daemon has {option_flag(name)} {shown_option(name, have[name])} but the home's "
                f"daemon-options.json asks {shown_option(name, value)}; the daemon reads its options when it "
                "starts: `gym-gui daemon stop` (runs keep going), then try again"
            )
    return notes


def read_daemon_options(path: Path) -> DaemonOptions:
    """The options kept at ``path`` (none set when there is no file).

    Raises:
        ConfigError: naming the file and the bad field when it cannot be read as options.
    """
    try:
        text = path.read_bytes()
    except FileNotFoundError:
        return DaemonOptions()
    except OSError as exc:
        raise ConfigError(f"cannot read the daemon's options {path}: {exc.strerror}") from None
    try:
        return DaemonOptions.model_validate_json(text)
    except ValidationError as exc:
        # Imported here: the run config's models are not built for every command that reads options.
        from gym_gui.core.config import format_validation_error

        raise ConfigError(f"invalid daemon options in {path}: {format_validation_error(exc)}") from None


def write_daemon_options(path: Path, options: DaemonOptions) -> None:
    """Keep ``options`` at ``path``: only the ones set, so a default stays the daemon's own."""
    write_atomically(path, json.dumps(options.chosen(), indent=2) + "\n")
