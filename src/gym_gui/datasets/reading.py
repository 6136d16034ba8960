"""Reading a dataset's episodes through Minari: what the CLI's `dataset show` and the window's browser draw."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from gym_gui.core.errors import ConfigError
from gym_gui.datasets.store import DatasetStore


def episode_returns(store: DatasetStore, name: str) -> list[float]:
    """Each episode's return (the sum of its rewards), in the dataset's episode order.

    Raises:
        ConfigError: no such dataset (as :meth:`DatasetStore.card`).
    """
    card = store.card(name)
    store.use_as_minari_root()
    import minari

    dataset = minari.load_dataset(card.name)
    return [float(episode.rewards.sum()) for episode in dataset.iterate_episodes()]


@dataclass(frozen=True)
class RecordedEpisode:
    """One episode of a dataset as recorded: the seed it was reset with (None: not recorded), its
    actions and its observations (one more than the actions: the first comes from the reset)."""

    seed: int | None
    actions: Any
    observations: Any

    @property
    def steps(self) -> int:
        return len(self.actions)


def recorded_episode(store: DatasetStore, name: str, index: int) -> RecordedEpisode:
    """Episode ``index`` of dataset ``name`` (counted from 0, in the dataset's order).

    Raises:
        ConfigError: no such dataset (as :meth:`DatasetStore.card`) or no such episode in it.
    """
    card = store.card(name)
    if not 0 <= index < card.episodes:
        raise ConfigError(f"dataset {name!r} has episodes 0 to {card.episodes - 1}, not {index}")
    store.use_as_minari_root()
    import minari

    dataset = minari.load_dataset(card.name)
    episode = next(iter(dataset.iterate_episodes([index])))
    metadata = next(iter(dataset.storage.get_episode_metadata([index])))
    seed = metadata.get("seed")
    return RecordedEpisode(
        seed=int(seed) if isinstance(seed, int | np.integer) else None,
        actions=episode.actions,
        observations=episode.observations,
    )
