"""A run's directory (runs/<run_id>/): the one owner of its file names and formats, its manifest model and its export."""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import secrets
import sqlite3
import tarfile
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from gym_gui_sdk.json_object import json_object
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from gym_gui.core.config import EvaluationOptions, RunConfig, format_validation_error, redact
from gym_gui.core.errors import StorageError
from gym_gui.core.states import RunState
from gym_gui.storage.home import Home
from gym_gui.storage.space import disk_full, is_disk_full

log = logging.getLogger(__name__)

_CONFIG = "config.json"
_MANIFEST = "manifest.json"
_TELEMETRY = "telemetry.sqlite"
_LOGS = "logs"
_WORKER_STDOUT = "worker.stdout.log"
_WORKER_STDERR = "worker.stderr.log"
_TENSORBOARD_LOG = "tensorboard.log"
# Named by the CleanRL scripts and by W&B, not by gym_gui: TensorBoard event files appear under
# runs/ before the manifest records their directory, and W&B keeps its local runs in wandb/.
_EVENT_FILES = "runs"
# The event files gym_gui writes itself from a run's stored episodes and metrics (`gym-gui
# export-tensorboard`): one directory per run, replaced whole by each export.
_EXPORTED_EVENT_FILES = "tensorboard"
_WANDB = "wandb"
_WANDB_STATE = "state"
# Files never archived: SQLite's side files (their content is in the backup copy) and half-written temporaries.
_NOT_EXPORTED = ("-wal", "-shm", "-journal", ".tmp")
# The artifact kinds that are saved models: filed under the manifest's ``checkpoints``.
MODEL_KINDS = ("checkpoint", "model")


# ------------------------------------------------------------------ the manifest model


class _Tolerant(BaseModel):
    # Fields this code does not know (written by a newer gym_gui, or added by hand) are kept as
    # they are, so reading and rewriting an older or newer manifest loses nothing.
    model_config = ConfigDict(extra="allow")


class ArtifactEntry(_Tolerant):
    """One file a worker registered: ``path`` is relative to the run directory."""

    kind: str = ""
    path: str = ""
    step: int = 0
    meta: dict[str, Any] = Field(default_factory=dict)


class WandbEntry(_Tolerant):
    """The run's local W&B run directory (``path``, relative) and what the worker knew of it."""

    path: str = ""
    mode: str | None = None  # "offline" or "online"
    url: str | None = None
    wandb_run_id: str | None = None


class RunEnvironment(_Tolerant):
    """The interpreter a run's worker ran in and its exact package set (``pip freeze`` form)."""

    bundle: str | None = None  # None: the user's own interpreter
    python: str = ""
    executable: str | None = None
    platform: str | None = None
    packages: list[str] = Field(default_factory=list)


class WarmStartEntry(_Tolerant):
    """The saved model a warm-started run began from: the run, the checkpoint (relative to that run's
    directory) and the file's SHA-256 when the run was launched."""

    run_id: str = ""
    checkpoint: str = ""
    sha256: str = ""


class Manifest(_Tolerant):
    """What a run directory holds: the command line, the package set, and every registered artifact.

    The daemon writes it; the app reads it. Every field has a default, so a manifest of an older
    gym_gui (or a partial one) loads, and unknown fields are kept.
    """

    run_id: str = ""
    created_at: float = 0.0
    environment: RunEnvironment = Field(default_factory=RunEnvironment)
    command: list[str] = Field(default_factory=list)
    cwd: str = ""
    # What the run's kind recorded of it besides the fields every run has (its launcher's
    # ``LaunchPlan.extras``). Manifests written before kinds had extras keep their own fields at the
    # top level (unknown fields are kept), and still load.
    extras: dict[str, Any] = Field(default_factory=dict)
    evaluates: EvaluationOptions | None = None  # an evaluation run: the model it plays
    rerun_of: str | None = None  # a re-run: the run whose config, seed and package set it repeats
    warm_start_from: WarmStartEntry | None = None  # a warm start: the saved model it began from
    tensorboard_dir: str | None = None
    wandb: WandbEntry | None = None
    checkpoints: list[ArtifactEntry] = Field(default_factory=list)
    videos: list[ArtifactEntry] = Field(default_factory=list)
    optuna_db: str | None = None  # a sweep's trial: the study's storage URL (no password) ...
    optuna_study: str | None = None  # ... the study's name ...
    optuna_trial: int | None = None  # ... and the trial's number
    imported_from: str | None = None  # an imported model's run: the file it was copied from
    # A worker that runs elsewhere: what finds it again ({"kind": "ray", "ray_address", "job_id"}).
    executor: dict[str, str] | None = None
    artifacts: list[ArtifactEntry] = Field(default_factory=list)
    ended_at: float | None = None
    final_state: RunState | None = None

    def with_artifact(self, entry: ArtifactEntry) -> Manifest:
        """A copy with ``entry`` registered: listed in ``artifacts`` and filed by its kind."""
        fields: dict[str, Any] = {"artifacts": [*self.artifacts, entry]}
        if entry.kind in MODEL_KINDS:
            fields["checkpoints"] = [*self.checkpoints, entry]
        elif entry.kind == "video":
            fields["videos"] = [*self.videos, entry]
        elif entry.kind == "tensorboard":
            fields["tensorboard_dir"] = entry.path
        elif entry.kind == "optuna":
            fields["optuna_db"] = entry.path
        elif entry.kind == "wandb":
            fields["wandb"] = WandbEntry.model_validate({**entry.meta, "path": entry.path})
        return self.model_copy(update=fields)


class ManifestWriter:
    """The daemon's handle on one run's manifest: the model in memory, rewritten atomically on every change.

    Thread-safe: the supervisor and the gRPC handlers of the run's stream both update it.
    """

    def __init__(self, run_dir: RunDir, manifest: Manifest) -> None:
        self._run_dir = run_dir
        self._manifest = manifest
        self._lock = threading.Lock()

    @property
    def path(self) -> Path:
        return self._run_dir.manifest_path

    @property
    def manifest(self) -> Manifest:
        """The manifest as last written (a copy: changing it changes nothing stored)."""
        with self._lock:
            return self._manifest.model_copy(deep=True)

    def update(self, **fields: Any) -> None:
        """Set top-level fields and rewrite the file.

        Raises:
            StorageError: a field has the wrong type, or the file could not be written; either
                way the manifest, in memory and on disk, is as it was.
        """
        with self._lock:
            merged = {**self._manifest.model_dump(), **fields}
            try:
                manifest = Manifest.model_validate(merged)
            except ValidationError as exc:
                raise StorageError(
                    f"{self.path}: not updated, a field is invalid: {format_validation_error(exc)}"
                ) from None
            self._write(manifest)

    def add_artifact(self, kind: str, path: str, step: int, meta: dict[str, Any]) -> None:
        """Register a file the worker wrote (``path`` relative to the run directory).

        Raises:
            StorageError: the entry does not fit the model (e.g. a W&B ``mode`` that is not text), or
                the manifest could not be written; either way it is as it was.
        """
        with self._lock:
            try:
                manifest = self._manifest.with_artifact(
                    ArtifactEntry(kind=kind, path=path, step=step, meta=meta)
                )
            except ValidationError as exc:
                raise StorageError(
                    f"{self.path}: artifact {path!r} not registered: {format_validation_error(exc)}"
                ) from None
            self._write(manifest)

    def _write(self, manifest: Manifest) -> None:
        try:
            _write_json_atomically(self.path, manifest.model_dump(mode="json"))
        except OSError as exc:
            if is_disk_full(exc):
                raise disk_full(self.path, "the manifest is as it was") from None
            raise StorageError(f"{self.path}: cannot write it: {exc.strerror}; it is as it was") from None
        self._manifest = manifest


@dataclass(frozen=True)
class SavedModel:
    """One saved model of a run: ``path`` is relative to the run directory.

    ``sha256`` is the digest recorded in the manifest when the file was registered (None for runs
    stored before digests were recorded); ``size`` is 0 and ``exists`` False when the file is gone.
    """

    kind: str  # "model" (the final one) or "checkpoint" (periodic, or on cancel)
    path: str
    step: int
    exists: bool
    size: int
    sha256: str | None = None


def file_sha256(path: Path) -> str:
    """The SHA-256 of a file's bytes, as hex (read in blocks; blocking)."""
    with open(path, "rb") as file:
        return hashlib.file_digest(file, "sha256").hexdigest()


def saved_model_refusal(
    run_id: str, model: SavedModel, file: Path, digest: Callable[[Path], str] = file_sha256
) -> str | None:
    """Why run ``run_id``'s saved ``model`` (its file ``file``) cannot be loaded as it was saved, or
    None: the file is gone, cannot be read, or no longer has the sha256 recorded when it was saved.
    The one check of a model before anything loads it (the model browser, operators, evaluations).

    ``digest`` computes a file's sha256 (a cache's, for the browser). A model registered before
    digests were recorded (``sha256`` None) cannot be checked and is not refused.
    """
    where = f"{model.path} of run {run_id}"
    if not file.is_file():
        return f"{where} is gone: no file at {file}"
    try:
        found = digest(file)
    except OSError as exc:
        return f"{where} cannot be read: {exc.strerror or exc}"
    if model.sha256 is not None and found != model.sha256:
        return (
            f"{where} has changed since it was saved: its sha256 is {found[:12]}…, "
            f"the run's manifest recorded {model.sha256[:12]}…"
        )
    return None


# ------------------------------------------------------------------ the directory


class RunDir:
    """The files of one run directory, by what they are.

    Nothing is read or created on construction. Build it from :meth:`Home.run_dir
    <gym_gui.storage.home.Home.run_dir>` (which validates the run id) or from a ``RunInfo.run_dir``
    the daemon sent.
    """

    def __init__(self, path: Path | str) -> None:
        self._path = Path(path)

    def __repr__(self) -> str:
        return f"RunDir({str(self._path)!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RunDir) and other._path == self._path

    def __hash__(self) -> int:
        return hash(self._path)

    @property
    def path(self) -> Path:
        return self._path

    @property
    def run_id(self) -> str:
        return self._path.name

    # ------------------------------------------------------------ paths

    @property
    def config_path(self) -> Path:
        """The RunConfig the run was started with, exactly as run."""
        return self._path / _CONFIG

    @property
    def manifest_path(self) -> Path:
        return self._path / _MANIFEST

    @property
    def telemetry_path(self) -> Path:
        """The run's telemetry database (see :mod:`gym_gui.storage.telemetry`)."""
        return self._path / _TELEMETRY

    @property
    def logs_dir(self) -> Path:
        return self._path / _LOGS

    @property
    def worker_stdout_log(self) -> Path:
        return self.logs_dir / _WORKER_STDOUT

    @property
    def worker_stderr_log(self) -> Path:
        return self.logs_dir / _WORKER_STDERR

    @property
    def tensorboard_log(self) -> Path:
        """The output of the TensorBoard server the app starts for this run."""
        return self.logs_dir / _TENSORBOARD_LOG

    @property
    def exported_event_files(self) -> Path:
        """Where gym_gui writes the run's episodes and metrics as TensorBoard event files
        (:mod:`gym_gui.storage.event_files`), in a subdirectory named after the run so that
        TensorBoard lists it under the run id."""
        return self._path / _EXPORTED_EVENT_FILES

    def has_telemetry(self) -> bool:
        """Whether the telemetry database exists (it may still be uninitialised for a moment)."""
        return self.telemetry_path.is_file()

    def artifact_path(self, relative: str) -> Path | None:
        """The file a manifest entry names, or None when ``relative`` is empty or leaves the run directory.

        The daemon refuses such paths from workers; a hand-edited manifest may still hold one, and
        it is never opened.
        """
        pure = PurePosixPath(relative)
        if not relative or pure.is_absolute() or ".." in pure.parts:
            return None
        return self._path / pure

    def models(self, manifest: Manifest | None = None) -> list[SavedModel]:
        """The models (final or checkpoint) the manifest registers, by step (the final one last at
        its step), whether their file is still there or not: the one reading of "a run's models".

        A path registered twice (after a reconnect) is one model; entries whose path leaves the run
        directory are skipped, never opened. ``manifest``: one already read.

        Raises:
            StorageError: the manifest is damaged (the message names the file and what is wrong).
        """
        manifest = self.read_manifest() if manifest is None else manifest
        models: dict[str, SavedModel] = {}
        for entry in manifest.checkpoints:
            file = self.artifact_path(entry.path)
            if file is None:
                continue
            try:
                size, exists = file.stat().st_size, file.is_file()
            except OSError:
                size, exists = 0, False
            digest = entry.meta.get("sha256")
            models[entry.path] = SavedModel(
                entry.kind or "checkpoint",
                entry.path,
                entry.step,
                exists,
                size if exists else 0,
                digest if isinstance(digest, str) else None,
            )
        return sorted(models.values(), key=lambda m: (m.step, m.kind == "model"))

    def saved_models(self) -> list[SavedModel]:
        """:meth:`models` whose file is in the run directory; [] for a run without a readable manifest
        (a dry run, a run that never started)."""
        try:
            return [model for model in self.models() if model.exists]
        except StorageError:
            return []

    # ------------------------------------------------------------ creating

    def create(self) -> None:
        """Create the directory and its ``logs`` subdirectory.

        Raises:
            FileExistsError: the directory is already there (run ids are never reused).
        """
        self.logs_dir.mkdir(parents=True)

    # ------------------------------------------------------------ config

    def write_config(self, config: RunConfig) -> None:
        """Store the validated RunConfig the run starts with (atomically)."""
        _write_json_atomically(self.config_path, json.loads(config.model_dump_json()))

    def read_config(self) -> RunConfig:
        """The RunConfig the run was started with.

        Raises:
            StorageError: it is missing, not JSON, or not a valid RunConfig (naming the field).
        """
        data = self._read_object(self.config_path, "config")
        try:
            return RunConfig.model_validate(data)
        except ValidationError as exc:
            raise StorageError(
                f"{self.config_path}: not a valid run config: {format_validation_error(exc)}"
            ) from None

    def redacted_config(self) -> dict[str, Any]:
        """The stored config as JSON data with every secret-looking value replaced, for showing.

        Not validated, so the config of a run from an older gym_gui still shows.

        Raises:
            StorageError: it is missing or not a JSON object.
        """
        return redact(self._read_object(self.config_path, "config"))

    # ------------------------------------------------------------ manifest

    def read_manifest(self) -> Manifest:
        """The run's manifest; an empty one (only ``run_id``) when the daemon has written none yet.

        Raises:
            StorageError: the file is damaged (not JSON, or a field of the wrong type); it is left as it is.
        """
        if not self.manifest_path.exists():
            return Manifest(run_id=self.run_id)
        data = self._read_object(self.manifest_path, "manifest")
        try:
            return Manifest.model_validate(data)
        except ValidationError as exc:
            raise StorageError(
                f"{self.manifest_path} is damaged: {format_validation_error(exc)}; it is left as it is"
            ) from None

    def create_manifest(self, environment: RunEnvironment, rerun_of: str | None = None) -> ManifestWriter:
        """Write a new run's manifest (replacing any) and return the daemon's handle on it."""
        manifest = Manifest(
            run_id=self.run_id,
            created_at=time.time(),
            environment=environment,
            cwd=str(self._path),
            rerun_of=rerun_of,
        )
        writer = ManifestWriter(self, manifest)
        writer.update()
        return writer

    def open_manifest(self) -> ManifestWriter:
        """The daemon's handle on an existing run's manifest (a restarted daemon picking a run up).

        A missing manifest is started afresh. A damaged one is moved aside, not overwritten, so what
        it held can still be recovered by hand; the run then records into a fresh one.
        """
        if not self.manifest_path.exists():
            return self.create_manifest(RunEnvironment())
        try:
            return ManifestWriter(self, self.read_manifest())
        except StorageError as exc:
            kept = self._path / f"{_MANIFEST}.damaged-{time.time_ns()}"
            try:
                os.replace(self.manifest_path, kept)
            except OSError as move:
                raise StorageError(f"{exc}; and it could not be moved aside: {move.strerror}") from None
            log.warning("%s; kept as %s, and the run records into a fresh manifest", exc, kept)
            return self.create_manifest(RunEnvironment())

    # ------------------------------------------------------------ what workers wrote

    def tensorboard_logdir(self) -> Path:
        """The directory TensorBoard should read for this run.

        CleanRL writes its event files into ``runs/<its run name>/`` and the manifest records that
        directory. TensorBoard is pointed at its parent, so the run is listed under its CleanRL name
        rather than ".", and a worker that writes several event directories shows all of them.
        When the manifest names none (or cannot be read), the event files gym_gui exported from the
        run's telemetry (:attr:`exported_event_files`) when there are some, else ``runs/``, where a
        worker's files will appear (TensorBoard reloads).
        """
        try:
            recorded = self.read_manifest().tensorboard_dir
        except StorageError as exc:
            log.warning("%s", exc)
            recorded = None
        directory = self.artifact_path(recorded) if recorded else None
        if directory is None:
            exported = self.exported_event_files
            return exported if exported.is_dir() else self._path / _EVENT_FILES
        return directory.parent if directory.parent != self._path else directory

    def wandb_runs(self) -> list[Path]:
        """The local W&B run directories (``offline-run-…`` or ``run-…``), oldest first."""
        return sorted(p for p in (self._path / _WANDB).glob("*run-*") if p.is_dir())

    @property
    def wandb_state_dir(self) -> Path:
        """Where W&B keeps, for the run's scripts, what it otherwise keeps in the user's home: its
        config, cache and data directories (``config/``, ``cache/``, ``data/``)."""
        return self._path / _WANDB / _WANDB_STATE

    # ------------------------------------------------------------ export

    def export(self, target: Path, *, home: Home) -> None:
        """Write the run directory as the .tar.gz ``target``, consistent even while the run writes.

        Every SQLite file is copied through SQLite's backup API (one consistent snapshot, its WAL
        included), and JSON files are replaced atomically by their writers, so the archive never
        holds a torn file. The archive's top directory is the run id. ``target`` must lie outside
        ``home`` (symlinks resolved), so an export can never replace the registry or a run's database.

        Raises:
            StorageError: the target is inside the home, the directory is missing, a database could
                not be copied, or the archive could not be written (``target`` is left as it was then).
        """
        target = Path(target)
        if home.holds(target):
            raise StorageError(
                f"{target} is inside the gym_gui home {home.root}, whose files are gym_gui's own: "
                "export the run to a path outside it"
            )
        if not self._path.is_dir():
            raise StorageError(f"no run directory at {self._path}")
        # Written under a name of its own beside the target (mode "x": never an existing file) and
        # renamed when complete: a failed export leaves no torn archive and touches no other file.
        partial = target.with_name(f".{target.name}.{secrets.token_hex(4)}.tmp")
        try:
            with tempfile.TemporaryDirectory() as tmp, tarfile.open(partial, "x:gz") as tar:
                for path in sorted(self._path.rglob("*")):
                    if path.is_dir() or path.name.endswith(_NOT_EXPORTED):
                        continue
                    arcname = str(Path(self.run_id) / path.relative_to(self._path))
                    if path.suffix == ".sqlite":
                        copy = Path(tmp) / "copy.sqlite"
                        _backup_sqlite(path, copy)
                        tar.add(copy, arcname=arcname)
                        copy.unlink()
                    else:
                        tar.add(path, arcname=arcname)
            os.replace(partial, target)
        except OSError as exc:
            partial.unlink(missing_ok=True)
            raise StorageError(f"exporting {self._path} to {target} failed: {exc}") from exc
        except BaseException:
            partial.unlink(missing_ok=True)
            raise

    # ------------------------------------------------------------ helpers

    @staticmethod
    def _read_object(path: Path, what: str) -> dict[str, Any]:
        try:
            text = path.read_text()
        except FileNotFoundError:
            raise StorageError(f"{path}: the run has no {what} file") from None
        except OSError as exc:
            raise StorageError(f"{path}: cannot read it: {exc.strerror}") from None
        return json_object(
            text,
            lambda why: StorageError(f"{path} is damaged: not valid JSON ({why}); it is left as it is"),
            lambda _: StorageError(f"{path} is damaged: it holds no JSON object; it is left as it is"),
        )


def _write_json_atomically(path: Path, data: object) -> None:
    # Readers (the app, an export) see the old file or the new one, never a half-written one.
    tmp = path.with_name(path.name + ".tmp")
    try:
        tmp.write_text(json.dumps(data, indent=2, sort_keys=True))
        os.replace(tmp, path)
    except OSError:
        # A half-written copy (the disk filled) is no use to anyone and holds space.
        tmp.unlink(missing_ok=True)
        raise


def _backup_sqlite(source_path: Path, copy: Path) -> None:
    try:
        source = sqlite3.connect(source_path.resolve().as_uri() + "?mode=ro", uri=True)
    except sqlite3.Error as exc:
        raise StorageError(f"{source_path}: cannot open it to export it: {exc}") from exc
    try:
        dest = sqlite3.connect(copy)
        try:
            source.backup(dest)
            # The copy stands alone: no WAL beside it in the archive, so it must not expect one.
            dest.execute("PRAGMA journal_mode = DELETE")
        finally:
            dest.close()
    except sqlite3.Error as exc:
        raise StorageError(f"{source_path}: copying it for the export failed: {exc}") from exc
    finally:
        with contextlib.suppress(sqlite3.Error):
            source.close()
