"""Reading a dataset's episodes through Minari: what the CLI's `dataset show` and the window's browser draw."""

from __future__ import annotations

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
