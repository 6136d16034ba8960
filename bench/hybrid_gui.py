"""Hybrid play in the window: steps a second against the env's rate, the event loop's stall, key press → the person's step.

Issue 25's goal: hybrid in the window at the env's rate (at most 60 frames/s) plays at >= 0.95 of that
rate with an event-loop stall p99 <= 16 ms, and a key press is applied at the very next frame.

A fresh daemon (temporary GYM_GUI_HOME) and a ``DaemonLink`` for the play view the Human tab shows
(:class:`HumanPlayWidget`, shown offscreen unless ``DISPLAY`` is set), paced by its own clock as a
person sees it. Cases: Hybrid with the ``random`` operator on CartPole-v1 (50/s) and on
LunarLander-v3 (Box2D, 50/s: no keyboard-playable env of the catalog installed in the app's venv
declares 60 or more), and, when a cleanrl bundle is installed (``find_bundles``), Hybrid on
CartPole-v1 with a CleanRL PPO MLP trained here first (``--ppo-steps``, as bench/operator_policy.py
trains one). For each, after a second of warm-up, ``--seconds`` of:

- rate: steps shown a second ÷ the view's clock rate (the env's ``render_fps``, at most 60);
- stall: p99 and max of how late a 10 ms timer fires (gui_live's ``StallProbe``);
- key presses: taps (a key down, up 30-120 ms later) sent with ``QApplication.sendEvent`` at random
  moments (seeded, 150-500 ms apart); for each, the beats of the view's clock (frames) from the press
  until the first step shown that is the person's (actor ``human``, the key's action). 1 frame: the
  next beat took it and its step was shown before the beat after. Afterwards every step shown is
  checked to be stored with the same actor.

References measured in the same run: the view shown with nothing playing (an empty loop's stall), and
per env the same view in Human mode (no operator) at the same rate, driven by held keys: on CartPole
the key toward which the pole leans, on LunarLander the main engine while falling (rate counted over
the time an episode was in play; a new episode is started by the key, as a person would).

Last line: the rate ratios (goal >= 0.95), stall p99 (goal <= 16 ms), share of presses applied within
one frame (goal 1.0). ``--json FILE`` writes the figures (bench/arena.py runs this as a subprocess)::

    .venv/bin/python bench/hybrid_gui.py [--seconds 20] [--ppo-steps 2048] [--seed 0] [--json FILE] [--keep]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from _daemon import fresh_home, release  # bench/ is on sys.path when a bench runs as a script
from cleanrl_overhead import find_bundles
from gui_live import BenchError, StallProbe, spin, spin_until
from operator_policy import train
from PySide6.QtCore import QEvent, Qt, QTimer
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import QApplication

from gym_gui.core.errors import GymGuiError
from gym_gui.envs.catalog import catalog
from gym_gui.play.seat import HUMAN_ACTED, Control, Outcome
from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.home import BUNDLES_ENV_VAR
from gym_gui.storage.run_dir import RunDir
from gym_gui.storage.telemetry import TelemetryReader
from gym_gui.ui.daemon_link import DaemonLink
from gym_gui.ui.human_play import HumanPlayWidget, qt_key

GOAL_RATE = 0.95
GOAL_P99_MS = 16.0
CARTPOLE, LUNAR = "CartPole-v1", "LunarLander-v3"
# A tap: the key is down this long (s); taps come this far apart (s), so each is over before the next.
HOLD = (0.03, 0.12)
GAP = (0.15, 0.5)


def lean_key(obs: Any) -> str:
    """CartPole's person: push toward where the pole falls (angle plus a little of its angular speed)."""
    return "Right" if float(obs[2]) + 0.5 * float(obs[3]) > 0 else "Left"


def hover_key(obs: Any) -> str:
    """LunarLander's person: the main engine while falling, nothing (the idle no-op) otherwise."""
    return "Up" if float(obs[3]) < -0.1 else ""


BREAKOUT, PONG = "ALE/Breakout-v5", "ALE/Pong-v5"


def _columns(frame: np.ndarray, rows: slice, colour: tuple[int, int, int]) -> np.ndarray:
    """The columns of ``frame``'s ``rows`` where a pixel has ``colour``."""
    return np.nonzero((frame[rows] == colour).all(axis=-1).any(axis=0))[0]


def _rows(frame: np.ndarray, columns: slice, colour: tuple[int, int, int]) -> np.ndarray:
    return np.nonzero((frame[:, columns] == colour).all(axis=-1).any(axis=1))[0]


def paddle_key(obs: Any) -> str:
    """Breakout's person: the paddle (rows 189-193) under the ball (rows 93-188), FIRE while no ball is in play."""
    frame = np.asarray(obs)
    ball = _columns(frame, slice(93, 189), (200, 72, 72))
    paddle = _columns(frame, slice(189, 193), (200, 72, 72))
    if not len(ball) or not len(paddle):
        return "Space"
    centre = paddle.mean()
    return "" if abs(ball.mean() - centre) < 4 else "Left" if ball.mean() < centre else "Right"


def pong_key(obs: Any) -> str:
    """Pong's person: its paddle (green, right side) toward the ball's height, FIRE while no ball is in play."""
    frame = np.asarray(obs)
    ball = _rows(frame, slice(0, 160), (236, 236, 236))
    paddle = _rows(frame, slice(140, 144), (92, 186, 92))
    if not len(ball) or not len(paddle):
        return "Space"
    centre = paddle.mean()
    return "" if abs(ball.mean() - centre) < 4 else "Up" if ball.mean() < centre else "Down"


# Per env: its person of the Human reference, and the key the Hybrid cases tap (and that starts the
# next episode).
PEOPLE: dict[str, Callable[[Any], str]] = {
    CARTPOLE: lean_key,
    LUNAR: hover_key,
    BREAKOUT: paddle_key,
    PONG: pong_key,
}
TAPPED = {CARTPOLE: "Left", LUNAR: "Left", BREAKOUT: "Space", PONG: "Space"}


@dataclass
class Figures:
    """One case's figures over its measured seconds."""

    label: str
    env_id: str
    operator: str  # "" for the Human reference
    target_fps: float
    seconds: float = 0.0
    steps: int = 0
    human_steps: int = 0
    episodes: int = 0
    play_seconds: float = 0.0  # seconds an episode was in play (the Human reference's restarts excluded)
    p50_ms: float = 0.0
    p99_ms: float = 0.0
    max_ms: float = 0.0
    gui_cpu: float = 0.0
    process_cpu: float = 0.0
    press_frames: list[int] = field(default_factory=list)  # frames from each press to its step shown
    unapplied: int = 0  # presses never applied
    wrong_action: int = 0  # presses whose first human step was not the key's action
    profile: list[str] = field(default_factory=list)  # --profile: where a beat's step spends its time

    @property
    def rate(self) -> float:
        """Steps shown a second while an episode was in play."""
        return self.steps / self.play_seconds if self.play_seconds else 0.0

    @property
    def rate_ratio(self) -> float:
        return self.rate / self.target_fps

    @property
    def presses(self) -> int:
        return len(self.press_frames) + self.unapplied

    @property
    def next_frame_share(self) -> float:
        return sum(1 for f in self.press_frames if f <= 1) / max(self.presses, 1)

    @property
    def worst_frames(self) -> int | None:
        return None if self.unapplied else max(self.press_frames, default=0)

    def line(self) -> str:
        stall = f"stall p50 {self.p50_ms:.1f} p99 {self.p99_ms:.1f} max {self.max_ms:.1f} ms"
        cpu = f"CPU: GUI thread {self.gui_cpu:.0%}, process {self.process_cpu:.0%}"
        if not self.play_seconds:
            return f"{self.label}: {stall}; {cpu}"
        text = (
            f"{self.label}: {self.rate:.1f} steps/s = {self.rate_ratio:.3f} of {self.target_fps:g}/s, {stall}; "
            f"{self.episodes} episodes ended; {cpu}"
        )
        if self.presses:
            worst = "never" if self.worst_frames is None else f"{self.worst_frames}"
            text += (
                f"; {self.presses} presses: {self.next_frame_share:.3f} applied at the next frame, "
                f"worst {worst} frames, {self.wrong_action} with another action"
            )
        return text

    def figures(self) -> dict[str, Any]:
        return {
            **asdict(self),
            "rate_ratio": self.rate_ratio,
            "presses": self.presses,
            "next_frame_share": self.next_frame_share,
            "worst_frames": self.worst_frames,
            "line": self.line(),
        }


def send_key(widget: HumanPlayWidget, name: str, down: bool) -> None:
    """A key event as the window delivers it to the focused play view."""
    kind = QEvent.Type.KeyPress if down else QEvent.Type.KeyRelease
    QApplication.sendEvent(widget, QKeyEvent(kind, qt_key(name), Qt.KeyboardModifier.NoModifier))


class Watch:
    """Counts what the view shows over a window: steps, the person's, episodes; and the frames from each
    tapped key to its step."""

    def __init__(
        self,
        widget: HumanPlayWidget,
        figures: Figures,
        action: int | None,
        profile: TickProfile | None = None,
    ) -> None:
        self.widget = widget
        self.figures = figures
        self.action = action  # the tapped key's action
        self.profile = profile
        self.counting = False
        self.shown: dict[tuple[int, int], str] = {}  # (episode, step index) → actor, every step shown
        self.pending: list[int] = []  # the view's beat count at each press not yet applied
        self.playing_since: float | None = None
        widget.calls.stepped.connect(self._stepped)
        widget.episode_started.connect(self._started)
        widget.episode_finished.connect(self._finished)

    def begin(self) -> None:
        self.counting = True
        if self.widget.session_ready():
            self.playing_since = time.perf_counter()
        if self.profile is not None:
            self.profile.begin()

    def end(self) -> None:
        self.counting = False
        self._stop_play()
        if self.profile is not None:
            self.profile.end()

    def press(self) -> None:
        self.pending.append(self.widget.ticks)

    def disconnect(self) -> None:
        self.widget.calls.stepped.disconnect(self._stepped)
        self.widget.episode_started.disconnect(self._started)
        self.widget.episode_finished.disconnect(self._finished)

    def _started(self, _run_id: str) -> None:
        if self.counting:
            self.playing_since = time.perf_counter()

    def _finished(self, _run_id: str, _total: float, _steps: int) -> None:
        if self.counting:
            self.figures.episodes += 1
            if self.widget.mode is Control.HUMAN:  # the next episode is a new run, started by a key
                self._stop_play()

    def _stop_play(self) -> None:
        if self.playing_since is not None:
            self.figures.play_seconds += time.perf_counter() - self.playing_since
            self.playing_since = None

    def _stepped(self, outcome: Outcome) -> None:
        if outcome.step == 0:
            return  # the operator's next episode was reset
        self.shown[(outcome.episode, outcome.step - 1)] = outcome.actor
        if self.counting:
            self.figures.steps += 1
        if outcome.actor != HUMAN_ACTED:
            return
        if self.counting:
            self.figures.human_steps += 1
        for tick in self.pending:
            self.figures.press_frames.append(self.widget.ticks - tick)
            if self.profile is not None and self.widget.ticks - tick > 1:
                self.profile.press_took(tick, outcome)
            if self.action is not None and int(outcome.action) != self.action:
                self.figures.wrong_action += 1
        self.pending.clear()


class TickProfile:
    """``--profile``: where a beat's step spends its time, and the beats skipped because a call on the seat
    was still on its way. It wraps the seat's parts (its ``propose``, ``step`` and ``next_episode``, its
    env's ``step`` and ``render``) and the view's ``calls.step`` for this bench only.
    """

    def __init__(self, widget: HumanPlayWidget) -> None:
        self.widget = widget
        self.counting = False
        self.parts: dict[str, list[float]] = {}
        self.issued = 0  # steps the view's beats issued while counting
        self.ticks = 0
        self._issue: tuple[int, float] = (0, 0.0)  # the beat and time the step on its way was issued
        self.by_step: dict[tuple[int, int], tuple[int, float]] = {}  # shown step → (its beat, its end)
        self.slow: list[str] = []  # why each press took more than one frame
        issue = widget.calls.step

        def step(action: Any) -> None:
            self._issue = (widget.ticks, time.perf_counter())
            self.issued += self.counting
            issue(action)

        widget.calls.step = step  # type: ignore[method-assign]
        widget.calls.started.connect(self._started)
        widget.calls.stepped.connect(self._shown)

    def _started(self, _outcome: Outcome) -> None:
        self.by_step.clear()  # a new seat (in Human mode, each episode's): its steps count from 1 again
        self.attach(self.widget.session)

    def attach(self, seat: Any) -> None:
        """Time the parts of ``seat`` (the view's seat, once started)."""
        for name, owner, attribute in (
            ("operator's proposal", seat, "propose"),
            ("env.step", seat.env, "step"),
            ("env.render", seat.env, "render"),
            ("next episode (reset)", seat, "next_episode"),
        ):
            setattr(owner, attribute, self._timed(name, getattr(owner, attribute)))
        whole = seat.step

        def step(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            outcome = whole(*args, **kwargs)
            end = time.perf_counter()
            self._add("beat → the pool thread runs it", start - self._issue[1])
            self._add("Seat.step in all", end - start)
            self.by_step[(outcome.episode, outcome.step)] = (self._issue[0], end)
            return outcome

        seat.step = step

    def begin(self) -> None:
        self.counting, self.ticks = True, self.widget.ticks

    def end(self) -> None:
        self.counting, self.ticks = False, self.widget.ticks - self.ticks

    def press_took(self, press_tick: int, outcome: Outcome) -> None:
        """A press shown more than one frame after it came: say whether its beat was late or its step slow."""
        beat, _ = self.by_step.get((outcome.episode, outcome.step), (0, 0.0))
        if beat > press_tick + 1:
            self.slow.append(f"issued {beat - press_tick} beats after the press (a call was on its way)")
        else:
            self.slow.append(f"issued at the next beat, shown after {self.widget.ticks - beat} more beat(s)")

    def lines(self) -> list[str]:
        skipped = self.ticks - self.issued
        out = [
            f"  profile: {self.ticks} beats, {skipped} ({skipped / max(self.ticks, 1):.1%}) issued no step (a call on its way, or no key)"
        ]
        for name, values in self.parts.items():
            ms = np.asarray(values) * 1000
            out.append(
                f"  {name:>34}: median {np.median(ms):6.2f} p99 {np.percentile(ms, 99):6.2f} max {ms.max():6.2f} ms ({len(ms)}×)"
            )
        out.extend(f"  slow press: {why}" for why in self.slow)
        return out

    def _add(self, name: str, seconds: float) -> None:
        if self.counting:
            self.parts.setdefault(name, []).append(seconds)

    def _timed(self, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self._add(name, time.perf_counter() - start)

        return timed

    def _shown(self, outcome: Outcome) -> None:
        _, end = self.by_step.get((outcome.episode, outcome.step), (0, 0.0))
        if end:
            self._add("back on the GUI thread, shown", time.perf_counter() - end)


def window(probe: StallProbe, watch: Watch, seconds: float) -> None:
    """``seconds`` of the view playing, its stall probed; then the figures of that window."""
    figures = watch.figures
    start, thread0, process0 = time.perf_counter(), time.thread_time(), time.process_time()
    probe.start()
    watch.begin()
    spin(seconds)
    watch.end()
    probe.stop()
    elapsed = time.perf_counter() - start
    figures.seconds = elapsed
    figures.gui_cpu = (time.thread_time() - thread0) / elapsed
    figures.process_cpu = (time.process_time() - process0) / elapsed
    late = np.asarray(probe.lateness_ms or [0.0])
    figures.p50_ms = float(np.percentile(late, 50))
    figures.p99_ms = float(np.percentile(late, 99))
    figures.max_ms = float(late.max())


def make_view(link: DaemonLink, env_id: str) -> HumanPlayWidget:
    widget = HumanPlayWidget(link)
    widget.resize(1280, 800)
    widget.show()
    widget.set_env(env_id)
    widget.set_seed(0)
    widget.setFocus()
    return widget


def check_stored(client: DaemonClient, run_id: str, shown: dict[tuple[int, int], str]) -> None:
    """Every step the view showed is stored with the same actor.

    Raises:
        BenchError: naming the first step stored otherwise.
    """
    reader = TelemetryReader(RunDir(client.get_run(run_id).record.run_dir).telemetry_path)
    try:
        stored = {
            (step.episode, step.step): step.actor
            for episode in sorted({episode for episode, _ in shown})
            for step in reader.steps(episode)
        }
    finally:
        reader.close()
    for key, actor in sorted(shown.items()):
        if stored.get(key) != actor:
            raise BenchError(
                f"run {run_id}: step {key} was shown as {actor!r} but stored as {stored.get(key)!r}"
            )


def start_play(widget: HumanPlayWidget, what: str) -> None:
    """Start the view's episode and wait until it plays."""
    started: list[str] = []
    widget.episode_started.connect(started.append)
    widget.start_episode()
    spin_until(lambda: bool(started) or bool(widget.failure), 120, f"{what} to start")
    widget.episode_started.disconnect(started.append)
    if widget.failure:
        raise BenchError(f"{what}: {widget.failure}")


def finish(client: DaemonClient, widget: HumanPlayWidget, watch: Watch) -> str:
    """Leave the episode in play, wait for its run to end, close the view; the run's id."""
    run_id = widget.run_id
    widget.close_session()
    # The loop runs meanwhile: a step still on its way comes back to it before the seat's close is sent.
    if run_id:
        spin_until(lambda: client.get_run(run_id).record.state.terminal, 60, f"run {run_id} to end")
    watch.disconnect()
    widget.close()
    widget.deleteLater()
    return run_id


def hybrid(
    client: DaemonClient,
    link: DaemonLink,
    probe: StallProbe,
    env_id: str,
    operator: str,
    label: str,
    seconds: float,
    rng: random.Random,
    profiling: bool,
) -> Figures:
    """Hybrid with ``operator`` on ``env_id`` for ``seconds``, a key tapped at random moments."""
    widget = make_view(link, env_id)
    listed: list[str] = []
    widget.picker.listed.connect(listed.append)
    widget.set_mode(Control.HYBRID)
    spin_until(lambda: bool(listed), 60, f"the operators of {env_id} to be listed")
    widget.picker.choose(operator)
    profile = TickProfile(widget) if profiling else None
    start_play(widget, label)
    key = TAPPED[env_id]
    action = next(b.action for b in catalog()[env_id].keys if b.key == key)
    figures = Figures(label, env_id, operator, widget.fps)
    watch = Watch(widget, figures, action if isinstance(action, int) else None, profile)
    spin(1.0)  # warm-up: the operator's first answers, torch's first calls

    def tap() -> None:
        if not watch.counting:
            return
        watch.press()
        send_key(widget, key, down=True)
        QTimer.singleShot(round(rng.uniform(*HOLD) * 1000), lambda: send_key(widget, key, down=False))
        QTimer.singleShot(round(rng.uniform(*GAP) * 1000), tap)

    QTimer.singleShot(round(rng.uniform(*GAP) * 1000), tap)
    window(probe, watch, seconds)
    # The last press is applied at a beat after the window: wait for it (a second at most).
    deadline = time.monotonic() + 1.0
    while watch.pending and time.monotonic() < deadline:
        spin(0.02)
    figures.unapplied = len(watch.pending)
    spin(max(HOLD))  # the last tap's key goes up
    check_stored(client, finish(client, widget, watch), watch.shown)
    if profile is not None:
        figures.profile = profile.lines()
    return figures


def human(
    client: DaemonClient, link: DaemonLink, probe: StallProbe, env_id: str, seconds: float, profiling: bool
) -> Figures:
    """Human mode (no operator) on ``env_id`` for ``seconds``, driven by held keys (see :data:`PEOPLE`)."""
    widget = make_view(link, env_id)
    person = PEOPLE[env_id]
    held = [""]  # the key the person holds down
    playing = [True]  # the person plays on (presses a key to start the next episode)

    def hold(name: str) -> None:
        if name == held[0]:
            return
        if held[0]:
            send_key(widget, held[0], down=False)
        if name:
            send_key(widget, name, down=True)
        held[0] = name

    def follow(outcome: Outcome) -> None:
        if not outcome.done:
            hold(person(outcome.observation))

    def started(outcome: Outcome) -> None:
        # A new episode starts with no key held in the view (the one that started it included).
        held[0] = ""
        follow(outcome)

    def again(*_: object) -> None:
        # The episode is over: let go, and press again to start the next one (as a person would).
        hold("")
        QTimer.singleShot(50, lambda: hold(TAPPED[env_id] if playing[0] else ""))

    widget.calls.started.connect(started)
    widget.calls.stepped.connect(follow)
    widget.episode_finished.connect(again)
    profile = TickProfile(widget) if profiling else None
    start_play(widget, f"{env_id} played by a person")
    figures = Figures(f"{env_id} Human, held keys (reference)", env_id, "", widget.fps)
    watch = Watch(widget, figures, None, profile)
    spin(1.0)
    window(probe, watch, seconds)
    playing[0] = False
    hold("")
    finish(client, widget, watch)
    if profile is not None:
        figures.profile = profile.lines()
    return figures


def played_by_keys(env_ids: list[str], seconds: float) -> tuple[list[Figures], Figures]:
    """Each of ``env_ids`` played in the Human view by its person (:data:`PEOPLE`) for ``seconds``, on a
    fresh daemon, and the empty view's reference: bench/envs.py's human play of Atari games."""
    root = fresh_home("gym-gui-bench-play-")
    os.environ["GYM_GUI_HOME"] = str(root)
    app = QApplication.instance() or QApplication([sys.argv[0]])
    client = DaemonClient.connect(root)
    link = DaemonLink(root, autostart=False)
    try:
        link.connect_daemon()
        spin_until(lambda: link.connected, 30, "the window's link to the daemon")
        probe = StallProbe()
        empty = idle(link, probe, seconds)
        print(empty.line(), flush=True)
        played = []
        for env_id in env_ids:
            played.append(human(client, link, probe, env_id, seconds, profiling=False))
            print(played[-1].line(), flush=True)
        return played, empty
    finally:
        link.close()
        release(client, root, keep=False)
        del app


def idle(link: DaemonLink, probe: StallProbe, seconds: float) -> Figures:
    """The view shown with nothing playing: the empty event loop's stall."""
    widget = make_view(link, CARTPOLE)
    figures = Figures("view shown, nothing playing (reference)", CARTPOLE, "", widget.fps)
    watch = Watch(widget, figures, None)
    spin(1.0)
    window(probe, watch, seconds)
    watch.disconnect()
    widget.close()
    widget.deleteLater()
    return figures


def summary(cases: list[Figures], empty: Figures) -> str:
    rates = ", ".join(f"{f.label.split(' (')[0]} {f.rate_ratio:.3f}" for f in cases)
    p99 = max(f.p99_ms for f in cases)
    presses = sum(f.presses for f in cases)
    within = sum(sum(1 for x in f.press_frames if x <= 1) for f in cases) / max(presses, 1)
    met = all(f.rate_ratio >= GOAL_RATE for f in cases) and p99 <= GOAL_P99_MS and within == 1.0
    return (
        f"hybrid in the window: rate ÷ target {rates} (goal ≥ {GOAL_RATE}); stall p99 {p99:.1f} ms "
        f"(goal ≤ {GOAL_P99_MS:g}; empty loop {empty.p99_ms:.1f} ms); presses applied within one "
        f"frame {within:.3f} of {presses} (goal 1.0): {'met' if met else 'NOT met'}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--seconds", type=float, default=20.0, help="length of each measurement (s)")
    parser.add_argument(
        "--ppo-steps", type=int, default=2048, help="PPO training steps of the CleanRL operator"
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the press moments")
    parser.add_argument("--bundles", type=Path, default=None, help="where the cleanrl bundle is installed")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures to this file")
    parser.add_argument("--profile", action="store_true", help="also time the parts of each beat's step")
    parser.add_argument("--keep", action="store_true", help="keep the temporary GYM_GUI_HOME")
    args = parser.parse_args(argv)
    if args.seconds <= 0:
        parser.error("--seconds must be positive")
    try:
        bundles: Path | None = find_bundles(args.bundles)
    except BenchError as exc:
        print(f"no CleanRL operator: {exc}", file=sys.stderr)
        bundles = None
    root = fresh_home("gym-gui-bench-hybrid-")
    os.environ["GYM_GUI_HOME"] = str(root)
    if bundles is not None:
        os.environ[BUNDLES_ENV_VAR] = str(bundles)  # the daemon trains in it, the view's operator runs in it
    app = QApplication.instance() or QApplication([sys.argv[0]])
    client = DaemonClient.connect(root)
    link = DaemonLink(root, autostart=False)
    rng = random.Random(args.seed)
    cases: list[Figures] = []
    references: list[Figures] = []
    try:
        print(f"daemon {client.info.address} (pid {client.info.pid}), home {root}", flush=True)
        link.connect_daemon()
        spin_until(lambda: link.connected, 30, "the window's link to the daemon")
        operators = [
            (CARTPOLE, "random", f"{CARTPOLE} Hybrid, random"),
            (LUNAR, "random", f"{LUNAR} Hybrid, random"),
        ]
        if bundles is not None:
            print("training the CleanRL operator…", file=sys.stderr, flush=True)
            ppo = train(client, args.ppo_steps)  # its run id names it as an operator
            operators.insert(1, (CARTPOLE, ppo, f"{CARTPOLE} Hybrid, CleanRL PPO MLP"))
        probe = StallProbe()
        references.append(idle(link, probe, args.seconds))
        print(references[-1].line(), flush=True)
        for env_id in (CARTPOLE, LUNAR):
            references.append(human(client, link, probe, env_id, args.seconds, args.profile))
            print("\n".join([references[-1].line(), *references[-1].profile]), flush=True)
        for env_id, operator, label in operators:
            cases.append(
                hybrid(client, link, probe, env_id, operator, label, args.seconds, rng, args.profile)
            )
            print("\n".join([cases[-1].line(), *cases[-1].profile]), flush=True)
    except (BenchError, GymGuiError) as exc:
        print(f"bench failed: {exc}", file=sys.stderr)
        return 1
    finally:
        link.close()
        release(client, root, args.keep)
        del app
    last = summary(cases, references[0])
    if args.json is not None:
        document = {
            "cases": [f.figures() for f in cases],
            "references": [f.figures() for f in references],
            "summary": last,
        }
        args.json.write_text(json.dumps(document, indent=2))
    print(last)
    return 0


if __name__ == "__main__":
    sys.exit(main())
