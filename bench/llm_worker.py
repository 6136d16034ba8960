"""LLM worker: concurrent episodes against a model with a fixed latency, and the worker's own time per step.

A chat-completions server on loopback (the suite's, workers/llm_worker/tests/chat_server.py)
answers every request after a fixed latency (default 200 ms) with "left" — on FrozenLake's top-left
corner a move that changes nothing, so the worker asks again every step and an episode lasts as
long as the budget lets it. Two runs of the LLM Multi-Step Worker through a daemon of a fresh
temporary GYM_GUI_HOME, each with a budget of 64 steps (one call per step):

- reference: one episode at a time (``parallel=1``): 64 calls one after the other;
- concurrent: 8 episodes at once (``parallel=8``).

Each run's span is measured from its own stored steps: the first step's time less its call's
latency (when the first request left) to the last step's time. Printed per run: steps per second;
for the reference also the worker's own time per step, its span less the latency of every call
(as the worker's client measured it), divided by the steps — prompt building, parsing, the env
step, encoding and sending to the daemon (goal ≤ 2 ms). Last line: the throughput ratio
concurrent / reference (goal ≥ 0.9 × 8 = 7.2). The pair is measured ``--repeat`` times, one after the
other (a run of 8 at once lasts under 2 s, so one measurement is at the mercy of the machine), and
the medians are printed last. Usage::

    python bench/llm_worker.py [--latency 0.2] [--steps 64] [--parallel 8] [--repeat 3] [--keep]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path

from _daemon import fresh_home, release

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the suite's chat server

from gym_gui.core.config import RunConfig, parse_run_config  # noqa: E402
from gym_gui.core.states import RunState  # noqa: E402
from gym_gui.protocol.client import DaemonClient  # noqa: E402
from gym_gui.storage.home import Home  # noqa: E402
from gym_gui.storage.run_dir import RunDir  # noqa: E402
from gym_gui.storage.telemetry import TelemetryReader  # noqa: E402
from workers.llm_worker.tests.chat_server import MODEL, ChatServer, fixed  # noqa: E402


def config(url: str, steps: int, parallel: int) -> RunConfig:
    return parse_run_config(
        {
            "worker": "llm",
            "env_id": "FrozenLake-v1",
            "seed": 0,
            "budget": {"timesteps": steps},
            "env_kwargs": {"is_slippery": False},
            "params": {"base_url": url, "model": MODEL, "parallel": parallel, "timeout": 30},
        }
    )


def measure(client: DaemonClient, home: Home, url: str, steps: int, parallel: int) -> tuple[float, float]:
    """One run: (its span in seconds, the latency of its calls summed, in seconds)."""
    record, _ = client.submit(config(url, steps, parallel))
    final = client.wait_for_end(record.run_id, timeout=900)
    if final.state is not RunState.COMPLETED:
        raise SystemExit(f"run {record.run_id} ended {final.state.value}: {final.reason}")
    reader = TelemetryReader(RunDir(home.run_dir(record.run_id)).telemetry_path)
    try:
        rows = [row for episode in reader.steps_per_episode() for row in reader.steps(episode)]
    finally:
        reader.close()
    if len(rows) != steps:
        raise SystemExit(f"run {record.run_id} stored {len(rows)} steps, not {steps}")
    calls = [json.loads(row.info)["llm"] for row in rows]
    latencies = [call["latency_ms"] / 1000 for call in calls if call["index"] == 0]
    first = min(rows, key=lambda row: row.wall_time)
    started = first.wall_time - json.loads(first.info)["llm"]["latency_ms"] / 1000
    return max(row.wall_time for row in rows) - started, sum(latencies)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--latency", type=float, default=0.2, help="seconds the server takes per reply")
    parser.add_argument("--steps", type=int, default=64, help="steps (and calls) per run")
    parser.add_argument("--parallel", type=int, default=8, help="episodes at once in the concurrent run")
    parser.add_argument("--repeat", type=int, default=3, help="reference/concurrent pairs to measure")
    parser.add_argument("--keep", action="store_true", help="keep the temporary home")
    args = parser.parse_args()
    root = fresh_home("gym-gui-bench-llm-")
    os.environ["GYM_GUI_HOME"] = str(root)
    home = Home(root).ensure()
    client = DaemonClient.connect(home.root)
    pairs: list[tuple[float, float, float]] = []  # (reference steps/s, own ms a step, concurrent steps/s)
    try:
        with ChatServer(fixed(0), latency=args.latency) as server:
            measure(client, home, server.url, 4, 1)  # builds the bundle if needed; warms the caches
            for index in range(args.repeat):
                span_one, waited = measure(client, home, server.url, args.steps, 1)
                span_many, _ = measure(client, home, server.url, args.steps, args.parallel)
                one, many = args.steps / span_one, args.steps / span_many
                own_ms = (span_one - waited) / args.steps * 1000
                pairs.append((one, own_ms, many))
                print(
                    f"[{index + 1}/{args.repeat}] one at a time {one:.2f} steps/s, own {own_ms:.2f} ms a step; "
                    f"{args.parallel} at once {many:.2f} steps/s; ratio {many / one:.2f}"
                )
    finally:
        release(client, root, args.keep)
    one = statistics.median(pair[0] for pair in pairs)
    own_ms = statistics.median(pair[1] for pair in pairs)
    many = statistics.median(pair[2] for pair in pairs)
    ratio = statistics.median(pair[2] / pair[0] for pair in pairs)
    print(
        f"reference, one episode at a time: {one:.2f} steps/s ({args.steps} calls of {args.latency * 1000:.0f} ms)"
    )
    print(f"worker's own time per step (span less the calls' latency): {own_ms:.2f} ms (goal <= 2 ms)")
    print(f"concurrent, {args.parallel} episodes at once: {many:.2f} steps/s")
    goal = 0.9 * args.parallel
    print(
        f"throughput ratio concurrent / reference, median of {len(pairs)} pairs: {ratio:.2f} (goal >= {goal:.1f})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
