"""Steps that say who acted (an operator a person may take over from) travel through the daemon into
storage with the action the operator proposed; a batch whose steps do not say carries nothing for it."""

from __future__ import annotations

import pytest
from gym_gui_sdk.worker import ACTORS, WorkerSession

from gym_gui.core.config import parse_run_config
from gym_gui.core.records import EpisodeInterventions
from gym_gui.core.states import RunState
from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.home import Home
from gym_gui.storage.run_dir import RunDir
from gym_gui.storage.telemetry import TelemetryReader


def human_session(client: DaemonClient, batch_steps: int) -> WorkerSession:
    config = parse_run_config({"worker": "human", "env_id": "FrozenLake-v1", "budget": {"episodes": 3}})
    record, token = client.submit(config)
    session = WorkerSession(client.info.address, record.run_id, token, batch_steps=batch_steps)
    session.start()
    session.started("none")
    return session


def test_who_acted_and_the_proposed_action_are_stored_and_counted(client: DaemonClient, home: Home) -> None:
    session = human_session(client, batch_steps=3)  # the steps span batches
    # Episode 0, one step a call: the operator plays, a person takes over twice, overriding its action.
    acts = [
        ("operator", ""),
        ("operator", ""),
        ("human", "2"),
        ("human", "0"),
        ("operator", ""),
        ("human", "1"),
    ]
    for step, (actor, proposed) in enumerate(acts):
        session.step(0, step, 0.0, step == 5, False, "3", f"{step}", actor=actor, proposed_action=proposed)
    # Episode 1, column-wise; episode 2, steps that do not say (a person never asked).
    session.steps(
        [1] * 4,
        [0, 1, 2, 3],
        [0.0] * 4,
        [False, False, False, True],
        [False] * 4,
        ["1"] * 4,
        ["0"] * 4,
        actor=["human", "human", "operator", ""],
        proposed_action=["0", "", "", ""],
    )
    for step in range(3):
        session.step(2, step, 0.0, step == 2, False, "1", "0")
    session.finish()
    assert client.wait_for_end(session.run_id, timeout=60).state is RunState.COMPLETED

    reader = TelemetryReader(RunDir(home.run_dir(session.run_id)).telemetry_path)
    try:
        assert [(s.actor, s.proposed_action) for s in reader.steps(0)] == acts
        assert [(s.actor, s.proposed_action) for s in reader.steps(1)] == [
            ("human", "0"),
            ("human", ""),
            ("operator", ""),
            ("", ""),
        ]
        assert {(s.actor, s.proposed_action) for s in reader.steps(2)} == {("", "")}
        assert reader.interventions() == [
            EpisodeInterventions(episode=0, steps=6, human=3, interventions=2),
            EpisodeInterventions(episode=1, steps=3, human=2, interventions=1),
        ]
        assert reader.intervention_rate() == pytest.approx(5 / 9)
    finally:
        reader.close()


def test_a_batch_whose_steps_do_not_say_who_acted_carries_no_actor_columns() -> None:
    session = WorkerSession("127.0.0.1:1", "run", "token")  # not started: the batch is taken by hand
    for step in range(3):
        session.step(0, step, 0.0, False, False, "1", "0")
    plain = session._batch.take()
    assert plain is not None and len(plain.steps.step) == 3
    assert (list(plain.steps.actor), list(plain.steps.proposed_action)) == ([], [])

    session.step(0, 3, 0.0, False, False, "1", "0")
    session.step(0, 4, 0.0, False, False, "1", "0", actor="human", proposed_action="2")
    session.step(0, 5, 0.0, False, False, "1", "0", actor="operator")
    mixed = session._batch.take()
    assert mixed is not None
    assert list(mixed.steps.actor) == [0, ACTORS.index("human"), ACTORS.index("operator")] == [0, 2, 1]
    assert list(mixed.steps.proposed_action) == ["", "2", ""]


def test_an_unknown_actor_is_refused_at_the_call_naming_it() -> None:
    session = WorkerSession("127.0.0.1:1", "run", "token")
    with pytest.raises(ValueError, match="actor 'robot' is not one of '', 'operator', 'human'"):
        session.step(0, 0, 0.0, False, False, "1", "0", actor="robot")
    with pytest.raises(ValueError, match="proposed_action '2' given without an actor"):
        session.step(0, 0, 0.0, False, False, "1", "0", proposed_action="2")
    with pytest.raises(ValueError, match="actor 'Human' is not one of"):
        session.steps(
            [0, 0],
            [0, 1],
            [0.0] * 2,
            [False] * 2,
            [False] * 2,
            ["1"] * 2,
            ["0"] * 2,
            actor=["human", "Human"],
        )
    with pytest.raises(ValueError, match="step columns differ in length"):
        session.steps([0], [0], [0.0], [False], [False], ["1"], ["0"], actor=["human", "human"])
    # A refused step records nothing: the batch is as it was.
    assert session._batch.rows == [] and session._batch.actors == {} and session._batch.text == 0
