"""The saved models of many runs, for the checkpoint browser: gathered, grouped, hashed and checked (no Qt)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from gym_gui.core.errors import StorageError
from gym_gui.core.records import RunRecord
from gym_gui.storage.run_dir import RunDir, SavedModel, file_sha256, saved_model_refusal
from gym_gui.storage.telemetry import TelemetryReader


@dataclass(frozen=True)
class ModelEntry:
    """One saved model of one training run, with what the browser shows of its run.

    ``final_return`` is the mean of the run's last episodic returns
    (:meth:`TelemetryReader.final_return`), ``returns`` how many it averages (0: none stored).
    """

    run_id: str
    worker: str
    algorithm: str
    env_id: str
    state: str
    model: SavedModel
    file: Path
    final_return: float | None
    returns: int
    imported_from: str | None

    @property
    def key(self) -> tuple[str, str]:
        """What identifies the entry across re-readings: its run and its path in the run."""
        return self.run_id, self.model.path

    @property
    def group(self) -> str:
        """The branch of the browser's tree under the env id: the worker kind and its algorithm."""
        return self.worker if self.algorithm in ("", self.worker) else f"{self.worker} / {self.algorithm}"


def gather_models(runs: Iterable[RunRecord], return_metric: Callable[[str], str]) -> list[ModelEntry]:
    """Every saved model of the training runs among ``runs`` (blocking: call it off the GUI thread);
    ``return_metric`` names the metric of a worker kind's episodic returns (its spec's
    ``return_metric``, "" for the stored episodes'), of which each entry's final return is the mean.

    Runs without a directory, evaluation and play runs, and runs whose config or manifest cannot be
    read are left out (their own tabs say why); models whose file is gone are listed as missing.
    """
    entries: list[ModelEntry] = []
    for run in runs:
        if not run.run_dir:
            continue
        files = RunDir(run.run_dir)
        try:
            config = files.read_config()
            if config.mode != "train":
                continue
            manifest = files.read_manifest()
            models = files.models(manifest)
        except StorageError:
            continue
        if not models:
            continue
        final, count = _final_return(files, return_metric(run.worker))
        for model in models:
            file = files.artifact_path(model.path)
            assert file is not None  # models() keeps only paths inside the run
            entries.append(
                ModelEntry(
                    run_id=run.run_id,
                    worker=run.worker,
                    algorithm=config.algorithm or "",
                    env_id=run.env_id,
                    state=run.state.value,
                    model=model,
                    file=file,
                    final_return=final,
                    returns=count,
                    imported_from=manifest.imported_from,
                )
            )
    return entries


def _final_return(files: RunDir, metric: str) -> tuple[float | None, int]:
    if not files.has_telemetry():
        return None, 0
    try:
        reader = TelemetryReader(files.telemetry_path)
    except StorageError:
        return None, 0
    try:
        found = reader.final_return(metric)
    except StorageError:
        found = None
    finally:
        reader.close()
    return (None, 0) if found is None else found


def group_models(entries: Iterable[ModelEntry]) -> dict[str, dict[str, list[ModelEntry]]]:
    """The browser's tree: env id → worker / algorithm → models (each level sorted; models by run, then step)."""
    tree: dict[str, dict[str, list[ModelEntry]]] = {}
    for entry in sorted(entries, key=lambda e: (e.env_id, e.group, e.run_id, e.model.step, e.model.path)):
        tree.setdefault(entry.env_id, {}).setdefault(entry.group, []).append(entry)
    return tree


class DigestCache:
    """SHA-256 digests of model files, computed once per file version (its size and modification time).

    Thread-safe: the browser hashes on its background pool. ``computed`` counts the files actually read.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._digests: dict[Path, tuple[tuple[int, int], str]] = {}
        self.computed = 0

    def digest(self, path: Path) -> str:
        """The file's sha256 (hex), read again only when its size or modification time changed.

        Raises:
            OSError: the file cannot be read.
        """
        stat = path.stat()
        version = (stat.st_size, stat.st_mtime_ns)
        with self._lock:
            known = self._digests.get(path)
        if known is not None and known[0] == version:
            return known[1]
        digest = file_sha256(path)
        with self._lock:
            self._digests[path] = (version, digest)
            self.computed += 1
        return digest

    def known(self, path: Path) -> str | None:
        """The digest of ``path`` if it was computed already (for showing; nothing is read)."""
        with self._lock:
            known = self._digests.get(path)
        return None if known is None else known[1]


def load_refusal(entry: ModelEntry, cache: DigestCache) -> str | None:
    """Why ``entry`` cannot be loaded as it was saved, or None (:func:`saved_model_refusal`, hashing
    through ``cache``; blocking: it may hash the file)."""
    return saved_model_refusal(entry.run_id, entry.model, entry.file, cache.digest)
