"""The offline lane's d3rlpy half: DiscreteCQL trained through gym_gui against the same ``fit`` called directly.

Issue 26's goal: d3rlpy DiscreteCQL through gym_gui ÷ the same ``fit`` called directly on the same
dataset, steps and seed ≥ 0.95 of its steps/s, with identical losses. A fresh daemon (temporary
GYM_GUI_HOME) and a CartPole dataset of ``--episodes`` random episodes recorded by Minari's own
DataCollector in its datasets root; then, alternately ``--repeats`` times:

- gym_gui: a ``d3rlpy`` run (``discrete_cql``, ``--steps`` gradient steps, seed 1, epochs of
  ``--steps-per-epoch``, no evaluators) submitted to the daemon; its worker loads the dataset,
  seeds d3rlpy and calls ``fit`` with d3rlpy's TensorBoard adapter and gym_gui's metric adapter, its
  per-step callback (pause, stop, checkpoints) and saves the final model. Its figure is the worker's
  own ``time/steps_per_second`` (gradient steps over the seconds ``fit`` took);
- direct: the d3rlpy bundle's interpreter running this file with ``--direct``: the same dataset
  (the worker's own Minari → MDPDataset conversion), ``d3rlpy.seed``, ``DiscreteCQLConfig().create()``
  and ``fit`` with nothing logged (d3rlpy's ``NoopAdapterFactory``, no progress bar): the strictest
  reference (d3rlpy's default file logger also saves the model every epoch, which costs more than
  gym_gui's logging). Timed from ``fit``'s call, which builds the networks, to its end.

Both get the same thread pool sizes (``OMP_NUM_THREADS``, ``MKL_NUM_THREADS``, ``OPENBLAS_NUM_THREADS``:
the caller's, else 1). Every epoch's losses
(loss, td_loss, conservative_loss: d3rlpy's epoch means) of each gym_gui run are compared with the
direct run's for equality. Per-run lines, then the medians and, last, the ratios. Usage::

    .venv/bin/python bench/offline_d3rlpy.py [--steps 5000] [--steps-per-epoch 1000] [--repeats 5]

Others call :func:`measure` (bench/offline.py prints its :func:`ratio_lines` last). The d3rlpy bundle
is looked for where ``make bundles`` installs it (``$GYM_GUI_BUNDLES``, else the home's ``bundles/``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ALGORITHM = "discrete_cql"
DATASET = "bench/cartpole-random-v0"
ENV_ID = "CartPole-v1"
SEED = 1
LOSSES = ("loss", "td_loss", "conservative_loss")
GOAL = 0.95


@dataclass
class D3rlpyFigures:
    """What :func:`measure` found: each side's steps/s per repeat and whether every epoch's losses agreed."""

    steps: int
    dataset_steps: int
    gym_gui: list[float] = field(default_factory=list)
    direct: list[float] = field(default_factory=list)
    gym_gui_wall: list[float] = field(default_factory=list)  # submit → COMPLETED, seconds
    identical: bool = True
    difference: str = ""  # the first loss that differed

    @property
    def ratio(self) -> float:
        return statistics.median(self.gym_gui) / statistics.median(self.direct)


# ---------------------------------------------------------------- the direct side (in the d3rlpy bundle)


def direct_fit(dataset: str, steps: int, steps_per_epoch: int) -> dict[str, Any]:
    """d3rlpy's fit called directly, logging nothing, on the dataset gym_gui's worker reads (its conversion)."""
    import d3rlpy
    from gym_gui_d3rlpy_worker.dataset import load

    data = load(dataset)
    d3rlpy.seed(SEED)
    algo = d3rlpy.algos.DiscreteCQLConfig().create(device="cpu:0")
    start = time.perf_counter()
    results = algo.fit(
        data.mdp,
        n_steps=steps,
        n_steps_per_epoch=steps_per_epoch,
        logger_adapter=d3rlpy.logging.NoopAdapterFactory(),
        show_progress=False,
    )
    elapsed = time.perf_counter() - start
    return {
        "steps_per_second": steps / elapsed,
        "losses": [
            [epoch * steps_per_epoch, {name: metrics[name] for name in LOSSES}] for epoch, metrics in results
        ],
    }


# ---------------------------------------------------------------- the orchestration (gym_gui's venv)


def _collect_dataset(episodes: int) -> int:
    """A CartPole dataset of random play, recorded by Minari's DataCollector under MINARI_DATASETS_PATH."""
    import random

    import gymnasium as gym
    import minari

    rng = random.Random(0)
    env = minari.DataCollector(gym.make(ENV_ID))
    for episode in range(episodes):
        env.reset(seed=episode)
        done = False
        while not done:
            _, _, terminated, truncated, _ = env.step(rng.randrange(2))
            done = terminated or truncated
    dataset = env.create_dataset(dataset_id=DATASET, algorithm_name="random", author="bench")
    env.close()
    return int(dataset.total_steps)


def _through_gym_gui(
    client: Any, home: Any, steps: int, steps_per_epoch: int
) -> tuple[float, float, list[Any]]:
    from gym_gui.core.config import parse_run_config
    from gym_gui.core.states import RunState
    from gym_gui.storage.run_dir import RunDir
    from gym_gui.storage.telemetry import TelemetryReader

    config = parse_run_config(
        {
            "worker": "d3rlpy",
            "algorithm": ALGORITHM,
            "env_id": ENV_ID,
            "dataset": DATASET,
            "seed": SEED,
            "budget": {"timesteps": steps},
            "params": {"steps_per_epoch": steps_per_epoch, "eval_episodes": 0, "td_error_episodes": 0},
            "notes": "bench/offline_d3rlpy.py",
        }
    )
    start = time.perf_counter()
    record, _ = client.submit(config)
    final = client.wait_for_end(record.run_id, 3600)
    wall = time.perf_counter() - start
    if final.state is not RunState.COMPLETED:
        raise RuntimeError(f"run {record.run_id} ended {final.state.value}: {final.reason}")
    reader = TelemetryReader(RunDir(home.run_dir(record.run_id)).telemetry_path)
    try:
        rate = reader.metrics("time/steps_per_second")[-1].value
        by_tag = {name: {p.step: p.value for p in reader.metrics(f"losses/{name}")} for name in LOSSES}
    finally:
        reader.close()
    epochs = sorted(by_tag["loss"])
    losses = [[step, {name: by_tag[name][step] for name in LOSSES}] for step in epochs]
    return rate, wall, losses


def _direct(python: Path, env: dict[str, str], steps: int, steps_per_epoch: int) -> dict[str, Any]:
    command = [
        str(python),
        __file__,
        "--direct",
        "--steps",
        str(steps),
        "--steps-per-epoch",
        str(steps_per_epoch),
    ]
    result = subprocess.run(
        command,
        capture_output=True,
        text=True,
        env=env,
        timeout=3600,
        check=False,
    )
    lines = result.stdout.strip().splitlines()
    if result.returncode != 0 or not lines:
        raise RuntimeError(f"the direct fit failed (exit code {result.returncode}): {result.stderr[-2000:]}")
    answer: dict[str, Any] = json.loads(lines[-1])
    return answer


def _first_difference(ours: list[Any], theirs: list[Any]) -> str:
    if [step for step, _ in ours] != [step for step, _ in theirs]:
        return f"epochs at steps {[s for s, _ in ours]} through gym_gui, {[s for s, _ in theirs]} directly"
    for (step, mine), (_, direct) in zip(ours, theirs, strict=True):
        for name in LOSSES:
            if mine[name] != direct[name]:
                return f"{name} at step {step}: {mine[name]!r} through gym_gui, {direct[name]!r} directly"
    return ""


def measure(
    steps: int = 5000, steps_per_epoch: int = 1000, repeats: int = 5, episodes: int = 100
) -> D3rlpyFigures:
    """Run the comparison (a fresh home and daemon; the d3rlpy bundle from ``$GYM_GUI_BUNDLES``)."""
    sys.path.insert(0, str(Path(__file__).parent))
    from _daemon import fresh_home, release  # bench/ on the path: the shared bench helpers
    from gym_gui_sdk import THREAD_ENV

    from gym_gui.protocol.client import DaemonClient
    from gym_gui.storage.home import Home
    from gym_gui.workers import worker_catalog

    # The thread pools the daemon gives its worker, given to the direct fit too: the caller's, else 1.
    threads = os.environ.get("OMP_NUM_THREADS") or "1"
    for name in THREAD_ENV:
        os.environ[name] = os.environ.get(name) or threads
    home = Home(fresh_home())
    os.environ["GYM_GUI_HOME"] = str(home.root)
    bundles = worker_catalog().bundle_directory(home.bundles_dir)
    if not bundles.installed("d3rlpy"):
        raise RuntimeError("the d3rlpy bundle is not installed: run `gym-gui bundles install d3rlpy`")
    python = bundles.python("d3rlpy")
    home.datasets_dir.mkdir(parents=True, exist_ok=True)
    os.environ["MINARI_DATASETS_PATH"] = str(home.datasets_dir)
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}
    client = DaemonClient.connect(home.root)
    try:
        import warnings

        warnings.filterwarnings("ignore", category=UserWarning)
        figures = D3rlpyFigures(steps=steps, dataset_steps=_collect_dataset(episodes))
        for repeat in range(repeats):
            # Alternate who goes first, so the machine's drift favours neither side.
            order = ("direct", "gym_gui") if repeat % 2 == 0 else ("gym_gui", "direct")
            for side in order:
                if side == "direct":
                    answer = _direct(python, env, steps, steps_per_epoch)
                    figures.direct.append(float(answer["steps_per_second"]))
                    direct_losses = answer["losses"]
                    print(f"direct   #{repeat}: {figures.direct[-1]:8.1f} steps/s", flush=True)
                else:
                    rate, wall, ours = _through_gym_gui(client, home, steps, steps_per_epoch)
                    figures.gym_gui.append(rate)
                    figures.gym_gui_wall.append(wall)
                    print(f"gym_gui  #{repeat}: {rate:8.1f} steps/s (submit to end {wall:.1f} s)", flush=True)
            difference = _first_difference(ours, direct_losses)
            if difference and figures.identical:
                figures.identical, figures.difference = False, difference
    finally:
        release(client, home.root, keep=False)
    return figures


def report_lines(figures: D3rlpyFigures) -> list[str]:
    """The medians of each side."""
    return [
        f"d3rlpy {ALGORITHM}: {figures.steps} gradient steps on {figures.dataset_steps} dataset steps, "
        f"seed {SEED}, {len(figures.gym_gui)} runs each",
        f"through gym_gui   median {statistics.median(figures.gym_gui):8.1f} steps/s "
        f"(submit to end {statistics.median(figures.gym_gui_wall):.1f} s)",
        f"fit called direct median {statistics.median(figures.direct):8.1f} steps/s",
    ]


def ratio_lines(figures: D3rlpyFigures) -> list[str]:
    """The ratios, printed last: steps/s through gym_gui ÷ direct, and whether the losses were identical."""
    losses = "identical" if figures.identical else f"DIFFER ({figures.difference})"
    return [
        f"d3rlpy DiscreteCQL through gym_gui / fit called directly = {figures.ratio:.3f} of its steps/s "
        f"(goal >= {GOAL})",
        f"d3rlpy DiscreteCQL losses through gym_gui vs directly: {losses} (every epoch of every run)",
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--steps", type=int, default=5000, help="gradient steps of each run")
    parser.add_argument("--steps-per-epoch", type=int, default=1000, help="d3rlpy's n_steps_per_epoch")
    parser.add_argument("--repeats", type=int, default=5, help="runs of each side")
    parser.add_argument("--episodes", type=int, default=100, help="random CartPole episodes in the dataset")
    parser.add_argument("--direct", action="store_true", help=argparse.SUPPRESS)  # the bundle's side
    args = parser.parse_args(argv)
    if args.direct:
        print(json.dumps(direct_fit(DATASET, args.steps, args.steps_per_epoch)))
        return 0
    if args.steps < 1 or args.repeats < 1 or args.steps % args.steps_per_epoch:
        parser.error("--steps must be a whole number of epochs (--steps-per-epoch), --repeats at least 1")
    try:
        figures = measure(args.steps, args.steps_per_epoch, args.repeats, args.episodes)
    except RuntimeError as exc:
        print(f"bench failed: {exc}", file=sys.stderr)
        return 1
    print("\n".join([*report_lines(figures), *ratio_lines(figures)]))
    return 0 if figures.identical else 1


if __name__ == "__main__":
    sys.exit(main())
