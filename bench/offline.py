"""The offline lane's speed: issue 26's two ratios, measured in one run and printed last.

- Dataset creation from stored runs ÷ Minari's own ``DataCollector`` recording the same episodes
  (goal ≥ 1.0). A fresh daemon (temporary GYM_GUI_HOME) runs the random worker on CartPole-v1 for
  ``--episodes`` seeded episodes, every step stored. Then, in this process, with Minari imported once
  before either is timed: ours, ``gym_gui.datasets.record_dataset`` writing that run as a dataset
  (reading the stored steps, rebuilding and checking each episode's first observation, Minari's
  ``create_dataset_from_buffers``); the reference, the same episodes recorded the way a Minari user
  records them: ``DataCollector`` over ``gym.make(env)``, reset with each episode's seed and stepped
  with the stored actions, then ``create_dataset``. Both write HDF5 under the same datasets root, and
  the two datasets are checked to hold the same observations, actions and rewards. Each is timed
  ``--repeats`` times, alternately; the medians are printed.
- d3rlpy DiscreteCQL through gym_gui ÷ the same ``fit`` called directly on the same dataset, steps and
  seed (goal ≥ 0.95 of its steps/s, and identical losses): on the DataCollector's dataset of the first
  half, ``--fit-repeats`` runs of each side, alternately (``bench/_d3rlpy_fit.py`` says how each side
  runs). Its worker and the direct fit get the same thread pool sizes (``OMP_NUM_THREADS``,
  ``MKL_NUM_THREADS``, ``OPENBLAS_NUM_THREADS``: the caller's, else 1).

The d3rlpy bundle is looked for where ``make bundles`` installs it (``$GYM_GUI_BUNDLES``, else the
home's ``bundles/``). Usage::

    .venv/bin/python bench/offline.py [--episodes 200] [--repeats 3] [--steps 5000]
        [--steps-per-epoch 1000] [--fit-repeats 5] [--keep]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import warnings
from typing import Any

import numpy as np
from _d3rlpy_fit import ENV_ID, D3rlpyFigures, measure, ratio_lines, report_lines  # bench/ is on sys.path
from _daemon import fresh_home, release
from gym_gui_sdk import THREAD_ENV

from gym_gui.core.config import parse_run_config
from gym_gui.core.errors import GymGuiError
from gym_gui.core.states import RunState
from gym_gui.datasets import DatasetStore, RunSource, record_dataset
from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.home import Home
from gym_gui.storage.run_dir import RunDir
from gym_gui.storage.telemetry import TelemetryReader

COLLECTED = "bench/collector-v0"  # the DataCollector's dataset both d3rlpy sides train on


class BenchError(Exception):
    pass


def stored_run(client: DaemonClient, episodes: int) -> tuple[str, str]:
    config = parse_run_config(
        {
            "worker": "random",
            "env_id": ENV_ID,
            "seed": 0,
            "budget": {"episodes": episodes},
            "notes": "bench/offline.py",
        }
    )
    record, _ = client.submit(config)
    final = client.wait_for_end(record.run_id, 600)
    if final.state is not RunState.COMPLETED:
        raise BenchError(f"run {record.run_id} ended {final.state.value}: {final.reason}")
    return final.run_id, final.run_dir


def stored_episodes(run_dir: str) -> list[tuple[int, list[Any]]]:
    """Each stored episode's seed and actions, as the reference replays them."""
    reader = TelemetryReader(RunDir(run_dir).telemetry_path)
    try:
        return [
            (int(episode.seed), [json.loads(step.action) for step in reader.steps(episode.episode)])
            for episode in reader.episodes()
        ]
    finally:
        reader.close()


def collect(name: str, episodes: list[tuple[int, list[Any]]]) -> None:
    """Minari's own way: a DataCollector stepping the env with the stored actions."""
    import gymnasium as gym
    import minari

    env = minari.DataCollector(gym.make(ENV_ID))
    for seed, actions in episodes:
        env.reset(seed=seed)
        for action in actions:
            env.step(action)
    env.create_dataset(name, algorithm_name="random", author="bench")
    env.close()


def timed(fn: Any) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def same_data(first: str, second: str) -> bool:
    import minari

    a, b = minari.load_dataset(first), minari.load_dataset(second)
    for x, y in zip(a.iterate_episodes(), b.iterate_episodes(), strict=True):
        if not (
            np.array_equal(x.observations, y.observations)
            and np.array_equal(x.actions, y.actions)
            and np.array_equal(x.rewards, y.rewards)
        ):
            return False
    return a.total_steps == b.total_steps


def dataset_half(client: DaemonClient, store: DatasetStore, episodes: int, repeats: int) -> list[str]:
    """Time our dataset creation and the DataCollector's on the same stored run: the lines to print,
    the ratio last. The DataCollector's first dataset stays, as ``COLLECTED``."""
    run_id, run_dir = stored_run(client, episodes)
    store.use_as_minari_root()
    import minari  # noqa: F401 (imported before anything is timed: its seconds are no one's)

    stored = stored_episodes(run_dir)
    steps = sum(len(actions) for _, actions in stored)
    source = RunSource.of(run_id, run_dir)
    ours: list[float] = []
    reference: list[float] = []
    for repeat in range(repeats):
        ours.append(timed(lambda r=repeat: record_dataset(store, f"bench/ours-v{r}", [source])))
        reference.append(timed(lambda r=repeat: collect(f"bench/collector-v{r}", stored)))
    if not same_data("bench/ours-v0", COLLECTED):
        raise BenchError("the two datasets differ: the comparison would mean nothing")
    ours_s, reference_s = statistics.median(ours), statistics.median(reference)
    return [
        f"{len(stored)} episodes, {steps} steps of {ENV_ID}, {repeats} writes each (the same data)",
        f"gym_gui record_dataset   median {ours_s:7.3f} s ({steps / ours_s:9.0f} steps/s)",
        f"Minari DataCollector     median {reference_s:7.3f} s ({steps / reference_s:9.0f} steps/s)",
        f"dataset creation from stored runs / DataCollector recording the same episodes = "
        f"{reference_s / ours_s:.2f}x its speed (goal >= 1.0)",
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--episodes", type=int, default=200, help="episodes of the stored run")
    parser.add_argument("--repeats", type=int, default=3, help="timed dataset writes of each")
    parser.add_argument("--steps", type=int, default=5000, help="gradient steps of each d3rlpy run")
    parser.add_argument("--steps-per-epoch", type=int, default=1000, help="d3rlpy's n_steps_per_epoch")
    parser.add_argument("--fit-repeats", type=int, default=5, help="d3rlpy runs of each side")
    parser.add_argument("--keep", action="store_true", help="keep the temporary GYM_GUI_HOME")
    args = parser.parse_args(argv)
    if min(args.episodes, args.repeats, args.steps, args.fit_repeats) < 1:
        parser.error("--episodes, --repeats, --steps and --fit-repeats must be at least 1")
    if args.steps % args.steps_per_epoch:
        parser.error("--steps must be a whole number of epochs (--steps-per-epoch)")
    # The thread pools the daemon gives its worker, given to the direct fit too: the caller's, else 1.
    threads = os.environ.get("OMP_NUM_THREADS") or "1"
    for name in THREAD_ENV:
        os.environ[name] = os.environ.get(name) or threads
    home = Home(fresh_home())
    os.environ["GYM_GUI_HOME"] = str(home.root)
    client = DaemonClient.connect(home.root)
    warnings.filterwarnings("ignore", category=UserWarning)
    try:
        dataset_lines = dataset_half(client, DatasetStore(home), args.episodes, args.repeats)
        figures: D3rlpyFigures = measure(
            client, home, COLLECTED, args.steps, args.steps_per_epoch, args.fit_repeats
        )
    except (BenchError, GymGuiError, RuntimeError) as exc:
        print(f"bench failed: {exc}", file=sys.stderr)
        return 1
    finally:
        release(client, home.root, args.keep)
    *dataset_report, dataset_ratio = dataset_lines
    print("\n".join([*dataset_report, *report_lines(figures), dataset_ratio, *ratio_lines(figures)]))
    return 0 if figures.identical else 1


if __name__ == "__main__":
    sys.exit(main())
