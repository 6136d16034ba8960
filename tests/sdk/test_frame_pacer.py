"""A worker's frames come at the run's render rate while drawing is cheap, and never take more than a
tenth of its time when drawing is slow (the SDK's FramePacer, on a clock the test moves)."""

from __future__ import annotations

import pytest
from gym_gui_sdk.render import FRAME_SHARE, FramePacer


class Clock:
    """Seconds that pass only when the test says (a step's or a frame's cost)."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def play(step_seconds: float, frame_seconds: float, fps: float, seconds: float) -> tuple[int, float, float]:
    """Step for ``seconds`` of the clock, drawing frames through a pacer: the frames drawn, the seconds
    they took and the seconds played in all."""
    clock = Clock()
    pacer = FramePacer(clock=clock)
    drawn = 0
    drawing = 0.0

    def draw() -> bytes:
        clock.now += frame_seconds
        return b"png"

    while clock.now < seconds:
        clock.now += step_seconds
        before = clock.now
        if pacer.frame(draw, fps) is not None:
            drawn += 1
            drawing += clock.now - before
    return drawn, drawing, clock.now


def test_cheap_frames_come_at_the_rate_asked() -> None:
    # CartPole-like: 30 µs a step, 1 ms a frame, 10 frames a second for 20 s.
    drawn, _drawing, _total = play(step_seconds=30e-6, frame_seconds=1e-3, fps=10, seconds=20)
    assert drawn in (200, 201)


@pytest.mark.parametrize("seconds", [59.0, 60.0, 61.0])
def test_slow_frames_take_at_most_a_tenth_of_the_time(seconds: float) -> None:
    # MuJoCo's software renderer: 0.2 s a 480x480 frame, against 0.3 ms a step; 10 frames a second asked.
    drawn, drawing, total = play(step_seconds=3e-4, frame_seconds=0.2, fps=10, seconds=seconds)
    # A tenth, but for the first frame and the last, drawn before the 1.8 s of steps that pay for it.
    assert drawing <= FRAME_SHARE * total + 2 * 0.2
    # Fewer frames than asked, but still frames: one every 2 s (the frame's cost over the share),
    # after the first two (the first one's cost is the renderer's setting up).
    assert drawn == pytest.approx(1 + seconds / 2.0, abs=1)


def test_a_frame_costing_a_tenth_of_the_rate_keeps_the_rate() -> None:
    drawn, drawing, total = play(step_seconds=1e-3, frame_seconds=0.01, fps=10, seconds=10)
    assert drawn == pytest.approx(100, abs=1)
    assert drawing <= FRAME_SHARE * total


def test_the_first_frames_cost_of_setting_the_renderer_up_does_not_hold_the_second_back() -> None:
    clock = Clock()
    pacer = FramePacer(clock=clock)
    costs = iter([1.2, 0.2, 0.2])  # MuJoCo's first frame makes its GL context

    def draw() -> bytes:
        clock.now += next(costs)
        return b"png"

    assert pacer.frame(draw, 10) == b"png"
    clock.now = 1.3  # past the rate's 0.1 s: the second frame comes at once
    assert pacer.frame(draw, 10) == b"png"
    clock.now = 3.2  # the second took 0.2 s: the third waits 2 s from its start
    assert pacer.frame(draw, 10) is None
    clock.now = 3.3
    assert pacer.frame(draw, 10) == b"png"


def test_no_frames_without_a_render_rate() -> None:
    pacer = FramePacer(clock=Clock())

    def draw() -> bytes:
        raise AssertionError("drawn without a render rate")

    assert pacer.frame(draw, 0) is None
    assert pacer.frame(draw, -1.0) is None


def test_a_frame_that_fails_still_sets_when_the_next_is_due() -> None:
    clock = Clock()
    pacer = FramePacer(clock=clock)

    def broken() -> bytes:
        clock.now += 1.0
        raise RuntimeError("cannot draw")

    pacer.frame(lambda: b"png", 10)  # the first frame, whose cost does not count
    clock.now = 1.0
    with pytest.raises(RuntimeError):
        pacer.frame(broken, 10)
    clock.now = 10.0  # a tenth of the time: the next frame waits 10 s from the failed one's start
    assert pacer.frame(lambda: b"png", 10) is None
    clock.now = 11.0
    assert pacer.frame(lambda: b"png", 10) == b"png"


@pytest.mark.parametrize("share", [0.0, -0.1, 1.5])
def test_a_share_outside_zero_to_one_is_refused(share: float) -> None:
    with pytest.raises(ValueError, match=f"share must be in \\(0, 1\\], got {share}"):
        FramePacer(share)
