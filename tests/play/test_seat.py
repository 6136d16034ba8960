"""A seat against a real daemon: who acted at each stored step, the proposals a person overrode,
the interventions each episode counts."""

from __future__ import annotations

import json

import pytest

from gym_gui.core.errors import ConfigError
from gym_gui.play.operators import Operators
from gym_gui.play.seat import Control, Seat
from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.home import Home
from gym_gui.storage.run_dir import RunDir
from gym_gui.storage.telemetry import TelemetryReader
from gym_gui.workers import worker_catalog
from tests.support import wait_until


def play(seat: Seat, presses: dict[int, int], limit: int = 1000) -> list[int]:
    """Play one episode, pressing ``presses[step]`` at those steps; returns the actions taken."""
    seat.start()
    taken = []
    while not seat.episode_over and len(taken) < limit:
        outcome = seat.step(presses.get(len(taken)))
        taken.append(int(outcome.action))
    return taken


def stored(client: DaemonClient, run_id: str) -> tuple[list, list]:  # type: ignore[type-arg]
    wait_until(lambda: client.get_run(run_id).record.state.terminal, what=f"{run_id} to end")
    reader = TelemetryReader(RunDir(client.get_run(run_id).record.run_dir).telemetry_path)
    try:
        return reader.steps(0), reader.episodes()
    finally:
        reader.close()


def test_a_hybrid_episode_stores_who_acted_and_what_the_operator_proposed(
    client: DaemonClient, home: Home
) -> None:
    operators = Operators(home, worker_catalog(), client.list_runs)
    # Taxi: a random episode lasts its 200 steps, well past the presses.
    agent = Seat(client, "Taxi-v4", operators.choose("random", "Taxi-v4"), control=Control.AGENT, seed=4)
    proposals = play(agent, {})
    agent.close()
    # The random operator draws one action per step from its episode's seed, whoever then acts: the
    # hybrid seat's proposals are the agent seat's actions, step for step.
    hybrid = Seat(client, "Taxi-v4", operators.choose("random", "Taxi-v4"), control=Control.HYBRID, seed=4)
    presses = {1: (proposals[1] + 1) % 6, 2: (proposals[2] + 2) % 6, 7: (proposals[7] + 3) % 6}
    taken = play(hybrid, presses)
    hybrid.close()

    steps, episodes = stored(client, hybrid.run_id)
    assert [s.actor for s in steps] == ["human" if i in presses else "operator" for i in range(len(taken))]
    assert [json.loads(s.action) for s in steps] == taken
    for i, step in enumerate(steps):
        if i in presses:
            assert json.loads(step.action) == presses[i]
            assert json.loads(step.proposed_action) == proposals[i]
        else:
            assert step.proposed_action == ""
    info = json.loads(episodes[0].info)
    assert info["interventions"] == 2  # took over at step 1 (for two steps) and at step 7
    assert info["intervention_steps"] == [1, 2, 7]
    assert info["intervention_rate"] == pytest.approx(3 / len(taken))
    config = RunDir(client.get_run(hybrid.run_id).record.run_dir).read_config()
    assert (config.worker, config.params["control"], config.params["operator"]) == (
        "operator",
        "hybrid",
        "random",
    )


def test_a_persons_own_seat_records_no_actor_and_seats_check_their_operator(
    client: DaemonClient, home: Home
) -> None:
    seat = Seat(client, "FrozenLake-v1", seed=0)
    seat.start()
    seat.step(1)
    seat.close()
    steps, _ = stored(client, seat.run_id)
    assert [(s.actor, s.proposed_action) for s in steps] == [("", "")]
    with pytest.raises(ConfigError, match="a hybrid seat needs an operator"):
        Seat(client, "FrozenLake-v1", control=Control.HYBRID)


def test_a_persons_seat_of_several_episodes_is_one_run_on_the_seed_sequence(client: DaemonClient) -> None:
    # The Arena seats a person for its whole session: one run, as each operator's, seeds 3, 4.
    seat = Seat(client, "FrozenLake-v1", seed=3, episodes=2, comparison="arena-test")
    seat.start()
    for episode in range(2):
        if episode:
            seat.next_episode()
        while not seat.episode_over:
            seat.step(0)
    assert seat.finished
    _, episodes = stored(client, seat.run_id)
    assert [(e.episode, e.seed) for e in episodes] == [(0, 3), (1, 4)]
    record = client.get_run(seat.run_id).record
    assert (record.worker, record.state.value) == ("human", "COMPLETED")
    assert RunDir(record.run_dir).read_config().comparison == "arena-test"
    with pytest.raises(ConfigError, match="at least one episode, got 0"):
        Seat(client, "FrozenLake-v1", episodes=0)
