"""daemon.json: where the running daemon listens and the token its clients present (mode 0600)."""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from gym_gui.core.daemon_options import DaemonOptions
from gym_gui.core.files import write_atomically


class DaemonFile(BaseModel):
    """What a daemon publishes about itself in ``$GYM_GUI_HOME/daemon.json``."""

    model_config = ConfigDict(extra="ignore")

    address: str
    pid: int
    version: str
    token: str
    started_at: float
    home: str
    log_path: str
    # A daemon speaking TLS (bound beyond loopback): its CA certificate, the one a client trusts.
    tls_ca: str | None = None
    # The environment settings the daemon read once, when it started (its workers inherit them):
    # name → value, None when unset. A client whose own differ is told (setting_differences).
    settings: dict[str, str | None] = Field(default_factory=dict)
    # The options it runs with, every one of them (None: an older daemon, which published none).
    options: DaemonOptions | None = None


def setting_differences(daemon: dict[str, str | None], ours: dict[str, str | None]) -> list[str]:
    """One sentence per setting the running daemon has other than this process would give it.

    A setting the daemon did not publish (an older daemon) is not compared.
    """
    notes = []
    for name, value in ours.items():
        if name in daemon and daemon[name] != value:
            notes.append(
                f"the running daemon has {name}={_shown(daemon[name])} but here it is {_shown(value)}; "
                "the daemon reads it when it starts: `gym-gui daemon stop` (runs keep going), then try again"
            )
    return notes


def _shown(value: str | None) -> str:
    return "(unset)" if value is None else repr(value)


def read_daemon_file(path: Path) -> DaemonFile | None:
    """The daemon file at ``path``, or None when there is none or it is unreadable."""
    try:
        return DaemonFile.model_validate_json(path.read_bytes())
    except (OSError, ValidationError):
        return None


def write_daemon_file(path: Path, info: DaemonFile) -> None:
    """Write ``info`` atomically, readable by the owner only (it holds the token)."""
    write_atomically(path, json.dumps(info.model_dump(), indent=2), private=True)
