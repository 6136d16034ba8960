"""A run's stored episodes and metrics written as TensorBoard event files inside its directory."""

from __future__ import annotations

import os
import secrets
import shutil
from dataclasses import dataclass
from pathlib import Path

from gym_gui.core.errors import StorageError
from gym_gui.core.records import EpisodeRecord
from gym_gui.storage.run_dir import RunDir
from gym_gui.storage.telemetry import TelemetryReader

# The tags a run's stored episodes are written under, each point at the run's step count when the
# episode ended (the x axis of CleanRL's ``charts/episodic_return``, and the step the random, Spade BDI
# and LLM workers log these metrics at), at the time it ended.
EPISODE_RETURN = "episode/return"
EPISODE_LENGTH = "episode/length"


@dataclass(frozen=True)
class ExportedEventFiles:
    """What :func:`write_event_files` wrote: the directory TensorBoard reads, and how much it holds."""

    directory: Path
    episodes: int
    metric_tags: int
    metric_points: int


def write_event_files(files: RunDir) -> ExportedEventFiles:
    """Write run ``files``' stored episodes (return and length) and every metric it stored, each at
    its own step and time, as TensorBoard event files under :attr:`RunDir.exported_event_files`
    (``tensorboard/<run id>/``), replacing what an earlier export wrote there and nothing else.

    The files are written beside it under a name of their own and renamed into place when complete,
    so a failed export leaves the earlier one as it was. A run still writing is exported as far as
    its telemetry had committed when the export began reading.

    Raises:
        StorageError: there is no run directory, the run stored neither an episode nor a metric
            (the message says so), its telemetry cannot be read, or the files cannot be written.
    """
    if not files.path.is_dir():
        raise StorageError(f"no run directory at {files.path}")
    nothing = f"run {files.run_id} has stored no episodes and no metrics: there is nothing to export"
    if not files.has_telemetry():
        raise StorageError(nothing)
    reader = TelemetryReader(files.telemetry_path)
    try:
        episodes = reader.episodes()
        tags = reader.metric_tags()
        if not episodes and not tags:
            raise StorageError(nothing)
        target = files.exported_event_files
        partial = target.with_name(f".{target.name}.{secrets.token_hex(4)}.tmp")
        try:
            points = _write(partial / files.run_id, reader, episodes, tags)
            _replace_directory(partial, target)
        except OSError as exc:
            raise StorageError(f"writing TensorBoard event files into {target} failed: {exc}") from exc
        finally:
            shutil.rmtree(partial, ignore_errors=True)
    finally:
        reader.close()
    return ExportedEventFiles(target, len(episodes), len(tags), points)


def _write(directory: Path, reader: TelemetryReader, episodes: list[EpisodeRecord], tags: list[str]) -> int:
    """Write ``episodes`` and the metrics of ``tags`` as event files into the new ``directory``; the
    number of metric points written."""
    # tensorboardX writes TensorBoard's own event format over protobuf, without torch or TensorFlow;
    # imported here so that what imports storage does not load it.
    from tensorboardX import SummaryWriter

    directory.mkdir(parents=True)
    writer = SummaryWriter(logdir=str(directory), flush_secs=3600)
    points = 0
    try:
        # Kinds that log their episodes as metrics of these names too (random, Spade BDI, LLM) keep
        # their own points: the curve is written once.
        from_episodes = [tag for tag in (EPISODE_RETURN, EPISODE_LENGTH) if tag not in tags]
        step = 0
        for episode in episodes:
            step += episode.steps
            of_episode = {EPISODE_RETURN: episode.total_reward, EPISODE_LENGTH: float(episode.steps)}
            for tag in from_episodes:
                writer.add_scalar(tag, of_episode[tag], step, walltime=episode.ended_at)
        for tag in tags:
            for metric_step, wall_time, value in reader.metric_rows(tag):
                writer.add_scalar(tag, value, metric_step, walltime=wall_time)
                points += 1
    finally:
        writer.close()
    return points


def _replace_directory(new: Path, target: Path) -> None:
    """Put ``new`` where ``target`` is, the old one (if any) moved aside first and then removed."""
    old = target.with_name(f".{target.name}.{secrets.token_hex(4)}.old")
    if target.exists():
        os.replace(target, old)
    try:
        os.replace(new, target)
    except OSError:
        if old.exists():
            os.replace(old, target)
        raise
    shutil.rmtree(old, ignore_errors=True)


__all__ = ["EPISODE_LENGTH", "EPISODE_RETURN", "ExportedEventFiles", "write_event_files"]
