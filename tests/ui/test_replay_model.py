"""The Replay tab's model without Qt: the window of steps it holds, the step it shows, the picture of a
step without one, a live episode that grows, and the playback clock on a clock the test moves (steps
read from a real telemetry database through the tab's own storage reads), and who acted at each step."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from gym_gui.core.records import StepRow
from gym_gui.storage.telemetry_writer import TelemetryWriter
from gym_gui.ui.tabs.replay_model import MAX_TICK_HZ, ReplayModel
from gym_gui.ui.tabs.replay_storage import ReplayStorage

WINDOW = 64
FRAME_EVERY = 100  # a pixel run stores a frame at its render rate only


def row(episode: int, step: int, frames: bool = True) -> StepRow:
    render = f"frame {episode}/{step}".encode() if frames and step % FRAME_EVERY == 0 else None
    return (episode, step, 1.0, False, False, str(step % 3), "[0.0]", "{}", render, 0.0)


class Clock:
    """Time as the test sets it."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def writer(tmp_path: Path) -> Iterator[TelemetryWriter]:
    """A run's telemetry: episode 0 of 1,000 steps with a frame every 100, episode 1 of 1,000 without any."""
    writer = TelemetryWriter(tmp_path / "telemetry.sqlite")
    writer.start()
    writer.put_steps([row(0, step) for step in range(1000)])
    writer.put_steps([row(1, step, frames=False) for step in range(1000)])
    assert writer.flush(timeout=30)
    yield writer
    writer.close(timeout=30)


@pytest.fixture
def storage(writer: TelemetryWriter) -> Iterator[ReplayStorage]:
    errors: list[str] = []
    storage = ReplayStorage(on_error=errors.append)
    assert storage.open(writer.path)
    yield storage
    storage.close()
    assert errors == []


def make_model(storage: ReplayStorage, clock: Clock | None = None, fps: float = 10.0) -> ReplayModel:
    return ReplayModel(
        storage.steps,
        storage.last_step_of,
        storage.latest_render,
        fps=fps,
        window=WINDOW,
        now=clock or Clock(),
        actor_spans=storage.actor_spans,
    )


def shown_step(model: ReplayModel) -> int | None:
    """The step number of the record the model shows, None when it shows none."""
    record = model.current()
    return None if record is None else record.step


def test_only_a_window_of_steps_around_the_shown_one_is_read(storage: ReplayStorage) -> None:
    model = make_model(storage)
    assert model.current() is None  # no episode selected
    model.select(0)
    assert (model.episode, model.last_step, model.step, model.rows_loaded) == (0, 999, 0, 0)
    first = model.current()
    assert first is not None and (first.episode, first.step) == (0, 0)
    assert model.rows_loaded == WINDOW

    model.seek(500)  # ahead: most of the new window lies ahead of the step
    assert shown_step(model) == 500
    assert model.rows_loaded == 2 * WINDOW
    for _ in range(WINDOW * 3 // 4 - 1):
        model.next()
    model.previous()
    assert model.step == 500 + WINDOW * 3 // 4 - 2
    assert model.current() is not None
    assert model.rows_loaded == 2 * WINDOW  # all within the window

    model.seek(483)  # behind the window: most of the new one lies behind the step
    assert model.current() is not None
    assert model.rows_loaded == 3 * WINDOW
    model.seek(483 - WINDOW * 3 // 4)
    assert model.current() is not None and model.rows_loaded == 3 * WINDOW

    model.seek(-5)
    assert model.step == 0
    model.seek(5000)
    assert model.step == 999 and shown_step(model) == 999


def test_a_step_without_a_picture_shows_the_latest_one_before_it(storage: ReplayStorage) -> None:
    model = make_model(storage)
    model.select(0)
    model.seek(150)
    record = model.current()
    assert record is not None and record.render is None
    assert model.picture_of(record) == (100, b"frame 0/100")  # before the window: one query
    assert model.render_queries == 1
    for _ in range(10):
        model.next()
        record = model.current()
        assert record is not None
        assert model.picture_of(record) == (100, b"frame 0/100")  # known: no further query
    assert model.render_queries == 1

    model.seek(200)
    record = model.current()
    assert record is not None and model.picture_of(record) == (200, b"frame 0/200")  # its own
    model.seek(20)
    record = model.current()
    assert record is not None and model.picture_of(record) == (0, b"frame 0/0")  # found in the window
    assert model.render_queries == 1

    model.select(1)  # an episode that stored no picture at all
    model.seek(5)
    record = model.current()
    assert record is not None and model.picture_of(record) == (-1, None)  # its start is in the window
    model.seek(700)
    record = model.current()
    assert record is not None and model.picture_of(record) == (-1, None)
    assert model.render_queries == 2


def test_a_live_episode_grows_when_shown_past_its_end(
    writer: TelemetryWriter, storage: ReplayStorage
) -> None:
    writer.put_steps([row(2, step) for step in range(50)])
    assert writer.flush(timeout=30)
    model = make_model(storage)
    model.live_episode = 2
    model.select(2)
    assert model.is_live and model.last_step == 49
    model.seek(60)
    assert model.step == 49

    writer.put_steps([row(2, step) for step in range(50, 100)])
    assert writer.flush(timeout=30)
    held = model.current()
    assert held is not None and held.step == 49
    model.seek(80)  # past the end known: the episode is read again
    assert (model.last_step, model.step) == (99, 80)
    assert shown_step(model) == 80
    assert model.grow() is False  # nothing new since

    writer.put_steps([row(2, step) for step in range(100, 120)])
    assert writer.flush(timeout=30)
    model.live_episode = None  # the run moved on: what is stored is all there is to show
    model.seek(110)
    assert (model.last_step, model.step) == (99, 99)
    assert model.grow() is True and model.last_step == 119  # the tab's poll tells it the episode ended


def test_the_clock_plays_at_the_envs_rate_times_the_speed(storage: ReplayStorage) -> None:
    clock = Clock()
    model = make_model(storage, clock, fps=10.0)
    assert model.play() is False  # nothing selected: nothing to play
    model.select(0)
    model.seek(10)
    assert model.play() is True and model.playing
    assert model.tick() is None  # no time passed
    clock.now = 0.5
    assert model.tick() == 15  # 10 steps a second
    model.seek(15)
    model.speed = 4.0
    clock.now = 1.0
    assert model.tick() == 35
    model.seek(35)
    model.speed = 8.0
    assert model.tick_ms() == int(1000 / MAX_TICK_HZ)  # 80 steps a second: ticks stay at the cap (60)
    model.speed = 0.25
    assert model.tick_ms() == 400

    model.pause()
    assert not model.playing


def test_the_clock_stops_at_the_end_of_an_ended_episode_and_plays_again_from_its_start(
    storage: ReplayStorage,
) -> None:
    clock = Clock()
    model = make_model(storage, clock, fps=10.0)
    model.select(0)
    model.seek(995)
    model.play()
    clock.now = 10.0
    assert model.tick() == 999
    model.seek(999)
    assert not model.playing and model.at_end

    assert model.play() is True  # at the end: from the start again
    assert model.step == 0 and model.playing
    clock.now = 10.25
    assert model.tick() == 2


def test_a_live_episode_plays_on_past_its_end(writer: TelemetryWriter, storage: ReplayStorage) -> None:
    writer.put_steps([row(2, step) for step in range(10)])
    assert writer.flush(timeout=30)
    clock = Clock()
    model = make_model(storage, clock, fps=10.0)
    model.live_episode = 2
    model.select(2)
    model.seek(9)
    assert not model.at_end and model.play() and model.step == 9  # not back to the start
    writer.put_steps([row(2, step) for step in range(10, 30)])
    assert writer.flush(timeout=30)
    clock.now = 1.0
    assert model.tick() == 19  # read on into what was stored meanwhile
    assert model.last_step == 29 and model.playing


def test_a_window_must_hold_a_step(storage: ReplayStorage) -> None:
    with pytest.raises(ValueError, match="window must be at least 1 step, got 0"):
        ReplayModel(storage.steps, storage.last_step_of, storage.latest_render, fps=10.0, window=0)


def acted(episode: int, actors: str, first: int = 0) -> list[StepRow]:
    """Steps ``first``… acted as ``actors`` says, a letter a step: o operator, h human, - not said."""
    who = {"o": "operator", "h": "human", "-": ""}
    return [(*row(episode, first + i), who[c], "0" if c == "h" else "") for i, c in enumerate(actors)]


def test_who_acted_at_each_step_and_the_timeline_drawn_of_it(
    writer: TelemetryWriter, storage: ReplayStorage
) -> None:
    # Episode 2: 20 operator steps, 10 of a person, 10 that do not say, 59 operator, 1 of a person.
    writer.put_steps(acted(2, "o" * 20 + "h" * 10 + "-" * 10 + "o" * 59 + "h"))
    assert writer.flush(timeout=30)
    model = make_model(storage)
    model.select(2)
    actors = model.actors
    assert actors.recorded
    assert [actors.actor_of(step) for step in (0, 19, 20, 29, 30, 39, 40, 98, 99, 100)] == [
        "operator",
        "operator",
        "human",
        "human",
        "",
        "",
        "operator",
        "operator",
        "human",
        "",
    ]
    assert actors.spans == [(0, 20, "operator"), (20, 30, "human"), (40, 99, "operator"), (99, 100, "human")]
    steps = model.last_step + 1
    assert actors.bands(steps, 200) == [
        (0, 40, "operator"),
        (40, 60, "human"),
        (80, 198, "operator"),
        (198, 200, "human"),
    ]
    # Narrower than the episode: a person's single step still takes a pixel, the operator's the others.
    assert actors.bands(steps, 10) == [
        (0, 2, "operator"),
        (2, 3, "human"),
        (4, 9, "operator"),
        (9, 10, "human"),
    ]
    assert actors.bands(steps, 0) == [] and actors.bands(0, 10) == []

    model.select(0)  # an episode whose steps do not say: nothing to colour
    assert not model.actors.recorded and model.actors.bands(1000, 100) == []
    assert model.actors.actor_of(5) == ""
    model.clear()
    assert model.actors.spans == [] and model.actors.episode is None


def test_who_acted_in_a_live_episode_is_read_on_as_it_grows(
    writer: TelemetryWriter, storage: ReplayStorage
) -> None:
    writer.put_steps(acted(2, "oooh"))
    assert writer.flush(timeout=30)
    model = make_model(storage)
    model.live_episode = 2
    model.select(2)
    assert model.actors.spans == [(0, 3, "operator"), (3, 4, "human")]
    writer.put_steps(acted(2, "hhoo", first=4))  # the person's span goes on, then the operator's
    assert writer.flush(timeout=30)
    assert model.grow()
    assert model.actors.spans == [(0, 3, "operator"), (3, 6, "human"), (6, 8, "operator")]
