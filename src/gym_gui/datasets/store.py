"""The home's datasets: Minari datasets under ``<home>/datasets/``, their cards and their recorded digests.

A dataset is Minari's own directory (``<id>/data/metadata.json`` and its data file), so Minari's
tools read it as they read any other; beside ``data/`` gym_gui keeps ``gym_gui.json``: where the
dataset came from and the sha256 of each of its files when it was recorded. Listing and cards read
JSON only; nothing here imports Minari.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gym_gui.core.errors import ConfigError
from gym_gui.core.files import write_atomically
from gym_gui.core.ids import validate_dataset_id
from gym_gui.storage.home import Home

log = logging.getLogger(__name__)

DATA_DIR = "data"
METADATA = f"{DATA_DIR}/metadata.json"
# gym_gui's record of a dataset, beside Minari's data/ (Minari reads nothing else of the directory).
SIDECAR = "gym_gui.json"
SIDECAR_FORMAT = 1
# Minari's datasets root: every gym_gui process that writes or reads a dataset through Minari points it here.
MINARI_ROOT_VAR = "MINARI_DATASETS_PATH"
# How a dataset's digests were recorded: written by gym_gui, imported, or taken the first time
# gym_gui used a dataset that came with none (made in place by Minari's own DataCollector).
CREATED, IMPORTED, FIRST_USE = "created", "imported", "first-use"
# A deleted dataset is renamed to this prefix first, so a half-deleted one is never listed.
_DELETING = ".deleting-"


@dataclass(frozen=True)
class DatasetCard:
    """What a dataset is, read from Minari's metadata and gym_gui's record, without loading its data."""

    name: str  # the Minari id
    path: Path  # <home>/datasets/<name>
    env_id: str | None  # from Minari's env_spec; None when recorded without an environment
    observation_space: str  # Minari's serialised space (JSON text), as in its metadata.json
    action_space: str
    discrete_actions: bool  # the action space is Discrete
    episodes: int
    steps: int
    size_bytes: int
    source_runs: tuple[str, ...] = ()
    operator: str | None = None
    algorithm: str | None = None
    ref_min_score: float | None = None
    ref_max_score: float | None = None
    files: Mapping[str, str] = field(default_factory=dict)  # recorded sha256 by path relative to ``path``
    recorded: str | None = None  # CREATED, IMPORTED, FIRST_USE; None: never recorded
    recorded_at: float | None = None
    episode_sources: tuple[tuple[str, int], ...] = ()  # (run, episode) of each dataset episode, in order
    mean_return: float | None = None  # the dataset's own mean episode return, when gym_gui recorded it

    @property
    def sha256(self) -> str:
        """One digest of the whole dataset: of its files' recorded digests ("" when never recorded)."""
        if not self.files:
            return ""
        joined = "\n".join(f"{name} {digest}" for name, digest in sorted(self.files.items()))
        return hashlib.sha256(joined.encode()).hexdigest()


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def data_files(directory: Path) -> dict[str, Path]:
    """The files of a dataset directory's ``data/`` by their path relative to the directory."""
    data = directory / DATA_DIR
    return {
        path.relative_to(directory).as_posix(): path for path in sorted(data.rglob("*")) if path.is_file()
    }


class DatasetStore:
    """The datasets of one home (``<home>/datasets``, Minari's root for gym_gui's processes).

    Digests of unchanged files (same size and modification time) are computed once per store, so a
    daemon verifying a dataset at every submit hashes it once.
    """

    def __init__(self, home: Home) -> None:
        self.home = home
        self.root = home.datasets_dir
        self._digests: dict[tuple[str, int, int], str] = {}

    def use_as_minari_root(self) -> None:
        """Point Minari (in this process) at this home's datasets: its calls read the variable each time."""
        self.root.mkdir(parents=True, exist_ok=True)
        os.environ[MINARI_ROOT_VAR] = str(self.root)

    def path(self, name: str) -> Path:
        return self.root / validate_dataset_id(name)

    def names(self) -> list[str]:
        """Every dataset under the root (Minari's layout: namespaces nest), sorted."""
        if not self.root.is_dir():
            return []
        found = []
        for metadata in self.root.rglob(METADATA):
            directory = metadata.parent.parent
            name = directory.relative_to(self.root).as_posix()
            if any(part.startswith(".") for part in name.split("/")):
                continue  # being deleted, or not a dataset
            try:
                found.append(validate_dataset_id(name))
            except ConfigError:
                log.info("datasets: %s is not a dataset id gym_gui keeps; not listed", name)
        return sorted(found)

    def exists(self, name: str) -> bool:
        return (self.path(name) / METADATA).is_file()

    def card(self, name: str) -> DatasetCard:
        """The dataset's card.

        Raises:
            ConfigError: naming the dataset when it is not there or its metadata cannot be read.
        """
        directory = self.path(name)
        metadata_path = directory / METADATA
        if not metadata_path.is_file():
            known = self.names()
            hint = f"; the home has {', '.join(known[:10])}" if known else "; the home has none yet"
            raise ConfigError(f"field 'dataset': no dataset {name!r} in {self.root}{hint}")
        try:
            metadata = json.loads(metadata_path.read_text())
        except (OSError, ValueError) as exc:
            raise ConfigError(
                f"field 'dataset': dataset {name!r}: its {METADATA} cannot be read: {exc}"
            ) from None
        record = self._record(directory)
        env_id = None
        if metadata.get("env_spec"):
            try:
                env_id = json.loads(metadata["env_spec"]).get("id")
            except (TypeError, ValueError):
                env_id = None
        action_space = str(metadata.get("action_space", ""))
        try:
            discrete = json.loads(action_space).get("type") == "Discrete"
        except (TypeError, ValueError, AttributeError):
            discrete = False
        return DatasetCard(
            name=name,
            path=directory,
            env_id=env_id,
            observation_space=str(metadata.get("observation_space", "")),
            action_space=action_space,
            discrete_actions=discrete,
            episodes=int(metadata.get("total_episodes", 0)),
            steps=int(metadata.get("total_steps", 0)),
            size_bytes=sum(path.stat().st_size for path in data_files(directory).values()),
            source_runs=tuple(record.get("source_runs", ())),
            operator=record.get("operator"),
            algorithm=record.get("algorithm") or metadata.get("algorithm_name"),
            ref_min_score=_number(metadata.get("ref_min_score")),
            ref_max_score=_number(metadata.get("ref_max_score")),
            files=dict(record.get("files", {})),
            recorded=record.get("recorded"),
            recorded_at=_number(record.get("recorded_at")),
            episode_sources=tuple((str(run), int(episode)) for run, episode in record.get("episodes", ())),
            mean_return=_number(record.get("mean_return")),
        )

    def verify(self, name: str) -> DatasetCard:
        """The dataset's card once its files are found to be the ones recorded; a dataset that came with no
        record (made in place by Minari's own tools) has its digests recorded now.

        Raises:
            ConfigError: naming the dataset and the file that is missing, added or changed.
        """
        card = self.card(name)
        present = data_files(card.path)
        digests = {relative: self._digest(path) for relative, path in present.items()}
        if not card.files:
            self._write_record(card.path, {"recorded": FIRST_USE, "files": digests})
            return self.card(name)
        for relative, recorded in sorted(card.files.items()):
            if relative not in digests:
                raise ConfigError(
                    f"field 'dataset': dataset {name!r} lost its file {relative} since it was {card.recorded}"
                )
            if digests[relative] != recorded:
                raise ConfigError(
                    f"field 'dataset': dataset {name!r}: {relative} changed since it was {card.recorded} "
                    f"(sha256 {digests[relative][:12]}…, recorded {recorded[:12]}…)"
                )
        added = sorted(set(digests) - set(card.files))
        if added:
            raise ConfigError(
                f"field 'dataset': dataset {name!r} has files it was not {card.recorded} with: {', '.join(added)}"
            )
        return card

    def record(self, name: str, how: str, **fields: Any) -> DatasetCard:
        """Record the dataset's files as they are now (``how``: CREATED or IMPORTED) with ``fields``."""
        directory = self.path(name)
        digests = {relative: self._digest(path) for relative, path in data_files(directory).items()}
        self._write_record(directory, {**fields, "recorded": how, "files": digests})
        return self.card(name)

    def import_(self, source: Path) -> DatasetCard:
        """Copy a Minari dataset directory (the one holding ``data/``) into the home, under its own id.

        Raises:
            ConfigError: the path is not a Minari dataset, its id is taken or not one gym_gui keeps.
        """
        source = source.expanduser().resolve()
        if (source / "metadata.json").is_file() and source.name == DATA_DIR:
            source = source.parent  # the data/ directory itself was named
        metadata_path = source / METADATA
        if not metadata_path.is_file():
            raise ConfigError(f"{source} is not a Minari dataset: it has no {METADATA}")
        try:
            name = str(json.loads(metadata_path.read_text())["dataset_id"])
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise ConfigError(
                f"{source} is not a Minari dataset: its {METADATA} names no dataset_id ({exc})"
            ) from None
        target = self.path(name)
        if source == target:
            raise ConfigError(f"dataset {name!r} is already in this home")
        if target.exists():
            raise ConfigError(f"dataset {name!r} is already in this home; delete it first to import another")
        staging = self.root / f".importing-{uuid.uuid4().hex}"
        try:
            shutil.copytree(source / DATA_DIR, staging / DATA_DIR)
            target.parent.mkdir(parents=True, exist_ok=True)
            staging.rename(target)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        return self.record(name, IMPORTED, imported_from=str(source))

    def delete(self, name: str) -> None:
        """Remove the dataset: renamed aside first, so a half-deleted one is never listed.

        Raises:
            ConfigError: no such dataset.
        """
        self.card(name)
        directory = self.path(name)
        aside = self.root / f"{_DELETING}{uuid.uuid4().hex}"
        directory.rename(aside)
        shutil.rmtree(aside)
        # Minari keeps a namespace's own metadata beside its datasets: an emptied namespace goes too.
        parent = directory.parent
        while parent != self.root and not any(
            p for p in parent.iterdir() if p.name != "namespace_metadata.json"
        ):
            shutil.rmtree(parent)
            parent = parent.parent

    def _record(self, directory: Path) -> dict[str, Any]:
        path = directory / SIDECAR
        if not path.is_file():
            return {}
        try:
            record = json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            raise ConfigError(f"field 'dataset': {path} cannot be read: {exc}") from None
        return record if isinstance(record, dict) else {}

    def _write_record(self, directory: Path, fields: dict[str, Any]) -> None:
        record = {**self._record(directory), **fields, "format": SIDECAR_FORMAT, "recorded_at": time.time()}
        write_atomically(directory / SIDECAR, json.dumps(record, indent=1, sort_keys=True) + "\n")

    def _digest(self, path: Path) -> str:
        stat = path.stat()
        key = (str(path), stat.st_size, stat.st_mtime_ns)
        digest = self._digests.get(key)
        if digest is None:
            digest = self._digests[key] = file_sha256(path)
        return digest


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def check_dataset(store: DatasetStore, name: str, env_id: str, free_bytes: int | None) -> DatasetCard:
    """What a run learning from dataset ``name`` needs of it before anything starts: there, unchanged since
    it was recorded, of ``env_id``, and no larger than the disk's ``free_bytes`` (None: not known).

    Raises:
        ConfigError: one line naming the field and what is wrong; nothing is touched.
    """
    card = store.verify(name)
    if card.env_id is not None and card.env_id != env_id:
        raise ConfigError(
            f"field 'dataset': dataset {name!r} was recorded on {card.env_id}, not on the run's env {env_id}"
        )
    if free_bytes is not None and card.size_bytes > free_bytes:
        from gym_gui.storage.space import format_bytes

        raise ConfigError(
            f"field 'dataset': dataset {name!r} takes {format_bytes(card.size_bytes)}, more than the "
            f"{format_bytes(free_bytes)} free on the home's disk"
        )
    return card
