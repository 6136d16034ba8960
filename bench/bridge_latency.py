"""Curves within half a second: how late a CleanRL script's scalars reach a client watching its run.

A PPO CartPole run (``--steps``, seed 1) through a fresh daemon, and a ``Subscribe`` viewer in this
process from its start: every metric point's arrival here minus its ``wall_time`` (the time the script
called ``add_scalar``, as TensorBoard records it). The worker reads the points from two places: the
lines the script prints (returns and lengths, taken every quarter second) and its TensorBoard event
files (every tag: losses, SPS, learning rate…), which the script's writer flushes and the worker
tails; a point both give counts once. The reference, measured in the same run: a 10 ms tail of the
same event files in this process, the point's first sight on disk minus its ``wall_time`` (what the
writer's flushing alone costs). Printed: p50, p95 and max per way a tag came, then, last, the p95 of
every point's arrival against the goal (≤ 0.5 s) and against the reference's p95.

Usage::

    .venv/bin/python bench/bridge_latency.py [--steps 20000] [--bundles DIR] [--keep]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

from _daemon import fresh_home, release  # bench/ is on sys.path
from cleanrl_overhead import BenchError, find_bundles

from gym_gui.core.config import parse_run_config
from gym_gui.core.errors import GymGuiError
from gym_gui.core.records import MetricBatch
from gym_gui.core.states import RunState
from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.home import BUNDLES_ENV_VAR, Home
from gym_gui.workers import worker_catalog

GOAL_P95 = 0.5
# The tags CleanRL's PPO prints as well as writes: the worker may take them from its stdout first.
PRINTED = frozenset({"charts/episodic_return", "charts/episodic_length"})


def quantiles(values: list[float]) -> str:
    if not values:
        return "none"
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
    return f"p50 {statistics.median(ordered):.3f} s, p95 {p95:.3f} s, max {ordered[-1]:.3f} s ({len(ordered)} points)"


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]


# Run in the cleanrl bundle (which has TensorBoard): tails the run's event files every 10 ms until
# its standard input closes, then prints one JSON line per point: tag, step, wall_time, first seen.
TAIL = """
import json, sys, threading, time
from pathlib import Path
from tensorboard.backend.event_processing.event_file_loader import RawEventFileLoader
from tensorboard.compat.proto.event_pb2 import Event

runs, seen, loaders = Path(sys.argv[1]), {}, {}
closed = threading.Event()
threading.Thread(target=lambda: (sys.stdin.read(), closed.set()), daemon=True).start()
while True:
    last = closed.is_set()
    for path in runs.glob("**/events.out.tfevents.*"):
        loader = loaders.setdefault(path, RawEventFileLoader(str(path)))
        now = time.time()
        for raw in loader.Load():
            event = Event.FromString(raw)
            for value in event.summary.value:
                seen.setdefault((value.tag, event.step), (event.wall_time, now))
    if last:
        break
    closed.wait(0.01)
for (tag, step), (wall, first) in seen.items():
    print(json.dumps([tag, step, wall, first]))
"""


def start_tail(python: Path, runs: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [str(python), "-c", TAIL, str(runs)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )


def tail_points(tail: subprocess.Popen[str]) -> dict[tuple[str, int], tuple[float, float]]:
    """(tag, step) → (wall_time, first seen on disk), once the run has ended."""
    out, _ = tail.communicate(timeout=120)
    points = {}
    for line in out.splitlines():
        tag, step, wall, first = json.loads(line)
        points[(tag, step)] = (wall, first)
    return points


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--steps", type=int, default=20_000)
    parser.add_argument("--bundles", type=Path, default=None)
    parser.add_argument("--keep", action="store_true")
    options = parser.parse_args(argv)
    try:
        bundles = find_bundles(options.bundles)
    except BenchError as exc:
        print(f"bench failed: {exc}", file=sys.stderr)
        return 1
    root = fresh_home("gym-gui-bench-bridge-")
    home = Home(root)
    os.environ[BUNDLES_ENV_VAR] = str(bundles)
    client = DaemonClient.connect(root)
    arrivals: dict[tuple[str, int], float] = {}  # (tag, step) → arrival here
    tail: subprocess.Popen[str] | None = None
    try:
        print(f"daemon pid {client.info.pid}, load {os.getloadavg()[0]:.2f}", flush=True)
        config = {"worker": "cleanrl", "algorithm": "ppo", "env_id": "CartPole-v1", "seed": 1}
        record, _ = client.submit(parse_run_config({**config, "budget": {"timesteps": options.steps}}))
        stream = client.subscribe(record.run_id, credits=64)

        def follow() -> None:
            try:
                for event in stream:
                    if isinstance(event, MetricBatch):
                        now = time.time()
                        for point in event.points:
                            arrivals.setdefault((point.tag, point.step), now)
                    stream.grant(1)
            except GymGuiError:
                pass  # the run ended and the daemon closed the stream

        viewer = threading.Thread(target=follow, daemon=True)
        viewer.start()
        python = worker_catalog().bundle_directory(bundles).python("cleanrl")
        tail = start_tail(python, home.run_dir(record.run_id) / "runs")
        final = client.wait_for_end(record.run_id, timeout=1800)
        if final.state is not RunState.COMPLETED:
            raise BenchError(f"run {record.run_id} ended {final.state.value}: {final.reason}")
        on_disk = tail_points(tail)
        stream.close()
        viewer.join(10)
    except (BenchError, GymGuiError) as exc:
        print(f"bench failed: {exc}", file=sys.stderr)
        return 1
    finally:
        if tail is not None and tail.poll() is None:
            tail.kill()
        release(client, root, options.keep)
    late = {key: arrivals[key] - wall for key, (wall, _first) in on_disk.items() if key in arrivals}
    if not late:
        print("bench failed: no point of the event files reached the viewer", file=sys.stderr)
        return 1
    printed = [v for (tag, _step), v in late.items() if tag in PRINTED]
    files_only = [v for (tag, _step), v in late.items() if tag not in PRINTED]
    every = list(late.values())
    first_seen = [first - wall for wall, first in on_disk.values()]
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    print(f"points in the event files {len(on_disk)}, of them reached the viewer {len(late)}")
    print(f"printed and written ({', '.join(sorted(PRINTED))}): {quantiles(printed)}")
    print(f"event files only (losses, SPS, …): {quantiles(files_only)}")
    print(f"reference, first on disk (a 10 ms tail): {quantiles(first_seen)}")
    print(
        f"wall_time → viewer p95 {p95(every):.3f} s = {p95(every) / GOAL_P95:.2f} of the goal "
        f"({GOAL_P95} s); ÷ first on disk p95 ({p95(first_seen):.3f} s) = {p95(every) / p95(first_seen):.1f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
