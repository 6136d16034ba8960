"""Q-table checkpoints: saved every N episodes and at the end, warm starts, greedy evaluation runs
(what **Use trained** starts), the controls of a live run, and the tables that are refused."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
from gym_gui_spade_bdi_worker.checkpoint import table_hash

from gym_gui.core.controls import Control
from gym_gui.core.errors import ConfigError
from gym_gui.core.states import RunState
from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.home import Home
from tests.support import wait_until, wait_until_stable
from workers.spade_bdi_worker.tests.conftest import (
    all_steps,
    artifacts,
    bdi_config,
    episodes,
    final_table,
    reader,
    run_to_end,
    success_rate,
)


@pytest.fixture(scope="module")
def trained(bdi_daemon: tuple[DaemonClient, Home]) -> str:
    """A 4x4 run that learned the way, with a checkpoint every 100 episodes."""
    client, _home = bdi_daemon
    run = run_to_end(client, bdi_config(checkpoint_every=100))
    assert run.state is RunState.COMPLETED, run.reason
    return run.run_id


def test_checkpoints_are_saved_every_n_episodes_and_at_the_end(
    bdi_daemon: tuple[DaemonClient, Home], trained: str
) -> None:
    _client, home = bdi_daemon
    saved = [(a.kind, a.path, json.loads(a.meta)["episode"]) for a in artifacts(home, trained)]
    assert saved == [
        ("checkpoint", "checkpoints/q_table_ep100.json", 100),
        ("checkpoint", "checkpoints/q_table_ep200.json", 200),
        ("checkpoint", "checkpoints/q_table_ep300.json", 300),
        ("model", "checkpoints/q_table.json", 300),
    ]
    table = final_table(home, trained)
    assert table["env_id"] == "FrozenLake-v1" and table["shape"] == [16, 4] and table["episode"] == 300
    assert table["map"] == ["SFFF", "FHFH", "FFFH", "HFFG"] and table["seed"] == 0
    assert table["hyperparameters"]["epsilon_decay"] == 0.98 and table["hyperparameters"]["mode"] == "fast"
    assert table["env_kwargs"] == {"map_name": "4x4", "is_slippery": False}
    ep300 = json.loads((home.run_dir(trained) / "checkpoints/q_table_ep300.json").read_text())
    assert ep300["q"] == table["q"] and ep300["sha256"] == table["sha256"]


def test_use_trained_plays_the_table_greedily_and_the_run_replays(
    bdi_daemon: tuple[DaemonClient, Home], trained: str
) -> None:
    client, home = bdi_daemon
    config = client.evaluation_config(trained, episodes=5, checkpoint="checkpoints/q_table_ep300.json")
    run = run_to_end(client, config)
    assert run.state is RunState.COMPLETED, run.reason
    played = episodes(home, run.run_id)
    assert len(played) == 5 and success_rate(played) == 1.0
    q = final_table(home, trained)["q"]
    steps = all_steps(home, run.run_id)
    for step in steps:
        info = json.loads(step.info)
        assert info["epsilon"] == 0 and not info["explored"] and info["td_error"] is None
        assert info["q_before"] == info["q_after"] == q[info["state"]]
        assert int(step.action) == info["q_before"].index(max(info["q_before"]))
        assert step.render and step.render.startswith(b'{"v":1,"game":"frozenlake"')
    # Replay reads one episode's steps back in order, with their Q-values.
    with reader(home, run.run_id) as telemetry:
        replayed = telemetry.steps(2)
    assert [s.step for s in replayed] == list(range(played[2].steps))
    assert not (home.run_dir(run.run_id) / "checkpoints").exists()  # an evaluation learns nothing


def test_a_training_run_warm_starts_from_a_table(bdi_daemon: tuple[DaemonClient, Home], trained: str) -> None:
    client, home = bdi_daemon
    run = run_to_end(client, bdi_config(episodes=20, epsilon_start=0.0, epsilon_end=0.0, warm_start=trained))
    assert run.state is RunState.COMPLETED, run.reason
    assert success_rate(episodes(home, run.run_id)) == 1.0  # greedy from the first episode
    first = json.loads(all_steps(home, run.run_id)[0].info)
    assert first["q_before"] == final_table(home, trained)["q"][0]
    with reader(home, run.run_id) as telemetry:
        events = [e for e in telemetry.events() if "warm start" in e.message]
    assert events and json.loads(events[0].data)["q_table"] == final_table(home, trained)["q"]


def test_tables_of_another_environment_or_shape_are_refused_naming_both(
    bdi_daemon: tuple[DaemonClient, Home], trained: str
) -> None:
    client, _home = bdi_daemon
    with pytest.raises(ConfigError) as refused:
        client.submit(bdi_config("Taxi-v4", warm_start=trained))
    assert "was learned on FrozenLake-v1 [16, 4], this run is Taxi-v4 [500, 6]" in str(refused.value)
    with pytest.raises(ConfigError) as refused:
        client.submit(bdi_config(map="8x8", warm_start=trained))
    assert "has shape [16, 4] (states, actions), this run's FrozenLake-v1 needs [64, 4]" in str(refused.value)
    with pytest.raises(ConfigError, match="no run nowhere"):
        client.submit(bdi_config(warm_start="nowhere"))
    with pytest.raises(ConfigError, match="is outside run"):
        client.submit(bdi_config(warm_start=f"{trained}/../{trained}/checkpoints/q_table.json/../../../x"))


def test_a_corrupt_table_is_refused_by_its_hash_and_left_as_it_is(
    bdi_daemon: tuple[DaemonClient, Home], trained: str
) -> None:
    client, home = bdi_daemon
    run = run_to_end(client, bdi_config(episodes=10))
    damaged = home.run_dir(run.run_id) / "checkpoints/q_table.json"
    data = json.loads(damaged.read_text())
    data["q"][0][0] += 1.0
    damaged.write_text(json.dumps(data))
    before = damaged.read_bytes()
    with pytest.raises(ConfigError) as refused:
        client.submit(client.evaluation_config(run.run_id, episodes=1))
    assert "is corrupt: its table does not match its sha256" in str(refused.value)
    truncated = home.run_dir(run.run_id) / "checkpoints/truncated.json"
    shutil.copy(damaged, truncated)
    truncated.write_bytes(before[: len(before) // 2])
    with pytest.raises(ConfigError, match="is corrupt: it is not valid JSON"):
        client.submit(bdi_config(warm_start=f"{run.run_id}/checkpoints/truncated.json"))
    assert damaged.read_bytes() == before


def test_a_table_nested_too_deeply_or_holding_nan_or_inf_is_refused_in_one_line(
    bdi_daemon: tuple[DaemonClient, Home], trained: str
) -> None:
    client, home = bdi_daemon
    before = {run.run_id for run in client.list_runs()}
    checkpoints = home.run_dir(trained) / "checkpoints"
    deep = checkpoints / "deep.json"
    deep.write_text('{"format": "gym_gui.spade_bdi.q_table", "q": ' + "[" * 100_000 + "]" * 100_000 + "}")
    with pytest.raises(ConfigError) as refused:
        client.submit(bdi_config(warm_start=f"{trained}/checkpoints/deep.json"))
    assert str(refused.value) == (
        f"field 'params.warm_start': Q-table {deep} is corrupt: it is not valid JSON (it nests too deeply)"
    )
    # Nested less deeply than JSON readers give up, but deeper than any Q-table file.
    deep.write_text(
        json.dumps({**final_table(home, trained), "env_kwargs": {"desc": json.loads("[" * 500 + "]" * 500)}})
    )
    with pytest.raises(ConfigError, match=f"Q-table {deep} is corrupt: it nests deeper than a Q-table file"):
        client.submit(bdi_config(warm_start=f"{trained}/checkpoints/deep.json"))
    for value, name in ((float("nan"), "nan"), (float("inf"), "inf"), (float("-inf"), "-inf")):
        data = final_table(home, trained)
        data["q"][3][1] = value
        data["sha256"] = table_hash(np.asarray(data["q"], dtype=np.float64))  # a table whose hash fits it
        (checkpoints / f"{name}.json").write_text(json.dumps(data))
        reason = (
            f"Q-table {checkpoints / f'{name}.json'} holds a value that is not a finite number "
            "(NaN or infinity) in row 3"
        )
        with pytest.raises(ConfigError) as refused:
            client.submit(bdi_config(warm_start=f"{trained}/checkpoints/{name}.json"))
        assert str(refused.value) == f"field 'params.warm_start': {reason}"
        with pytest.raises(ConfigError) as refused:
            client.submit(
                client.evaluation_config(trained, episodes=1, checkpoint=f"checkpoints/{name}.json")
            )
        assert str(refused.value) == f"field 'evaluation.checkpoint': {reason}"
    assert {run.run_id for run in client.list_runs()} == before


def test_pause_resume_checkpoint_now_and_cancel_keep_the_tables(
    bdi_daemon: tuple[DaemonClient, Home],
) -> None:
    client, home = bdi_daemon
    record, _ = client.submit(bdi_config(episodes=1_000_000, map="8x8", slippery=True))
    run_id = record.run_id
    client.wait_for_state(run_id, RunState.RUNNING, timeout=120)

    def stored() -> int:
        with reader(home, run_id) as telemetry:
            return sum(telemetry.steps_per_episode().values())

    wait_until(stored, 60, "steps to be stored")
    client.control(run_id, Control.PAUSE)
    client.wait_for_state(run_id, RunState.PAUSED, timeout=60)
    paused_at = wait_until_stable(stored, interval=1.0, what="steps while paused")
    assert stored() == paused_at
    client.control(run_id, Control.RESUME)
    client.wait_for_state(run_id, RunState.RUNNING, timeout=60)
    wait_until(lambda: stored() > paused_at, 60, "steps after resuming")

    client.control(run_id, Control.CHECKPOINT)
    requested = wait_until(
        lambda: next((a for a in artifacts(home, run_id) if json.loads(a.meta).get("requested")), None),
        60,
        "the requested checkpoint",
    )
    client.cancel(run_id)
    ended = client.wait_for_end(run_id, 60)
    assert ended.state is RunState.CANCELLED, ended.reason
    kinds = {a.kind: a for a in artifacts(home, run_id)}
    assert json.loads(kinds["model"].meta)["outcome"] == "stopped"
    for path in (requested.path, "checkpoints/q_table.json"):
        assert json.loads((home.run_dir(run_id) / path).read_text())["shape"] == [64, 4]
