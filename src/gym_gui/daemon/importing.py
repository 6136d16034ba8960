"""Importing a model file trained elsewhere as a finished run of its own, checked by its worker kind's loader."""

from __future__ import annotations

import hashlib
import logging
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from gym_gui.core.config import RunConfig, check_path_text, parse_run_config
from gym_gui.core.errors import ConfigError, DiskFull, StorageError
from gym_gui.core.ids import make_run_id, validate_env_id
from gym_gui.core.records import RunRecord
from gym_gui.core.states import RunState
from gym_gui.daemon.disk import DiskWatch
from gym_gui.daemon.launching import Launching
from gym_gui.daemon.live import LiveRuns
from gym_gui.storage.run_dir import RunDir, RunEnvironment, file_sha256
from gym_gui.workers import ModelImporter, WorkerCatalog

log = logging.getLogger(__name__)

# What an algorithm name may be: it becomes part of the run id and names the worker's script.
_ALGORITHM_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-")


@dataclass(frozen=True)
class ImportRequest:
    """A model file on the daemon's machine and what the user says it is."""

    path: str  # absolute
    worker: str
    algorithm: str
    env_id: str
    origin: str = ""  # where the file came from when not ``path`` (a Hub model: hf://ORG/NAME@COMMIT)

    @property
    def source(self) -> str:
        """What the run says it was imported from."""
        return self.origin or self.path


class ModelImports:
    """Turns a model file into a COMPLETED run holding a copy of it (nothing else is written anywhere).

    The file is loaded by its worker kind's loader first (:class:`ModelImporter`), so an unloadable
    or mismatched file is refused before anything is stored; a failure while storing removes the
    half-made run directory, so a refused import leaves no run and no directory.
    """

    def __init__(self, runs: LiveRuns, launching: Launching, catalog: WorkerCatalog, disk: DiskWatch) -> None:
        self.runs = runs
        self.launching = launching
        self.catalog = catalog
        self.disk = disk

    def import_model(self, request: ImportRequest) -> RunRecord:
        """Check and store the model; returns the new run's record.

        Raises:
            ConfigError: the request or the file is refused (naming what is wrong); nothing is stored.
            DiskFull: the disk is nearly full; nothing is stored.
        """
        source = self._source(request.path)
        if request.origin:
            try:
                check_path_text(request.origin)
            except ConfigError as exc:
                raise ConfigError(f"model origin: {exc}") from None
        validate_env_id(request.env_id)
        if not request.algorithm or not set(request.algorithm) <= _ALGORITHM_CHARS:
            raise ConfigError(f"algorithm {request.algorithm!r}: give the script's name, e.g. ppo")
        spec = self.catalog.plugin(request.worker).spec
        if not spec.available:
            raise ConfigError(f"worker {spec.display_name!r} is unavailable: {spec.unavailable_reason}")
        launcher = self.launching.launchers.get(request.worker)
        if not isinstance(launcher, ModelImporter):
            raise ConfigError(f"worker {spec.display_name!r} cannot import model files")
        digest = _sha256(source)
        check = launcher.check_model(source, request.algorithm, request.env_id)
        refusal = self.disk.refusal()
        if refusal:
            raise DiskFull(f"{refusal}; free some space and import the model again")
        config = self._config(request, check.step)
        now = time.time()
        with self.runs.lock:  # the id is taken once its directory exists; the copy needs no lock
            run_id = make_run_id(
                request.env_id, f"{request.algorithm}-import", None, int(now), exists=self._taken
            )
            files = RunDir(self.runs.home.run_dir(run_id))
            files.create()
        try:
            record = self._store(files, config, request, source, digest, check.stored_as, check.step, now)
        except BaseException:
            shutil.rmtree(files.path, ignore_errors=True)
            raise
        self.runs.publish_row(run_id)
        log.info(
            "run %s: imported %s (%s %s on %s)",
            run_id,
            request.source,
            request.worker,
            request.algorithm,
            request.env_id,
        )
        return record

    @staticmethod
    def _source(path: str) -> Path:
        try:
            check_path_text(path)
        except ConfigError as exc:
            raise ConfigError(f"model file: {exc}") from None
        source = Path(path)
        if not source.is_absolute():
            raise ConfigError(
                f"model file {path!r}: give an absolute path (the daemon has its own directory)"
            )
        if not source.is_file():
            raise ConfigError(f"model file {path}: no such file")
        return source

    @staticmethod
    def _config(request: ImportRequest, step: int) -> RunConfig:
        return parse_run_config(
            {
                "worker": request.worker,
                "mode": "train",
                "env_id": request.env_id,
                "algorithm": request.algorithm,
                "budget": {"timesteps": max(step, 1)},
                "notes": f"imported from {request.source}",
            }
        )

    def _taken(self, run_id: str) -> bool:
        return (
            run_id in self.runs
            or self.runs.registry.exists(run_id)
            or self.runs.home.run_dir(run_id).exists()
        )

    def _store(
        self,
        files: RunDir,
        config: RunConfig,
        request: ImportRequest,
        source: Path,
        digest: str,
        stored_as: str,
        step: int,
        now: float,
    ) -> RunRecord:
        files.write_config(config)
        target = files.artifact_path(stored_as)
        if target is None:
            raise ConfigError(f"worker {request.worker} would keep the model outside its run ({stored_as!r})")
        target.parent.mkdir(parents=True, exist_ok=True)
        copied = _copy(source, target)
        if copied != digest:
            raise ConfigError(f"model file {source} changed while it was imported; import it again")
        reason = f"imported from {request.source}"
        manifest = files.create_manifest(
            RunEnvironment(bundle=self.catalog.plugin(request.worker).spec.bundle)
        )
        manifest.add_artifact("model", stored_as, step, {"sha256": digest, "imported_from": request.source})
        manifest.update(imported_from=request.source, ended_at=now, final_state=RunState.COMPLETED)
        record = RunRecord(
            run_id=files.run_id,
            worker=config.worker,
            env_id=config.env_id,
            lane=self.catalog.plugin(request.worker).spec.lane_for(config.mode).value,
            state=RunState.COMPLETED,
            created_at=now,
            started_at=now,
            ended_at=now,
            reason=reason,
        )
        self.runs.registry.create(record, reason)
        return self.runs.registry.get(files.run_id)


def _sha256(path: Path) -> str:
    try:
        return file_sha256(path)
    except OSError as exc:
        raise ConfigError(f"model file {path}: cannot read it: {exc.strerror}") from None


def _copy(source: Path, target: Path) -> str:
    """Copy ``source`` to ``target`` and return the sha256 of the bytes copied."""
    digest = hashlib.sha256()
    try:
        with open(source, "rb") as reading, open(target, "xb") as writing:
            while block := reading.read(1 << 20):
                digest.update(block)
                writing.write(block)
    except OSError as exc:
        raise StorageError(f"model file {source}: copying it into the run failed: {exc.strerror}") from None
    return digest.hexdigest()
