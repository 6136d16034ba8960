"""manifest.json: what a run directory holds — command line, package set, artifacts."""

from __future__ import annotations

import functools
import importlib.metadata
import json
import os
import platform
import sys
import threading
import time
from pathlib import Path
from typing import Any


@functools.lru_cache(maxsize=1)
def app_packages() -> tuple[str, ...]:
    """The exact package set of gym_gui's own environment (``pip freeze`` form)."""
    names = {
        f"{dist.metadata['Name']}=={dist.version}"
        for dist in importlib.metadata.distributions()
        if dist.metadata["Name"]
    }
    return tuple(sorted(names, key=str.lower))


def bundle_environment(bundle: str) -> dict[str, Any]:
    # Worker bundles with their own venv record their own freeze when they are added.
    return {
        "bundle": bundle,
        "python": sys.version.split()[0],
        "executable": sys.executable,
        "platform": platform.platform(),
        "packages": list(app_packages()),
    }


class Manifest:
    """The run's manifest.json, rewritten atomically on every change."""

    FILE = "manifest.json"

    def __init__(self, run_dir: Path, data: dict[str, Any]) -> None:
        self.path = run_dir / self.FILE
        self._data = data
        self._lock = threading.Lock()

    @classmethod
    def create(cls, run_dir: Path, bundle: str) -> Manifest:
        manifest = cls(
            run_dir,
            {
                "run_id": run_dir.name,
                "created_at": time.time(),
                "environment": bundle_environment(bundle),
                "command": [],
                "cwd": str(run_dir),
                "tensorboard_dir": None,
                "wandb": None,
                "checkpoints": [],
                "videos": [],
                "optuna_db": None,
                "artifacts": [],
            },
        )
        manifest._write()
        return manifest

    @classmethod
    def load(cls, run_dir: Path) -> Manifest:
        """The manifest of ``run_dir``; a missing or unreadable one is started afresh."""
        try:
            data = json.loads((run_dir / cls.FILE).read_text())
            if not isinstance(data, dict):
                raise ValueError("not an object")
        except (OSError, ValueError):
            return cls.create(run_dir, "unknown")
        return cls(run_dir, data)

    @property
    def data(self) -> dict[str, Any]:
        with self._lock:
            return json.loads(json.dumps(self._data))

    def update(self, **fields: Any) -> None:
        with self._lock:
            self._data.update(fields)
            self._write()

    def add_artifact(self, kind: str, path: str, step: int, meta: dict[str, Any]) -> None:
        entry = {"kind": kind, "path": path, "step": step, "meta": meta}
        with self._lock:
            self._data["artifacts"].append(entry)
            if kind == "checkpoint" or kind == "model":
                self._data["checkpoints"].append(entry)
            elif kind == "video":
                self._data["videos"].append(entry)
            elif kind == "tensorboard":
                self._data["tensorboard_dir"] = path
            elif kind == "optuna":
                self._data["optuna_db"] = path
            elif kind == "wandb":
                self._data["wandb"] = {"path": path, **meta}
            self._write()

    def _write(self) -> None:
        tmp = self.path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(self._data, indent=2, sort_keys=True))
        os.replace(tmp, self.path)
