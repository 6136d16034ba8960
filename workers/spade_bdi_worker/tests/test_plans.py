"""The plans drive the agent: deliberate mode reasons every step, both modes learn the same table, and
a different plans file changes what the agent does.

Bound: as in test_learning (FrozenLake 4x4 without ice, seed 0, 300 episodes), deliberate mode
reaches a success rate of at least 0.9 over the last 100 episodes.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from gym_gui.core.errors import ConfigError
from gym_gui.core.states import RunState
from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.home import Home
from gym_gui.workers import worker_catalog
from tests.fixtures import SHARED_BUNDLES
from tests.support import assert_one_line_error, files_containing, gym_gui
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


def test_plans_that_do_not_parse_are_refused_at_submit_by_line_number_not_text(
    bdi_daemon: tuple[DaemonClient, Home], tmp_path: Path
) -> None:
    client, _home = bdi_daemon
    before = {run.run_id for run in client.list_runs()}
    plans = tmp_path / "broken.asl"
    plans.write_text("+!run <- !!episode.\n+!episode : mode(fast) <- .run_episode(E secret_looking_text\n")
    with pytest.raises(ConfigError) as refused:
        client.submit(bdi_config(asl=str(plans)))
    message = str(refused.value)
    assert message.startswith(f"field 'params.asl': {plans} is not AgentSpeak plans: line 2"), message
    assert "secret_looking_text" not in message and "\n" not in message
    # A file that parses but has no plan for the goal the worker posts would leave the agent idle.
    plans.write_text("+!explore <- true.\n")
    with pytest.raises(ConfigError, match=r"has no plan for \+!run"):
        client.submit(bdi_config(asl=str(plans)))
    # Plans may not pull in another file: that file would escape every check here.
    plans.write_text('{include("/etc/passwd")}\n' + SHIPPED.read_text())
    with pytest.raises(ConfigError, match="line 1: an include directive"):
        client.submit(bdi_config(asl=str(plans)))
    assert {run.run_id for run in client.list_runs()} == before


def test_an_asl_that_is_no_plans_file_is_refused_at_submit_in_one_line_and_nothing_echoes_it(
    bdi_daemon: tuple[DaemonClient, Home], tmp_path: Path
) -> None:
    client, home = bdi_daemon
    token = json.loads((home.root / "daemon.json").read_text())["token"]
    before = {run.run_id for run in client.list_runs()}
    # Files named as plans whose text is another's: the process's environment, the accounts.
    environ = tmp_path / "environ.asl"
    environ.symlink_to("/proc/self/environ")
    passwd = tmp_path / "passwd.asl"
    passwd.symlink_to("/etc/passwd")
    refusals = {
        "/etc/passwd": "field 'params.asl': /etc/passwd is not a plans file: its name must end in .asl",
        "/proc/self/environ": "field 'params.asl': /proc/self/environ is not a plans file: its name must end in .asl",
        str(home.root / "daemon.json"): "is not a plans file: its name must end in .asl",
        str(environ): f"field 'params.asl': {environ} is not AgentSpeak plans: line 1",
        str(passwd): f"field 'params.asl': {passwd} is not AgentSpeak plans: line 1",
    }
    for asl, reason in refusals.items():
        result = gym_gui(
            *("train", "--worker", "spade_bdi", "--env", "FrozenLake-v1", "--episodes", "5"),
            *("--param", f"asl={asl}"),
            home=home.root,
        )
        assert_one_line_error(result, reason)
        assert "root:" not in result.stderr and "PATH=" not in result.stderr and token not in result.stderr
    assert {run.run_id for run in client.list_runs()} == before
    assert files_containing(home.root, token.encode(), b"root:x:0") == [home.root / "daemon.json"]


def test_the_plans_check_says_where_a_file_is_wrong_and_never_what_it_holds(
    spade_bundle: None, tmp_path: Path
) -> None:
    """The check the plugin runs in the bundle, and the worker again before its agent reads the file."""
    environ = tmp_path / "environ.asl"
    environ.symlink_to("/proc/self/environ")
    python = worker_catalog().bundle_directory(Path(SHARED_BUNDLES)).python("spade_bdi")
    secret = "gymgui-run-token-3f9a7c"
    checked = subprocess.run(
        [str(python), "-m", "gym_gui_spade_bdi_worker.plans", str(environ)],
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", "GYM_GUI_RUN_TOKEN": secret},
        timeout=60,
    )
    assert checked.returncode == 1
    assert json.loads(checked.stdout) == {"error": f"{environ} is not AgentSpeak plans: line 1: not text"}
    assert secret not in checked.stdout + checked.stderr
    shipped = subprocess.run(
        [str(python), "-m", "gym_gui_spade_bdi_worker.plans", str(SHIPPED)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert shipped.returncode == 0, shipped.stderr
    assert json.loads(shipped.stdout)["plans"] > 10
