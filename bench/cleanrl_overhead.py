"""CleanRL overhead: a real CleanRL script's SPS through gym_gui against the same script run raw.

For each algorithm (default ppo and dqn, CartPole-v1, seed 1, 20k steps) the same script runs
two ways, alternately ``--repeat`` times (raw first on odd rounds, gym_gui first on even ones, so
drift of the machine and warm caches favour neither side):

- raw: ``<cleanrl bundle python> -m cleanrl.<algo> <flags>`` in a fresh temporary directory,
  stdout/stderr to files, nothing else running for it;
- gym_gui: ``parse_run_config({"worker": "cleanrl", ...})`` submitted to a daemon of a fresh
  temporary GYM_GUI_HOME, which starts the worker (``python -m gym_gui_cleanrl_worker train``),
  whose launcher runs the script while the worker tails its stdout and TensorBoard files and
  streams the metrics to the daemon (telemetry.sqlite).

Both sides run exactly the same flags: the daemon's own mapping of the config (seed, env id,
total timesteps, cuda False, ...) is resolved once per algorithm by a dry run and read from its
manifest.json (its extras' "script_command"); every real run's manifest is checked to hold the same. Both get
the environment the daemon gives a worker: the daemon's allow-list taken from this process's
environment, the thread pool sizes it gives (``OMP_NUM_THREADS`` and friends: the caller's when set,
else the CPUs shared by the runs that may go at once), PYTHONUNBUFFERED and the SDL dummy drivers as
the worker has them, and ``CUDA_VISIBLE_DEVICES=""``.

The goal figure is CleanRL's own throughput, measured identically on both sides: the script's last
``SPS: N`` line (global_step / seconds since the script's ``start_time``, i.e. after its imports
and env creation), read from the raw run's stdout and from the run's ``logs/worker.stdout.log``
(and checked to have reached telemetry.sqlite as ``charts/SPS``). As a second figure (reported,
not the goal) it times the whole thing: raw process start to exit against gym_gui submit to
COMPLETED, which adds the daemon's command resolution, the worker's start-up and the final model
save.

Shared machines: torch's OpenMP threads make a CleanRL script's SPS collapse (several times, not
a few percent) whenever anything else wants a core, so a stranger's burst during one run would
decide the ratio. Each run therefore starts in an idle moment (``--settle``), and its CPU is
accounted on Linux: the run's own process tree (raw: the script; gym_gui: daemon, worker and
script) against the whole machine's busy time (/proc/stat); a run during which other processes
averaged more than ``--max-others`` cores is measured again (``--retries``) and the least
disturbed attempt kept. The CPU seconds of each side are printed too: gym_gui's extra CPU per run
is a noise-resistant view of its cost. Running the bench under ``nice -n -10`` (root) also helps.

Per-run lines, then per algorithm the medians and their ratio are printed; the ratio of the worse
algorithm comes last. Usage::

    .venv/bin/python bench/cleanrl_overhead.py [--steps 20000] [--repeat 3] [--algos ppo,dqn]

The cleanrl bundle is looked for in ``--bundles``, else where ``make bundles`` installs it
(``$GYM_GUI_BUNDLES``, else the home's ``bundles/``); install it with ``gym-gui bundles install cleanrl``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import sqlite3
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from _daemon import fresh_home, release  # bench/ is on sys.path when a bench runs as a script

from gym_gui.core.config import RunConfig, parse_run_config
from gym_gui.core.errors import GymGuiError
from gym_gui.core.states import RunState
from gym_gui.daemon.live import SupervisorSettings
from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.home import BUNDLES_ENV_VAR, Home
from gym_gui.storage.run_dir import RunDir
from gym_gui.workers import worker_catalog

# Private, but it is the daemon's own allow-list: importing it keeps the raw side's environment
# equal to the worker's even when the list changes.
from gym_gui.workers.process_env import worker_base_env

GOAL = 0.98
BUNDLE = "cleanrl"
ENV_ID = "CartPole-v1"
SEED = 1
SPS_TAG = "charts/SPS"
# CleanRL prints `print("SPS:", int(global_step / (time.time() - start_time)))`.
_SPS_LINE = re.compile(r"^SPS:\s*([0-9]+(?:\.[0-9]*)?)\s*$", re.MULTILINE)
_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


class BenchError(RuntimeError):
    """The benchmark cannot report a figure (a run failed, or its output has no SPS line)."""


# ------------------------------------------------------------ CPU accounting


def _machine_busy() -> float | None:
    """CPU seconds the whole machine has been busy since boot (Linux), None elsewhere."""
    try:
        with open("/proc/stat", encoding="ascii") as stat:
            fields = [int(x) for x in stat.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    # user nice system idle iowait irq softirq steal [guest guest_nice, already inside user/nice]
    return (sum(fields[:8]) - fields[3] - fields[4]) / _TICK


def _tree_cpu(pid: int) -> float | None:
    """CPU seconds of process ``pid`` and of its children it has reaped (so a finished worker and script)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    utime, stime, cutime, cstime = (int(x) for x in fields[11:15])
    return (utime + stime + cutime + cstime) / _TICK


def _own_cpu() -> float:
    times = os.times()
    return times.user + times.system


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


@dataclass(frozen=True)
class Usage:
    wall_seconds: float
    cpu_seconds: float  # the run's own process tree (and this process while it waited)
    others_cores: float | None  # what everything else on the machine used meanwhile, on average


class Window:
    """Wall time and CPU of one run; ``tree`` reads the CPU seconds of the run's process tree so far."""

    def __init__(self, tree: Callable[[], float | None]) -> None:
        self._tree = tree
        self._start = time.monotonic()
        self._machine = _machine_busy()
        self._own = _own_cpu()
        self._tree_start = tree()

    def close(self) -> Usage:
        wall = time.monotonic() - self._start
        machine, tree = _machine_busy(), self._tree()
        cpu = _own_cpu() - self._own
        if tree is not None and self._tree_start is not None:
            cpu += tree - self._tree_start
        others = None
        if machine is not None and self._machine is not None and tree is not None:
            others = max(0.0, (machine - self._machine - cpu) / wall)
        return Usage(wall, cpu, others)


def settle(limit: float, idle_cores: float) -> float | None:
    """Wait (at most ``limit`` s) until the machine is idle for a whole second; return the busy cores seen last."""
    deadline = time.monotonic() + limit
    while True:
        before = _machine_busy()
        time.sleep(1.0)
        after = _machine_busy()
        if before is None or after is None:
            return None
        busy = after - before
        if busy <= idle_cores or time.monotonic() >= deadline:
            return busy


# ------------------------------------------------------------ setup


@dataclass(frozen=True)
class Measure:
    """One run of one side: CleanRL's own last SPS and what the run cost."""

    side: str  # "raw" | "gym_gui"
    algo: str
    sps: float
    usage: Usage
    where: str  # the raw run's directory or the gym_gui run id

    def line(self, label: str, steps: int, max_others: float) -> str:
        u = self.usage
        others = "others ?" if u.others_cores is None else f"others {u.others_cores:.2f} cores"
        if u.others_cores is not None and u.others_cores > max_others:
            others += " (disturbed)"
        return (
            f"{label} {self.algo:<4} {self.side:<8} SPS {self.sps:>7,.0f}  "
            f"wall {u.wall_seconds:6.2f} s ({steps / u.wall_seconds:>6,.0f} steps/s)  "
            f"cpu {u.cpu_seconds:5.2f} s, {others}  {self.where}"
        )


def find_bundles(explicit: Path | None) -> Path:
    """The bundles directory holding an installed cleanrl bundle.

    Raises:
        BenchError: when none does, saying how to install it.
    """
    candidates: list[Path] = []
    if explicit is not None:
        candidates.append(explicit)
    else:
        candidates.append(
            Home().bundles_dir
        )  # $GYM_GUI_BUNDLES, else the home's: where `make bundles` puts it
    for directory in candidates:
        if worker_catalog().bundle_directory(directory).installed(BUNDLE):
            return directory.expanduser().resolve()
    looked = ", ".join(str(c) for c in candidates)
    raise BenchError(
        f"the {BUNDLE} bundle is not installed (looked in {looked}); install it with "
        f"`gym-gui bundles install {BUNDLE}` (or pass --bundles DIR / set {BUNDLES_ENV_VAR})"
    )


def worker_env(max_concurrent: int | None = None) -> dict[str, str]:
    """The environment the daemon gives a CleanRL worker (its base environment, with the thread pools
    sized for ``max_concurrent`` runs at once as a daemon started so sizes them, and CUDA off as the
    launcher's plan has it), without gym_gui's own run variables."""
    settings = SupervisorSettings() if max_concurrent is None else SupervisorSettings(max_concurrent)
    return {**worker_base_env(settings.thread_env()), "CUDA_VISIBLE_DEVICES": ""}


def run_config(algo: str, steps: int, *, dry_run: bool = False) -> RunConfig:
    return parse_run_config(
        {
            "worker": "cleanrl",
            "algorithm": algo,
            "env_id": ENV_ID,
            "seed": SEED,
            "budget": {"timesteps": steps},
            "dry_run": dry_run,
            "notes": "bench/cleanrl_overhead.py",
        }
    )


def script_command(home: Home, run_id: str) -> list[str]:
    # The CleanRL kind records its script's command among the manifest's extras.
    manifest = json.loads((home.run_dir(run_id) / "manifest.json").read_text())
    command = (manifest.get("extras") or {}).get("script_command")
    if not isinstance(command, list) or len(command) < 2:
        raise BenchError(f"run {run_id}: manifest.json's extras have no script_command")
    return [str(part) for part in command]


def resolve_flags(client: DaemonClient, home: Home, algo: str, steps: int, timeout: float) -> list[str]:
    """The script flags the daemon maps the bench's config to, from a dry run's manifest."""
    record, _token = client.submit(run_config(algo, steps, dry_run=True))
    final = client.wait_for_end(record.run_id, timeout)
    if final.state is not RunState.COMPLETED:
        raise BenchError(f"dry run of {algo} ended {final.state.value}: {final.reason}")
    command = script_command(home, record.run_id)
    script = Path(command[1])
    # The raw side runs `-m cleanrl.<algo>`, which is only the same script when it is the bundled one.
    if script.stem != algo or script.parent.name != "cleanrl":
        raise BenchError(f"dry run of {algo} resolved script {script}, not the bundle's cleanrl/{algo}.py")
    return command[2:]


# ------------------------------------------------------------ the two sides


def last_sps(text: str, what: str) -> float:
    found = _SPS_LINE.findall(text)
    if not found:
        raise BenchError(f"{what}: no `SPS:` line in the script's output")
    return float(found[-1])


def run_raw(python: Path, algo: str, flags: list[str], cwd: Path, timeout: float) -> Measure:
    cwd.mkdir(parents=True)
    out_path, err_path = cwd / "stdout.log", cwd / "stderr.log"
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        # The daemon (our child too) is never reaped meanwhile, so RUSAGE_CHILDREN grows by the script alone.
        window = Window(_children_cpu)
        process = subprocess.Popen(
            [str(python), "-m", f"cleanrl.{algo}", *flags],
            cwd=cwd,
            env=worker_env(),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
        )
        try:
            code = process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            raise BenchError(f"raw {algo} did not finish within {timeout:.0f}s") from None
        usage = window.close()
    if code != 0:
        tail = err_path.read_text(errors="replace").strip().splitlines()[-3:]
        raise BenchError(f"raw {algo} exited with code {code}: " + " | ".join(tail))
    sps = last_sps(out_path.read_text(errors="replace"), f"raw {algo} ({cwd})")
    return Measure("raw", algo, sps, usage, str(cwd))


def sps_stored(home: Home, run_id: str, value: float) -> bool:
    """Whether the bridge stored this SPS value as a charts/SPS metric of the run."""
    path = RunDir(home.run_dir(run_id)).telemetry_path
    conn = sqlite3.connect(path.resolve().as_uri() + "?mode=ro", uri=True)
    try:
        row = conn.execute(
            "SELECT 1 FROM metrics WHERE tag = ? AND value = ? LIMIT 1", (SPS_TAG, value)
        ).fetchone()
    finally:
        conn.close()
    return row is not None


def run_gym_gui(
    client: DaemonClient, home: Home, algo: str, steps: int, flags: list[str], timeout: float
) -> Measure:
    daemon_pid = client.info.pid
    # The daemon reaps the worker (which reaped the script) before the run is final, so the
    # daemon's own plus its children's CPU covers the whole gym_gui side, helpers included.
    window = Window(lambda: _tree_cpu(daemon_pid))
    record, _token = client.submit(run_config(algo, steps))
    final = client.wait_for_end(record.run_id, timeout)
    usage = window.close()
    run_id = record.run_id
    if final.state is not RunState.COMPLETED:
        raise BenchError(f"gym_gui {algo} run {run_id} ended {final.state.value}: {final.reason}")
    if script_command(home, run_id)[2:] != flags:
        raise BenchError(f"run {run_id} ran other flags than the raw side: {script_command(home, run_id)}")
    log = home.run_dir(run_id) / "logs" / "worker.stdout.log"
    sps = last_sps(log.read_text(errors="replace"), f"gym_gui {algo} run {run_id}")
    # The same number must have reached telemetry.sqlite, or the bridge is not what was measured.
    if not sps_stored(home, run_id, sps):
        raise BenchError(
            f"run {run_id}: its last SPS line ({sps:.0f}) is not a {SPS_TAG} metric in telemetry.sqlite"
        )
    return Measure("gym_gui", algo, sps, usage, f"run {run_id}")


# ------------------------------------------------------------ main


def _spread(values: list[float]) -> str:
    return f"[{min(values):,.0f}–{max(values):,.0f}]"


def summarise(measures: list[Measure], algos: list[str], steps: int, max_others: float) -> dict[str, float]:
    ratios: dict[str, float] = {}
    for algo in algos:
        raw = [m for m in measures if m.algo == algo and m.side == "raw"]
        gui = [m for m in measures if m.algo == algo and m.side == "gym_gui"]
        raw_sps = statistics.median(m.sps for m in raw)
        gui_sps = statistics.median(m.sps for m in gui)
        ratios[algo] = gui_sps / raw_sps
        disturbed = sum(
            1 for m in raw + gui if m.usage.others_cores is not None and m.usage.others_cores > max_others
        )
        note = f", {disturbed} of them disturbed" if disturbed else ""
        print(
            f"{algo}: median SPS raw {raw_sps:,.0f} {_spread([m.sps for m in raw])}, "
            f"gym_gui {gui_sps:,.0f} {_spread([m.sps for m in gui])}: ratio {ratios[algo]:.3f} "
            f"({len(raw)} runs each{note})"
        )
        raw_wall = statistics.median(m.usage.wall_seconds for m in raw)
        gui_wall = statistics.median(m.usage.wall_seconds for m in gui)
        print(
            f"{algo}: median wall raw {raw_wall:.2f} s (process start→exit), gym_gui {gui_wall:.2f} s "
            f"(submit→COMPLETED) for {steps} steps, {gui_wall - raw_wall:+.2f} s: "
            f"wall steps/s gym_gui/raw {raw_wall / gui_wall:.2f} (not the goal figure)"
        )
        raw_cpu = statistics.median(m.usage.cpu_seconds for m in raw)
        gui_cpu = statistics.median(m.usage.cpu_seconds for m in gui)
        print(
            f"{algo}: median CPU raw {raw_cpu:.2f} s (script), gym_gui {gui_cpu:.2f} s "
            f"(daemon + worker + script): gym_gui adds {gui_cpu - raw_cpu:+.2f} CPU-s per run"
        )
    return ratios


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--steps", type=int, default=20_000, help="total timesteps of every run")
    parser.add_argument("--repeat", type=int, default=3, help="raw/gym_gui pairs per algorithm")
    parser.add_argument("--algos", default="ppo,dqn", help="comma-separated CleanRL scripts")
    parser.add_argument("--bundles", type=Path, default=None, help="directory holding the cleanrl bundle")
    parser.add_argument(
        "--settle",
        type=float,
        default=60.0,
        help="wait up to this long for an idle machine before each run (s)",
    )
    parser.add_argument(
        "--idle-cores", type=float, default=0.3, help="busy cores below which the machine counts as idle"
    )
    parser.add_argument(
        "--max-others",
        type=float,
        default=0.2,
        help="cores other processes may use during a run before it is measured again",
    )
    parser.add_argument("--retries", type=int, default=2, help="extra attempts for a disturbed run")
    parser.add_argument("--timeout", type=float, default=900.0, help="longest one run may take (s)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary GYM_GUI_HOME and raw dirs")
    args = parser.parse_args(argv)
    algos = [a.strip() for a in args.algos.split(",") if a.strip()]
    if args.steps < 1 or args.repeat < 1 or args.retries < 0 or not algos:
        parser.error("--steps and --repeat must be at least 1, --retries 0 or more, --algos not empty")

    try:
        bundles = find_bundles(args.bundles)
    except BenchError as exc:
        print(f"bench cannot run: {exc}", file=sys.stderr)
        return 2
    # The daemon inherits this process's environment: point it at the same bundle.
    os.environ[BUNDLES_ENV_VAR] = str(bundles)
    python = worker_catalog().bundle_directory(bundles).python(BUNDLE)

    home = Home(fresh_home())
    measures: list[Measure] = []
    client = DaemonClient.connect(home.root)
    try:
        print(
            f"daemon {client.info.address} (pid {client.info.pid}), home {home.root}, bundle python {python}, "
            f"OMP_NUM_THREADS={worker_env()['OMP_NUM_THREADS']} (both sides), {os.cpu_count()} CPUs",
            flush=True,
        )
        flags = {algo: resolve_flags(client, home, algo, args.steps, args.timeout) for algo in algos}
        for algo in algos:
            print(f"{algo}: {python} -m cleanrl.{algo} {' '.join(flags[algo])}", flush=True)
        for round_no in range(1, args.repeat + 1):
            raw_first = round_no % 2 == 1
            for algo in algos:
                for side in ("raw", "gym_gui") if raw_first else ("gym_gui", "raw"):
                    attempts: list[Measure] = []
                    for attempt in range(1, args.retries + 2):
                        busy = settle(args.settle, args.idle_cores) if args.settle > 0 else None
                        if busy is not None and busy > args.idle_cores:
                            print(f"  (machine not idle before this run: {busy:.2f} cores busy)", flush=True)
                        if side == "raw":
                            cwd = home.root / "raw" / f"{algo}-{round_no}-{attempt}"
                            m = run_raw(python, algo, flags[algo], cwd, args.timeout)
                        else:
                            m = run_gym_gui(client, home, algo, args.steps, flags[algo], args.timeout)
                        attempts.append(m)
                        label = f"[{round_no}/{args.repeat}]" + (
                            f" retry {attempt - 1}" if attempt > 1 else ""
                        )
                        print(m.line(label, args.steps, args.max_others), flush=True)
                        others = m.usage.others_cores
                        if others is None or others <= args.max_others:
                            break
                    # Chosen by how quiet the machine was, never by SPS, so neither side is favoured.
                    measures.append(min(attempts, key=lambda a: a.usage.others_cores or 0.0))
    except (BenchError, GymGuiError) as exc:
        print(f"bench failed: {exc}", file=sys.stderr)
        return 1
    finally:
        release(client, home.root, args.keep)

    ratios = summarise(measures, algos, args.steps, args.max_others)
    worst = min(ratios, key=lambda algo: ratios[algo])
    each = ", ".join(f"{algo} {ratio:.3f}" for algo, ratio in ratios.items())
    print(f"ratio gym_gui/raw SPS = {ratios[worst]:.2f} (goal >= {GOAL}), from {worst}: the lower of {each}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
