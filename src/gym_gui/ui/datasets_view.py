"""The Datasets browser: the home's offline datasets, one's card and return histogram, its episodes to
replay, Publish… to the Hugging Face Hub."""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QSplitter,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from gym_gui.datasets import DatasetCard, DatasetStore, episode_returns
from gym_gui.storage.home import Home
from gym_gui.storage.space import format_bytes
from gym_gui.ui.background import Background
from gym_gui.ui.publish_dialog import PublishDialog, publish_dataset_dialog

log = logging.getLogger(__name__)

COLUMNS = ("dataset", "env", "episodes", "steps", "size")
_KEY = Qt.ItemDataRole.UserRole
HISTOGRAM_BINS = 20


@dataclass(frozen=True)
class DatasetDetail:
    """What the browser shows of the selected dataset: its card and each episode's return."""

    card: DatasetCard
    returns: list[float]


class DatasetBrowser(QWidget):
    """The datasets under the home: a table of them, the selected one's card (env, spaces, size, source
    runs, sha256) and the histogram of its episodes' returns, and its episodes; Replay opens the stored
    run an episode came from at that episode (``replay_requested(run_id, episode)``); an episode of a
    dataset made outside gym_gui, which names no run, is played again from its recorded seed and
    actions first (``reenact_requested(dataset, episode)``).

    Everything is read off the GUI thread; a dataset that cannot be read says why in the card.
    """

    replay_requested = Signal(str, int)
    # (dataset, episode): an episode of a dataset made outside gym_gui, to be played again as a run.
    reenact_requested = Signal(str, int)

    def __init__(self, home: Home, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.store = DatasetStore(home)
        self._background = Background(self, workers=1, name="dataset-browser")
        self._generation = 0
        self.detail: DatasetDetail | None = None

        self.table = QTreeWidget()
        self.table.setObjectName("datasetsTable")
        self.table.setHeaderLabels(list(COLUMNS))
        self.table.setRootIsDecorated(False)
        self.table.header().setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        self.table.currentItemChanged.connect(self._selected)
        self.refresh_button = QPushButton("Refresh")
        self.refresh_button.clicked.connect(self.refresh)
        self.publish_button = QPushButton("Publish…")
        self.publish_button.setObjectName("datasetPublish")
        self.publish_button.setEnabled(False)
        self.publish_button.setToolTip("Select a dataset to publish it to the Hugging Face Hub")
        self.publish_button.clicked.connect(lambda: self.publish_selected())
        # The Publish… dialog last opened (None before the first).
        self.publish_window: PublishDialog | None = None
        self.message = QLabel()
        self.message.setWordWrap(True)
        self.card = QLabel("Select a dataset.")
        self.card.setObjectName("datasetCard")
        self.card.setWordWrap(True)
        self.card.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.histogram = pg.PlotWidget()
        self.histogram.setObjectName("datasetReturns")
        self.histogram.setLabel("bottom", "episode return")
        self.histogram.setLabel("left", "episodes")
        self.histogram.setMinimumHeight(160)
        self.bars: pg.BarGraphItem | None = None
        self.episodes = QListWidget()
        self.episodes.setObjectName("datasetEpisodes")
        self.episodes.currentRowChanged.connect(lambda _row: self._update_replay())
        self.episodes.itemDoubleClicked.connect(lambda _item: self.replay_selected())
        self.replay_button = QPushButton("Replay episode")
        self.replay_button.setEnabled(False)
        self.replay_button.clicked.connect(self.replay_selected)

        top = QHBoxLayout()
        top.addWidget(self.message, 1)
        top.addWidget(self.refresh_button)
        top.addWidget(self.publish_button)
        lower = QWidget()
        lower_layout = QVBoxLayout(lower)
        lower_layout.setContentsMargins(0, 0, 0, 0)
        lower_layout.addWidget(self.card)
        lower_layout.addWidget(self.histogram, 1)
        lower_layout.addWidget(QLabel("Episodes (double-click to replay the run it came from):"))
        lower_layout.addWidget(self.episodes, 1)
        lower_layout.addWidget(self.replay_button)
        split = QSplitter(Qt.Orientation.Vertical)
        split.addWidget(self.table)
        split.addWidget(lower)
        layout = QVBoxLayout(self)
        layout.addLayout(top)
        layout.addWidget(split, 1)

    # ------------------------------------------------------------ reading

    def refresh(self) -> None:
        """List the home's datasets again (off the GUI thread)."""
        self._generation += 1
        generation = self._generation
        store = self.store

        def cards() -> list[DatasetCard | tuple[str, str]]:
            found: list[DatasetCard | tuple[str, str]] = []
            for name in store.names():
                try:
                    found.append(store.card(name))
                except Exception as exc:  # one unreadable dataset is listed with why, the others still show
                    found.append((name, str(exc)))
            return found

        self.message.setText("Reading the home's datasets…")
        self._background.run(
            cards,
            lambda found: self._show(found) if generation == self._generation else None,
            lambda message: self.message.setText(f"The datasets could not be read: {message}"),
            name="dataset-browser-list",
        )

    def _show(self, found: list[DatasetCard | tuple[str, str]]) -> None:
        selected = self.detail.card.name if self.detail is not None else None
        self.table.blockSignals(True)
        self.table.clear()
        for entry in found:
            if isinstance(entry, DatasetCard):
                cells = [
                    entry.name,
                    entry.env_id or "—",
                    str(entry.episodes),
                    str(entry.steps),
                    format_bytes(entry.size_bytes),
                ]
                item = QTreeWidgetItem(cells)
                item.setData(0, _KEY, entry.name)
            else:
                item = QTreeWidgetItem([entry[0], entry[1]])
                item.setData(0, _KEY, None)
            self.table.addTopLevelItem(item)
            if item.data(0, _KEY) == selected and selected is not None:
                self.table.setCurrentItem(item)
        self.table.blockSignals(False)
        count = sum(isinstance(entry, DatasetCard) for entry in found)
        self.message.setText(
            f"{count} datasets in {self.store.root}"
            if count
            else f"No datasets in {self.store.root} yet: `gym-gui dataset create NAME --from RUN` writes one."
        )

    def _selected(self, item: QTreeWidgetItem | None, _previous: QTreeWidgetItem | None = None) -> None:
        name = item.data(0, _KEY) if item is not None else None
        if not name:
            return
        self.select(str(name))

    def select(self, name: str) -> None:
        """Show dataset ``name``: its card at once, its returns once read."""
        self._generation += 1
        generation = self._generation
        store = self.store

        def read() -> DatasetDetail:
            return DatasetDetail(store.card(name), episode_returns(store, name))

        self.card.setText(f"Reading {name}…")
        self._background.run(
            read,
            lambda detail: self._show_detail(detail) if generation == self._generation else None,
            lambda message: self.card.setText(f"{name} cannot be read: {message}"),
            name="dataset-browser-detail",
        )

    def _show_detail(self, detail: DatasetDetail) -> None:
        self.detail = detail
        card, returns = detail.card, detail.returns
        self.publish_button.setEnabled(True)
        self.publish_button.setToolTip(
            f"Publish {card.name} to the Hugging Face Hub in the layout Minari's own remote reads"
        )
        lines = [
            f"<b>{card.name}</b> — {card.env_id or 'no environment'}",
            f"{card.episodes} episodes, {card.steps} steps, {format_bytes(card.size_bytes)}",
            f"observations {card.observation_space}",
            f"actions {card.action_space}",
        ]
        if card.source_runs:
            lines.append(f"from {', '.join(card.source_runs)} ({card.operator or card.algorithm or ''})")
        else:
            lines.append(f"made outside gym_gui ({card.algorithm or 'Minari'})")
        lines.append(f"sha256 {card.sha256}" if card.sha256 else "sha256 recorded at its first use")
        if returns:
            lines.append(
                f"returns: mean {np.mean(returns):.4g}, min {min(returns):.4g}, max {max(returns):.4g}"
            )
        self.card.setText("<br>".join(lines))
        self._draw(returns)
        self.episodes.clear()
        for index, total in enumerate(returns):
            source = card.episode_sources[index] if index < len(card.episode_sources) else None
            where = f" — {source[0]} episode {source[1]}" if source else ""
            item = QListWidgetItem(f"episode {index}: return {total:.4g}{where}")
            item.setData(_KEY, source or (card.name, index))
            self.episodes.addItem(item)
        self._update_replay()

    def _draw(self, returns: list[float]) -> None:
        if self.bars is not None:
            self.histogram.removeItem(self.bars)
            self.bars = None
        if not returns:
            return
        counts, edges = np.histogram(returns, bins=HISTOGRAM_BINS if np.ptp(returns) > 0 else 1)
        width = float(edges[1] - edges[0]) if np.ptp(returns) > 0 else 1.0
        self.bars = pg.BarGraphItem(
            x=edges[:-1] + width / 2, height=counts, width=width * 0.9, brush="#4c72b0"
        )
        self.histogram.addItem(self.bars)

    # ------------------------------------------------------------ publish

    def publish_selected(self) -> PublishDialog | None:
        """Open Publish… for the dataset shown (None when none is)."""
        if self.detail is None:
            return None
        dialog = publish_dataset_dialog(self.store, self.detail.card.name, self)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        self.publish_window = dialog
        dialog.open()
        return dialog

    # ------------------------------------------------------------ replay

    def _update_replay(self) -> None:
        item = self.episodes.currentItem()
        self.replay_button.setEnabled(item is not None)
        outside = self.detail is not None and not self.detail.card.episode_sources
        self.replay_button.setToolTip(
            "This dataset was made outside gym_gui: the episode is played again in its environment from "
            "its recorded seed and actions, as a run, and that run replays."
            if outside
            else ""
        )

    def replay_selected(self) -> None:
        """Open the selected episode's stored run in the Replay view, at that episode (a dataset made
        outside gym_gui: its episode played again first)."""
        item = self.episodes.currentItem()
        if item is None or self.detail is None:
            return
        where, episode = item.data(_KEY)
        if self.detail.card.episode_sources:
            self.replay_requested.emit(str(where), int(episode))
        else:
            self.reenact_requested.emit(str(where), int(episode))
