"""Scale: a registry of 10,000 runs, 100 concurrent workers and 0–16 viewers on one daemon (docs/scale.md quotes it).

Everything runs against a real daemon on a fresh temporary GYM_GUI_HOME, over real gRPC on loopback.
Four parts, each with a reference measured in the same run; the figures are printed last.

1. **Registry.** Run rows are written into the daemon's ``registry.sqlite`` with ``RunRegistry``
   directly from this process (the daemon has it open at the same time: WAL, several processes),
   each with the history a finished run has (QUEUED, STARTING, RUNNING, COMPLETED). Not through
   ``SubmitRun``: a submit validates the config, makes a run directory and writes its files, so
   10,000 of them would time the submit path on this shared machine, not the reads the figures are
   about. The reads are the daemon's real RPCs: a page of ``ListRuns`` (the newest 50, as
   ``gym-gui runs`` asks; with archived runs, as the window's runs table; of one state), every run
   with archived runs and without, ``GetRun`` of one run, and ``WatchRuns`` of one run until its
   snapshot (what ``wait_for_end`` waits on). Each is timed at ``--small-runs`` (100) and again at
   ``--runs`` (10,000) runs; the figure is the ratio, and the page's (goal ≤ 1.5: flat) is printed
   last. ``--registry-only`` measures this part alone.
2. **Workers.** ``--workers`` (100) runs of the ``human`` kind (the daemon starts no process for
   them), each played by a real SDK ``WorkerSession`` of its own, spread as threads over
   ``--procs`` worker processes of this script (a hundred Python processes importing gRPC would
   measure this 2-core machine's start-up, not the daemon). Each session sends pre-built
   CartPole-like step batches (bench/ingest.py's rows, ``wall_time`` the moment of sending) at
   ``--rate`` steps/s for ``--seconds`` (paced: a slow environment's rate), then, in a second round
   on new runs, ``--steps`` steps as fast as the daemon takes them (flat out). Reported: stored
   rows/s, the live latency (a step's ``wall_time`` to a viewer subscribed to a few of the runs
   receiving it: the daemon publishes a batch once it is queued for storage), the daemon's CPU
   (cores busy) and peak RSS, its open file descriptors, and the lossless check (every run's
   ``telemetry.sqlite`` holds exactly what its session sent, or the bench fails). References: one
   session flat out, and the same rows ``executemany``-ed into one database in this process.
3. **Fan-out.** One session sends ``--fanout-rate`` steps/s for ``--fanout-seconds`` while 0, 1, 4
   and 16 ``Subscribe`` viewers (threads of this process, one credit granted back per batch as a
   window does) follow its run; reported: the daemon's CPU per second of ingest and, per viewer,
   its increase and the steps/s each viewer received.
4. **Files.** Bytes on disk per stored step in the per-run files (database, WAL, shared memory)
   against the one reference database holding every row; an empty run's telemetry file.

Usage::

    .venv/bin/python bench/scale.py [--runs 10000] [--workers 100] [--procs 4] [--rate 200] [--seconds 10]
                                    [--steps 20000] [--viewers 0 1 4 16] [--registry-only]
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
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path

# bench/ is on sys.path when a bench runs as a script
from _daemon import database_bytes, fresh_home, raw_inserts, release, stored_steps
from gym_gui_sdk.worker import WorkerSession
from ingest import EPISODE_STEPS, BenchError, check_lossless, rows_of, send

from gym_gui.core.config import TelemetryOptions, parse_run_config
from gym_gui.core.errors import GymGuiError
from gym_gui.core.records import Resumed, RunRecord, StepBatch
from gym_gui.core.run_query import RunQuery
from gym_gui.core.states import RunState
from gym_gui.protocol.client import DaemonClient, TelemetryStream
from gym_gui.storage.home import Home
from gym_gui.storage.registry import RunRegistry
from gym_gui.storage.run_dir import RunDir
from gym_gui.storage.telemetry_schema import open_telemetry_db

TICK = os.sysconf("SC_CLK_TCK")
LATENCY_RUNS = 4  # runs a latency viewer follows in the workers part


# ------------------------------------------------------------------ the daemon process, from /proc


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds a process has used."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def open_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


@dataclass
class Usage:
    """The daemon's CPU (cores busy), peak RSS and peak open descriptors over a span."""

    cores: float = 0.0
    peak_rss_mb: float = 0.0
    peak_fds: int = 0


class Monitor:
    """Samples the daemon's RSS and descriptors every 50 ms and its CPU at both ends of a ``with`` block."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.usage = Usage()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._stop.wait(0.05):
            self.usage.peak_rss_mb = max(self.usage.peak_rss_mb, rss_mb(self.pid))
            self.usage.peak_fds = max(self.usage.peak_fds, open_fds(self.pid))

    def __enter__(self) -> Monitor:
        self._cpu, self._wall = cpu_seconds(self.pid), time.perf_counter()
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.usage.cores = (cpu_seconds(self.pid) - self._cpu) / (time.perf_counter() - self._wall)


# ------------------------------------------------------------------ 1. registry


def timed(call: Callable[[], object], repeat: int) -> float:
    """Median seconds of ``call`` over ``repeat`` calls."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def fill_registry(registry: RunRegistry, start: int, stop: int) -> None:
    """Finished runs ``start`` … ``stop - 1`` with a finished run's history; every tenth archived."""
    for i in range(start, stop):
        run_id = f"CartPole-v1__random__{i}__20261124-000000"
        at = 1.7e9 + i
        registry.create(
            RunRecord(run_id, "random", "CartPole-v1", "telemetry", RunState.QUEUED, created_at=at)
        )
        registry.transition(run_id, RunState.STARTING, "launching worker", at=at + 0.1)
        registry.transition(run_id, RunState.RUNNING, "worker started", at=at + 0.5)
        registry.transition(run_id, RunState.COMPLETED, "worker completed", exit_code=0, at=at + 60)
        if i % 10 == 9:
            registry.set_archived(run_id, True)


def first_snapshot(client: DaemonClient, run_id: str) -> None:
    """Open a watch of one run and wait for its snapshot; closing the generator cancels the call."""
    events = client.watch_runs(run_id)
    next(events)
    events.close()  # type: ignore[attr-defined]


# The page `gym-gui runs` asks for: the newest 50 (archived ones left out), and the count of them all.
PAGE = RunQuery(descending=True, limit=50)
PAGE_READ = "ListRuns page (gym-gui runs: the newest 50)"


def registry_reads(client: DaemonClient, run_id: str, repeat: int) -> dict[str, float]:
    """Median seconds of each read the figures are about (a page, a few milliseconds, ten times as often)."""
    return {
        PAGE_READ: timed(lambda: client.list_page(PAGE), repeat * 10),
        "ListRuns page (window: the newest 50, archived too)": timed(
            lambda: client.list_page(replace(PAGE, include_archived=True)), repeat * 10
        ),
        "ListRuns page (filtered: one state, 50)": timed(
            lambda: client.list_page(replace(PAGE, states=(RunState.COMPLETED,))), repeat * 10
        ),
        "ListRuns every run (archived too)": timed(lambda: client.list_runs(include_archived=True), repeat),
        "ListRuns every run": timed(lambda: client.list_runs(), repeat),
        "GetRun (one run)": timed(lambda: client.get_run(run_id), repeat),
        "WatchRuns (one run's snapshot)": timed(lambda: first_snapshot(client, run_id), repeat),
    }


# ------------------------------------------------------------------ 2. workers (child processes)


def play(session: WorkerSession, steps: int, rate: float, chunk: int) -> None:
    """Send ``steps`` steps in chunks of ``chunk``: at ``rate`` steps/s, or as fast as taken when 0."""
    send(session, steps, chunk, rate)
    session.finish()


def child() -> int:
    """A worker process: sessions for the runs given on stdin (JSON, tokens not on a command line),
    each in a thread; "ready" when all are registered and STARTED, then the go, then "done"."""
    job = json.loads(sys.stdin.readline())
    batch = job["batch"]
    sessions = [
        WorkerSession(job["address"], run_id, token, batch_steps=batch) for run_id, token in job["runs"]
    ]
    for session in sessions:
        session.start()
        session.started("none")
    print("ready", flush=True)
    if sys.stdin.readline().strip() != "go":
        return 1
    errors: list[BaseException] = []

    def one(session: WorkerSession) -> None:
        try:
            play(session, job["steps"], job["rate"], job["chunk"])
        except BaseException as exc:  # reported below, the process fails
            errors.append(exc)

    threads = [threading.Thread(target=one, args=(session,)) for session in sessions]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        print(f"failed {errors[0]}", flush=True)
        return 1
    print("done", flush=True)
    return 0


# ------------------------------------------------------------------ 2. and 3. (this process)


def submit(client: DaemonClient, count: int) -> list[tuple[str, str]]:
    runs = []
    for _ in range(count):
        config = parse_run_config(
            {"worker": "human", "env_id": "CartPole-v1", "budget": {"episodes": 1}, "notes": "bench/scale.py"}
        )
        record, token = client.submit(config)
        runs.append((record.run_id, token))
    return runs


@dataclass
class Viewer:
    """A ``Subscribe`` viewer in a thread: one credit back per batch; counts steps and live latency."""

    stream: TelemetryStream
    steps: int = 0
    coalesced: int = 0
    latencies: list[float] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.thread = threading.Thread(target=self._follow, daemon=True)
        self.thread.start()

    def _follow(self) -> None:
        try:
            for event in self.stream:
                if isinstance(event, StepBatch) and event.rows:
                    self.latencies.append(time.time() - event.rows[-1][-1])
                    self.steps += len(event.rows)
                    self.stream.grant(1)
                elif isinstance(event, Resumed):
                    self.coalesced += event.coalesced  # batches replaced while this viewer had no credit
        except GymGuiError:
            pass  # the run ended and the daemon closed the stream

    def close(self) -> None:
        self.stream.close()
        self.thread.join(timeout=10)


@dataclass
class Round:
    """One round of sessions: what was sent and stored, how fast, and what it cost the daemon."""

    sessions: int
    steps: int  # per session
    seconds: float
    usage: Usage
    latencies: list[float]
    viewers: list[Viewer]

    @property
    def rows_per_second(self) -> float:
        return self.sessions * self.steps / self.seconds


def start_children(
    client: DaemonClient,
    runs: list[tuple[str, str]],
    procs: int,
    steps: int,
    rate: float,
    chunk: int,
    batch: int,
) -> list[subprocess.Popen[str]]:
    children = []
    for p in range(procs):
        mine = runs[p::procs]
        if not mine:
            continue
        proc = subprocess.Popen(
            [sys.executable, __file__, "--child"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        assert proc.stdin is not None
        job = {"address": client.info.address, "runs": mine, "steps": steps, "rate": rate, "chunk": chunk}
        proc.stdin.write(json.dumps({**job, "batch": batch}) + "\n")
        proc.stdin.flush()
        children.append(proc)
    return children


def expect(proc: subprocess.Popen[str], word: str) -> None:
    assert proc.stdout is not None
    line = proc.stdout.readline().strip()
    if line != word:
        raise BenchError(f"worker process {proc.pid} said {line or 'nothing'!r} (exit {proc.poll()})")


def play_round(
    client: DaemonClient,
    home: Home,
    sessions: int,
    procs: int,
    steps: int,
    rate: float,
    viewers: int = 0,
    follow: int = 0,
) -> Round:
    """``sessions`` runs played at once (``rate`` steps/s each, 0: flat out), ``viewers`` viewers on
    the first run and one latency viewer on each of the first ``follow`` runs; checks every row is stored."""
    chunk = max(EPISODE_STEPS, int(rate / 8) // EPISODE_STEPS * EPISODE_STEPS) if rate else 1000
    # A run's default batching when paced, ingest.py's batches flat out.
    batch = TelemetryOptions().batch_steps if rate else 1000
    runs = submit(client, sessions)
    children = start_children(client, runs, procs, steps, rate, chunk, batch)
    subscribed: list[Viewer] = []
    try:
        for proc in children:
            expect(proc, "ready")
        watched = [Viewer(client.subscribe(runs[0][0], credits=4)) for _ in range(viewers)]
        followers = [Viewer(client.subscribe(run_id, credits=4)) for run_id, _ in runs[:follow]]
        subscribed = watched + followers
        with Monitor(client.info.pid) as monitor:
            start = time.perf_counter()
            for proc in children:
                assert proc.stdin is not None
                proc.stdin.write("go\n")
                proc.stdin.flush()
            for proc in children:
                expect(proc, "done")
            seconds = time.perf_counter() - start
    finally:
        for proc in children:
            if proc.stdin is not None:
                proc.stdin.close()
            proc.wait(timeout=120)
        for viewer in subscribed:
            viewer.close()
    check_lossless(client, home, [run_id for run_id, _token in runs], steps, timeout=120)
    latencies = [s for viewer in subscribed[viewers:] for s in viewer.latencies]
    return Round(sessions, steps, seconds, monitor.usage, latencies, subscribed[:viewers])


def run_files(home: Home, run_ids: Iterator[str]) -> tuple[int, int]:
    """Bytes on disk of these runs' telemetry databases, and the steps they hold."""
    total = steps = 0
    for run_id in run_ids:
        path = RunDir(home.run_dir(run_id)).telemetry_path
        total += database_bytes(path)
        steps += stored_steps(path)
    return total, steps


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


# ------------------------------------------------------------------ main


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--child"]:
        return child()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=10_000, help="runs in the registry, large")
    parser.add_argument("--small-runs", type=int, default=100, help="runs in the registry, the reference")
    parser.add_argument("--repeat", type=int, default=5, help="calls per registry read (median)")
    parser.add_argument("--workers", type=int, default=100, help="concurrent worker sessions")
    parser.add_argument("--procs", type=int, default=4, help="worker processes the sessions are spread over")
    parser.add_argument("--rate", type=float, default=200.0, help="steps/s per session, paced round")
    parser.add_argument("--seconds", type=float, default=10.0, help="length of the paced round")
    parser.add_argument("--steps", type=int, default=20_000, help="steps per session, flat-out round")
    parser.add_argument(
        "--viewers", type=int, nargs="+", default=[0, 1, 4, 16], help="viewer counts, fan-out"
    )
    parser.add_argument(
        "--fanout-rate", type=float, default=10_000.0, help="steps/s of the run viewers follow"
    )
    parser.add_argument("--fanout-seconds", type=float, default=8.0, help="length of each fan-out round")
    parser.add_argument("--keep", action="store_true", help="keep the temporary GYM_GUI_HOME")
    parser.add_argument(
        "--registry-only",
        action="store_true",
        help="only part 1: the registry's reads (no workers, fan-out, files)",
    )
    args = parser.parse_args(argv)
    if min(args.runs, args.small_runs, args.repeat, args.workers, args.procs, args.steps) < 1:
        parser.error("--runs, --small-runs, --repeat, --workers, --procs and --steps must be at least 1")
    if (
        args.small_runs > args.runs
        or min(args.viewers) < 0
        or min(args.rate, args.fanout_rate) < EPISODE_STEPS
    ):
        parser.error(
            f"--small-runs must not exceed --runs, viewers not be negative, rates be at least {EPISODE_STEPS}"
        )
    paced_steps = max(EPISODE_STEPS, int(args.rate * args.seconds))
    fanout_steps = max(EPISODE_STEPS, int(args.fanout_rate * args.fanout_seconds))

    home = Home(fresh_home())
    client = DaemonClient.connect(home.root)
    pid = client.info.pid
    lines: list[str] = []
    try:
        print(
            f"daemon {client.info.address} (pid {pid}), home {home.root}, load {os.getloadavg()[0]:.2f}",
            flush=True,
        )
        rest = Usage(peak_rss_mb=rss_mb(pid), peak_fds=open_fds(pid))

        # 1. registry
        registry = RunRegistry(home.registry_path)
        try:
            fill_registry(registry, 0, args.small_runs)
            probe = f"CartPole-v1__random__{args.small_runs // 2}__20261124-000000"
            small = registry_reads(client, probe, args.repeat)
            started = time.perf_counter()
            fill_registry(registry, args.small_runs, args.runs)
            fill_seconds = time.perf_counter() - started
            large = registry_reads(client, probe, args.repeat)
        finally:
            registry.close()
        registry_bytes = database_bytes(home.registry_path)
        print(
            f"[registry] {args.runs:,} runs written in {fill_seconds:.1f} s; {registry_bytes / args.runs:,.0f} B a run",
            flush=True,
        )

        if args.registry_only:
            return _report(
                args, registry_bytes, small, large, [f"load average after: {os.getloadavg()[0]:.2f}"]
            )

        # 2. workers
        single = play_round(client, home, 1, 1, args.steps, 0)
        print(f"[1 session flat out] {single.rows_per_second:,.0f} rows/s", flush=True)
        paced = play_round(
            client, home, args.workers, args.procs, paced_steps, args.rate, follow=LATENCY_RUNS
        )
        print(
            f"[{args.workers} sessions at {args.rate:g} steps/s] {paced.rows_per_second:,.0f} rows/s",
            flush=True,
        )
        flat_runs_before = {r.run_id for r in client.list_runs()}
        flat = play_round(client, home, args.workers, args.procs, args.steps, 0, follow=LATENCY_RUNS)
        flat_ids = [r.run_id for r in client.list_runs() if r.run_id not in flat_runs_before]
        print(f"[{args.workers} sessions flat out] {flat.rows_per_second:,.0f} rows/s", flush=True)
        rows = rows_of(args.workers * args.steps, 1000)
        raw_seconds, raw_count = raw_inserts(rows, home.root / "raw.sqlite", 1000, keep=True)
        raw_bytes = database_bytes(home.root / "raw.sqlite")
        if raw_count != len(rows):
            raise BenchError(f"raw insert stored {raw_count} rows of {len(rows)}")
        raw_rate = len(rows) / raw_seconds
        files_bytes, files_steps = run_files(home, iter(flat_ids))
        # What each run's file costs before its first step.
        open_telemetry_db(home.root / "empty.sqlite").close()
        empty_bytes = database_bytes(home.root / "empty.sqlite")

        # 3. fan-out
        fanout: dict[int, Round] = {}
        for viewers in args.viewers:
            fanout[viewers] = play_round(client, home, 1, 1, fanout_steps, args.fanout_rate, viewers=viewers)
            print(f"[fan-out {viewers} viewers] daemon {fanout[viewers].usage.cores:.2f} cores", flush=True)
    except (BenchError, GymGuiError) as exc:
        print(f"bench failed: {exc}", file=sys.stderr)
        return 1
    finally:
        release(client, home.root, args.keep)

    lines.append(f"load average after: {os.getloadavg()[0]:.2f}")
    lines.append(
        f"workers: 1 session flat out {single.rows_per_second:,.0f} rows/s; raw executemany "
        f"{raw_rate:,.0f} rows/s; daemon at rest {rest.peak_rss_mb:.0f} MB RSS, {rest.peak_fds} fds"
    )
    offered = f"paced {args.rate:g} steps/s (offered {args.workers * args.rate:,.0f} rows/s; the time includes the last ACK)"
    for name, played in ((offered, paced), ("flat out", flat)):
        lines.append(
            f"  {args.workers} sessions {name}: stored {played.rows_per_second:,.0f} rows/s "
            f"(÷ 1 session {played.rows_per_second / single.rows_per_second:.2f}, ÷ raw {played.rows_per_second / raw_rate:.2f}); "
            f"live latency p50 {percentile(played.latencies, 0.5) * 1000:.0f} ms, p95 {percentile(played.latencies, 0.95) * 1000:.0f} ms; "
            f"daemon {played.usage.cores:.2f} cores, peak RSS {played.usage.peak_rss_mb:.0f} MB "
            f"(÷ rest {played.usage.peak_rss_mb / rest.peak_rss_mb:.1f}), peak fds {played.usage.peak_fds}; "
            f"lossless: {played.sessions * played.steps:,} on disk = sent"
        )
    lines.append(
        f"files: {files_bytes / files_steps:.0f} B a step in {len(flat_ids)} per-run files vs {raw_bytes / len(rows):.0f} B "
        f"in one file (ratio {files_bytes / files_steps / (raw_bytes / len(rows)):.2f}); an empty run's telemetry "
        f"{empty_bytes:,} B; fds per live run {(flat.usage.peak_fds - rest.peak_fds) / args.workers:.1f}"
    )
    base = fanout.get(0)
    for viewers, played in fanout.items():
        delivered = (
            statistics.mean(v.steps for v in played.viewers) / played.seconds if played.viewers else 0.0
        )
        extra = (
            f", +{(played.usage.cores - base.usage.cores) / viewers:.3f} cores a viewer"
            if base is not None and viewers
            else ""
        )
        lines.append(
            f"fan-out {viewers:>2} viewers: ingest {played.rows_per_second:,.0f} rows/s, daemon {played.usage.cores:.2f} cores{extra}; "
            f"each viewer received {delivered:,.0f} steps/s ({delivered / played.rows_per_second:.2f} of ingest, "
            f"{sum(v.coalesced for v in played.viewers) / viewers:.1f} batches coalesced a viewer)"
            if viewers
            else f"fan-out  0 viewers: ingest {played.rows_per_second:,.0f} rows/s, daemon {played.usage.cores:.2f} cores"
        )
    return _report(args, registry_bytes, small, large, lines)


def _report(
    args: argparse.Namespace,
    registry_bytes: int,
    small: dict[str, float],
    large: dict[str, float],
    lines: list[str],
) -> int:
    """Print the figures, the registry's reads after the rest and the page's ratio last."""
    lines.append(
        f"registry: {args.small_runs:,} → {args.runs:,} runs ({registry_bytes / args.runs:,.0f} B a run on disk)"
    )
    for name, seconds in large.items():
        lines.append(
            f"  {name}: {small[name] * 1000:.1f} ms → {seconds * 1000:.1f} ms, ratio {seconds / small[name]:.2f}"
            f" for {args.runs / args.small_runs:.0f}× the runs"
        )
    lines.append(
        f"one page at {args.runs:,} runs ÷ the same page at {args.small_runs:,} runs: "
        f"{large[PAGE_READ] / small[PAGE_READ]:.2f} (goal ≤ 1.5)"
    )
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
