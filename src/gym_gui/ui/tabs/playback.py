"""Playback: a replay's tick timer, its clock and its transport kept in step (the Replay tab and Replay
together play through it)."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QObject, Qt, QTimer

from gym_gui.ui.tabs.replay_model import PlaybackClock
from gym_gui.ui.transport import Transport


class Playback(QObject):
    """Calls ``on_tick`` while ``clock`` plays, as often as its speed asks
    (:meth:`PlaybackClock.tick_ms`); the transport's play button and speed show where it stands. Its
    owner starts the clock (:meth:`PlaybackClock.start`, :meth:`ReplayModel.play`), then :meth:`started`.
    """

    def __init__(
        self, transport: Transport, clock: PlaybackClock, on_tick: Callable[[], None], parent: QObject
    ) -> None:
        super().__init__(parent)
        self.transport = transport
        self.clock = clock
        self._timer = QTimer(self)
        self._timer.setTimerType(Qt.TimerType.PreciseTimer)
        self._timer.timeout.connect(on_tick)

    def set_speed(self, speed: float) -> None:
        """Play at ``speed`` × the environment's frame rate (clamped to the transport's speeds)."""
        self.clock.speed = self.transport.set_speed(speed)
        if self.clock.playing:
            self._timer.setInterval(self.clock.tick_ms())

    def started(self) -> None:
        """The clock was started: tick, and show the pause button."""
        self._timer.start(self.clock.tick_ms())
        self.transport.set_playing(True)

    def stop(self) -> None:
        """Stop the clock and the ticks, and show the play button."""
        self.clock.pause()
        self._timer.stop()
        self.transport.set_playing(False)
