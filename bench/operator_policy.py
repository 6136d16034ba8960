"""A CleanRL PPO MLP policy's own time per step, as an operator answers one observation, on this CPU.

Issue 25's goal: a CleanRL MLP policy acts in at most 2 ms a step. A fresh daemon (temporary
GYM_GUI_HOME, the cleanrl bundle) trains PPO on CartPole-v1 briefly; its final model is then loaded
in the bundle's interpreter exactly as the operator process loads it
(``gym_gui_cleanrl_worker.operator.load_operator``, the evaluation's loader), with the environment
the daemon gives a worker (its thread pool sizes, no CUDA). Measured there, in-process (no pipe):

- ours: ``Policy.act`` on one observation, the network's forward pass with its conversions from
  the observation and to the action (``act_batch`` of one);
- reference, in the same process and loop: the same network called as plain torch code would call
  it (``agent.actor(torch.as_tensor(obs).unsqueeze(0)).argmax()`` under ``torch.no_grad``).

Both are timed call by call over the observations of real CartPole episodes, alternately (so a
burst of another process on the shared machine hits both), after a warm-up; the medians are
printed with their 90th percentiles, and last the policy's median as a ratio of the 2 ms budget and
of the plain forward. Usage::

    .venv/bin/python bench/operator_policy.py [--steps 5000] [--train-steps 2048] [--keep]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

from _daemon import fresh_home, release  # bench/ is on sys.path when a bench runs as a script
from cleanrl_overhead import BenchError, find_bundles, worker_env

from gym_gui.core.config import parse_run_config
from gym_gui.core.errors import GymGuiError
from gym_gui.core.states import RunState
from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.home import BUNDLES_ENV_VAR, Home
from gym_gui.workers import worker_catalog

BUDGET_MS = 2.0
MODEL = "checkpoints/final.cleanrl_model"

# Runs in the bundle: argv is the model and the number of timed steps; prints one JSON line.
MEASURE = """
import json, statistics, sys, time
import numpy as np, torch
from gym_gui_cleanrl_worker.operator import load_operator

policy = load_operator(sys.argv[1], "CartPole-v1", "ppo").policy
steps = int(sys.argv[2])
actor = policy.modules["agent"].actor

# Real observations: CartPole episodes played by the policy itself.
observations, obs, seed = [], policy.reset(seed=0), 0
while len(observations) < steps:
    observations.append(np.asarray(obs, dtype=np.float32))
    obs, _, terminated, truncated, _ = policy.step_env(policy.act(obs))
    if terminated or truncated:
        seed += 1
        obs = policy.reset(seed=seed)

def plain(obs):
    with torch.no_grad():
        return int(actor(torch.as_tensor(obs).unsqueeze(0)).argmax())

ours, reference, clock = [], [], time.perf_counter_ns
for obs in observations[:200]:  # warm-up: torch's first calls allocate
    policy.act(obs), plain(obs)
for obs in observations:
    start = clock(); a = policy.act(obs); middle = clock(); b = plain(obs); end = clock()
    if a != b:
        raise SystemExit(f"the policy chose {a} and the plain forward {b} on {obs.tolist()}")
    ours.append(middle - start)
    reference.append(end - middle)

def p90(values):
    return statistics.quantiles(values, n=10)[-1]

print(json.dumps({
    "steps": steps, "episodes": seed + 1, "torch": torch.__version__, "threads": torch.get_num_threads(),
    "ours_ns": statistics.median(ours), "ours_p90_ns": p90(ours),
    "reference_ns": statistics.median(reference), "reference_p90_ns": p90(reference),
}))
"""


def train(client: DaemonClient, steps: int) -> str:
    """A PPO CartPole-v1 model trained for ``steps`` steps: its run's id (its file is ``MODEL`` in the run's
    directory; the run id names it as an operator)."""
    config = parse_run_config(
        {
            "worker": "cleanrl",
            "algorithm": "ppo",
            "env_id": "CartPole-v1",
            "seed": 1,
            "budget": {"timesteps": steps},
            "params": {"num-steps": 256},
            "notes": "bench/operator_policy.py",
        }
    )
    record, _ = client.submit(config)
    final = client.wait_for_end(record.run_id, 900)
    if final.state is not RunState.COMPLETED:
        raise BenchError(f"training run {record.run_id} ended {final.state.value}: {final.reason}")
    return record.run_id


def measure(python: str, model: str, steps: int) -> dict[str, float]:
    result = subprocess.run(
        [python, "-c", MEASURE, model, str(steps)],
        capture_output=True,
        text=True,
        env=worker_env(),
        timeout=1800,
    )
    if result.returncode != 0:
        tail = result.stderr.strip().splitlines()[-3:]
        raise BenchError(f"the measurement failed (exit code {result.returncode}): " + " | ".join(tail))
    return json.loads(result.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--steps", type=int, default=5000, help="timed steps (one observation each)")
    parser.add_argument("--train-steps", type=int, default=2048, help="PPO training steps of the model")
    parser.add_argument("--keep", action="store_true", help="keep the temporary GYM_GUI_HOME")
    args = parser.parse_args(argv)
    if args.steps < 10 or args.train_steps < 256:
        parser.error("--steps must be at least 10 and --train-steps at least 256")
    try:
        bundles = find_bundles(None)
    except BenchError as exc:
        print(f"bench cannot run: {exc}", file=sys.stderr)
        return 2
    os.environ[BUNDLES_ENV_VAR] = str(bundles)  # the daemon trains in the same bundle
    python = str(worker_catalog().bundle_directory(bundles).python("cleanrl"))
    home = Home(fresh_home())
    client = DaemonClient.connect(home.root)
    try:
        model = str(home.run_dir(train(client, args.train_steps)) / MODEL)
        print(
            f"model {model} (PPO, CartPole-v1, {args.train_steps} steps), bundle python {python}", flush=True
        )
        figures = measure(python, model, args.steps)
    except (BenchError, GymGuiError) as exc:
        print(f"bench failed: {exc}", file=sys.stderr)
        return 1
    finally:
        release(client, home.root, args.keep)
    ours, reference = figures["ours_ns"] / 1e6, figures["reference_ns"] / 1e6
    print(
        f"{figures['steps']:.0f} steps over {figures['episodes']:.0f} episodes, torch {figures['torch']}, "
        f"{figures['threads']:.0f} thread(s) (OMP_NUM_THREADS={worker_env().get('OMP_NUM_THREADS', 'unset')})"
    )
    print(f"Policy.act      median {ours * 1000:7.1f} µs, p90 {figures['ours_p90_ns'] / 1000:7.1f} µs")
    print(
        f"plain torch fwd median {reference * 1000:7.1f} µs, p90 {figures['reference_p90_ns'] / 1000:7.1f} µs"
    )
    print(
        f"policy time per step = {ours * 1000:.1f} µs: {ours / BUDGET_MS:.3f} of the {BUDGET_MS:g} ms budget "
        f"(goal <= 1), {ours / reference:.2f}x a plain torch forward of the same network ({reference * 1000:.1f} µs)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
