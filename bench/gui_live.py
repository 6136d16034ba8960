"""GUI live view: frames drawn per second by the Live tab and the event loop's worst stall, under a full-speed run.

A fresh daemon (temporary GYM_GUI_HOME, started by ``DaemonClient.connect``) and a ``DaemonLink``
for a lone, shown :class:`LiveTab` (offscreen Qt unless ``DISPLAY`` is set). A 10 ms precise
QTimer records how late each of its ticks is (the gap to the previous tick minus 10 ms): its p99
and max are the event loop's stall, i.e. how long the GUI could not react to anything.

1. Reference: the same tab with nothing attached and no run, for ``--seconds``.
2. Under load, once per environment: a random-worker run streaming as fast as it can (a timesteps
   budget far beyond the measurement, cancelled at the end). First ``--seconds`` with the tab not
   attached (what the worker and the daemon alone cost this machine's GUI loop), then attached:
   after the first frame is drawn, ``--seconds`` of frames drawn by the tab's EnvView and of the
   timer's lateness. CartPole-v1 sends PNG frames at ``render_fps`` 60 (pixels); FrozenLake-v1 on
   its 8x8 map sends a grid description with every step; LunarLander-v3 (Box2D, pixels) is the
   fast env: its ``metadata["render_fps"]`` is 50 (no installed env declares 60 on its class: ALE's
   says 30, MuJoCo v5's is set per instance).

The tab draws at most at the env's own rate (at most 60/s, ``LiveTab.draw_fps``); each line gives
frames drawn ÷ that rate. The goal (issue 31): >= 0.95 of the fast env's rate drawn and a p99 stall
<= 16 ms under its full-speed stream. The last line gives the figures against it. Usage::

    .venv/bin/python bench/gui_live.py [--seconds 20]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

# Offscreen unless a display is there to draw on; must be set before Qt starts.
if not os.environ.get("DISPLAY"):
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import numpy as np
from _daemon import fresh_home, release  # bench/ is on sys.path when a bench runs as a script
from PySide6.QtCore import QElapsedTimer, QEventLoop, Qt, QTimer
from PySide6.QtWidgets import QApplication

from gym_gui.core.config import parse_run_config
from gym_gui.core.errors import GymGuiError
from gym_gui.protocol.client import DaemonClient
from gym_gui.ui.daemon_link import DaemonLink
from gym_gui.ui.tabs.live import LiveTab

TICK_MS = 10
GOAL_SHARE = 0.95  # of the env's own rate
GOAL_P99_MS = 16.0
# The runs: (label, env id, env kwargs); every run is the random worker at render_fps 60. The last is
# the fast env the goal is about.
LOADS: tuple[tuple[str, str, dict[str, object]], ...] = (
    ("CartPole-v1 (pixels, 50 fps)", "CartPole-v1", {}),
    ("FrozenLake-v1 8x8 (grid, 4 fps)", "FrozenLake-v1", {"map_name": "8x8"}),
    ("LunarLander-v3 (pixels, 50 fps)", "LunarLander-v3", {}),
)


class BenchError(RuntimeError):
    """The benchmark cannot report a figure (no daemon, a run that never streamed)."""


class StallProbe:
    """A 10 ms timer that records how late each tick is: the GUI loop's stalls."""

    def __init__(self) -> None:
        self._clock = QElapsedTimer()
        self._timer = QTimer()
        self._timer.setTimerType(Qt.TimerType.PreciseTimer)
        self._timer.setInterval(TICK_MS)
        self._timer.timeout.connect(self._tick)
        self._last_ns = 0
        self.lateness_ms: list[float] = []

    def start(self) -> None:
        self.lateness_ms = []
        self._clock.start()
        self._last_ns = self._clock.nsecsElapsed()
        self._timer.start()

    def stop(self) -> None:
        self._timer.stop()

    def _tick(self) -> None:
        now = self._clock.nsecsElapsed()
        self.lateness_ms.append(max(0.0, (now - self._last_ns) / 1e6 - TICK_MS))
        self._last_ns = now


@dataclass(frozen=True)
class Figures:
    label: str
    seconds: float
    frames: int
    offered: int
    steps: int
    batches: int
    episodes: int
    starved: int
    p50_ms: float
    p99_ms: float
    max_ms: float
    gui_cpu: float  # CPU seconds of the GUI thread per second
    process_cpu: float  # CPU seconds of the whole GUI process (with its gRPC threads) per second
    rate: float  # the most frames a second the tab draws: the env's own rate

    @property
    def fps(self) -> float:
        return self.frames / self.seconds

    @property
    def share(self) -> float:
        return self.fps / self.rate

    def line(self) -> str:
        return (
            f"{self.label}: {self.fps:.1f} frames/s drawn = {self.share:.3f} of {self.rate:g}/s "
            f"({self.offered / self.seconds:.1f}/s offered to the "
            f"view), stall p50 {self.p50_ms:.1f} ms p99 {self.p99_ms:.1f} ms max {self.max_ms:.1f} ms; "
            f"{self.steps / self.seconds:,.0f} steps/s and {self.batches / self.seconds:.1f} batches/s taken, "
            f"{self.episodes / self.seconds:,.0f} episodes/s, starved {self.starved}×; CPU: GUI thread "
            f"{self.gui_cpu:.0%}, GUI process {self.process_cpu:.0%}"
        )


def spin(seconds: float) -> None:
    """Run the Qt event loop for ``seconds``."""
    loop = QEventLoop()
    QTimer.singleShot(int(seconds * 1000), loop.quit)
    loop.exec()


def spin_until(predicate: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise BenchError(f"timed out after {timeout:.0f}s waiting for {what}")
        spin(0.05)


def measure(tab: LiveTab, probe: StallProbe, label: str, seconds: float) -> Figures:
    frames0, offered0, steps0 = tab.frames_drawn, tab.frames_offered, tab.steps_seen
    batches0, episodes0, starved0 = tab.batches_taken, tab.episodes_seen, tab.starved_count
    start, thread0, process0 = time.perf_counter(), time.thread_time(), time.process_time()
    probe.start()
    spin(seconds)
    probe.stop()
    elapsed = time.perf_counter() - start
    gui_cpu = (time.thread_time() - thread0) / elapsed
    process_cpu = (time.process_time() - process0) / elapsed
    late = np.asarray(probe.lateness_ms or [0.0])
    return Figures(
        label=label,
        seconds=elapsed,
        frames=tab.frames_drawn - frames0,
        offered=tab.frames_offered - offered0,
        steps=tab.steps_seen - steps0,
        batches=tab.batches_taken - batches0,
        episodes=tab.episodes_seen - episodes0,
        starved=tab.starved_count - starved0,
        p50_ms=float(np.percentile(late, 50)),
        p99_ms=float(np.percentile(late, 99)),
        max_ms=float(late.max()),
        gui_cpu=gui_cpu,
        process_cpu=process_cpu,
        rate=tab.draw_fps,
    )


def under_load(
    client: DaemonClient,
    tab: LiveTab,
    probe: StallProbe,
    label: str,
    env_id: str,
    kwargs: dict[str, object],
    seconds: float,
) -> tuple[Figures, Figures]:
    """The stall with the run streaming and the tab not attached, then the tab's figures attached."""
    config = parse_run_config(
        {
            "worker": "random",
            "env_id": env_id,
            "env_kwargs": kwargs,
            "seed": 0,
            # Far more than the measurement lasts: the run streams flat out until cancelled.
            "budget": {"timesteps": 10**12},
            "telemetry": {"render_fps": 60},
            "notes": "bench/gui_live.py",
        }
    )
    record, _token = client.submit(config)
    run_id = record.run_id
    try:
        # Warm-up (worker start, env creation) is not part of any figure.
        spin_until(lambda: client.get_run(run_id).progress.steps > 0, 60, f"{env_id} to stream")
        spin(1.0)
        # The same load on the machine with no viewer: what the worker and daemon alone cost the loop.
        detached = measure(tab, probe, f"{label}, tab not attached", seconds)
        tab.attach(client.get_run(run_id).record)
        drawn = tab.frames_drawn  # the EnvView counts every picture it ever drew
        spin_until(lambda: tab.frames_drawn > drawn + 5, 60, f"the first frames of {env_id}")
        spin(1.0)
        return detached, measure(tab, probe, f"{label}, Live tab attached", seconds)
    finally:
        tab.detach()
        with contextlib.suppress(GymGuiError):
            client.cancel(record.run_id)
            client.wait_for_end(record.run_id, 30)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--seconds", type=float, default=20.0, help="length of each measurement (s)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary GYM_GUI_HOME")
    args = parser.parse_args(argv)
    if args.seconds <= 0:
        parser.error("--seconds must be positive")

    root = fresh_home("gym-gui-bench-gui-")
    os.environ["GYM_GUI_HOME"] = str(root)
    app = QApplication.instance() or QApplication([sys.argv[0]])
    client = DaemonClient.connect(root)
    link = DaemonLink(root, autostart=False)
    loads: list[Figures] = []
    references: list[Figures] = []
    try:
        print(f"daemon {client.info.address} (pid {client.info.pid}), home {root}", flush=True)
        link.connect_daemon()
        spin_until(lambda: link.connected, 30, "the window's link to the daemon")
        tab = LiveTab(link)
        tab.resize(1280, 800)
        tab.show()
        probe = StallProbe()
        spin(1.0)
        idle = measure(tab, probe, "idle (nothing attached)", args.seconds)
        print(idle.line(), flush=True)
        for label, env_id, kwargs in LOADS:
            detached, attached = under_load(client, tab, probe, label, env_id, kwargs, args.seconds)
            references.append(detached)
            loads.append(attached)
            print(detached.line(), flush=True)
            print(attached.line(), flush=True)
        tab.close()
    except (BenchError, GymGuiError) as exc:
        print(f"bench failed: {exc}", file=sys.stderr)
        return 1
    finally:
        link.close()
        release(client, root, args.keep)
        del app

    # Frames are capped at the env's rate, so the goal is the rate itself: the ratio says how close to it.
    parts = "; ".join(
        f"{f.label.split(' ')[0]} {f.fps:.2f} frames/s = {f.share:.3f} of its {f.rate:g}/s, "
        f"stall p99 {f.p99_ms:.1f} ms (max {f.max_ms:.1f} ms; not attached p99 {r.p99_ms:.1f} ms)"
        for f, r in zip(loads, references, strict=True)
    )
    fast = loads[-1]
    met = fast.share >= GOAL_SHARE and fast.p99_ms <= GOAL_P99_MS
    print(
        f"under load: {parts}; idle stall p99 {idle.p99_ms:.1f} ms (max {idle.max_ms:.1f} ms) — "
        f"{fast.label.split(' ')[0]}: {fast.share:.3f} of its {fast.rate:g}/s, stall p99 {fast.p99_ms:.1f} ms; "
        f"goal >= {GOAL_SHARE} and p99 <= {GOAL_P99_MS:.0f} ms: {'met' if met else 'NOT met'}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
