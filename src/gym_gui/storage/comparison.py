"""Several runs read for comparing one metric: their tags, their series and which runs repeat one
experiment (the Compare view and `gym-gui compare` share it; no Qt)."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from gym_gui.core.errors import StorageError
from gym_gui.core.records import RunRecord
from gym_gui.storage.run_dir import RunDir
from gym_gui.storage.telemetry import TelemetryReader

log = logging.getLogger(__name__)

# Fields of a run's config that do not change what is learned: runs differing only in these are
# repetitions of one experiment. Tracking (TensorBoard, W&B, video capture) only changes where the
# same numbers are also sent.
IGNORED_FOR_GROUPING = ("seed", "notes", "tracking", "dry_run", "comparison")

Series = tuple[np.ndarray, np.ndarray]  # (steps, values) of one metric of one run

# Not a metric a worker logs: the stored episodes' total rewards by episode number, offered for every run
# that stores episodes, so runs that log no metric (a person's, an operator's) compare too: an arena's
# runs played the same seeds episode by episode.
EPISODE_TOTALS = "episodes/total_reward"


@dataclass(frozen=True)
class ComparedRun:
    """One run as compared: its record, its metric tags and its experiment (:func:`experiment_key`);
    ``config`` is its stored config (JSON form; empty when it cannot be read)."""

    info: RunRecord
    tags: list[str]
    key: str
    config: dict[str, Any]


def experiment_key(config: dict[str, Any]) -> str:
    """What identifies a run's experiment: its config without the fields in :data:`IGNORED_FOR_GROUPING`."""
    kept = {k: v for k, v in config.items() if k not in IGNORED_FOR_GROUPING}
    return json.dumps(kept, sort_keys=True, default=str)


def load_runs(runs: Iterable[RunRecord]) -> list[ComparedRun]:
    """Each run's metric tags and experiment key (blocking: the window calls it off the GUI thread)."""
    loaded = []
    for info in runs:
        files = RunDir(info.run_dir)
        tags: list[str] = []
        if files.has_telemetry():
            reader = TelemetryReader(files.telemetry_path)
            try:
                tags = reader.metric_tags()
                if reader.episode_count():
                    tags = sorted({*tags, EPISODE_TOTALS})
            finally:
                reader.close()
        try:
            config = files.read_config().model_dump(mode="json")
            key = experiment_key(config)
        except StorageError as exc:
            # A run without a readable config forms a group of its own.
            log.info("compare: run %s stands alone: %s", info.run_id, exc)
            config, key = {}, f"run:{info.run_id}"
        loaded.append(ComparedRun(info, tags, key, config))
    return loaded


def common_tags(runs: Iterable[ComparedRun]) -> list[str]:
    """The metric tags every one of ``runs`` has, sorted."""
    tag_sets = [set(run.tags) for run in runs]
    return sorted(set.intersection(*tag_sets)) if tag_sets else []


def load_series(runs: Iterable[ComparedRun], tag: str) -> dict[str, Series]:
    """The points of metric ``tag`` of each run that stores telemetry, by run id (blocking); for
    :data:`EPISODE_TOTALS`, each stored episode's total reward at its episode number."""
    series = {}
    for run in runs:
        files = RunDir(run.info.run_dir)
        if not files.has_telemetry():
            continue
        reader = TelemetryReader(files.telemetry_path)
        try:
            series[run.info.run_id] = (
                _episode_totals(reader) if tag == EPISODE_TOTALS else _points(reader, tag)
            )
        finally:
            reader.close()
    return series


def _points(reader: TelemetryReader, tag: str) -> Series:
    points = reader.metrics(tag)
    return (
        np.fromiter((p.step for p in points), dtype=np.float64, count=len(points)),
        np.fromiter((p.value for p in points), dtype=np.float64, count=len(points)),
    )


def _episode_totals(reader: TelemetryReader) -> Series:
    episodes = reader.episodes()
    return (
        np.fromiter((e.episode for e in episodes), dtype=np.float64, count=len(episodes)),
        np.fromiter((e.total_reward for e in episodes), dtype=np.float64, count=len(episodes)),
    )


def runs_of_comparison(runs: Iterable[RunRecord], comparison: str) -> list[RunRecord]:
    """The runs among ``runs`` whose stored config is one side of ``comparison`` (an arena session, an
    evaluation batch), in the order given (blocking: reads each run's config)."""
    found = []
    for info in runs:
        if not info.run_dir:
            continue
        try:
            if RunDir(info.run_dir).read_config().comparison == comparison:
                found.append(info)
        except StorageError:
            continue  # a run without a readable config is no side of anything
    return found


def group_by_experiment(runs: Iterable[ComparedRun], run_ids: Iterable[str]) -> list[list[ComparedRun]]:
    """The runs among ``run_ids`` in groups that repeat one experiment (same key), in the order the
    runs come; each group's runs are the seeds a mean ± std is taken over."""
    wanted = set(run_ids)
    groups: dict[str, list[ComparedRun]] = {}
    for run in runs:
        if run.info.run_id in wanted:
            groups.setdefault(run.key, []).append(run)
    return list(groups.values())


def experiment_differences(groups: list[list[ComparedRun]]) -> list[str]:
    """What sets each group's experiment apart from the other groups', one text per group: the config
    fields whose values differ across them as ``field=value`` (a section by its differing entries,
    ``params.learning-rate=0.001``); "" for a group nothing sets apart (a single group)."""
    configs = [
        {k: v for k, v in group[0].config.items() if k not in IGNORED_FOR_GROUPING} for group in groups
    ]
    readable = [index for index, config in enumerate(configs) if config]
    labels: list[list[str]] = [[] for _ in groups]
    for key in sorted({key for index in readable for key in configs[index]}):
        values = [configs[index].get(key) for index in readable]
        sections = [value for value in values if isinstance(value, dict)]
        if len(sections) == len(values):
            entries = sorted({entry for section in sections for entry in section})
            named = [(f"{key}.{entry}", [section.get(entry) for section in sections]) for entry in entries]
        else:
            named = [(key, values)]
        for name, found in named:
            if any(value != found[0] for value in found):
                for index, value in zip(readable, found, strict=True):
                    labels[index].append(f"{name}={json.dumps(value)}")
    return [
        " ".join(label) if config else "its config could not be read"
        for label, config in zip(labels, configs, strict=True)
    ]
