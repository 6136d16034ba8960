"""The live metric bridge: CleanRL's stdout lines and TensorBoard event files, turned into metrics as they appear."""

from __future__ import annotations

import logging
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

log = logging.getLogger(__name__)

# CleanRL's own progress lines, e.g. "global_step=1234, episodic_return=[21.]" and "SPS: 4321".
_EPISODE_LINE = re.compile(r"global_step=(\d+),\s*episodic_return=\[?\s*([-+0-9.eEnaif]+)\s*\]?")
_SPS_LINE = re.compile(r"^SPS:\s*([0-9.]+)")

RETURN_TAG = "charts/episodic_return"
SPS_TAG = "charts/SPS"

Point = tuple[str, int, float]


@dataclass
class StdoutParser:
    """Turns CleanRL stdout lines into metric points, remembering the latest global step for SPS."""

    global_step: int = 0

    def parse(self, line: str) -> list[Point]:
        match = _EPISODE_LINE.search(line)
        if match:
            self.global_step = int(match.group(1))
            try:
                return [(RETURN_TAG, self.global_step, float(match.group(2)))]
            except ValueError:
                return []
        match = _SPS_LINE.match(line)
        if match:
            return [(SPS_TAG, self.global_step, float(match.group(1)))]
        return []


@dataclass
class _EventFile:
    accumulator: object
    seen: dict[str, int] = field(default_factory=dict)  # tag -> scalars already read


class EventFileTail:
    """Reads the scalars TensorBoard event files under ``root`` gained since the last call.

    Event files are read incrementally (TensorBoard's own loader keeps its place); a truncated
    or corrupt file is logged and skipped at that point, and reading goes on at the next call.
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        self._files: dict[Path, _EventFile] = {}
        self.failures: list[str] = []

    def directories(self) -> list[Path]:
        """Directories holding event files (CleanRL writes ``runs/<run_name>/``)."""
        return sorted({p.parent for p in self.root.glob("**/events.out.tfevents.*")})

    def poll(self) -> list[Point]:
        from tensorboard.backend.event_processing.event_accumulator import (
            EventAccumulator,
        )

        points: list[Point] = []
        for path in sorted(self.root.glob("**/events.out.tfevents.*")):
            entry = self._files.get(path)
            if entry is None:
                entry = self._files[path] = _EventFile(
                    EventAccumulator(str(path), size_guidance={"scalars": 0})
                )
            accumulator = entry.accumulator
            try:
                accumulator.Reload()  # type: ignore[attr-defined]
                tags = accumulator.Tags().get("scalars", [])  # type: ignore[attr-defined]
                for tag in tags:
                    events = accumulator.Scalars(tag)  # type: ignore[attr-defined]
                    start = entry.seen.get(tag, 0)
                    for event in events[start:]:
                        points.append((tag, int(event.step), float(event.value)))
                    entry.seen[tag] = len(events)
            except Exception as exc:  # a damaged file must not stop the bridge
                message = f"{path.name}: {type(exc).__name__}: {exc}"
                if message not in self.failures:
                    self.failures.append(message)
                    log.warning("event file unreadable at this point: %s", message)
        return points


class Deduplicator:
    """Keeps one copy of the points that reach the bridge twice.

    The same episodic return and SPS come from stdout (at once) and from the event file (after
    TensorBoard's flush), in either order. Several episodes may end at one global step (vector
    envs), so returns are matched by step and value, counted; SPS lines carry no step of their
    own, so SPS is matched by value alone. Whichever copy comes first is sent; its twin is dropped.
    """

    def __init__(self) -> None:
        self._from_stdout: Counter[tuple[str, int, float]] = Counter()
        self._from_events: Counter[tuple[str, int, float]] = Counter()

    @staticmethod
    def _key(tag: str, step: int, value: float) -> tuple[str, int, float]:
        return (tag, step if tag == RETURN_TAG else -1, float(f"{value:.5g}"))

    def _fresh(
        self,
        points: list[Point],
        mine: Counter[tuple[str, int, float]],
        theirs: Counter[tuple[str, int, float]],
    ) -> list[Point]:
        out = []
        for tag, step, value in points:
            if tag in (RETURN_TAG, SPS_TAG):
                key = self._key(tag, step, value)
                if theirs[key] > 0:
                    theirs[key] -= 1
                    continue
                mine[key] += 1
            out.append((tag, step, value))
        return out

    def from_stdout(self, points: list[Point]) -> list[Point]:
        return self._fresh(points, self._from_stdout, self._from_events)

    def from_events(self, points: list[Point]) -> list[Point]:
        return self._fresh(points, self._from_events, self._from_stdout)
