"""The runs table's first page: the window on a home of 10,000 runs against the same window on one of 100.

A real daemon on a fresh temporary GYM_GUI_HOME (started first, as a researcher's is already running);
its registry is filled with ``RunRegistry`` directly (finished runs, every tenth archived: as
bench/scale.py does, decision 0032). The window is built as ``gym-gui`` builds it (``build_window``:
the main window, then its link connects) offscreen in this process, and the time is from the start of
``build_window`` to the runs table holding its first page (the newest ``RUNS_PAGE`` runs, or every run
when there are fewer). Measured ``--repeat`` times (median) at ``--small-runs`` (100) and again after
filling to ``--runs`` (10,000). Reference: listing every run as the table did before it paged
(``ListRuns`` with archived runs). Printed last: the first page at 10,000 runs (goal ≤ 1 s of start)
and its ratio to the same at 100.

Usage::

    .venv/bin/python bench/runs_table.py [--runs 10000] [--small-runs 100] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

# bench/ is on sys.path when a bench runs as a script
from _daemon import fresh_home, release
from PySide6.QtWidgets import QApplication
from scale import fill_registry, timed

from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.home import Home
from gym_gui.storage.registry import RunRegistry
from gym_gui.ui.app import build_window
from gym_gui.ui.daemon_link import RUNS_PAGE


def first_page(app: QApplication, home: Home, rows: int, timeout: float = 60.0) -> float:
    """Seconds from building the window to its runs table holding ``rows`` runs."""
    started = time.perf_counter()
    window, link = build_window(home)
    window.show()
    try:
        while window.runs.model.rowCount() < rows:
            if time.perf_counter() - started > timeout:
                raise TimeoutError(f"the runs table held {window.runs.model.rowCount()} of {rows} runs")
            app.processEvents()
            time.sleep(0.001)
        return time.perf_counter() - started
    finally:
        window.close()
        link.close()
        app.processEvents()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=10_000, help="runs in the registry, large")
    parser.add_argument("--small-runs", type=int, default=100, help="runs in the registry, the reference")
    parser.add_argument("--repeat", type=int, default=3, help="windows opened at each size (median)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary GYM_GUI_HOME")
    args = parser.parse_args(argv)
    if not 1 <= args.small_runs <= args.runs or args.repeat < 1:
        parser.error("--small-runs must be at least 1 and at most --runs, --repeat at least 1")
    app = QApplication.instance() or QApplication(sys.argv[:1])
    assert isinstance(app, QApplication)
    root = fresh_home()
    home = Home(root).ensure()
    client = DaemonClient.connect(home.root)
    try:
        print(f"daemon {client.info.address}, home {home.root}, load {os.getloadavg()[0]:.2f}", flush=True)
        registry = RunRegistry(home.registry_path)
        shown: dict[int, float] = {}
        every: dict[int, float] = {}
        try:
            for count, start in ((args.small_runs, 0), (args.runs, args.small_runs)):
                fill_registry(registry, start, count)
                rows = min(RUNS_PAGE, count)
                shown[count] = statistics.median(first_page(app, home, rows) for _ in range(args.repeat))
                every[count] = timed(lambda: client.list_runs(include_archived=True), args.repeat)
                print(f"[{count:,} runs] first page {shown[count] * 1000:.0f} ms", flush=True)
        finally:
            registry.close()
    finally:
        release(client, root, args.keep)
    small, large = args.small_runs, args.runs
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    print(
        f"every run listed (ListRuns with archived runs, as the table did before it paged): "
        f"{every[small] * 1000:.0f} ms at {small:,} runs, {every[large] * 1000:.0f} ms at {large:,}"
    )
    print(
        f"the window's first page ({RUNS_PAGE} runs) from its start: {shown[small] * 1000:.0f} ms at {small:,} runs, "
        f"{shown[large] * 1000:.0f} ms at {large:,} (ratio {shown[large] / shown[small]:.2f})"
    )
    print(f"first page at {large:,} runs: {shown[large]:.2f} s of the window's start (goal ≤ 1 s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
