"""Evaluation batch overhead: four operators through gym_gui vs the same policies in a plain loop.

Operators (issue 25): random on CartPole-v1, a CleanRL PPO MLP on CartPole-v1 (trained first, in this
run: ``--ppo-steps`` steps, seed 1), a Spade BDI Q-table on FrozenLake-v1 4x4 (trained first: fast
mode, ``--bdi-episodes`` episodes) and random on CartPole-v1 again; ``--episodes`` episodes each,
procedural seeds from 0.

- gym_gui: ``EvaluationBatch`` on CartPole-v1 with random, ppo and random, then one on FrozenLake-v1
  with the Q-table, on a daemon of a fresh temporary home; timed from before the batch starts the
  operators' processes (models loaded inside the timing) until every run has ended, every step
  stored.
- plain: each operator's episodes one step at a time, storing nothing: random and the Q-table in
  this process (the same envs, seeded per episode as the batch seeds them), PPO in the cleanrl
  bundle's interpreter (``load_policy`` then ``Policy.act`` on a plain gymnasium env), timed from
  starting that interpreter until it exits.

Printed: each side's steps and seconds, whether both sides played the same episodes, the CleanRL
policy's own time per step (``bench/operator_policy.py``'s measure: single observations, in its
interpreter) against its 2 ms budget and a plain torch forward, then hybrid play in the window
(``bench/hybrid_gui.py --json``, run in a subprocess once the batch's daemon is gone: its figures and
its summary line), and last the ratio plain ÷ gym_gui (goal ≥ 0.8).

    .venv/bin/python bench/arena.py [--episodes 200] [--ppo-steps 20000] [--bdi-episodes 3000]
                                    [--hybrid-seconds 20] [--keep]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from _daemon import fresh_home, release  # bench/ is on sys.path when a bench runs as a script
from cleanrl_overhead import BenchError, find_bundles, worker_env
from operator_policy import measure

from gym_gui.core.config import parse_run_config
from gym_gui.core.states import RunState
from gym_gui.play.batch import EvaluationBatch, OperatorResult
from gym_gui.play.operators import Operators
from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.home import BUNDLES_ENV_VAR, Home
from gym_gui.storage.run_dir import RunDir
from gym_gui.workers import worker_catalog

GOAL = 0.8
HYBRID_BENCH = Path(__file__).with_name("hybrid_gui.py")
POLICY_BUDGET_MS = 2.0
CARTPOLE = "CartPole-v1"
FROZENLAKE = "FrozenLake-v1"

PLAIN_PPO = textwrap.dedent(
    """
    import json, sys
    import gymnasium as gym
    from gym_gui_cleanrl_worker.evaluate import load_policy

    model, env_id, episodes = sys.argv[1], sys.argv[2], int(sys.argv[3])
    policy = load_policy(model, env_id, "ppo")
    env = gym.make(env_id)
    steps, returns = 0, []
    for episode in range(episodes):
        obs, _ = env.reset(seed=episode)
        total, done = 0.0, False
        while not done:
            obs, reward, terminated, truncated, _ = env.step(policy.act(obs))
            total += float(reward)
            steps += 1
            done = terminated or truncated
        returns.append(total)
    print(json.dumps({"steps": steps, "returns": returns}))
    """
)


def train(client: DaemonClient, config: dict[str, Any]) -> str:
    record, _ = client.submit(parse_run_config(config))
    final = client.wait_for_end(record.run_id, 3600)
    if final.state is not RunState.COMPLETED:
        raise BenchError(f"training run {record.run_id} ended {final.state.value}: {final.reason}")
    return record.run_id


def plain_episodes(
    env_id: str, episodes: int, policy: Callable[[Any, int], Callable[[Any], Any]]
) -> tuple[int, list[float]]:
    """Episodes one step at a time, storing nothing; ``policy(env, seed)`` gives an episode's actor."""
    env = gym.make(env_id)
    steps, returns = 0, []
    for episode in range(episodes):
        obs, _ = env.reset(seed=episode)
        act = policy(env, episode)
        total, done = 0.0, False
        while not done:
            obs, reward, terminated, truncated, _ = env.step(act(obs))
            total += float(reward)
            steps += 1
            done = terminated or truncated
        returns.append(total)
    return steps, returns


def plain_random(env_id: str, episodes: int) -> tuple[int, list[float]]:
    def begin(env: Any, seed: int) -> Callable[[Any], Any]:
        env.action_space.seed(seed)
        return lambda _obs: env.action_space.sample()

    return plain_episodes(env_id, episodes, begin)


def plain_q_table(path: Path, env_id: str, episodes: int) -> tuple[int, list[float]]:
    q = np.asarray(json.loads(path.read_text())["q"], dtype=np.float64).tolist()

    def begin(env: Any, seed: int) -> Callable[[Any], Any]:
        rng = random.Random(seed)

        def greedy(state: Any) -> int:
            row = q[state]
            best = max(row)
            ties = [a for a, v in enumerate(row) if v == best]
            return ties[0] if len(ties) == 1 else ties[rng.randrange(len(ties))]

        return greedy

    return plain_episodes(env_id, episodes, begin)


def plain_ppo(python: Path, model: Path, episodes: int) -> tuple[int, list[float]]:
    done = subprocess.run(
        [str(python), "-c", PLAIN_PPO, str(model), CARTPOLE, str(episodes)],
        capture_output=True,
        text=True,
        env=worker_env(1),
        timeout=3600,
        check=False,
    )
    if done.returncode != 0:
        raise BenchError(f"the plain PPO loop failed: {done.stderr.strip().splitlines()[-1:]}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    return int(result["steps"]), list(result["returns"])


def model_file(home: Home, run_id: str) -> Path:
    files = RunDir(home.run_dir(run_id))
    models = [m for m in files.models() if m.kind == "model"] or files.models()
    path = files.artifact_path(models[-1].path)
    if path is None:
        raise BenchError(f"run {run_id} has no model")
    return path


def steps_of(result: OperatorResult) -> int:
    if result.error:
        raise BenchError(f"operator {result.name} failed: {result.error}")
    return sum(e.length for e in result.episodes)


def hybrid_lines(bundles: Path, seconds: float) -> list[str]:
    """Hybrid play in the window, ``bench/hybrid_gui.py`` run in a subprocess: its figures' lines and its
    summary (a line saying why when it failed)."""
    with tempfile.TemporaryDirectory(prefix="gym-gui-bench-arena-") as folder:
        figures = Path(folder) / "hybrid.json"
        argv = [sys.executable, str(HYBRID_BENCH), "--json", str(figures), "--seconds", str(seconds)]
        done = subprocess.run(
            [*argv, "--bundles", str(bundles)], capture_output=True, text=True, timeout=3600, check=False
        )
        if done.returncode != 0 or not figures.exists():
            tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
            return [f"hybrid in the window: bench/hybrid_gui.py failed (exit code {done.returncode}): {tail}"]
        document = json.loads(figures.read_text())
    return [figure["line"] for figure in [*document["references"], *document["cases"]]] + [
        document["summary"]
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=200)
    parser.add_argument("--ppo-steps", type=int, default=20_000)
    parser.add_argument("--bdi-episodes", type=int, default=3000)
    parser.add_argument("--hybrid-seconds", type=float, default=20.0, help="each hybrid measurement (s)")
    parser.add_argument("--bundles", type=Path, default=None)
    parser.add_argument("--keep", action="store_true")
    options = parser.parse_args(argv)
    bundles = find_bundles(options.bundles)
    root = fresh_home("gym-gui-bench-arena-")
    home = Home(root)
    os.environ[BUNDLES_ENV_VAR] = str(bundles)
    client = DaemonClient.connect(root, daemon_args=["--max-concurrent", "2"])
    try:
        print("training the operators…", file=sys.stderr)
        ppo = train(
            client,
            {
                "worker": "cleanrl",
                "algorithm": "ppo",
                "env_id": CARTPOLE,
                "seed": 1,
                "budget": {"timesteps": options.ppo_steps},
            },
        )
        table = train(
            client,
            {
                "worker": "spade_bdi",
                "env_id": FROZENLAKE,
                "seed": 1,
                "budget": {"episodes": options.bdi_episodes},
                "params": {"mode": "fast"},
            },
        )
        catalog = Operators(home, worker_catalog(), client.list_runs)
        episodes = options.episodes
        start = time.perf_counter()
        cartpole = EvaluationBatch(
            client,
            [catalog.choose(name, CARTPOLE) for name in ("random", ppo, "random")],
            CARTPOLE,
            episodes,
            0,
        ).run()
        cartpole_seconds = time.perf_counter() - start
        frozen = EvaluationBatch(client, [catalog.choose(table, FROZENLAKE)], FROZENLAKE, episodes, 0).run()
        through = time.perf_counter() - start
        results = [*cartpole, *frozen]
        gym_steps = [steps_of(result) for result in results]

        start = time.perf_counter()
        random_steps, random_returns = plain_random(CARTPOLE, episodes)
        python = worker_catalog().bundle_directory(bundles).python("cleanrl")
        ppo_start = time.perf_counter()
        ppo_steps, ppo_returns = plain_ppo(python, model_file(home, ppo), episodes)
        ppo_seconds = time.perf_counter() - ppo_start
        again_steps, _ = plain_random(CARTPOLE, episodes)
        q_start = time.perf_counter()
        q_steps, q_returns = plain_q_table(model_file(home, table), FROZENLAKE, episodes)
        q_seconds = time.perf_counter() - q_start
        plain = time.perf_counter() - start
        plain_steps = [random_steps, ppo_steps, again_steps, q_steps]
        policy = measure(str(python), str(model_file(home, ppo)), 3000)
    finally:
        release(client, root, options.keep)
    hybrid = hybrid_lines(bundles, options.hybrid_seconds)

    same = [
        [e.total_reward for e in result.episodes] == returns
        for result, returns in zip(
            results, [random_returns, ppo_returns, random_returns, q_returns], strict=True
        )
    ]
    for result, steps, reference, equal in zip(results, gym_steps, plain_steps, same, strict=True):
        print(
            f"{result.name:>28}: {steps:>7} steps through gym_gui, {reference:>7} plain; same episodes: {'yes' if equal else 'NO'}"
        )
    print(
        f"through gym_gui: {sum(gym_steps)} steps in {through:.2f} s ({sum(gym_steps) / through:,.0f} steps/s)"
    )
    print(
        f"  CartPole-v1 batch {cartpole_seconds:.2f} s, FrozenLake-v1 batch {through - cartpole_seconds:.2f} s; "
        f"plain: PPO {ppo_seconds:.2f} s (its interpreter's start and the model's load in it), "
        f"Q-table {q_seconds:.2f} s, random {plain - ppo_seconds - q_seconds:.2f} s"
    )
    print(
        f"plain loops:     {sum(plain_steps)} steps in {plain:.2f} s ({sum(plain_steps) / plain:,.0f} steps/s)"
    )
    act_ms, forward_ms = policy["ours_ns"] / 1e6, policy["reference_ns"] / 1e6
    print(
        f"CleanRL PPO MLP policy's own time per step: {act_ms * 1000:.1f} µs = {act_ms / POLICY_BUDGET_MS:.3f} "
        f"of the {POLICY_BUDGET_MS:g} ms budget, {act_ms / forward_ms:.2f}x a plain torch forward"
    )
    print("\n".join(hybrid))
    ratio = (sum(gym_steps) / through) / (sum(plain_steps) / plain)
    print(f"batch ÷ plain (steps/s): {ratio:.3f} (goal ≥ {GOAL})")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)
