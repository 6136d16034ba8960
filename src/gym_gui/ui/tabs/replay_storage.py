"""ReplayStorage: a run's telemetry as the Replay tab reads it, read-only, each failed read said once."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from gym_gui.core.errors import StorageError
from gym_gui.core.records import StepRecord
from gym_gui.storage.telemetry import TelemetryReader


class ReplayStorage:
    """The run's telemetry database, opened once it exists (read-only, WAL: safe while the daemon writes).

    The step reads answer "nothing" (None, -1, (-1, None)) when the database is not open or a
    read fails; a failure's message goes to ``on_error`` (the tab's notice line).
    """

    def __init__(self, on_error: Callable[[str], None]) -> None:
        self.on_error = on_error
        self.reader: TelemetryReader | None = None
        self.render_kind = ""  # the run's kind of picture ("grid", "rgb" …), "" until it is known

    def open(self, path: Path | None) -> bool:
        """Open the database at ``path`` unless it is open already; whether it is open."""
        if self.reader is not None:
            return True
        if path is None or not path.is_file():
            return False
        try:
            self.reader = TelemetryReader(path)
            self.render_kind = self.reader.meta("render_kind") or ""
        except StorageError as exc:
            self.close()
            self.on_error(str(exc))
            return False
        return True

    def close(self) -> None:
        if self.reader is not None:
            self.reader.close()
            self.reader = None

    def steps(self, episode: int, start: int, stop: int) -> list[StepRecord] | None:
        """Steps [start, stop) of ``episode``; None when storage cannot say."""
        if self.reader is None:
            return None
        try:
            return self.reader.steps(episode, start, stop)
        except StorageError as exc:
            self.on_error(str(exc))
            return None

    def last_step_of(self, episode: int) -> int:
        """The last stored step of ``episode``; -1 when it has none (or storage cannot say)."""
        if self.reader is None:
            return -1
        try:
            last = self.reader.last_step_of(episode)
        except StorageError as exc:
            self.on_error(str(exc))
            return -1
        return -1 if last is None else last

    def actor_spans(self, episode: int, start: int) -> list[tuple[int, int, str]] | None:
        """Who acted in ``episode`` from step ``start`` on (``TelemetryReader.actor_spans``); None when
        storage cannot say."""
        if self.reader is None:
            return None
        try:
            return self.reader.actor_spans(episode, start)
        except StorageError as exc:
            self.on_error(str(exc))
            return None

    def return_through(self, episode: int, step: int) -> float | None:
        """``episode``'s return up to and including ``step`` (``TelemetryReader.return_through``); None
        when storage cannot say."""
        if self.reader is None:
            return None
        try:
            return self.reader.return_through(episode, step)
        except StorageError as exc:
            self.on_error(str(exc))
            return None

    def latest_render(self, episode: int, step: int) -> tuple[int, bytes | None]:
        """The latest payload at or before ``step`` and its step ((-1, None): none, or storage cannot say)."""
        if self.reader is None:
            return -1, None
        try:
            found = self.reader.latest_render(episode, step)
        except StorageError as exc:
            self.on_error(str(exc))
            return -1, None
        return (-1, None) if found is None else found
