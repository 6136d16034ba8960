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
manifest.json ("script_command"); every real run's manifest is checked to hold the same. Both get
the environment the daemon gives a worker: the daemon's allow-list taken from this process's
environment (so the caller's OMP_NUM_THREADS and friends, never set here), PYTHONUNBUFFERED and the
SDL dummy drivers as the worker has them, and ``CUDA_VISIBLE_DEVICES=""``.

The goal figure is CleanRL's own throughput, measured identically on both sides: the script's last
``SPS: N`` line (global_step / seconds since the script's ``start_time``, i.e. after its imports
and env creation), read from the raw run's stdout and from the run's ``logs/worker.stdout.log``.
As a second figure (reported, not the goal) it times the whole thing: raw process start to exit
against gym_gui submit to COMPLETED, which adds the daemon's command resolution, the worker's
start-up and the final model save.

Per-run lines, then per algorithm the medians and their ratio are printed; the ratio of the worse
algorithm comes last. Usage::

    .venv/bin/python bench/cleanrl_overhead.py [--steps 20000] [--repeat 3] [--algos ppo,dqn]

The cleanrl bundle is looked for in ``--bundles``, else ``$GYM_GUI_BUNDLES``, else this checkout's
``.bundles`` (where ``make test`` puts it), else the default home's; install it with
``gym-gui bundles install cleanrl``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from gym_gui.core.config import RunConfig, parse_run_config
from gym_gui.core.errors import GymGuiError
from gym_gui.core.states import RunState
from gym_gui.daemon.bundles import BundleManager

# Private, but it is the daemon's own allow-list: importing it keeps the raw side's environment
# equal to the worker's even when the list changes.
from gym_gui.daemon.supervisor import _INHERITED_ENV
from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.home import BUNDLES_ENV_VAR, Home

GOAL = 0.98
BUNDLE = "cleanrl"
ENV_ID = "CartPole-v1"
SEED = 1
SPS_TAG = "charts/SPS"
# CleanRL prints `print("SPS:", int(global_step / (time.time() - start_time)))`.
_SPS_LINE = re.compile(r"^SPS:\s*([0-9]+(?:\.[0-9]*)?)\s*$", re.MULTILINE)
# What the worker process gets from the daemon besides the allow-list (supervisor._worker_env and
# the CleanRL launcher's plan with cuda off), minus gym_gui's own address/token/run variables.
_WORKER_EXTRA_ENV = {
    "PYTHONUNBUFFERED": "1",
    "SDL_VIDEODRIVER": "dummy",
    "SDL_AUDIODRIVER": "dummy",
    "CUDA_VISIBLE_DEVICES": "",
}


class BenchError(RuntimeError):
    """The benchmark cannot report a figure (a run failed, or its output has no SPS line)."""


@dataclass(frozen=True)
class Measure:
    """One run of one side: CleanRL's own last SPS and the wall time around it."""

    side: str  # "raw" | "gym_gui"
    algo: str
    sps: float
    wall_seconds: float
    where: str  # the raw run's directory or the gym_gui run id
    busy_cores: float | None  # whole machine, averaged over the run: shows when others competed

    def line(self, round_no: int, repeat: int, steps: int) -> str:
        return (
            f"[{round_no}/{repeat}] {self.algo:<4} {self.side:<8} SPS {self.sps:>7,.0f}  "
            f"wall {self.wall_seconds:6.2f} s ({steps / self.wall_seconds:>6,.0f} steps/s)  "
            f"machine busy {_cores(self.busy_cores)}  {self.where}"
        )


def _cores(busy: float | None) -> str:
    return "?" if busy is None else f"{busy:.1f}/{os.cpu_count()} cores"


class MachineLoad:
    """CPU cores busy on the whole machine between start and stop (Linux /proc/stat; None elsewhere).

    A run alone uses a steady share of the machine; a much higher figure for one run than its
    twins means something else was competing for the CPUs while it ran, and its SPS is suspect.
    """

    def __init__(self) -> None:
        self._start = self._read()

    @staticmethod
    def _read() -> tuple[int, int] | None:
        try:
            with open("/proc/stat", encoding="ascii") as stat:
                fields = [int(x) for x in stat.readline().split()[1:]]
        except (OSError, ValueError):
            return None
        idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
        return sum(fields) - idle, sum(fields)

    def stop(self) -> float | None:
        end = self._read()
        if self._start is None or end is None or end[1] == self._start[1]:
            return None
        busy, total = end[0] - self._start[0], end[1] - self._start[1]
        return busy / total * (os.cpu_count() or 1)


def settle(limit: float, idle_cores: float) -> float | None:
    """Wait (at most ``limit`` s) until the machine is idle for a whole second; return the busy cores seen last.

    On a shared machine another process's burst during one side's run would decide the ratio; the
    bench cannot stop others, but it can start each run in a quiet moment.
    """
    deadline = time.monotonic() + limit
    while True:
        load = MachineLoad()
        time.sleep(1.0)
        busy = load.stop()
        if busy is None or busy <= idle_cores or time.monotonic() >= deadline:
            return busy


# ------------------------------------------------------------ setup


def find_bundles(explicit: Path | None) -> Path:
    """The bundles directory holding an installed cleanrl bundle.

    Raises:
        BenchError: when none does, saying how to install it.
    """
    candidates: list[Path] = []
    if explicit is not None:
        candidates.append(explicit)
    else:
        shared = os.environ.get(BUNDLES_ENV_VAR)
        if shared:
            candidates.append(Path(shared))
        # make test installs into the checkout's .bundles; most developers have it there.
        candidates.append(Path(__file__).resolve().parent.parent / ".bundles")
        candidates.append(Home().bundles_dir)
    for directory in candidates:
        if BundleManager(directory).installed(BUNDLE):
            return directory.expanduser().resolve()
    looked = ", ".join(str(c) for c in candidates)
    raise BenchError(
        f"the {BUNDLE} bundle is not installed (looked in {looked}); install it with "
        f"`gym-gui bundles install {BUNDLE}` (or pass --bundles DIR / set {BUNDLES_ENV_VAR})"
    )


def worker_env() -> dict[str, str]:
    """The environment the daemon gives a CleanRL worker, without gym_gui's own run variables."""
    env = {key: os.environ[key] for key in _INHERITED_ENV if key in os.environ}
    env.update(_WORKER_EXTRA_ENV)
    return env


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
    manifest = json.loads((home.run_dir(run_id) / "manifest.json").read_text())
    command = manifest.get("script_command")
    if not isinstance(command, list) or len(command) < 2:
        raise BenchError(f"run {run_id}: manifest.json has no script_command")
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


# ------------------------------------------------------------ measuring


def last_sps(text: str, what: str) -> float:
    found = _SPS_LINE.findall(text)
    if not found:
        raise BenchError(f"{what}: no `SPS:` line in the script's output")
    return float(found[-1])


def run_raw(python: Path, algo: str, flags: list[str], root: Path, round_no: int, timeout: float) -> Measure:
    cwd = root / f"raw-{algo}-{round_no}"
    cwd.mkdir(parents=True)
    out_path, err_path = cwd / "stdout.log", cwd / "stderr.log"
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        load = MachineLoad()
        start = time.monotonic()
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
        wall = time.monotonic() - start
        busy = load.stop()
    if code != 0:
        tail = err_path.read_text(errors="replace").strip().splitlines()[-3:]
        raise BenchError(f"raw {algo} exited with code {code}: " + " | ".join(tail))
    sps = last_sps(out_path.read_text(errors="replace"), f"raw {algo} ({cwd})")
    return Measure("raw", algo, sps, wall, str(cwd), busy)


def sps_stored(home: Home, run_id: str, value: float) -> bool:
    """Whether the bridge stored this SPS value as a charts/SPS metric of the run."""
    path = home.telemetry_path(run_id)
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
    load = MachineLoad()
    submitted = time.monotonic()
    record, _token = client.submit(run_config(algo, steps))
    final = client.wait_for_end(record.run_id, timeout)
    wall = time.monotonic() - submitted
    busy = load.stop()
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
    return Measure("gym_gui", algo, sps, wall, f"run {run_id}", busy)


def stop_daemon(client: DaemonClient, timeout: float = 10.0) -> None:
    """Ask the daemon to shut down and wait until its process is gone, so its files can be removed."""
    pid = client.info.pid
    with contextlib.suppress(GymGuiError):
        client.shutdown()
    client.close()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            # DaemonClient.connect started it, so it is our child: reap it (a zombie still "exists").
            if os.waitpid(pid, os.WNOHANG)[0] == pid:
                return
        except ChildProcessError:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return
        time.sleep(0.05)
    print(f"warning: daemon pid {pid} still running {timeout:.0f}s after shutdown", file=sys.stderr)


# ------------------------------------------------------------ main


def _spread(measures: list[Measure]) -> str:
    values = [m.sps for m in measures]
    return f"[{min(values):,.0f}–{max(values):,.0f}]"


def summarise(measures: list[Measure], algos: list[str], steps: int) -> dict[str, float]:
    ratios: dict[str, float] = {}
    for algo in algos:
        raw = [m for m in measures if m.algo == algo and m.side == "raw"]
        gui = [m for m in measures if m.algo == algo and m.side == "gym_gui"]
        raw_sps = statistics.median(m.sps for m in raw)
        gui_sps = statistics.median(m.sps for m in gui)
        raw_wall = statistics.median(m.wall_seconds for m in raw)
        gui_wall = statistics.median(m.wall_seconds for m in gui)
        ratios[algo] = gui_sps / raw_sps
        print(
            f"{algo}: median SPS raw {raw_sps:,.0f} {_spread(raw)}, gym_gui {gui_sps:,.0f} {_spread(gui)}: "
            f"ratio {ratios[algo]:.3f} ({len(raw)} runs each)"
        )
        print(
            f"{algo}: median wall raw {raw_wall:.2f} s (process start→exit), gym_gui {gui_wall:.2f} s "
            f"(submit→COMPLETED) for {steps} steps, {gui_wall - raw_wall:+.2f} s: "
            f"wall steps/s gym_gui/raw {raw_wall / gui_wall:.2f} (not the goal figure)"
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
        default=120.0,
        help="wait up to this long for an idle machine before each run (s)",
    )
    parser.add_argument(
        "--idle-cores", type=float, default=0.3, help="busy cores below which the machine counts as idle"
    )
    parser.add_argument("--timeout", type=float, default=900.0, help="longest one run may take (s)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary GYM_GUI_HOME and raw dirs")
    args = parser.parse_args(argv)
    algos = [a.strip() for a in args.algos.split(",") if a.strip()]
    if args.steps < 1 or args.repeat < 1 or not algos:
        parser.error("--steps and --repeat must be at least 1 and --algos name at least one script")

    try:
        bundles = find_bundles(args.bundles)
    except BenchError as exc:
        print(f"bench cannot run: {exc}", file=sys.stderr)
        return 2
    # The daemon inherits this process's environment: point it at the same bundle.
    os.environ[BUNDLES_ENV_VAR] = str(bundles)
    python = BundleManager(bundles).python(BUNDLE)

    home = Home(Path(tempfile.mkdtemp(prefix="gym-gui-bench-")))
    raw_root = home.root / "raw"
    measures: list[Measure] = []
    client = DaemonClient.connect(home.root)
    try:
        print(
            f"daemon {client.info.address} (pid {client.info.pid}), home {home.root}, bundle python {python}, "
            f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', '(unset)')}, {os.cpu_count()} CPUs",
            flush=True,
        )
        flags = {algo: resolve_flags(client, home, algo, args.steps, args.timeout) for algo in algos}
        for algo in algos:
            print(f"{algo}: {python} -m cleanrl.{algo} {' '.join(flags[algo])}", flush=True)
        for round_no in range(1, args.repeat + 1):
            raw_first = round_no % 2 == 1
            for algo in algos:
                for side in ("raw", "gym_gui") if raw_first else ("gym_gui", "raw"):
                    busy = settle(args.settle, args.idle_cores) if args.settle > 0 else None
                    if busy is not None and busy > args.idle_cores:
                        print(f"  (machine still busy before this run: {_cores(busy)})", flush=True)
                    if side == "raw":
                        m = run_raw(python, algo, flags[algo], raw_root, round_no, args.timeout)
                    else:
                        m = run_gym_gui(client, home, algo, args.steps, flags[algo], args.timeout)
                    measures.append(m)
                    print(m.line(round_no, args.repeat, args.steps), flush=True)
    except (BenchError, GymGuiError) as exc:
        print(f"bench failed: {exc}", file=sys.stderr)
        return 1
    finally:
        stop_daemon(client)
        if args.keep:
            print(f"kept {home.root}")
        else:
            shutil.rmtree(home.root, ignore_errors=True)

    ratios = summarise(measures, algos, args.steps)
    worst = min(ratios, key=lambda algo: ratios[algo])
    each = ", ".join(f"{algo} {ratio:.3f}" for algo, ratio in ratios.items())
    print(f"ratio gym_gui/raw SPS = {ratios[worst]:.2f} (goal >= {GOAL}), from {worst}: the lower of {each}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
