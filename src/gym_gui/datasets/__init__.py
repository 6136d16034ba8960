"""The offline lane's datasets: stored runs written as Minari datasets under the home, listed and checked."""

from __future__ import annotations

from gym_gui.datasets.reading import RecordedEpisode, episode_returns, recorded_episode
from gym_gui.datasets.recording import Recorded, RunSource, record_dataset, same_as_stored
from gym_gui.datasets.store import (
    CREATED,
    FIRST_USE,
    IMPORTED,
    MINARI_ROOT_VAR,
    DatasetCard,
    DatasetStore,
    check_dataset,
)

__all__ = [
    "CREATED",
    "FIRST_USE",
    "IMPORTED",
    "MINARI_ROOT_VAR",
    "DatasetCard",
    "DatasetStore",
    "Recorded",
    "RecordedEpisode",
    "RunSource",
    "check_dataset",
    "episode_returns",
    "record_dataset",
    "recorded_episode",
    "same_as_stored",
]
