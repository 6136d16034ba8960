"""Telemetry throughput: end-to-end steps/s against the raw SQLite insert limit, measured in one process.

End to end: a fresh daemon (temporary GYM_GUI_HOME) runs the random worker on CartPole-v1 (a
trivial env: microseconds per step, no render payload with ``render_fps`` 0) for a budget of
timesteps. Every step travels worker → WorkerSession batches → gRPC Publish stream → the
daemon's StreamIngest → TelemetryWriter → ``runs/<run_id>/telemetry.sqlite``. The run must end
COMPLETED with exactly the budget of rows in its ``steps`` table (lossless), and steps/s is
those rows over the run's RUNNING time from the registry history.

Raw limit: the same rows, read back from that run's database, are ``executemany``-ed into a
fresh database made by ``open_telemetry_db`` (same schema, same pragmas) in batches of 1000,
each batch its own transaction, in this process with nothing else in the way.

Telemetry off: the random worker's own loop (``play``, the code the run above ran, its seeds and
sampling) in this process, with a session that connects to nothing and whose record calls do
nothing. End to end ÷ this is what telemetry costs a worker (the second ratio; goal ≥ 0.8). The
loop still evaluates the record calls' arguments (a Discrete action's text is a lookup, an empty
info a constant) and makes the empty calls: well under a microsecond of the ~15 a step takes.

Bare env loop: reset, seeded sample and step with no worker around it at all; printed beside the
ratio (on ÷ bare) so the worker's own bookkeeping is in view too.

All three are repeated alternately (so drift of the machine hits both alike); the medians and both
ratios are printed, the ratios last. Usage::

    .venv/bin/python bench/telemetry_throughput.py [--steps 200000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from _daemon import (  # bench/ is on sys.path when a bench runs as a script
    fresh_home,
    raw_inserts,
    release,
    running_seconds,
    stored_steps,
)
from gym_gui_random_worker.__main__ import make_env, play
from gym_gui_sdk.worker import WorkerSession

from gym_gui.core.config import parse_run_config
from gym_gui.core.errors import GymGuiError
from gym_gui.core.records import STEP_COLUMNS
from gym_gui.core.states import RunState
from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.home import Home
from gym_gui.storage.run_dir import RunDir
from gym_gui.storage.telemetry_schema import open_telemetry_db

RAW_BATCH = 1000
GOAL = 0.5
GOAL_ON_OFF = 0.8  # telemetry costs the worker at most a fifth
_SELECT = f"SELECT {', '.join(STEP_COLUMNS)} FROM steps ORDER BY episode, step"


class BenchError(RuntimeError):
    """The benchmark cannot report a figure (a run failed or lost steps)."""


@dataclass(frozen=True)
class EndToEnd:
    run_id: str
    steps: int
    running_seconds: float
    wall_seconds: float
    telemetry: Path

    @property
    def steps_per_second(self) -> float:
        return self.steps / self.running_seconds

    @property
    def wall_steps_per_second(self) -> float:
        return self.steps / self.wall_seconds


@dataclass(frozen=True)
class Raw:
    rows: int
    seconds: float

    @property
    def rows_per_second(self) -> float:
        return self.rows / self.seconds


def run_end_to_end(client: DaemonClient, home: Home, steps: int, timeout: float) -> EndToEnd:
    config = parse_run_config(
        {
            "worker": "random",
            "env_id": "CartPole-v1",
            "seed": 0,
            "budget": {"timesteps": steps},
            # No frames: the bench measures the step path, not image encoding.
            "telemetry": {"render_fps": 0},
            "notes": "bench/telemetry_throughput.py",
        }
    )
    submitted = time.monotonic()
    record, _token = client.submit(config)
    final = client.wait_for_end(record.run_id, timeout)
    wall = time.monotonic() - submitted
    if final.state is not RunState.COMPLETED:
        raise BenchError(f"run {record.run_id} ended {final.state.value}: {final.reason}")

    # Interval: the STARTING→RUNNING transition (recorded when the daemon reads the worker's
    # STARTED message, i.e. once the env is made and just before the first step) to the final
    # transition (the daemon finalises the run only after the worker has flushed, the stream
    # has drained into telemetry.sqlite and the process has exited). So it covers every step
    # from the first env.step to its commit on disk, and leaves out what is not the telemetry
    # path: interpreter start-up, imports and env creation of the worker process (~1 s,
    # which would dominate a short run). The supervisor's 0.1 s tick is still inside it.
    running = running_seconds(client, record.run_id)
    if running is None:
        raise BenchError(f"run {record.run_id} has no RUNNING transition in its history")

    telemetry = RunDir(home.run_dir(record.run_id)).telemetry_path
    stored = stored_steps(telemetry)
    if stored != steps:
        raise BenchError(f"run {record.run_id} stored {stored} steps of a budget of {steps}: not lossless")
    return EndToEnd(record.run_id, stored, running, wall, telemetry)


def read_rows(telemetry: Path) -> list[tuple[Any, ...]]:
    conn = open_telemetry_db(telemetry, readonly=True)
    try:
        return conn.execute(_SELECT).fetchall()
    finally:
        conn.close()


def run_raw(rows: list[tuple[Any, ...]], target: Path) -> Raw:
    seconds, count = raw_inserts(rows, target, RAW_BATCH)
    if count != len(rows):
        raise BenchError(f"raw insert stored {count} rows of {len(rows)}")
    return Raw(len(rows), seconds)


class TelemetryOff(WorkerSession):
    """The random worker's session with telemetry off: it connects to nothing and records nothing."""

    def __init__(self) -> None:
        super().__init__("127.0.0.1:1", "telemetry-off", "unused")

    def started(self, render_kind: str = "none", spaces: dict[str, Any] | None = None) -> None:
        pass

    def step(self, *args: Any, **kwargs: Any) -> None:
        pass

    def episode(self, *args: Any, **kwargs: Any) -> None:
        pass

    def metrics(self, *args: Any, **kwargs: Any) -> None:
        pass


def run_worker_off(steps: int) -> float:
    """Steps/s of the random worker's own loop with telemetry off (same env, seed and budget)."""
    start = time.perf_counter()
    play(TelemetryOff(), {"env_id": "CartPole-v1", "seed": 0, "budget": {"timesteps": steps}})
    return steps / (time.perf_counter() - start)


def run_env_only(steps: int) -> float:
    """Steps/s of the bare loop (reset, seeded sample, step) with no worker around it."""
    # The worker's own make_env, so the wrappers and render mode are the ones the run used.
    env = make_env("CartPole-v1", {})
    space = env.action_space  # looked up once, as the worker's loop does
    total = episode = 0
    start = time.perf_counter()
    while total < steps:
        env.reset(seed=episode)
        space.seed(episode)
        terminated = truncated = False
        while not (terminated or truncated) and total < steps:
            _obs, _reward, terminated, truncated, _info = env.step(space.sample())
            total += 1
        episode += 1
    seconds = time.perf_counter() - start
    env.close()
    return total / seconds


def remove_db(path: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--steps", type=int, default=200_000, help="timesteps budget of each run")
    parser.add_argument("--repeat", type=int, default=3, help="end-to-end/raw pairs to measure")
    parser.add_argument("--timeout", type=float, default=600.0, help="longest one run may take (s)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary GYM_GUI_HOME")
    args = parser.parse_args(argv)
    if args.steps < 1 or args.repeat < 1:
        parser.error("--steps and --repeat must be at least 1")

    home = Home(fresh_home())
    ends: list[EndToEnd] = []
    raws: list[Raw] = []
    ceilings: list[float] = []
    offs: list[float] = []
    client = DaemonClient.connect(home.root)
    try:
        print(
            f"daemon {client.info.address} (pid {client.info.pid}), home {home.root}, "
            f"load {os.getloadavg()[0]:.2f}",
            flush=True,
        )
        for i in range(1, args.repeat + 1):
            end = run_end_to_end(client, home, args.steps, args.timeout)
            ends.append(end)
            print(
                f"[{i}/{args.repeat}] end to end: {end.steps} steps in {end.running_seconds:.2f} s RUNNING "
                f"= {end.steps_per_second:,.0f} steps/s (submit→end wall {end.wall_seconds:.2f} s, "
                f"{end.wall_steps_per_second:,.0f} steps/s) run {end.run_id}",
                flush=True,
            )
            rows = read_rows(end.telemetry)
            target = home.root / f"raw-{i}.sqlite"
            raw = run_raw(rows, target)
            raws.append(raw)
            del rows
            remove_db(target)
            print(
                f"[{i}/{args.repeat}] raw: {raw.rows} rows in {raw.seconds:.2f} s "
                f"= {raw.rows_per_second:,.0f} rows/s (executemany, {RAW_BATCH} rows per transaction)",
                flush=True,
            )
            offs.append(run_worker_off(args.steps))
            print(f"[{i}/{args.repeat}] worker loop, telemetry off: {offs[-1]:,.0f} steps/s", flush=True)
            ceilings.append(run_env_only(args.steps))
            print(f"[{i}/{args.repeat}] bare env loop: {ceilings[-1]:,.0f} steps/s", flush=True)
    except (BenchError, GymGuiError) as exc:
        print(f"bench failed: {exc}", file=sys.stderr)
        return 1
    finally:
        release(client, home.root, args.keep)

    e2e = statistics.median(e.steps_per_second for e in ends)
    raw_median = statistics.median(r.rows_per_second for r in raws)
    wall = statistics.median(e.wall_seconds for e in ends)
    ceiling = statistics.median(ceilings)
    off = statistics.median(offs)
    print(f"end to end (median of {len(ends)}): {e2e:,.0f} steps/s over RUNNING time")
    print(f"submit→end wall time (median): {wall:.2f} s for {args.steps} steps")
    print(
        f"worker loop with telemetry off (median): {off:,.0f} steps/s; bare env loop (median): "
        f"{ceiling:,.0f} steps/s, end to end reaches {e2e / ceiling:.0%} of it"
    )
    print(
        f"raw limit (median of {len(raws)}): {raw_median:,.0f} rows/s; no path can exceed ratio "
        f"{ceiling / raw_median:.2f} end_to_end/raw while the env loop is the bound"
    )
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    print(
        f"ratio telemetry on/off = {e2e / off:.2f} (goal >= {GOAL_ON_OFF}): the random worker storing "
        f"every step ÷ the same loop with telemetry off (÷ the bare env loop: {e2e / ceiling:.2f})"
    )
    print(f"ratio end_to_end/raw = {e2e / raw_median:.2f} (goal >= {GOAL})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
