"""A trained Spade BDI run as an operator through `gym-gui operators` and `gym-gui arena`: listed with
what it acts on, played on the same seeds with the same numbers twice, refused before anything
starts on an env it cannot act on, and refused when its Q-table is gone or changed."""

from __future__ import annotations

import json
from pathlib import Path

from gym_gui.core.states import RunState
from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.home import Home
from gym_gui.storage.run_dir import RunDir
from tests.support import assert_one_line_error, gym_gui
from workers.spade_bdi_worker.tests.conftest import bdi_config, run_to_end


def test_a_q_table_run_is_an_operator_and_a_mismatch_is_refused_before_anything_starts(
    bdi_daemon: tuple[DaemonClient, Home], tmp_path: Path
) -> None:
    client, home = bdi_daemon
    trained = run_to_end(client, bdi_config(episodes=200))
    assert trained.state is RunState.COMPLETED, trained.reason
    run = trained.run_id

    listed = gym_gui("operators", "--env", "CartPole-v1", home=home.root)
    assert listed.returncode == 0, listed.stderr
    line = next(line for line in listed.stdout.splitlines() if run in line)
    assert "Discrete(16) → Discrete(4)" in line and "no (1)" in line
    assert (
        "(1) q-table on FrozenLake-v1 expects Discrete(16) observations; CartPole-v1 gives Box(4,)"
        in listed.stdout
    )

    before = len(client.list_runs())
    assert_one_line_error(
        gym_gui("arena", run, "random", "--env", "CartPole-v1", "--episodes", "3", home=home.root),
        f"operator {run}: q-table on FrozenLake-v1 expects Discrete(16) observations; CartPole-v1 gives Box(4,)",
    )
    assert len(client.list_runs()) == before, "a refused batch stores no run"

    reports = []
    for name in ("first", "second"):
        out = tmp_path / f"{name}.json"
        played = gym_gui(
            "arena", run, "random", "--env", "FrozenLake-v1", "--episodes", "25", "--seed", "3",
            "--json", str(out), home=home.root,
        )  # fmt: skip
        assert played.returncode == 0, played.stderr
        assert "q-table on FrozenLake-v1" in played.stdout
        reports.append(json.loads(out.read_text()))
    numbers = [
        [(e["return"], e["length"]) for e in op["episodes"]]
        for report in reports
        for op in report["operators"]
    ]
    assert numbers[:2] == numbers[2:]
    assert reports[0]["operators"][0]["run_id"] != reports[1]["operators"][0]["run_id"]

    table = RunDir(home.run_dir(run)).path / "checkpoints" / "q_table.json"
    table.write_bytes(table.read_bytes() + b" ")
    assert_one_line_error(
        gym_gui("arena", run, "--env", "FrozenLake-v1", "--episodes", "1", home=home.root),
        f"the model file checkpoints/q_table.json of run {run} has changed since it was saved",
    )
    table.unlink()
    assert_one_line_error(
        gym_gui("arena", run, "--env", "FrozenLake-v1", "--episodes", "1", home=home.root),
        f"the model file checkpoints/q_table.json of run {run} is gone",
    )
