"""FramePacer: the Live tab's jitter buffer, which plays the pictures of step batches at the pace their
steps happened (plain Python: the tab's timer asks it what is due)."""

from __future__ import annotations

import math
from collections import deque

from gym_gui.core.records import StepBatch
from gym_gui.core.records import StepRow as StreamRow  # a step as the stream carries it
from gym_gui.envs.check import DEFAULT_RENDER_FPS

# Payloads are kept no closer than this share of a draw's interval in stream time: a little finer than
# the EnvView's rate (1/40 s at 30 frames/s), so each of its draws finds a fresh picture.
FRAME_SPACING_SHARE = 0.75
# The most the picture may trail the stream to play smoothly (a batch waits up to the run's
# batch_seconds, 0.2 s by default, before it is sent).
MAX_PLAYBACK_DELAY = 0.5
# Batches over which the playback delay is estimated.
DELAY_WINDOW = 30
# Payloads waiting for their turn at most (a bound, whatever the stream does).
MAX_QUEUED_FRAMES = 64


class FramePacer:
    """Plays the render payloads of step batches at the pace their steps happened (a jitter buffer).

    Steps travel in batches, a few to tens a second, each holding the payloads of many steps.
    Drawing only the newest payload of each batch would move the picture in jumps at the batch
    rate. Instead the pacer keeps payloads at least ``spacing`` apart in the steps' own
    wall time (always including each batch's newest) and releases each one ``delay`` after its
    step happened, ``delay`` being how late the oldest kept payload of recent batches arrived,
    at most ``MAX_PLAYBACK_DELAY``. The worker's clock is only compared with arrival times, so a
    skewed or remote clock costs at most that bound. ``spacing`` follows the rate the view draws at,
    ``fps`` (:meth:`set_fps`).
    """

    def __init__(self, fps: float = DEFAULT_RENDER_FPS) -> None:
        self.spacing = FRAME_SPACING_SHARE / fps
        self._frames: deque[tuple[float, StreamRow]] = deque()  # (due on the monotonic clock, its step)
        self._lags: deque[float] = deque(maxlen=DELAY_WINDOW)
        self.delay = 0.0

    def __len__(self) -> int:
        return len(self._frames)

    def set_fps(self, fps: float) -> None:
        """Keep payloads for a view drawing ``fps`` pictures a second (from the next batch on)."""
        self.spacing = FRAME_SPACING_SHARE / fps

    def add(self, batch: StepBatch, arrived_wall: float, arrived_mono: float) -> int:
        """Queue the payloads of ``batch``, which arrived at those times; returns how many were kept."""
        picked: list[tuple[float, StreamRow]] = []
        newest: tuple[float, StreamRow] | None = None
        last = -math.inf
        for row in batch.rows:
            payload, wall_time = row[8], row[9]
            if not payload:
                continue
            newest = (wall_time, row)
            if wall_time - last >= self.spacing:
                picked.append(newest)
                last = wall_time
        if newest is None:
            return 0
        if picked[-1] is not newest:
            picked.append(newest)
        self._lags.append(arrived_wall - picked[0][0])
        self.delay = min(MAX_PLAYBACK_DELAY, max(0.0, *self._lags))
        floor = self._frames[-1][0] if self._frames else arrived_mono
        for wall_time, row in picked:
            wait = min(MAX_PLAYBACK_DELAY, max(0.0, wall_time + self.delay - arrived_wall))
            # Never before a payload queued earlier: the picture only moves forward.
            floor = max(floor, arrived_mono + wait)
            self._frames.append((floor, row))
        # A stream far faster than the view can hold only so much: what is overdue is skipped.
        while len(self._frames) > MAX_QUEUED_FRAMES:
            self._frames.popleft()
        return len(picked)

    def next_due(self) -> float | None:
        """When the oldest queued payload is due (monotonic clock), or None when none waits."""
        return self._frames[0][0] if self._frames else None

    def pop_due(self, now: float) -> StreamRow | None:
        """The step of the newest payload due by ``now`` (older due ones are skipped), or None."""
        row = None
        while self._frames and self._frames[0][0] <= now:
            row = self._frames.popleft()[1]
        return row

    def clear(self) -> None:
        self._frames.clear()
        self._lags.clear()
        self.delay = 0.0
