"""CLI latency: `gym-gui runs` on an idle daemon and while runs are being submitted, against the daemon's own ListRuns.

A fresh daemon (temporary GYM_GUI_HOME) holds ``--runs`` finished runs of the ``random`` kind. Each
figure is a median of ``--repeat`` calls, measured in this run:

- ``gym-gui runs``: the command as a user types it (this venv's ``gym-gui``, a process of its own,
  its output piped), from start to exit: start-up, imports, reading daemon.json, connecting, the
  ``ListRuns`` call and the table;
- ``python -c pass``: this interpreter starting and exiting, what any command pays;
- the daemon's own ``ListRuns``: the call on a channel this process holds open (what the daemon
  answers in, with nothing of a client's start);
- ``import gym_gui.cli``: what the command line's own imports cost (informative).

Each command's process keeps compiled modules in a cache in the bench's home (as an installed
gym_gui has them), unless ``--no-bytecode-cache``. Idle: nothing else runs. Under load: a thread
submits ``--load-runs`` runs back to back (each plays ``--load-episodes`` episodes; the daemon starts
as many at once as it has CPUs) while ``gym-gui runs`` and ``python -c pass`` are run ``--repeat``
times each and another thread times the daemon's own ``ListRuns`` every 0.1 s over the same span;
the runs still live are cancelled afterwards.

Printed last, each a ratio against a reference measured in the same run (goal from issue 31: ≤ 2):
``gym-gui runs`` ÷ (``python -c pass`` + the daemon's own ``ListRuns``), idle and under load. Usage::

    .venv/bin/python bench/cli_latency.py [--runs 20] [--repeat 7] [--load-runs 30] [--load-episodes 300]
                                          [--no-bytecode-cache]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from _daemon import fresh_home, release  # bench/ is on sys.path when a bench runs as a script

from gym_gui.core.config import parse_run_config
from gym_gui.core.errors import GymGuiError
from gym_gui.protocol.client import DaemonClient

GOAL = 2.0


class BenchError(RuntimeError):
    """The bench could not measure what it is about."""


def timed(call: Callable[[], object]) -> float:
    started = time.perf_counter()
    call()
    return time.perf_counter() - started


def command(root: Path, *args: str, bytecode: bool = True) -> Callable[[], object]:
    """A call running ``args`` in a process of its own against the home ``root``; a failure stops the bench.

    ``bytecode``: the process reads (and the first one writes) compiled modules from a cache in the
    bench's home, as an installed gym_gui does, even in a shell whose PYTHONDONTWRITEBYTECODE would
    have every module compiled again at each start.
    """
    env = {**os.environ, "GYM_GUI_HOME": str(root)}
    if bytecode:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(root / "pycache")

    def run() -> None:
        done = subprocess.run(list(args), env=env, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise BenchError(f"{' '.join(args)} failed ({done.returncode}): {done.stderr.strip()[-300:]}")

    return run


def random_run(seed: int, episodes: int) -> str:
    return parse_run_config(
        {"worker": "random", "env_id": "FrozenLake-v1", "seed": seed, "budget": {"episodes": episodes}}
    ).model_dump_json()


def fill(client: DaemonClient, runs: int, timeout: float = 600.0) -> None:
    """``runs`` short runs, submitted and waited for until each has ended."""
    ids = [client.submit_json(random_run(seed, 5))[0].run_id for seed in range(runs)]
    for run_id in ids:
        record = client.wait_for_end(run_id, timeout)
        if record.state.value != "COMPLETED":
            raise BenchError(f"run {run_id} ended {record.state.value}: {record.reason}")


def median(samples: list[float]) -> float:
    return statistics.median(samples)


def shown(samples: list[float]) -> str:
    return f"median {median(samples) * 1000:7.1f} ms, max {max(samples) * 1000:7.1f} ms (n={len(samples)})"


def under_load(
    client: DaemonClient,
    root: Path,
    cli: Callable[[], object],
    python: Callable[[], object],
    args: argparse.Namespace,
) -> tuple[list[float], list[float], list[float], int]:
    """``gym-gui runs``, ``python -c pass`` and the daemon's own ListRuns, timed while runs are being
    submitted; and how many were (those still live are cancelled before this returns)."""
    submitted: list[str] = []
    stop = threading.Event()
    own: list[float] = []
    errors: list[BaseException] = []

    def submit() -> None:
        with DaemonClient.connect(root, autostart=False) as submitter:
            try:
                for seed in range(args.load_runs):
                    if stop.is_set():
                        return
                    submitted.append(
                        submitter.submit_json(random_run(1000 + seed, args.load_episodes))[0].run_id
                    )
            except BaseException as exc:  # said by the main thread
                errors.append(exc)

    def sample() -> None:
        while not stop.wait(0.1):
            own.append(timed(client.list_runs))

    submitter = threading.Thread(target=submit, name="submit")
    sampler = threading.Thread(target=sample, name="list-runs")
    submitter.start()
    sampler.start()
    cli_times: list[float] = []
    python_times: list[float] = []
    try:
        while len(submitted) < 1 and submitter.is_alive():  # the load has begun
            time.sleep(0.05)
        for _ in range(args.repeat):
            cli_times.append(timed(cli))
            python_times.append(timed(python))
    finally:
        stop.set()
        submitter.join()
        sampler.join()
        for run_id in submitted:
            try:
                if not client.get_run(run_id).record.state.terminal:
                    client.cancel(run_id)
            except GymGuiError:  # ended meanwhile
                pass
        for run_id in submitted:
            client.wait_for_end(run_id, 120)
    if errors:
        raise BenchError(f"submitting the load failed: {errors[0]}")
    if not own:
        raise BenchError("the daemon's own ListRuns was never timed under load: raise --repeat")
    return cli_times, python_times, own, len(submitted)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=20, help="finished runs the registry holds")
    parser.add_argument("--repeat", type=int, default=7, help="calls per figure (median)")
    parser.add_argument("--load-runs", type=int, default=30, help="runs submitted during the load phase")
    parser.add_argument("--load-episodes", type=int, default=300, help="episodes each load run plays")
    parser.add_argument(
        "--no-bytecode-cache",
        action="store_true",
        help="compile every module at each start, as a shell with PYTHONDONTWRITEBYTECODE=1 does",
    )
    parser.add_argument("--keep", action="store_true", help="keep the temporary GYM_GUI_HOME")
    args = parser.parse_args(argv)
    if min(args.runs, args.repeat, args.load_runs, args.load_episodes) < 1:
        parser.error("--runs, --repeat, --load-runs and --load-episodes must be at least 1")
    gym_gui = Path(sys.executable).with_name("gym-gui")
    if not gym_gui.exists():
        parser.error(f"no gym-gui beside {sys.executable}: run `make install`")

    root = fresh_home()
    client = DaemonClient.connect(root)
    try:
        print(
            f"daemon {client.info.address} (pid {client.info.pid}), home {root}, load {os.getloadavg()[0]:.2f}"
        )
        fill(client, args.runs)
        bytecode = not args.no_bytecode_cache
        cli = command(root, str(gym_gui), "runs", bytecode=bytecode)
        python = command(root, sys.executable, "-c", "pass", bytecode=bytecode)
        imports = command(root, sys.executable, "-c", "import gym_gui.cli", bytecode=bytecode)
        cli()  # the first call compiles the modules and warms the file cache; it is not counted

        # Idle: each figure's calls alternate with the others', so a slow moment weighs on all alike.
        idle: dict[str, list[float]] = {"cli": [], "python": [], "own": [], "imports": []}
        for _ in range(args.repeat):
            idle["cli"].append(timed(cli))
            idle["python"].append(timed(python))
            idle["own"].append(timed(client.list_runs))
            idle["imports"].append(timed(imports))
        print(f"[idle] gym-gui runs           {shown(idle['cli'])}")
        print(f"[idle] python -c pass         {shown(idle['python'])}")
        print(f"[idle] import gym_gui.cli     {shown(idle['imports'])}")
        print(f"[idle] daemon's own ListRuns  {shown(idle['own'])} ({args.runs} runs)")

        load_cli, load_python, load_own, submitted = under_load(client, root, cli, python, args)
        print(f"[load] gym-gui runs           {shown(load_cli)} ({submitted} runs submitted meanwhile)")
        print(f"[load] python -c pass         {shown(load_python)}")
        print(f"[load] daemon's own ListRuns  {shown(load_own)}")
    finally:
        release(client, root, args.keep)

    reference = median(idle["python"]) + median(idle["own"])
    idle_ratio = median(idle["cli"]) / reference
    load_reference = median(load_python) + median(load_own)
    load_ratio = median(load_cli) / load_reference
    print(
        f"ratio idle: gym-gui runs ÷ (python -c pass + the daemon's own ListRuns) = {idle_ratio:.2f} (goal ≤ {GOAL})"
    )
    print(
        f"ratio under load: gym-gui runs ÷ (python -c pass + the daemon's own ListRuns under the same load) "
        f"= {load_ratio:.2f} (goal ≤ {GOAL})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
