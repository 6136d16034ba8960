"""EpisodeChoice: the Replay tab's list of a run's episodes, the stored ones in order and then the one in
progress, grown as episodes come (runs have tens of thousands: it is never rebuilt)."""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QComboBox, QWidget

from gym_gui.core.records import EpisodeRecord
from gym_gui.ui.combos import fit_to_layout


def _label(episode: EpisodeRecord) -> str:
    return f"episode {episode.episode} — return {episode.total_reward:.6g}, {episode.steps} steps"


class EpisodeChoice(QComboBox):
    """Episodes by number; :attr:`picked` says which one the user chose (setting it from code says
    nothing)."""

    picked = Signal(int)  # the episode's number

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.ended: list[EpisodeRecord] = []  # the episodes the run has stored, in order
        self.live: tuple[int, int] | None = None  # the episode it is playing now and its last stored step
        fit_to_layout(self, 32)
        self.currentIndexChanged.connect(self._index_changed)

    def numbers(self) -> list[int]:
        """The episodes listed, in order: the stored ones, then the one in progress."""
        numbers = [episode.episode for episode in self.ended]
        if self.live is not None:
            numbers.append(self.live[0])
        return numbers

    def forget(self) -> None:
        """List nothing."""
        self.ended = []
        self.live = None
        self.blockSignals(True)
        self.clear()
        self.blockSignals(False)

    def add(self, new: list[EpisodeRecord], live: tuple[int, int] | None, shown: int | None) -> None:
        """List the ``new`` stored episodes and ``live`` as the one in progress, ``shown`` staying current."""
        self.blockSignals(True)
        try:
            if self.live is not None:
                self.removeItem(self.count() - 1)
            self.ended.extend(new)
            self.addItems([_label(episode) for episode in new])
            self.live = live
            if live is not None:
                self.addItem(f"episode {live[0]} — in progress, {live[1] + 1} steps so far")
            if shown is not None:
                self.show_episode(shown)
        finally:
            self.blockSignals(False)

    def show_episode(self, n: int) -> None:
        """Make episode ``n`` current (none when it is not listed)."""
        numbers = self.numbers()
        blocked = self.blockSignals(True)
        self.setCurrentIndex(numbers.index(n) if n in numbers else -1)
        self.blockSignals(blocked)

    def _index_changed(self, index: int) -> None:
        numbers = self.numbers()
        if 0 <= index < len(numbers):
            self.picked.emit(numbers[index])
