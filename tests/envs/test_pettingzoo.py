"""PettingZoo through the random worker and a real daemon: a turn-based game stores both seats' moves
alternating, each naming its seat, with each seat's return; a parallel env stores every agent's steps."""

from __future__ import annotations

import re
from collections.abc import Iterator

import numpy as np
import orjson
import pytest
from gym_gui_sdk.encoding import loads_observation

from gym_gui.core.config import parse_run_config
from gym_gui.core.errors import ConfigError
from gym_gui.core.states import RunState
from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.home import Home
from gym_gui.storage.run_dir import RunDir
from gym_gui.storage.telemetry import TelemetryReader
from tests.fixtures import SHARED_BUNDLES
from tests.support import gym_gui, module_daemon


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[DaemonClient, Home]]:
    with module_daemon(tmp_path_factory.mktemp("pettingzoo_home"), SHARED_BUNDLES, []) as d:
        yield d


def played(daemon: tuple[DaemonClient, Home], env_id: str, **fields: object) -> tuple[str, TelemetryReader]:
    """The id and stored telemetry of a completed random run of ``env_id`` (seed 0)."""
    client, home = daemon
    config = parse_run_config({"worker": "random", "env_id": env_id, "seed": 0, **fields})
    record, _token = client.submit(config)
    final = client.wait_for_end(record.run_id, timeout=120)
    assert final.state is RunState.COMPLETED, final.reason
    return record.run_id, TelemetryReader(RunDir(home.run_dir(record.run_id)).telemetry_path)


def test_a_connect_four_game_stores_both_seats_moves_alternating(daemon: tuple[DaemonClient, Home]) -> None:
    run_id, reader = played(daemon, "connect_four_v3", budget={"episodes": 2})
    try:
        for number in (0, 1):
            episode, steps = reader.episode(number), reader.steps(number)
            assert len(steps) == episode.steps >= 7  # four in a row takes the first seat four moves
            assert [s.agent for s in steps] == ["player_0", "player_1"] * (len(steps) // 2) + ["player_0"] * (
                len(steps) % 2
            )
            # Every move is a legal column, and each seat's last step ends its game.
            assert all(0 <= orjson.loads(s.action) < 7 for s in steps)
            assert all(s.terminated or s.truncated for s in steps[-2:]) and not any(
                s.terminated for s in steps[:-2]
            )
            # The seat's board after the opponent's reply: its own tokens, the opponent's, the legal columns.
            observation = loads_observation(steps[0].observation)
            assert np.shape(observation["observation"]) == (6, 7, 2) and np.shape(
                observation["action_mask"]
            ) == (7,)
            returns = dict(episode.agent_returns)
            assert list(returns) == ["player_0", "player_1"]
            assert sorted(returns.values()) in ([-1.0, 1.0], [0.0, 0.0])  # a win and a loss, or a draw
            assert episode.total_reward == sum(returns.values())
            for seat, value in returns.items():  # a seat's return is its stored rewards' sum
                assert sum(s.reward for s in steps if s.agent == seat) == value
        assert reader.steps(0, 0, 1)[0].render  # the board after the first move: Live and Replay draw it
        means = {seat: sum(dict(e.agent_returns)[seat] for e in reader.episodes()) / 2 for seat in returns}
    finally:
        reader.close()
    shown = gym_gui("show", run_id, home=daemon[1].root)
    assert shown.returncode == 0, shown.stderr
    assert re.search(r"steps stored .*: match", shown.stdout)
    assert (
        f"agents' mean returns  player_0 {means['player_0']:.3f}, player_1 {means['player_1']:.3f}"
        in shown.stdout
    )


def test_a_kind_that_plays_one_agent_is_refused_a_multi_agent_env_before_anything_is_stored(
    daemon: tuple[DaemonClient, Home],
) -> None:
    client, _home = daemon
    before = client.list_runs(include_archived=True)
    config = parse_run_config({"worker": "human", "env_id": "tictactoe_v3", "budget": {"episodes": 1}})
    with pytest.raises(
        ConfigError,
        match=r"^field 'env_id': tictactoe_v3 has 2 agents, and Human-Only plays one; a kind that seats every agent: Operator, Random Baseline",
    ):
        client.submit(config)
    assert client.list_runs(include_archived=True) == before


def test_a_parallel_env_stores_every_agents_steps(daemon: tuple[DaemonClient, Home]) -> None:
    _run_id, reader = played(
        daemon, "pistonball_v6", budget={"episodes": 1}, env_kwargs={"n_pistons": 4, "max_cycles": 4}
    )
    try:
        (episode,) = reader.episodes()
        steps = reader.steps(0)
        agents = ["piston_0", "piston_1", "piston_2", "piston_3"]
        assert len(steps) == episode.steps == 4 * 4  # every piston at each of the 4 steps
        assert [s.agent for s in steps] == agents * 4
        assert all(s.truncated for s in steps[-4:])  # max_cycles ends it for all
        assert [agent for agent, _ in episode.agent_returns] == agents
        for agent, value in episode.agent_returns:
            assert sum(s.reward for s in steps if s.agent == agent) == pytest.approx(value)
        assert loads_observation(steps[0].observation).shape == (457, 120, 3)
        assert steps[0].render and not steps[1].render  # one frame a step of the env, with its first agent
    finally:
        reader.close()
