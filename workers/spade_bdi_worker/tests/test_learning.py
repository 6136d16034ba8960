"""The Spade BDI worker learns, through the real daemon, a real SPADE agent and its embedded XMPP server.

Bound: on FrozenLake 4x4 without ice (seed 0, epsilon decaying by 0.98 per episode), the last 100 of
300 episodes reach the goal at least 90% of the time.
"""

from __future__ import annotations

import json
import os
import random
from pathlib import Path
from typing import Any

import gymnasium
import pytest
from gym_gui_sdk import render
from gym_gui_spade_bdi_worker.training import TableStep, direct_step
from gymnasium.envs.toy_text.frozen_lake import FrozenLakeEnv
from gymnasium.wrappers import RecordEpisodeStatistics

from gym_gui.core.errors import ConfigError
from gym_gui.core.processes import process_alive
from gym_gui.core.states import RunState
from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.home import Home
from gym_gui.storage.registry import RunRegistry
from gym_gui.storage.run_dir import RunDir
from gym_gui.workers import worker_catalog
from tests.fixtures import SHARED_BUNDLES
from tests.support import wait_until
from workers.spade_bdi_worker.tests.conftest import (
    all_steps,
    bdi_config,
    episodes,
    final_table,
    reader,
    run_to_end,
    success_rate,
)


def test_fast_mode_learns_the_lake_and_stores_every_step_with_its_q_values(
    bdi_daemon: tuple[DaemonClient, Home],
) -> None:
    client, home = bdi_daemon
    run = run_to_end(client, bdi_config())
    assert run.state is RunState.COMPLETED, run.reason
    played = episodes(home, run.run_id)
    assert len(played) == 300
    assert success_rate(played[-100:]) >= 0.9

    steps = all_steps(home, run.run_id)
    assert len(steps) == sum(e.steps for e in played)
    first = json.loads(steps[0].info)
    assert first["mode"] == "fast" and first["epsilon"] == 1.0
    assert len(first["q_before"]) == len(first["q_after"]) == 4
    assert "beliefs" not in first  # fast mode stores no deliberation
    # The stored q_after rows, applied in order to a zero table, give the final table.
    table = [[0.0] * 4 for _ in range(16)]
    for step in steps:
        info = json.loads(step.info)
        table[info["state"]] = info["q_after"]
        assert info["q_before"] != info["q_after"] or info["td_error"] == 0.0
    assert table == final_table(home, run.run_id)["q"]
    grid = render.decode_payload(steps[-1].render or b"")
    assert isinstance(grid, dict) and grid["game"] == "frozenlake" and grid["rows"] == 4

    tags = ("episode/return", "episode/length", "train/success_rate", "train/mean_length", "train/epsilon")
    with reader(home, run.run_id) as telemetry:
        for tag in tags:
            assert len(telemetry.metrics(tag)) == 300, tag
        assert telemetry.metrics("train/success_rate")[-1].value >= 0.9
    model = [e for e in RunDir(home.run_dir(run.run_id)).read_manifest().checkpoints if e.kind == "model"]
    assert [m.path for m in model] == ["checkpoints/q_table.json"]


def test_the_default_exploration_fits_the_budget_and_learns_the_lake(
    bdi_daemon: tuple[DaemonClient, Home],
) -> None:
    """With the defaults (no epsilon_decay), epsilon falls from 1 to its floor over the first half of
    the budget's episodes, whatever the budget, so a few hundred episodes learn the 4x4 lake: its
    optimal return, 1, by its shortest path, 6 steps. (A fixed decay of 0.999 an episode explored
    with epsilon 0.74 at the end of 300, and reached the goal in a fraction of them.)"""
    client, home = bdi_daemon
    run = run_to_end(client, bdi_config(episodes=300, epsilon_decay=None))
    assert run.state is RunState.COMPLETED, run.reason
    played = episodes(home, run.run_id)
    last = played[-100:]
    assert sum(e.total_reward for e in last) / len(last) >= 0.95
    assert sorted(e.steps for e in last)[len(last) // 2] == 6
    epsilons = [json.loads(e.info)["epsilon"] for e in played]
    assert epsilons[0] == 1.0 and epsilons[75] == pytest.approx(0.505)
    assert epsilons[150:] == pytest.approx([0.01] * 150)
    # The table learned is the optimal policy: its greedy play reaches the goal in 6 steps.
    evaluation = run_to_end(client, client.evaluation_config(run.run_id, episodes=1))
    assert evaluation.state is RunState.COMPLETED, evaluation.reason
    [greedy] = episodes(home, evaluation.run_id)
    assert (greedy.total_reward, greedy.steps) == (1.0, 6)
    # A decay of the user's own is theirs; the plan says where it leaves epsilon when the run ends.
    assert client.preview(bdi_config(episodes=300, epsilon_decay=None)).warnings == []
    assert client.preview(bdi_config(episodes=500, epsilon_decay=0.999)).warnings == [
        "epsilon_decay 0.999 leaves epsilon at 0.61 in the last of 500 episodes (epsilon_end 0.01): "
        "the run still explores as it ends; leave epsilon_decay empty to fit the schedule to the budget"
    ]
    with pytest.raises(ConfigError, match=r"field 'params\.exploration_fraction': fits the schedule"):
        client.submit(bdi_config(epsilon_decay=0.99, exploration_fraction=0.3))


def _listening(pid: int) -> list[tuple[str, int]]:
    """The TCP addresses process ``pid`` listens on (from its sockets' inodes in /proc/net/tcp*)."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        target = os.readlink(fd) if fd.is_symlink() else ""
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    found = []
    for table in ("tcp", "tcp6"):
        for line in Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]:
            fields = line.split()
            local, state, inode = fields[1], fields[3], fields[9]
            if state == "0A" and inode in inodes:  # LISTEN
                address, port = local.split(":")
                octets = bytes.fromhex(address)[::-1] if len(address) == 8 else bytes.fromhex(address)
                found.append(
                    (".".join(str(b) for b in octets) if len(octets) == 4 else octets.hex(), int(port, 16))
                )
    return found


def test_the_embedded_xmpp_server_listens_on_loopback_only_and_stops_with_the_worker(
    bdi_daemon: tuple[DaemonClient, Home],
) -> None:
    client, home = bdi_daemon
    record, _ = client.submit(bdi_config(episodes=1_000_000, slippery=True, map="8x8"))
    client.wait_for_state(record.run_id, RunState.RUNNING, timeout=120)
    registry = RunRegistry(home.registry_path)
    try:
        pid = wait_until(lambda: registry.get(record.run_id).pid, 30, "the worker's pid")
    finally:
        registry.close()
    addresses = wait_until(lambda: _listening(pid), 30, "the embedded XMPP server to listen")
    assert addresses and all(host == "127.0.0.1" for host, _port in addresses), addresses
    assert 9090 not in {port for _host, port in addresses}  # no admin page
    assert 5222 not in {port for _host, port in addresses}  # a free port of its own
    client.cancel(record.run_id)
    ended = client.wait_for_end(record.run_id, 60)
    assert ended.state is RunState.CANCELLED, ended.reason
    wait_until(lambda: not process_alive(pid), 30, "the worker to exit")


@pytest.mark.parametrize(
    ("env_id", "params", "message"),
    [
        ("FrozenLake-v9", {}, "FrozenLake-v9"),
        (
            "CartPole-v1",
            {},
            "field 'env_id': Q-learning needs a table of discrete observations and actions; CartPole-v1 has observations Box",
        ),
        ("Blackjack-v1", {}, "Blackjack-v1 has observations Tuple"),
        ("Taxi-v4", {"map": "4x4"}, "field 'params.map': only FrozenLake has it, not Taxi-v4"),
        ("FrozenLake-v1", {"map": "SFX/FFG"}, "field 'params.map': expected 4x4, 8x8 or rows"),
        ("FrozenLake-v1", {"alpha": 0}, r"field 'params.alpha': must be in (0, 1], got 0"),
        ("FrozenLake-v1", {"mode": "dreamy"}, "field 'params.mode': must be one of fast, deliberate"),
        ("FrozenLake-v1", {"beta": 1}, "field 'params.beta': unknown parameter"),
        ("FrozenLake-v1", {"asl": "plans.asl"}, "field 'params.asl': must be an absolute path"),
        (
            "FrozenLake-v1",
            {"asl": "/nowhere/plans.asl"},
            "field 'params.asl': no plans file at /nowhere/plans.asl",
        ),
    ],
)
def test_bad_input_is_refused_before_anything_is_stored(
    bdi_daemon: tuple[DaemonClient, Home], env_id: str, params: dict[str, object], message: str
) -> None:
    client, _home = bdi_daemon
    before = {record.run_id for record in client.list_runs()}
    config = bdi_config(env_id, **params) if env_id == "FrozenLake-v1" else bdi_config(env_id)
    if env_id != "FrozenLake-v1":
        config = config.model_copy(update={"params": {**config.params, **params}})
    with pytest.raises(ConfigError) as refused:
        client.submit(config)
    assert message in str(refused.value)
    assert {record.run_id for record in client.list_runs()} == before


def test_taxi_and_cliff_walking_are_learned_too(bdi_daemon: tuple[DaemonClient, Home]) -> None:
    client, home = bdi_daemon
    for env_id, actions in (("Taxi-v4", 6), ("CliffWalking-v1", 4)):
        run = run_to_end(client, bdi_config(env_id, episodes=20, max_steps=50))
        assert run.state is RunState.COMPLETED, run.reason
        assert len(final_table(home, run.run_id)["q"][0]) == actions
        played = episodes(home, run.run_id)
        assert all(e.steps <= 50 for e in played)
        # The step limit ends an episode as gymnasium's TimeLimit does (the worker steps under it).
        assert any(e.steps == 50 and e.truncated for e in played)


def test_the_worker_steps_under_gymnasiums_bookkeeping_wrappers_only() -> None:
    made = gymnasium.make("FrozenLake-v1", is_slippery=False, max_episode_steps=7)
    step, limit = direct_step(made)
    assert isinstance(step, TableStep) and limit == 7
    taxi = gymnasium.make("Taxi-v4")
    assert direct_step(taxi) == (taxi.unwrapped.step, 200)
    # Any other wrapper may change what a step gives: then every wrapper is stepped, the limit
    # left to its TimeLimit.
    wrapped = RecordEpisodeStatistics(made)
    assert direct_step(wrapped) == (wrapped.step, None)


@pytest.mark.parametrize(
    ("env_id", "kwargs"),
    [
        ("FrozenLake-v1", {"map_name": "8x8", "is_slippery": True}),
        ("FrozenLake-v1", {"map_name": "4x4", "is_slippery": False}),
        ("FrozenLake-v1", {"desc": ["SFH", "FFF", "HFG"], "is_slippery": True}),
        ("CliffWalking-v1", {"is_slippery": True}),
        ("CliffWalking-v1", {}),
    ],
)
def test_the_table_step_is_the_envs_own_step_transition_for_transition(
    env_id: str, kwargs: dict[str, Any]
) -> None:
    ours, theirs = gymnasium.make(env_id, **kwargs).unwrapped, gymnasium.make(env_id, **kwargs).unwrapped
    step = TableStep.of(ours)
    assert step is not None
    actions = random.Random(7)
    for episode in range(200):
        assert ours.reset(seed=episode) == theirs.reset(seed=episode)
        for _ in range(60):
            action = actions.randrange(ours.action_space.n)
            got, expected = step(action), theirs.step(action)
            assert got == expected and type(got[0]) is type(expected[0])
            assert (ours.s, ours.lastaction) == (theirs.s, theirs.lastaction)
            if got[2]:
                break
        # The same numbers drawn from the same generator: its state is the env's own after its steps.
        assert ours.np_random.bit_generator.state == theirs.np_random.bit_generator.state


def test_an_env_whose_step_is_its_own_gets_no_table_step() -> None:
    class Windy(FrozenLakeEnv):
        def step(self, a: int) -> Any:
            return super().step((a + 1) % 4)

    assert TableStep.of(Windy()) is None
    assert TableStep.of(gymnasium.make("Taxi-v4").unwrapped) is None
    assert TableStep.of(gymnasium.make("FrozenLake-v1", render_mode="human").unwrapped) is None


def test_a_runs_manifest_records_its_bundles_packages_so_a_rerun_compares_them(
    bdi_daemon: tuple[DaemonClient, Home],
) -> None:
    """Issue 30: Spade BDI runs recorded gym_gui's own venv's ``pip freeze`` under their bundle's
    name, so a re-run's drift check compared the wrong package set."""
    client, home = bdi_daemon
    config = bdi_config(episodes=3)
    final = run_to_end(client, config)
    assert final.state is RunState.COMPLETED, final.reason
    environment = RunDir(home.run_dir(final.run_id)).read_manifest().environment
    bundles = worker_catalog().bundle_directory(Path(SHARED_BUNDLES))
    assert environment.bundle == "spade_bdi"
    assert environment.python == str(bundles.python("spade_bdi"))
    assert environment.packages == bundles.freeze("spade_bdi")
    assert any(line.lower().startswith("spade==") for line in environment.packages)
    rerun = client.preview(config.model_copy(update={"rerun_of": final.run_id}))
    assert rerun.packages == environment.packages and rerun.package_changes == []
