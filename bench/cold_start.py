"""Cold start: `gym-gui` (the window) from process start to shown and to connected to its daemon, against a
bare PySide6 window with one widget started the same way.

Each start is a process of its own, offscreen (``QT_QPA_PLATFORM=offscreen``), as a user starts it:
this venv's ``gym-gui`` with no arguments on a fresh GYM_GUI_HOME (no daemon: the window starts one),
and ``python bench/_bare_window.py`` (a QMainWindow holding one QLabel). With ``GYM_GUI_START_TIMES``
set, each says on stderr when its window is first painted (``shown``) and, for gym-gui, when it is
connected to its daemon (``connected``), on the system-wide monotonic clock; the bench subtracts its
own reading taken just before starting the process. The two kinds of start alternate, ``--repeat``
times each after one of each that is not counted (it warms the file cache); medians.

Printed last, against the goal of issue 31: window shown ÷ the bare window shown (≤ 1.5), and
connected to the daemon in seconds (≤ 1.0 s on a fresh home). `gym-gui runs` against an idle daemon
is bench/cli_latency.py's. Usage::

    .venv/bin/python bench/cold_start.py [--repeat 7] [--timeout 120]
"""

from __future__ import annotations

import argparse
import os
import queue
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

from _daemon import fresh_home, stop_daemon  # bench/ is on sys.path when a bench runs as a script

from gym_gui.core.errors import GymGuiError
from gym_gui.protocol.client import DaemonClient
from gym_gui.ui.start_times import PREFIX, VARIABLE

SHOWN_GOAL = 1.5
CONNECTED_GOAL = 1.0
BARE = Path(__file__).with_name("_bare_window.py")


class BenchError(RuntimeError):
    """The bench could not measure what it is about."""


def start_env(home: Path) -> dict[str, str]:
    """The environment of a measured start: offscreen, marks wanted, bytecode read as installed."""
    env = {**os.environ, "GYM_GUI_HOME": str(home), "QT_QPA_PLATFORM": "offscreen", VARIABLE: "1"}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def timed_start(command: list[str], home: Path, wanted: tuple[str, ...], timeout: float) -> dict[str, float]:
    """Start ``command``, wait for each mark of ``wanted``, close it; seconds from start to each mark."""
    started = time.monotonic()
    process = subprocess.Popen(
        command,
        env=start_env(home),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    lines: queue.Queue[str | None] = queue.Queue()

    def read() -> None:
        assert process.stderr is not None
        for line in process.stderr:
            lines.put(line)
        lines.put(None)

    reader = threading.Thread(target=read, name="stderr", daemon=True)
    reader.start()
    marks: dict[str, float] = {}
    tail: list[str] = []
    deadline = started + timeout
    try:
        while not all(name in marks for name in wanted):
            try:
                line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise BenchError(f"{command[-1]}: no {wanted} within {timeout:.0f}s") from None
            if line is None:
                raise BenchError(f"{command[-1]} exited ({process.wait()}): {' | '.join(tail[-5:])}")
            if line.startswith(PREFIX):
                name, at = line.removeprefix(PREFIX).split()
                marks.setdefault(name, float(at) - started)
            else:
                tail.append(line.strip())
    finally:
        # The cockpit closes its window on SIGINT (as Ctrl+C in its terminal); the bare one has no handler.
        process.send_signal(signal.SIGINT if "connected" in wanted else signal.SIGTERM)
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        reader.join(5)
    return marks


def cockpit_start(gym_gui: Path, timeout: float) -> dict[str, float]:
    """One `gym-gui` start on a fresh home; its daemon stopped and the home removed afterwards."""
    home = fresh_home("gym-gui-cold-")
    try:
        return timed_start([str(gym_gui)], home, ("shown", "connected"), timeout)
    finally:
        try:
            stop_daemon(DaemonClient.connect(home, autostart=False))
        except GymGuiError as exc:
            print(f"warning: the daemon of {home} could not be stopped: {exc}", file=sys.stderr)
        shutil.rmtree(home, ignore_errors=True)


def bare_start(timeout: float) -> float:
    home = fresh_home("gym-gui-cold-bare-")
    try:
        return timed_start([sys.executable, str(BARE)], home, ("shown",), timeout)["shown"]
    finally:
        shutil.rmtree(home, ignore_errors=True)


def shown(samples: list[float]) -> str:
    return f"median {statistics.median(samples):6.3f} s, min {min(samples):6.3f} s, max {max(samples):6.3f} s"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--repeat", type=int, default=7, help="starts of each kind (median)")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds a start may take")
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    gym_gui = Path(sys.executable).with_name("gym-gui")
    if not gym_gui.exists():
        parser.error(f"no gym-gui beside {sys.executable}: run `make install`")

    print(f"load {os.getloadavg()[0]:.2f}, {args.repeat} starts of each after one of each not counted")
    cockpit_start(gym_gui, args.timeout)
    bare_start(args.timeout)
    window: list[float] = []
    connected: list[float] = []
    bare: list[float] = []
    for _ in range(args.repeat):  # alternating, so a slow moment weighs on both alike
        marks = cockpit_start(gym_gui, args.timeout)
        window.append(marks["shown"])
        connected.append(marks["connected"])
        bare.append(bare_start(args.timeout))
    print(f"bare PySide6 window shown    {shown(bare)}")
    print(f"gym-gui window shown         {shown(window)}")
    print(f"gym-gui connected to daemon  {shown(connected)}")
    print(f"load {os.getloadavg()[0]:.2f}")
    ratio = statistics.median(window) / statistics.median(bare)
    print(f"ratio: gym-gui window shown ÷ a bare PySide6 window shown = {ratio:.2f} (goal ≤ {SHOWN_GOAL})")
    print(
        f"connected to its daemon on a fresh home: {statistics.median(connected):.2f} s "
        f"(goal ≤ {CONNECTED_GOAL} s)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
