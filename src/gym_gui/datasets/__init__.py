"""The offline lane's datasets: stored runs written as Minari datasets under the home, listed and checked."""

from __future__ import annotations

from gym_gui.datasets.reading import episode_returns
from gym_gui.datasets.recording import Recorded, RunSource, record_dataset
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
    "RunSource",
    "check_dataset",
    "episode_returns",
    "record_dataset",
]
