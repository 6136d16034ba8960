"""daemon.json: where the running daemon listens and the token its clients present (mode 0600)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError


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


def read_daemon_file(path: Path) -> DaemonFile | None:
    """The daemon file at ``path``, or None when there is none or it is unreadable."""
    try:
        return DaemonFile.model_validate_json(path.read_bytes())
    except (OSError, ValidationError):
        return None


def write_daemon_file(path: Path, info: DaemonFile) -> None:
    """Write ``info`` atomically, readable by the owner only (it holds the token)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(json.dumps(info.model_dump(), indent=2))
    os.replace(tmp, path)
