"""The Replay tab's model: the window of one episode's steps held in memory, the step shown, who acted
at each step, and the playback clock (:class:`PlaybackClock`, which Replay together plays on too). Plain Python (its view, :class:`~gym_gui.ui.tabs.replay.ReplayTab`, brings Qt); storage
and time come in as callables, so it runs without either."""

from __future__ import annotations

import bisect
import time
from collections.abc import Callable
from dataclasses import dataclass

from gym_gui.core.records import StepRecord
from gym_gui.envs.check import MAX_DRAW_FPS

# Steps held in memory around the shown one; a seek outside them reads one new window (a primary-key range).
WINDOW = 256
# At most this many clock ticks a second (the most a view draws): faster replays advance several steps per tick.
MAX_TICK_HZ = MAX_DRAW_FPS

# ``(episode, start, stop)`` → the stored steps in [start, stop), or None when storage could not say.
ReadSteps = Callable[[int, int, int], list[StepRecord] | None]
# ``episode`` → its last stored step, -1 when it has none (or storage cannot say).
LastStepOf = Callable[[int], int]
# ``(episode, step)`` → the latest render payload at or before ``step`` and its step, (-1, None) when none.
LatestRender = Callable[[int, int], tuple[int, bytes | None]]
# ``(episode, start)`` → who acted from step ``start`` on, as ``(first, stop, actor)`` spans of
# consecutive steps (steps that do not say are in none); None when storage could not say.
ReadActorSpans = Callable[[int, int], list[tuple[int, int, str]] | None]
# The actor whose colour a stretch of the timeline too short to show them all takes: a person's
# over the operator's (an intervention is what a user looks for), either over none.
_SHOWN_FIRST = {"": 0, "operator": 1, "human": 2}


class ActorTimeline:
    """Who acted at each step of one episode, where its steps say (an operator a person may take
    over from): spans of consecutive steps with the same actor, read whole when the episode is
    selected and from its last span on as a live episode grows.
    """

    def __init__(self, read_spans: ReadActorSpans) -> None:
        self._read_spans = read_spans
        self.episode: int | None = None
        self.spans: list[tuple[int, int, str]] = []  # (first, stop, actor), in step order
        self._firsts: list[int] = []  # each span's first step, for the search of actor_of

    @property
    def recorded(self) -> bool:
        """Whether any step of the episode says who acted."""
        return bool(self.spans)

    def clear(self) -> None:
        self.episode = None
        self.spans, self._firsts = [], []

    def select(self, episode: int) -> None:
        """Read who acted in ``episode`` (nothing when storage cannot say)."""
        self.episode = episode
        self._set(self._read_spans(episode, 0) or [])

    def grow(self) -> None:
        """Read what a live episode added: its last span read again (it may have grown), then any after."""
        if self.episode is None:
            return
        kept, start = (self.spans[:-1], self.spans[-1][0]) if self.spans else ([], 0)
        newer = self._read_spans(self.episode, start)
        if newer is not None:
            self._set(kept + newer)

    def _set(self, spans: list[tuple[int, int, str]]) -> None:
        self.spans = spans
        self._firsts = [first for first, _, _ in spans]

    def actor_of(self, step: int) -> str:
        """Who acted at ``step``: "operator", "human", or "" when the step does not say."""
        index = bisect.bisect_right(self._firsts, step) - 1
        if index < 0:
            return ""
        _, stop, actor = self.spans[index]
        return actor if step < stop else ""

    def bands(self, steps: int, width: int) -> list[tuple[int, int, str]]:
        """The timeline of ``steps`` steps drawn ``width`` pixels wide: ``(x, end, actor)`` for each
        stretch of pixels ``x <= pixel < end`` of one actor, in order; pixels of steps that do not say
        are in none. A pixel holding steps of several actors shows a person's, else the operator's."""
        if steps <= 0 or width <= 0 or not self.spans:
            return []
        pixels = [""] * width
        shown_first = _SHOWN_FIRST
        for first, stop, actor in self.spans:
            start = min(width - 1, first * width // steps)
            end = max(start + 1, min(width, -(-stop * width // steps)))  # every span takes a pixel at least
            for x in range(start, end):
                if shown_first[actor] > shown_first[pixels[x]]:
                    pixels[x] = actor
        bands: list[tuple[int, int, str]] = []
        x = 0
        while x < width:
            actor, end = pixels[x], x + 1
            while end < width and pixels[end] == actor:
                end += 1
            if actor:
                bands.append((x, end, actor))
            x = end
        return bands


class PlaybackClock:
    """Where playback stands, in steps, at ``fps`` × ``speed`` steps a second of ``now()`` (a monotonic
    clock), whatever the rate of :meth:`advance` calls."""

    def __init__(self, fps: float, now: Callable[[], float] = time.monotonic) -> None:
        self.fps = fps  # the environment's own frame rate: 1× speed
        self.speed = 1.0
        self.playing = False
        self._now = now
        self._position = 0.0  # in steps, fractional between advances
        self._clock = 0.0  # now() at the last advance

    def steps_per_second(self) -> float:
        return self.fps * self.speed

    def tick_ms(self) -> int:
        """How often to advance while playing: every step, at most :data:`MAX_TICK_HZ` times a second."""
        return max(int(1000 / MAX_TICK_HZ), int(1000 / self.steps_per_second()))

    def start(self, step: int) -> None:
        """Play on from ``step``, now."""
        self._position = float(step)
        self._clock = self._now()
        self.playing = True

    def pause(self) -> None:
        self.playing = False

    def advance(self) -> int:
        """Move on to now; the step playback has reached."""
        now = self._now()
        self._position += (now - self._clock) * self.steps_per_second()
        self._clock = now
        return int(self._position)


@dataclass
class _RenderHit:
    """The latest payload at or before ``upto`` in ``episode`` is the one of ``step`` (-1: none)."""

    episode: int
    upto: int
    step: int
    payload: bytes | None


class ReplayModel:
    """One episode of a run as the Replay tab steps through it.

    Only a window of :data:`WINDOW` steps around the shown one is in memory: ``rows_loaded`` counts
    every step row read. Pixel runs store frames only at their render rate, so a step without one
    shows the latest frame at or before it (:meth:`picture_of`), looked for in the window first and
    then with one storage query (``render_queries`` counts them). An episode the run is still playing
    (``live_episode``) grows: seeking or playing past its end reads its last step again.

    The clock (:class:`PlaybackClock`) plays at ``fps`` × ``speed`` steps a second of ``now()``, whatever
    the rate of :meth:`tick` calls; it stops at the last step of an ended episode.
    """

    def __init__(
        self,
        read_steps: ReadSteps,
        last_step_of: LastStepOf,
        latest_render: LatestRender,
        *,
        fps: float,
        window: int = WINDOW,
        now: Callable[[], float] = time.monotonic,
        actor_spans: ReadActorSpans = lambda episode, start: [],
    ) -> None:
        if window < 1:
            raise ValueError(f"window must be at least 1 step, got {window}")
        self._read_steps = read_steps
        self._last_step_of = last_step_of
        self._latest_render = latest_render
        self.clock = PlaybackClock(fps, now)
        self.actors = ActorTimeline(actor_spans)  # who acted at each step of the selected episode
        self.window = window
        self.episode: int | None = None
        self.live_episode: int | None = None  # the episode the run is playing now, if any
        self.last_step = -1  # of the selected episode
        self.step = 0  # the step shown
        self.rows_loaded = 0
        self.render_queries = 0
        self._records: dict[int, StepRecord] = {}
        self._lo = self._hi = 0  # the steps [lo, hi) were read into the window
        self._render_hit: _RenderHit | None = None

    # ------------------------------------------------------------ the episode

    @property
    def is_live(self) -> bool:
        """Whether the selected episode is the one the run is still playing."""
        return self.episode is not None and self.episode == self.live_episode

    @property
    def at_end(self) -> bool:
        """Whether the last step of an ended episode is shown (playing again starts from the first)."""
        return self.step >= self.last_step and not self.is_live

    def clear(self) -> None:
        """Select no episode and forget the steps held."""
        self.pause()
        self.episode = self.live_episode = None
        self.last_step = -1
        self.step = 0
        self._forget_window()
        self.actors.clear()

    def select(self, episode: int) -> None:
        """Select ``episode``, its first step shown (its steps are read when they are needed)."""
        self.pause()
        self.episode = episode
        self.step = 0
        self._forget_window()
        self.last_step = self._last_step_of(episode)
        self.actors.select(episode)

    def grow(self) -> bool:
        """Read the selected episode's last step again (a live one grows); whether it moved."""
        if self.episode is None:
            return False
        last = self._last_step_of(self.episode)
        if last == self.last_step:
            return False
        self.last_step = last
        self._forget_window()
        self.actors.grow()
        return True

    def _forget_window(self) -> None:
        self._records = {}
        self._lo = self._hi = 0
        self._render_hit = None

    # ------------------------------------------------------------ seeking

    def seek(self, step: int) -> None:
        """Show ``step``, clamped to the stored steps (past the end of a live episode, read it again)."""
        if self.episode is None:
            return
        if step > self.last_step and self.is_live:
            self.grow()
        self.step = max(0, min(step, self.last_step))

    def next(self) -> None:
        """Show the step after the shown one."""
        self.seek(self.step + 1)

    def previous(self) -> None:
        """Show the step before the shown one."""
        self.seek(self.step - 1)

    def current(self) -> StepRecord | None:
        """The record of the step shown; None without an episode, or when the step is not stored."""
        if self.episode is None or self.last_step < 0:
            return None
        return self.record(self.step)

    def record(self, step: int) -> StepRecord | None:
        """The record of ``step`` of the selected episode, read with its window when not held."""
        record = self._records.get(step)
        if record is None and (not self._lo <= step < self._hi or self.is_live):
            self._load_window(step)
            record = self._records.get(step)
        return record

    def _load_window(self, step: int) -> None:
        if self.episode is None:
            return
        # Going back, keep most of the window behind the step; otherwise ahead of it (play goes forward).
        behind = 3 * self.window // 4 if step < self._lo else self.window // 4
        start = max(0, step - behind)
        rows = self._read_steps(self.episode, start, start + self.window)
        if rows is None:
            return
        self.rows_loaded += len(rows)
        self._records = {record.step: record for record in rows}
        self._lo, self._hi = start, start + self.window

    def picture_of(self, record: StepRecord) -> tuple[int, bytes | None]:
        """The payload to draw for ``record`` and the step it is of: its own, else the latest before it
        ((-1, None) when the episode has none up to it)."""
        if record.render:
            return record.step, record.render
        episode, step = record.episode, record.step
        # ``step`` is in the window (its record was just read), so the window covers [lo, step].
        hit = self._render_hit
        known = hit if hit is not None and hit.episode == episode and hit.step <= step else None
        if known is not None and step <= known.upto:
            return known.step, known.payload
        bottom = self._lo if known is None else max(self._lo, known.upto + 1)
        for s in range(step, bottom - 1, -1):
            held = self._records.get(s)
            if held is not None and held.render:
                self._render_hit = _RenderHit(episode, step, s, held.render)
                return s, held.render
        if known is not None and known.upto + 1 >= self._lo:
            found, payload = known.step, known.payload  # nothing newer between what was known and here
        elif self._lo == 0:
            found, payload = -1, None  # the window reaches the episode's start: no picture at all
        else:
            self.render_queries += 1
            found, payload = self._latest_render(episode, step)
        self._render_hit = _RenderHit(episode, step, found, payload)
        return found, payload

    # ------------------------------------------------------------ the clock

    @property
    def fps(self) -> float:
        """The environment's own frame rate: 1× speed."""
        return self.clock.fps

    @fps.setter
    def fps(self, fps: float) -> None:
        self.clock.fps = fps

    @property
    def speed(self) -> float:
        return self.clock.speed

    @speed.setter
    def speed(self, speed: float) -> None:
        self.clock.speed = speed

    @property
    def playing(self) -> bool:
        return self.clock.playing

    def steps_per_second(self) -> float:
        return self.clock.steps_per_second()

    def tick_ms(self) -> int:
        """How often to :meth:`tick` while playing (:meth:`PlaybackClock.tick_ms`)."""
        return self.clock.tick_ms()

    def play(self) -> bool:
        """Start the clock at the step shown (at the first step when an ended episode is at its end);
        False when there is nothing to play."""
        if self.episode is None or self.last_step < 0:
            return False
        if self.at_end:
            self.step = 0
        self.clock.start(self.step)
        return True

    def pause(self) -> None:
        self.clock.pause()

    def tick(self) -> int | None:
        """Move the clock on to now; the step to show then (None: the one shown still). At the last
        step of an ended episode the clock stops."""
        target = self.clock.advance()
        if target > self.last_step and self.is_live:
            self.grow()
        if target >= self.last_step and not self.is_live:
            self.pause()
            return self.last_step
        return target if target != self.step else None
