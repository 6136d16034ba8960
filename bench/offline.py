"""The offline lane's speed: writing stored runs as a Minari dataset, against Minari's own DataCollector.

Issue 26's goal: dataset creation from stored runs ÷ Minari's own ``DataCollector`` recording the
same episodes ≥ 1.0. A fresh daemon (temporary GYM_GUI_HOME) runs the random worker on CartPole-v1
for ``--episodes`` seeded episodes, every step stored. Then, in this process, with Minari imported
once before either is timed:

- ours: ``gym_gui.datasets.record_dataset`` writing that run as a dataset (reading the stored steps,
  rebuilding and checking each episode's first observation, Minari's ``create_dataset_from_buffers``);
- reference: the same episodes recorded the way a Minari user records them: ``DataCollector`` over
  ``gym.make(env)``, reset with each episode's seed and stepped with the stored actions, then
  ``create_dataset``.

Both write HDF5 under the same datasets root, and the two datasets are checked to hold the same
observations, actions and rewards. Each is timed ``--repeats`` times, alternately; the medians are
printed, and last the ratio (goal ≥ 1). Usage::

    .venv/bin/python bench/offline.py [--episodes 200] [--repeats 3] [--keep]
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
from _daemon import fresh_home, release  # bench/ is on sys.path when a bench runs as a script

from gym_gui.core.config import parse_run_config
from gym_gui.core.errors import GymGuiError
from gym_gui.core.states import RunState
from gym_gui.datasets import DatasetStore, RunSource, record_dataset
from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.home import Home
from gym_gui.storage.run_dir import RunDir
from gym_gui.storage.telemetry import TelemetryReader

ENV_ID = "CartPole-v1"


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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--episodes", type=int, default=200, help="episodes of the stored run")
    parser.add_argument("--repeats", type=int, default=3, help="timed writes of each")
    parser.add_argument("--keep", action="store_true", help="keep the temporary GYM_GUI_HOME")
    args = parser.parse_args(argv)
    if args.episodes < 1 or args.repeats < 1:
        parser.error("--episodes and --repeats must be at least 1")
    home = Home(fresh_home())
    os.environ["GYM_GUI_HOME"] = str(home.root)
    client = DaemonClient.connect(home.root)
    try:
        run_id, run_dir = stored_run(client, args.episodes)
        store = DatasetStore(home)
        store.use_as_minari_root()
        import minari  # noqa: F401 (imported before anything is timed: its seconds are no one's)

        warnings.filterwarnings("ignore", category=UserWarning)
        episodes = stored_episodes(run_dir)
        steps = sum(len(actions) for _, actions in episodes)
        source = RunSource.of(run_id, run_dir)
        ours: list[float] = []
        reference: list[float] = []
        for repeat in range(args.repeats):
            ours.append(timed(lambda r=repeat: record_dataset(store, f"bench/ours-v{r}", [source])))
            reference.append(timed(lambda r=repeat: collect(f"bench/collector-v{r}", episodes)))
        if not same_data("bench/ours-v0", "bench/collector-v0"):
            raise BenchError("the two datasets differ: the comparison would mean nothing")
    except (BenchError, GymGuiError) as exc:
        print(f"bench failed: {exc}", file=sys.stderr)
        return 1
    finally:
        release(client, home.root, args.keep)
    ours_s, reference_s = statistics.median(ours), statistics.median(reference)
    print(f"{len(episodes)} episodes, {steps} steps of {ENV_ID}, {args.repeats} writes each (the same data)")
    print(f"gym_gui record_dataset   median {ours_s:7.3f} s ({steps / ours_s:9.0f} steps/s)")
    print(f"Minari DataCollector     median {reference_s:7.3f} s ({steps / reference_s:9.0f} steps/s)")
    print(
        f"dataset creation from stored runs / DataCollector recording the same episodes = "
        f"{reference_s / ours_s:.2f}x its speed (goal >= 1.0)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
