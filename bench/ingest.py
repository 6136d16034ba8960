"""Telemetry ingest: 1, 2, 4 and 8 workers streaming pre-built step batches into one daemon, against raw SQLite inserts.

Ours: a fresh daemon (temporary GYM_GUI_HOME) and, for each worker count N, N runs of the ``human``
kind (the daemon starts no process for them) each played by a separate worker process of this
script: a real SDK ``WorkerSession`` that registers over gRPC, reports STARTED, waits for the go,
then records ``--steps`` steps through ``WorkerSession.steps`` as fast as the daemon takes them
(pre-built columns of CartPole-like rows: no environment), and ``finish()``es, which returns once
the daemon has confirmed every message committed. The time is from the go to the last worker's
confirmed finish. Afterwards every run's ``telemetry.sqlite`` must hold exactly the steps its worker
sent (lossless), or the bench fails.

Raw limit, in the same run: the same number of rows of the same content ``executemany``-ed into a
fresh database made by ``open_telemetry_db`` (same schema, same pragmas) in this process, in
transactions of ``--batch`` rows (the size of the workers' batches).

Both are measured alternately for each worker count, ``--repeat`` times; the medians and their
ratio (stored rows/s ÷ raw rows/s) are printed, one line per worker count, last. Usage::

    .venv/bin/python bench/ingest.py [--steps 200000] [--workers 1 2 4 8] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from _daemon import (  # bench/ is on sys.path when a bench runs as a script
    fresh_home,
    raw_inserts,
    release,
    stored_steps,
)
from gym_gui_sdk import ENV_DAEMON_ADDRESS, ENV_RUN_ID, ENV_RUN_TOKEN
from gym_gui_sdk.worker import WorkerSession

from gym_gui.core.config import parse_run_config
from gym_gui.core.errors import GymGuiError
from gym_gui.core.states import RunState
from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.home import Home
from gym_gui.storage.run_dir import RunDir

GOAL = 0.5
EPISODE_STEPS = 25  # about a random CartPole episode


class BenchError(RuntimeError):
    """The benchmark cannot report a figure (a run failed or lost steps)."""


def columns(batch: int) -> dict[str, list[Any]]:
    """One batch of CartPole-like steps (4-float observations, integer actions, empty info), episode 0 onwards."""
    observation = "[0.0123456789,-0.234567891,0.0345678912,0.456789123]"
    step = [i % EPISODE_STEPS for i in range(batch)]
    return {
        "episode": [i // EPISODE_STEPS for i in range(batch)],
        "step": step,
        "reward": [1.0] * batch,
        "terminated": [s == EPISODE_STEPS - 1 for s in step],
        "truncated": [False] * batch,
        "action": [str(i % 2) for i in range(batch)],
        "observation": [observation] * batch,
        "info": ["{}"] * batch,
        "render": [b""] * batch,
        "wall_time": [1.7e9 + i * 1e-5 for i in range(batch)],
    }


def rows_of(steps: int, batch: int) -> list[tuple[Any, ...]]:
    """The rows one worker sends, as storage holds them (the raw reference inserts these)."""
    made = columns(batch)
    rows: list[tuple[Any, ...]] = []
    per_batch = batch // EPISODE_STEPS
    for offset in range(0, steps, batch):
        count = min(batch, steps - offset)
        base = (offset // batch) * per_batch
        for i in range(count):
            rows.append(
                (
                    made["episode"][i] + base,
                    made["step"][i],
                    made["reward"][i],
                    made["terminated"][i],
                    made["truncated"][i],
                    made["action"][i],
                    made["observation"][i],
                    made["info"][i],
                    None,
                    made["wall_time"][i],
                )
            )
    return rows


def send(session: WorkerSession, steps: int, batch: int, rate: float = 0.0) -> int:
    """Send ``steps`` steps of :func:`columns` in batches of ``batch`` through ``session``'s column-wise
    ``steps``, at ``rate`` steps/s or as fast as the daemon takes them (0); returns the steps sent."""
    made = columns(batch)
    per_batch = batch // EPISODE_STEPS
    start = time.perf_counter()
    sent = 0
    while sent < steps:
        if rate > 0:
            delay = start + sent / rate - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
        count = min(batch, steps - sent)
        base = (sent // batch) * per_batch
        session.steps(
            [e + base for e in made["episode"][:count]],
            made["step"][:count],
            made["reward"][:count],
            made["terminated"][:count],
            made["truncated"][:count],
            made["action"][:count],
            made["observation"][:count],
            made["info"][:count],
            made["render"][:count],
            [time.time()] * count,  # sent now: a viewer's latency is measured from it
        )
        sent += count
    return sent


def child(steps: int, batch: int) -> int:
    """One worker process (its run in the environment, as the daemon gives a worker its own): register,
    report STARTED, wait for the go on stdin, send, finish."""
    session = WorkerSession.from_env(batch_steps=batch)
    session.start()
    session.started("none")
    print("ready", flush=True)
    if sys.stdin.readline().strip() != "go":
        return 1
    start = time.perf_counter()
    sent = send(session, steps, batch)
    session.finish()
    print(f"done {sent} {time.perf_counter() - start:.6f}", flush=True)
    return 0


def run_workers(client: DaemonClient, home: Home, workers: int, steps: int, batch: int) -> float:
    """Stored rows/s of ``workers`` worker processes sending ``steps`` steps each; checks every row is on disk."""
    runs = []
    for _ in range(workers):
        config = parse_run_config(
            {
                "worker": "human",
                "env_id": "CartPole-v1",
                "budget": {"episodes": 1},
                "notes": "bench/ingest.py",
            }
        )
        record, token = client.submit(config)
        runs.append((record.run_id, token))
    procs = [
        subprocess.Popen(
            [sys.executable, __file__, "--child", str(steps), str(batch)],
            env={
                **os.environ,
                ENV_DAEMON_ADDRESS: client.info.address,
                ENV_RUN_ID: run_id,
                ENV_RUN_TOKEN: token,  # in the environment, not on a command line others can read
            },
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        for run_id, token in runs
    ]
    try:
        for proc in procs:
            assert proc.stdout is not None
            if proc.stdout.readline().strip() != "ready":
                raise BenchError(f"worker {proc.pid} did not get ready")
        start = time.perf_counter()
        for proc in procs:
            assert proc.stdin is not None
            proc.stdin.write("go\n")
            proc.stdin.flush()
        for proc in procs:
            assert proc.stdout is not None
            line = proc.stdout.readline().split()
            if not line or line[0] != "done":
                raise BenchError(f"worker {proc.pid} failed (exit {proc.wait()})")
        seconds = time.perf_counter() - start
    finally:
        for proc in procs:
            if proc.poll() is None and proc.stdin is not None:
                proc.stdin.close()
            proc.wait(timeout=60)
    check_lossless(client, home, [run_id for run_id, _token in runs], steps, timeout=60)
    return workers * steps / seconds


def check_lossless(client: DaemonClient, home: Home, run_ids: list[str], steps: int, timeout: float) -> None:
    """Each run ends COMPLETED with the ``steps`` sent to it on disk, not one fewer.

    Raises:
        BenchError: naming the run that did not.
    """
    for run_id in run_ids:
        final = client.wait_for_end(run_id, timeout=timeout)
        if final.state is not RunState.COMPLETED:
            raise BenchError(f"run {run_id} ended {final.state.value}: {final.reason}")
        stored = stored_steps(RunDir(home.run_dir(run_id)).telemetry_path)
        if stored != steps:
            raise BenchError(f"run {run_id} stored {stored} steps of {steps} sent: not lossless")


def run_raw(rows: list[tuple[Any, ...]], target: Path, batch: int) -> float:
    """Rows/s of ``executemany`` of ``rows`` into a fresh telemetry database, ``batch`` rows a transaction."""
    seconds, count = raw_inserts(rows, target, batch)
    if count != len(rows):
        raise BenchError(f"raw insert stored {count} rows of {len(rows)}")
    return len(rows) / seconds


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--child"]:
        steps, batch = argv[1:3]
        return child(int(steps), int(batch))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--steps", type=int, default=200_000, help="steps each worker sends")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4, 8], help="worker counts")
    parser.add_argument("--batch", type=int, default=1000, help="steps per batch (and per raw transaction)")
    parser.add_argument("--repeat", type=int, default=3, help="ours/raw pairs per worker count")
    parser.add_argument("--keep", action="store_true", help="keep the temporary GYM_GUI_HOME")
    args = parser.parse_args(argv)
    if args.steps < 1 or args.repeat < 1 or args.batch < EPISODE_STEPS or min(args.workers) < 1:
        parser.error(f"--steps, --repeat and --workers must be at least 1, --batch at least {EPISODE_STEPS}")
    args.batch -= args.batch % EPISODE_STEPS  # whole episodes per batch

    home = Home(fresh_home())
    results: dict[int, tuple[float, float]] = {}
    client = DaemonClient.connect(home.root)
    try:
        print(
            f"daemon {client.info.address} (pid {client.info.pid}), home {home.root}, "
            f"load {os.getloadavg()[0]:.2f}",
            flush=True,
        )
        for workers in args.workers:
            rows = rows_of(workers * args.steps, args.batch)
            ours: list[float] = []
            raws: list[float] = []
            for i in range(1, args.repeat + 1):
                ours.append(run_workers(client, home, workers, args.steps, args.batch))
                raws.append(run_raw(rows, home.root / "raw.sqlite", args.batch))
                print(
                    f"[{workers} workers {i}/{args.repeat}] stored {ours[-1]:,.0f} rows/s "
                    f"({workers} × {args.steps} steps, all on disk); raw {raws[-1]:,.0f} rows/s",
                    flush=True,
                )
            results[workers] = (statistics.median(ours), statistics.median(raws))
    except (BenchError, GymGuiError) as exc:
        print(f"bench failed: {exc}", file=sys.stderr)
        return 1
    finally:
        release(client, home.root, args.keep)

    print(f"load average after: {os.getloadavg()[0]:.2f}")
    for workers, (ours_median, raw_median) in results.items():
        print(
            f"{workers} workers: stored {ours_median:,.0f} rows/s, raw {raw_median:,.0f} rows/s, "
            f"ratio stored/raw = {ours_median / raw_median:.2f} (goal >= {GOAL})"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
