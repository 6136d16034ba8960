"""The plans drive the agent: deliberate mode reasons every step, both modes learn the same table, and
a different plans file changes what the agent does.

Bound: as in test_learning (FrozenLake 4x4 without ice, seed 0, 300 episodes), deliberate mode
reaches a success rate of at least 0.9 over the last 100 episodes.
"""

from __future__ import annotations

import json
from pathlib import Path

from gym_gui.core.states import RunState
from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.home import Home
from workers.spade_bdi_worker.tests.conftest import (
    all_steps,
    bdi_config,
    episodes,
    final_table,
    run_to_end,
    success_rate,
)

SHIPPED = Path(__file__).resolve().parents[1] / "src/gym_gui_spade_bdi_worker/asl/q_learning.asl"
# Stop exploring for good once the success rate passes a threshold: placed before the shipped
# schedule, this plan is the one chosen whenever its context holds. (The belief is replaced by
# removing the one held: AgentSpeak's `-+epsilon(0)` removes only a belief `epsilon(0)`.)
GREEDY_ONCE_GOOD = "+!explore : success_rate(R) & R >= 0.5 & epsilon(E) <- -epsilon(E); +epsilon(0).\n"


def test_deliberate_mode_learns_and_stores_beliefs_and_intention_with_every_step(
    bdi_daemon: tuple[DaemonClient, Home],
) -> None:
    client, home = bdi_daemon
    run = run_to_end(client, bdi_config(mode="deliberate"))
    assert run.state is RunState.COMPLETED, run.reason
    played = episodes(home, run.run_id)
    assert success_rate(played[-100:]) >= 0.9
    steps = all_steps(home, run.run_id)
    for step in (steps[0], steps[-1]):
        info = json.loads(step.info)
        assert info["mode"] == "deliberate"
        assert info["intention"] == ["step"]
        assert f"state({info['state']})" in info["beliefs"]
        (epsilon,) = [b for b in info["beliefs"] if b.startswith("epsilon(")]
        assert float(epsilon[len("epsilon(") : -1]) == info["epsilon"]
        assert "mode(deliberate)" in info["beliefs"]
    assert f"episode({steps[-1].episode})" in json.loads(steps[-1].info)["beliefs"]


def test_the_same_seed_learns_the_same_table_in_both_modes(bdi_daemon: tuple[DaemonClient, Home]) -> None:
    client, home = bdi_daemon
    tables = {}
    for mode in ("fast", "deliberate"):
        run = run_to_end(client, bdi_config("FrozenLake-v1", episodes=200, slippery=True, mode=mode))
        assert run.state is RunState.COMPLETED, run.reason
        tables[mode] = final_table(home, run.run_id)
    assert tables["fast"]["q"] == tables["deliberate"]["q"]
    assert tables["fast"]["sha256"] == tables["deliberate"]["sha256"]
    assert any(value != 0 for row in tables["fast"]["q"] for value in row)


def test_other_plans_change_the_behaviour(bdi_daemon: tuple[DaemonClient, Home], tmp_path: Path) -> None:
    client, home = bdi_daemon
    plans = tmp_path / "greedy_once_good.asl"
    shipped = SHIPPED.read_text()
    plans.write_text(
        shipped.replace("+!explore : evaluating", GREEDY_ONCE_GOOD + "+!explore : evaluating", 1)
    )
    common = {"epsilon_start": 0.3, "epsilon_decay": 1.0, "success_window": 20}

    shipped_run = run_to_end(client, bdi_config(**common))
    edited_run = run_to_end(client, bdi_config(**common, asl=str(plans)))
    assert shipped_run.state is edited_run.state is RunState.COMPLETED, edited_run.reason

    # The shipped schedule with a decay of 1 keeps exploring at 0.3 to the end.
    assert {json.loads(e.info)["epsilon"] for e in episodes(home, shipped_run.run_id)} == {0.3}
    # The edited plans stop exploring once 10 of the last 20 episodes reached the goal, and never start again.
    edited = [json.loads(e.info) for e in episodes(home, edited_run.run_id)]
    first_greedy = next(i for i, info in enumerate(edited) if info["epsilon"] == 0)
    assert 20 <= first_greedy < len(edited) - 100
    assert sum(info["goal_reached"] for info in edited[first_greedy - 20 : first_greedy]) >= 10
    assert all(info["epsilon"] == 0 and info["explored"] == 0 for info in edited[first_greedy:])
    assert all(info["epsilon"] == 0.3 for info in edited[:first_greedy])


def test_plans_that_do_not_parse_fail_the_run_naming_the_file_and_line(
    bdi_daemon: tuple[DaemonClient, Home], tmp_path: Path
) -> None:
    client, _home = bdi_daemon
    plans = tmp_path / "broken.asl"
    plans.write_text("+!run <- !!episode.\n+!episode : mode(fast) <- .run_episode(E\n")
    run = run_to_end(client, bdi_config(asl=str(plans)))
    assert run.state is RunState.FAILED
    assert str(plans) in run.reason
