"""Multi-agent telemetry: random seats in PettingZoo games through gym_gui, every step stored, against the
same games in a plain PettingZoo loop.

Through gym_gui: a fresh daemon (temporary GYM_GUI_HOME) runs the random worker on ``connect_four_v3``
(turn-based: a seat at a time, legal moves from the action mask) for ``--games`` episodes, and on
``pistonball_v6`` (parallel: every piston each step) for ``--pistonball-episodes``, no frames
(``render_fps`` 0). Each run must end COMPLETED with every agent's steps stored; its time is its RUNNING
span (the daemon reading STARTED to the run's end, after the last step is committed).

Plain: the same games in this process, PettingZoo's own loop (``agent_iter``/``last``/``step``, or the
parallel ``step``) with the same seeds and the same sampling, storing nothing.

Printed, last: games/s through gym_gui ÷ plain for each env (the issue's goal: ≥ 0.8). Usage::

    .venv/bin/python bench/multi_agent.py [--games 1000] [--pistonball-episodes 2] [--keep]
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from _daemon import fresh_home, release, running_seconds, stored_steps  # bench/ is on sys.path
from gym_gui_random_worker.agents import legal_sample

from gym_gui.core.config import parse_run_config
from gym_gui.core.states import RunState
from gym_gui.envs.families.pettingzoo.envs import make_multi_agent_env
from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.home import Home
from gym_gui.storage.run_dir import RunDir

GOAL = 0.8


def through_gym_gui(client: DaemonClient, home: Home, env_id: str, episodes: int) -> tuple[float, int]:
    """Seconds the random worker's run of ``episodes`` took (RUNNING span), and the steps it stored."""
    config = parse_run_config(
        {
            "worker": "random",
            "env_id": env_id,
            "seed": 0,
            "budget": {"episodes": episodes},
            "telemetry": {"render_fps": 0},
            "notes": "bench/multi_agent.py",
        }
    )
    record, _token = client.submit(config)
    final = client.wait_for_end(record.run_id, timeout=3600)
    if final.state is not RunState.COMPLETED:
        raise SystemExit(f"run {record.run_id} ended {final.state.value}: {final.reason}")
    seconds = running_seconds(client, record.run_id)
    assert seconds is not None
    return seconds, stored_steps(RunDir(home.run_dir(record.run_id)).telemetry_path)


def _seed_spaces(env: Any, seed: int) -> None:
    for index, agent in enumerate(env.possible_agents):
        env.action_space(agent).seed(seed + index)


def plain(env_id: str, episodes: int) -> tuple[float, int]:
    """Seconds the same games take in PettingZoo's own loop, and the agent steps taken."""
    env = make_multi_agent_env(env_id)
    steps = 0
    start = time.perf_counter()
    for episode in range(episodes):
        if hasattr(env, "agent_iter"):
            env.reset(seed=episode)
            _seed_spaces(env, episode)
            for agent in env.agent_iter():
                observation, _reward, terminated, truncated, info = env.last()
                action = (
                    None
                    if terminated or truncated
                    else legal_sample(env.action_space(agent), observation, info)
                )
                steps += action is not None
                env.step(action)
        else:
            observations, infos = env.reset(seed=episode)
            _seed_spaces(env, episode)
            while env.agents:
                actions = {
                    a: legal_sample(env.action_space(a), observations[a], infos.get(a)) for a in env.agents
                }
                steps += len(actions)
                observations, _rewards, _terminations, _truncations, infos = env.step(actions)
    seconds = time.perf_counter() - start
    env.close()
    return seconds, steps


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--games", type=int, default=1000, help="Connect Four games")
    parser.add_argument("--pistonball-episodes", type=int, default=2)
    parser.add_argument("--keep", action="store_true", help="keep the bench's home")
    args = parser.parse_args(argv)
    home = Home(fresh_home())
    client = DaemonClient.connect(home.root)
    ratios = []
    try:
        for env_id, episodes in (
            ("connect_four_v3", args.games),
            ("pistonball_v6", args.pistonball_episodes),
        ):
            stored_seconds, stored = through_gym_gui(client, home, env_id, episodes)
            plain_seconds, taken = plain(env_id, episodes)
            print(
                f"{env_id}: {episodes} episodes, {stored} steps stored in {stored_seconds:.2f} s through gym_gui; "
                f"{taken} steps in {plain_seconds:.2f} s plain"
            )
            ratios.append((env_id, plain_seconds / stored_seconds))
    finally:
        release(client, home.root, args.keep)
    for env_id, ratio in ratios:
        print(f"{env_id} stored ÷ plain: {ratio:.2f} (goal ≥ {GOAL})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
