"""ArenaView: Run ▸ Arena… — the operators, environment and seeds both parts share, then the two parts:
side by side (panes stepped lock-step) and batch (an evaluation batch's table and box plot)."""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtGui import QShowEvent
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QSpinBox, QTabWidget, QVBoxLayout, QWidget

from gym_gui.play.operators import OperatorListing, Operators
from gym_gui.play.seat import Seeds
from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.home import Home
from gym_gui.ui.arena.batch import BatchPanel
from gym_gui.ui.arena.model import ArenaSetup
from gym_gui.ui.arena.picker import OperatorSeats
from gym_gui.ui.arena.side_by_side import SideBySide
from gym_gui.ui.control_panel import EnvPicker
from gym_gui.ui.daemon_link import DaemonLink
from gym_gui.workers import worker_catalog

FIRST_ENV = "FrozenLake-v1"
MAX_SEED = 2**31 - 1  # a spin box's bound; `gym-gui arena --seed` takes up to 2**32 - 1


class ArenaView(QWidget):
    """The Arena: who plays (2–4 seats, from `gym-gui operators`' listing for the env, read off the
    GUI thread and again whenever the env changes or the view is shown), on what and from which seed;
    below, the side-by-side and batch parts as tabs."""

    comparison_requested = Signal(str)  # a session's or batch's comparison id: open its runs

    def __init__(self, link: DaemonLink, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.link = link
        self._listing_generation = 0
        self.listing: list[OperatorListing] = []

        self.seats = OperatorSeats()
        self.env_picker = EnvPicker()
        self.env_picker.info.hide()  # the Game Info is the control dock's; here only the choice
        self.env_picker.set_env(FIRST_ENV)
        self.seed = QSpinBox()
        self.seed.setObjectName("arenaSeed")
        self.seed.setRange(0, MAX_SEED)
        self.seeds = QComboBox()
        self.seeds.setObjectName("arenaSeeds")
        self.seeds.addItems([rule.value for rule in Seeds])
        self.seeds.setCurrentText(Seeds.PROCEDURAL.value)  # as `gym-gui arena` plays by default
        self.seeds.setToolTip("procedural: seed, seed+1, … per episode; fixed: the same seed every episode")
        self.listing_note = QLabel()
        self.listing_note.setWordWrap(True)

        self.side_by_side = SideBySide(link, self.read_setup, self.operators)
        self.batch = BatchPanel(link, self.read_setup, self.operators)
        self.parts = QTabWidget()
        self.parts.addTab(self.side_by_side, "Side by side")
        self.parts.addTab(self.batch, "Batch")

        where = QHBoxLayout()
        where.addWidget(QLabel("Environment"))
        where.addWidget(self.env_picker, 2)
        where.addWidget(QLabel("Seed"))
        where.addWidget(self.seed)
        where.addWidget(self.seeds)
        who = QHBoxLayout()
        who.addWidget(QLabel("Operators"))
        who.addWidget(self.seats, 1)
        layout = QVBoxLayout(self)
        layout.addLayout(where)
        layout.addLayout(who)
        layout.addWidget(self.listing_note)
        layout.addWidget(self.parts, 1)

        self.env_picker.env_changed.connect(lambda _env: self.refresh_operators())
        self.side_by_side.comparison_requested.connect(self.comparison_requested)
        self.batch.comparison_requested.connect(self.comparison_requested)
        link.connection_changed.connect(lambda connected, _m: self.refresh_operators() if connected else None)

    @property
    def env_id(self) -> str:
        return self.env_picker.env_id

    def operators(self, client: DaemonClient) -> Operators:
        """The home's operators, its runs as the daemon lists them (blocking to use: off the GUI thread)."""
        return Operators(Home(self.link.home), worker_catalog(), client.list_runs)

    def read_setup(self, episodes: int) -> tuple[ArenaSetup, Seeds]:
        """What the fields say, for ``episodes`` episodes (the part's own count)."""
        setup = ArenaSetup(tuple(self.seats.operators()), self.env_id, self.seed.value(), episodes)
        return setup, Seeds(self.seeds.currentText())

    def refresh_operators(self) -> None:
        """List the operators for the env as `gym-gui operators --env` does (off the GUI thread)."""
        env_id = self.env_id
        if not self.link.connected or not env_id:
            return
        self._listing_generation += 1
        generation = self._listing_generation
        self.listing_note.setText(f"Listing the operators for {env_id}…")

        def listed(entries: list[OperatorListing]) -> None:
            if generation != self._listing_generation:
                return
            self.listing = entries
            self.seats.set_listing(entries)
            unusable = sum(1 for entry in entries if not entry.usable)
            self.listing_note.setText(
                f"{len(entries)} operators; {unusable} cannot act on {env_id} (greyed, with the reason)"
                if unusable
                else ""
            )

        def failed(message: str) -> None:
            if generation == self._listing_generation:
                self.listing_note.setText(f"The operators could not be listed: {message}")

        self.link.call(lambda client: self.operators(client).listing(env_id), listed, failed)

    def stop(self) -> None:
        """Leave the side-by-side session and stop a batch in play (the window is closing)."""
        self.side_by_side.stop()
        if self.batch.running:
            self.batch.stop()

    def showEvent(self, event: QShowEvent) -> None:
        super().showEvent(event)
        self.refresh_operators()  # runs finished since offer themselves
