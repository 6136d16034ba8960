"""Sweep overhead: a sweep of CleanRL PPO trials through gym_gui against the same trials driven by a
plain Optuna script that runs the CleanRL script in subprocesses (what ``cleanrl_utils.tuner`` does).

Both sides: 12 trials of PPO on CartPole-v1 (5k steps, seed 1), 2 at a time, a TPE sampler with
seed 0 over the same space (learning rate on a log range, number of envs among choices, entropy
coefficient on a range), the objective the mean of the last 20 episodic returns, no pruner.

- gym_gui: the spec is started on a daemon of a fresh temporary GYM_GUI_HOME (``--max-concurrent
  2``) before it has answered anything else (its answers about the script, Optuna's storage, the
  zygote: all inside the timing); the wall time runs from StartSweep to the sweep's COMPLETED,
  watched as a window watches it (GetSweep every 0.2 s).
- plain: ``optuna.create_study(sampler=TPESampler(seed=0))``, asked and told by a loop keeping 2
  trials going on a thread pool, each running ``<cleanrl bundle python> -m cleanrl.ppo FLAGS`` in a
  subprocess and reading the returns from its output. (Not ``study.optimize(..., n_jobs=2)``:
  with more than one job Optuna reseeds the sampler at random before every trial, so no seed
  reproduces its parameters.) FLAGS are the daemon's own mapping of
  the config (read from a dry run's manifest, as bench/cleanrl_overhead.py does) plus the trial's
  parameters, and the environment is the one the daemon gives a worker.

Printed: each side's wall time, whether the two sides sampled the same parameters (trial by
trial), and last the ratio plain ÷ gym_gui (goal ≥ 0.95). TPE's first 10 trials are its random
start-up, drawn from the seed alone; later ones depend on the values of the trials complete when
they are asked, so with 2 at a time they match only when the objectives and the order of endings do.

    .venv/bin/python bench/sweep_overhead.py [--trials 12] [--steps 5000] [--parallel 2]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from pathlib import Path
from typing import Any

from _daemon import fresh_home, release  # bench/ is on sys.path when a bench runs as a script
from cleanrl_overhead import BenchError, find_bundles, resolve_flags, worker_env

from gym_gui.core.states import SweepState
from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.home import BUNDLES_ENV_VAR, Home
from gym_gui.sweeps.study import StudyView
from gym_gui.workers import worker_catalog

GOAL = 0.95
SPACE: dict[str, Any] = {
    "learning-rate": {"type": "float", "low": 1e-4, "high": 1e-2, "log": True},
    "num-envs": {"type": "categorical", "choices": [2, 4]},
    "ent-coef": {"type": "float", "low": 0.0, "high": 0.05},
}
WINDOW = 20
_RETURN = re.compile(r"episodic_return=(-?[0-9.eE+-]+)")


def spec(trials: int, steps: int, parallel: int) -> dict[str, Any]:
    return {
        "name": "bench-sweep",
        "config": {
            "worker": "cleanrl",
            "algorithm": "ppo",
            "env_id": "CartPole-v1",
            "seed": 1,
            "budget": {"timesteps": steps},
            "notes": "bench/sweep_overhead.py",
        },
        "space": SPACE,
        "objective": {"metric": "charts/episodic_return", "aggregate": "last_mean", "window": WINDOW},
        "sampler": {"name": "tpe", "seed": 0},
        "trials": trials,
        "parallel": parallel,
    }


def ours(client: DaemonClient, data: dict[str, Any], timeout: float) -> tuple[float, StudyView]:
    began = time.monotonic()
    record = client.start_sweep(json.dumps(data))
    deadline = began + timeout
    while not client.get_sweep(record.sweep_id).record.state.ended:
        if time.monotonic() > deadline:
            raise BenchError(f"sweep {record.sweep_id} did not end within {timeout:.0f}s")
        time.sleep(0.2)
    wall = time.monotonic() - began
    detail = client.get_sweep(record.sweep_id)
    if detail.record.state is not SweepState.COMPLETED:
        raise BenchError(f"sweep {record.sweep_id} ended {detail.record.state}: {detail.record.reason}")
    return wall, StudyView.from_data(detail.study)


def plain(
    python: Path, flags: list[str], data: dict[str, Any], work: Path
) -> tuple[float, list[dict[str, Any]]]:
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    env = worker_env(data["parallel"])  # the daemon runs with --max-concurrent PARALLEL
    space = {
        "learning-rate": optuna.distributions.FloatDistribution(1e-4, 1e-2, log=True),
        "num-envs": optuna.distributions.CategoricalDistribution([2, 4]),
        "ent-coef": optuna.distributions.FloatDistribution(0.0, 0.05),
    }

    def run(number: int, params: dict[str, Any]) -> float:
        cwd = work / f"trial{number}"
        cwd.mkdir(parents=True)
        extra = [item for name, value in params.items() for item in (f"--{name}", str(value))]
        done = subprocess.run(
            [str(python), "-m", "cleanrl.ppo", *flags, *extra],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            start_new_session=True,
            check=False,
        )
        if done.returncode != 0:
            raise BenchError(f"trial {number}: exit {done.returncode}: {done.stderr[-500:]}")
        returns = [float(v) for v in _RETURN.findall(done.stdout)][-WINDOW:]
        if not returns:
            raise BenchError(f"trial {number}: no episodic returns printed")
        return sum(returns) / len(returns)

    study = optuna.create_study(direction="maximize", sampler=optuna.samplers.TPESampler(seed=0))
    began = time.monotonic()
    running: dict[Future[float], optuna.trial.Trial] = {}
    asked = 0
    with ThreadPoolExecutor(max_workers=data["parallel"]) as pool:
        while asked < data["trials"] or running:
            while asked < data["trials"] and len(running) < data["parallel"]:
                trial = study.ask(space)
                running[pool.submit(run, trial.number, trial.params)] = trial
                asked += 1
            finished, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in finished:
                study.tell(running.pop(future), future.result())
    wall = time.monotonic() - began
    return wall, [dict(t.params) for t in sorted(study.trials, key=lambda t: t.number)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=12)
    parser.add_argument("--steps", type=int, default=5000)
    parser.add_argument("--parallel", type=int, default=2)
    parser.add_argument(
        "--bundles", type=Path, default=None, help=f"bundles directory (default: ${BUNDLES_ENV_VAR})"
    )
    parser.add_argument("--timeout", type=float, default=3600)
    parser.add_argument("--keep", action="store_true", help="keep the temporary home")
    args = parser.parse_args()
    try:
        bundles = find_bundles(args.bundles)
        python = worker_catalog().bundle_directory(bundles).python("cleanrl")
        data = spec(args.trials, args.steps, args.parallel)
        root = fresh_home("gym-gui-bench-sweep-")
        os.environ[BUNDLES_ENV_VAR] = str(bundles)
        home = Home(root).ensure()
        client = DaemonClient.connect(home.root, daemon_args=["--max-concurrent", str(args.parallel)])
        try:
            wall_ours, view = ours(client, data, args.timeout)  # first: the daemon has answered nothing yet
            flags = resolve_flags(client, home, "ppo", args.steps, args.timeout)
        finally:
            release(client, root, args.keep)
        with tempfile.TemporaryDirectory(prefix="gym-gui-bench-plain-") as work:
            wall_plain, plain_params = plain(python, flags, data, Path(work))
    except BenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(1)
    ours_params = [dict(t.params) for t in sorted(view.trials, key=lambda t: t.number)]
    same = [a == b for a, b in zip(ours_params, plain_params, strict=True)]
    print(
        f"{args.trials} trials of PPO CartPole-v1, {args.steps} steps, {args.parallel} at a time, TPE seed 0"
    )
    print(f"gym_gui sweep:      {wall_ours:8.1f} s wall")
    print(f"plain Optuna:       {wall_plain:8.1f} s wall")
    first_differs = next((i for i, s in enumerate(same) if not s), None)
    where = (
        "all" if first_differs is None else f"the first {first_differs} alike, trial {first_differs} differs"
    )
    print(
        f"sampled parameters identical: {'yes' if all(same) else 'no'} ({sum(same)}/{len(same)} trials: {where})"
    )
    ratio = wall_plain / wall_ours
    print(f"ratio plain / gym_gui: {ratio:.3f} (goal >= {GOAL})")


if __name__ == "__main__":
    main()
