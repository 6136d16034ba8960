"""What a run directory's manifest says it holds: saved models and captured videos (plain Python, no Qt)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeGuard

from gym_gui_sdk.json_object import json_object

from gym_gui.core.errors import StorageError
from gym_gui.storage.run_dir import RunDir, SavedModel
from gym_gui.ui.capabilities import capabilities_of


@dataclass(frozen=True)
class Video:
    """One captured video: ``path`` is relative to the run directory.

    ``ret`` and ``length`` are the filmed episode's return and steps when the worker announced
    them (CleanRL's RecordVideo, patched by the worker); ``complete`` is False for a video cut
    short (the run ended mid-episode).
    """

    path: str
    episode: int | None
    step: int
    exists: bool
    ret: float | None = None
    length: int | None = None
    complete: bool = True

    @property
    def label(self) -> str:
        episode = "episode ?" if self.episode is None else f"episode {self.episode}"
        details = [
            *([f"return {self.ret:.6g}"] if self.ret is not None else []),
            *([f"{self.length} steps"] if self.length is not None else []),
            *([] if self.complete else ["cut short"]),
        ]
        return f"{episode} — {', '.join(details)}" if details else episode


@dataclass(frozen=True)
class RunArtifacts:
    """What the tab lists for a run, read from its manifest and config."""

    models: list[SavedModel]
    videos: list[Video]
    evaluable: str | None  # None when the run's models can be evaluated, else why not


def read_artifacts(run_dir: Path, worker: str) -> RunArtifacts:
    """The run's saved models (by step, :meth:`RunDir.models`) and videos, from its manifest (blocking: call it off the GUI thread).

    Entries whose path leaves the run directory are skipped, never opened.

    Raises:
        StorageError: the manifest is damaged (the message names the file and what is wrong).
    """
    files = RunDir(run_dir)
    manifest = files.read_manifest()
    videos: dict[str, Video] = {}
    for entry in manifest.videos:
        file = files.artifact_path(entry.path)
        if file is None:
            continue
        meta = entry.meta
        episode, ret, length = meta.get("episode"), meta.get("return"), meta.get("length")
        # A path registered twice (after a reconnect) is one video; the later entry knows as much or more.
        videos[entry.path] = Video(
            entry.path,
            int(episode) if _number(episode) else None,
            entry.step,
            file.is_file(),
            float(ret) if _number(ret) else None,
            int(length) if _number(length) else None,
            meta.get("complete") is not False,
        )
    evaluable: str | None = None
    if not capabilities_of(worker).evaluation:
        evaluable = f"{worker} runs have no models to evaluate"
    else:
        try:
            if files.read_config().mode != "train":
                evaluable = "this run is itself an evaluation; evaluate the training run it played"
        except StorageError as exc:
            evaluable = f"the run's config cannot be read: {exc}"
    return RunArtifacts(
        files.models(manifest),
        sorted(videos.values(), key=lambda v: (v.episode if v.episode is not None else -1, v.path)),
        evaluable,
    )


def json_file(path: Path) -> dict[str, Any]:
    """The JSON object in ``path``; {} when it is missing, unreadable or not an object."""
    try:
        return json_object(path.read_text())
    except (OSError, ValueError):
        return {}


def _number(value: Any) -> TypeGuard[int | float]:
    return isinstance(value, int | float) and not isinstance(value, bool)
