"""Environment families: stepping one env of each installed family through gym_gui's random worker, every
step stored, against the same env stepped in a plain loop.

Plain: ``gymnasium.make(env)`` in this process, random actions (``action_space.sample()``, seeded),
reset at each episode end, for ``N`` steps. Ours: a random-worker run of ``N`` steps (budget
``timesteps``) through a fresh daemon (temporary GYM_GUI_HOME) at the default render rate, every
step stored in the run's SQLite; its time is the run's RUNNING span (the worker's first step to the
run's end, the stream drained into SQLite). ``N`` is chosen per env so the plain loop takes about
``--seconds``. The run must hold all ``N`` steps, or the bench fails.

Both are measured alternately ``--repeat`` times; the medians and their ratio (ours steps/s ÷ plain
steps/s) are printed, one line per family, last. The goal (>= 0.8) applies where the env itself costs
at least 50 µs a step (Atari, MuJoCo): below that, the per-step cost of storing a step dominates.

Then, when Atari is installed, a person's play of Breakout and Pong in the window's Human view (as
bench/hybrid_gui.py measures it: held keys from a person who follows the ball, the view's clock at the
game's 60 frames a second, a frame a step): steps shown a second ÷ 60 (goal >= 0.95) and the event
loop's stall p99 (goal <= 16 ms), against the empty view's. Usage::

    .venv/bin/python bench/envs.py [--families atari mujoco ...] [--seconds 3] [--repeat 3] [--play-seconds 15]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

from _daemon import fresh_home, release, running_seconds, stored_steps  # bench/ is on sys.path
from hybrid_gui import BREAKOUT, GOAL_P99_MS, GOAL_RATE, PONG, Figures, played_by_keys

from gym_gui.core.config import parse_run_config
from gym_gui.core.errors import GymGuiError
from gym_gui.core.states import RunState
from gym_gui.envs.catalog import env_families, family_entries, family_installed
from gym_gui.envs.check import make_env
from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.home import Home
from gym_gui.storage.run_dir import RunDir

GOAL = 0.8
COSTLY_US = 50.0  # the goal applies to envs at least this slow a step
# The env measured for a family; others: its first entry.
BENCH_ENVS = {"atari": "ALE/Breakout-v5", "mujoco": "HalfCheetah-v5", "classic_control": "CartPole-v1"}


class BenchError(RuntimeError):
    """The benchmark cannot report a figure (a run failed or lost steps)."""


def plain_seconds(env_id: str, steps: int) -> float:
    """Seconds to step ``env_id`` ``steps`` times with random actions in a plain loop."""
    env = make_env(env_id)
    try:
        env.action_space.seed(0)
        env.reset(seed=0)
        start = time.perf_counter()
        for _ in range(steps):
            _obs, _reward, terminated, truncated, _info = env.step(env.action_space.sample())
            if terminated or truncated:
                env.reset()
        return time.perf_counter() - start
    finally:
        env.close()


def ours_seconds(client: DaemonClient, home: Home, env_id: str, steps: int) -> float:
    """Seconds a random-worker run of ``steps`` steps of ``env_id`` spends RUNNING, all steps stored."""
    config = parse_run_config(
        {"worker": "random", "env_id": env_id, "seed": 0, "budget": {"timesteps": steps}}
    )
    record, _token = client.submit(config)
    final = client.wait_for_end(record.run_id, timeout=600)
    if final.state is not RunState.COMPLETED:
        raise BenchError(f"run {record.run_id} ended {final.state.value}: {final.reason}")
    held = stored_steps(RunDir(home.run_dir(record.run_id)).telemetry_path)
    if held != steps:
        raise BenchError(f"run {record.run_id} stored {held} of {steps} steps")
    seconds = running_seconds(client, record.run_id)
    if seconds is None:
        raise BenchError(f"run {record.run_id} never ran")
    return seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--families", nargs="+", help="families to measure (default: every installed one)")
    parser.add_argument("--seconds", type=float, default=3.0, help="about how long each plain loop runs")
    parser.add_argument("--repeat", type=int, default=3, help="ours/plain pairs per family")
    parser.add_argument("--keep", action="store_true", help="keep the temporary GYM_GUI_HOME")
    parser.add_argument(
        "--play-seconds", type=float, default=15.0, help="human play measured per game (0: none)"
    )
    args = parser.parse_args(argv)
    names = args.families or [name for name in env_families() if family_installed(name)]
    chosen = {name: BENCH_ENVS.get(name) or family_entries(name)[0].env_id for name in names}

    home = Home(fresh_home())
    client = DaemonClient.connect(home.root)
    results: dict[str, tuple[str, float, float, float]] = {}
    try:
        print(f"daemon pid {client.info.pid}, home {home.root}, load {os.getloadavg()[0]:.2f}", flush=True)
        for name, env_id in chosen.items():
            per_step = plain_seconds(env_id, 200) / 200
            steps = int(min(max(args.seconds / per_step, 1000), 200_000))
            ours: list[float] = []
            plains: list[float] = []
            for i in range(1, args.repeat + 1):
                plains.append(plain_seconds(env_id, steps))
                ours.append(ours_seconds(client, home, env_id, steps))
                print(
                    f"[{name} {i}/{args.repeat}] {env_id}: {steps} steps, plain {plains[-1]:.2f}s, "
                    f"through gym_gui {ours[-1]:.2f}s",
                    flush=True,
                )
            plain, mine = statistics.median(plains), statistics.median(ours)
            results[name] = (env_id, plain / steps * 1e6, plain, mine)
    except (BenchError, GymGuiError) as exc:
        print(f"bench failed: {exc}", file=sys.stderr)
        return 1
    finally:
        release(client, home.root, args.keep)

    played: list[Figures] = []
    if args.play_seconds > 0 and family_installed("atari"):
        played, empty = played_by_keys([BREAKOUT, PONG], args.play_seconds)
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    if played:
        rates = ", ".join(f"{f.env_id} {f.rate_ratio:.3f}" for f in played)
        p99 = max(f.p99_ms for f in played)
        print(
            f"human play: steps ÷ 60/s {rates} (goal >= {GOAL_RATE}); stall p99 {p99:.1f} ms "
            f"(goal <= {GOAL_P99_MS:g}; empty view {empty.p99_ms:.1f} ms)"
        )
    for name, (env_id, micros, plain, mine) in results.items():
        goal = (
            f"goal >= {GOAL}" if micros >= COSTLY_US else f"no goal: the env costs under {COSTLY_US:.0f} µs"
        )
        print(
            f"{name}: {env_id} {micros:,.0f} µs/step plain; ratio gym_gui/plain = {plain / mine:.2f} ({goal})"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
