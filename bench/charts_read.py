"""A finished run's curves into Charts: 200,000 stored points read and made into the tab's series,
against TensorBoard's own ``EventAccumulator`` reading the same points from an event file.

The run: a run database (`telemetry.sqlite`, gym_gui's schema) holding ``--tags`` tags of
``--points`` points each (steps 0, 128, …; values a noisy curve), and an event file of the same
points written by torch's ``SummaryWriter`` in the cleanrl bundle. Ours: what the Charts tab does when
a finished run is opened (`ui/tabs/charts.py`): every tag's points read from storage off the GUI
thread (`_read_metrics`), then each tag's :class:`MetricSeries` filled. Reference: in the cleanrl
bundle, ``EventAccumulator(path, size_guidance={"scalars": 0}).Reload()`` (every point kept, as
a chart needs them), then every tag's scalars asked for; its imports are not counted. Medians of
``--repeat``; printed last: ours in seconds against the goal (≤ 0.5 s) and ÷ TensorBoard's.

Usage::

    .venv/bin/python bench/charts_read.py [--tags 10] [--points 20000] [--repeat 5] [--bundles DIR]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from cleanrl_overhead import BenchError, find_bundles  # bench/ is on sys.path

from gym_gui.storage.telemetry_schema import METRIC_TABLE, insert_sql, open_telemetry_db
from gym_gui.ui.tabs.charts import MetricSeries, _read_metrics
from gym_gui.workers import worker_catalog

GOAL_SECONDS = 0.5

# Run in the cleanrl bundle: write the points as torch's SummaryWriter does (argv: directory, JSON
# file of [tag, step, wall_time, value] rows).
WRITE = """
import json, sys
from torch.utils.tensorboard import SummaryWriter
writer = SummaryWriter(sys.argv[1], max_queue=1000, flush_secs=3600)
for tag, step, wall, value in json.load(open(sys.argv[2])):
    writer.add_scalar(tag, value, step, walltime=wall)
writer.close()
"""

# Run in the cleanrl bundle: the seconds EventAccumulator takes to load every point and hand out each
# tag's scalars, and how many it gave (argv: directory, repeats).
READ = """
import json, sys, time
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
times, count = [], 0
for _ in range(int(sys.argv[2])):
    start = time.perf_counter()
    accumulator = EventAccumulator(sys.argv[1], size_guidance={"scalars": 0})
    accumulator.Reload()
    count = sum(len(accumulator.Scalars(tag)) for tag in accumulator.Tags()["scalars"])
    times.append(time.perf_counter() - start)
print(json.dumps({"seconds": times, "points": count}))
"""


def points(tags: int, per_tag: int) -> list[tuple[str, int, float, float]]:
    rng = random.Random(0)
    start = time.time() - 3600
    rows = []
    for t in range(tags):
        tag = f"losses/series_{t}"
        for i in range(per_tag):
            step = i * 128
            rows.append((tag, step, start + i * 0.01, math.sin(i / 500 + t) + rng.gauss(0, 0.1)))
    return rows


def ours(path: Path) -> tuple[float, int]:
    """Seconds for Charts' back-fill of the run at ``path`` (read, then series filled); points kept."""
    start = time.perf_counter()
    stored = _read_metrics(path, {})
    series: dict[str, MetricSeries] = {}
    for tag, rows in stored.items():
        series.setdefault(tag, MetricSeries()).extend(rows[:, 0], rows[:, 1], rows[:, 2])
    seconds = time.perf_counter() - start
    return seconds, sum(len(s.values) for s in series.values())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--tags", type=int, default=10)
    parser.add_argument("--points", type=int, default=20_000, help="points a tag")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--bundles", type=Path, default=None)
    options = parser.parse_args(argv)
    try:
        python = worker_catalog().bundle_directory(find_bundles(options.bundles)).python("cleanrl")
    except BenchError as exc:
        print(f"bench failed: {exc}", file=sys.stderr)
        return 1
    work = Path(tempfile.mkdtemp(prefix="gym-gui-bench-charts-"))
    try:
        rows = points(options.tags, options.points)
        database = work / "telemetry.sqlite"
        conn = open_telemetry_db(database)
        with conn:
            conn.executemany(insert_sql(METRIC_TABLE[0], METRIC_TABLE[1], 1), rows)
        conn.close()
        (work / "rows.json").write_text(json.dumps(rows))
        events = work / "events"
        subprocess.run([str(python), "-c", WRITE, str(events), str(work / "rows.json")], check=True)
        print(f"{len(rows):,} points in {options.tags} tags; load {os.getloadavg()[0]:.2f}", flush=True)
        mine: list[float] = []
        theirs: list[float] = []
        for _ in range(options.repeat):  # alternated, so drift of the machine favours neither
            seconds, kept = ours(database)
            if kept != len(rows):
                raise BenchError(f"Charts kept {kept} of {len(rows)} points")
            mine.append(seconds)
            read = subprocess.run(
                [str(python), "-c", READ, str(events), "1"], check=True, capture_output=True, text=True
            )
            answer = json.loads(read.stdout)
            if answer["points"] != len(rows):
                raise BenchError(f"EventAccumulator gave {answer['points']} of {len(rows)} points")
            theirs += answer["seconds"]
    except (BenchError, subprocess.CalledProcessError) as exc:
        print(f"bench failed: {exc}", file=sys.stderr)
        return 1
    finally:
        shutil.rmtree(work, ignore_errors=True)
    ours_s, tb_s = statistics.median(mine), statistics.median(theirs)
    print(f"Charts' back-fill: {', '.join(f'{s:.3f}' for s in mine)} s")
    print(f"EventAccumulator: {', '.join(f'{s:.3f}' for s in theirs)} s")
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    print(
        f"{len(rows):,} points into Charts {ours_s:.3f} s = {ours_s / GOAL_SECONDS:.2f} of the goal "
        f"({GOAL_SECONDS} s); ÷ TensorBoard's EventAccumulator ({tb_s:.3f} s) = {ours_s / tb_s:.2f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
