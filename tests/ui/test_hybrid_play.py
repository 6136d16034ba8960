"""Hybrid and Agent play through the real widget and a real daemon: scripted key presses at chosen beats
store who acted and what the operator proposed; an operator that stalls, dies or cannot act."""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

import pytest
from gym_gui_sdk.operator import OperatorCard, SpaceSpec
from gymnasium.spaces import Discrete
from PySide6.QtCore import QTimer
from pytestqt.qtbot import QtBot

from gym_gui.core.config import parse_run_config
from gym_gui.core.records import EpisodeRecord, StepRecord
from gym_gui.core.states import RunState
from gym_gui.core.workers import Lane, WorkerSpec
from gym_gui.envs.catalog import catalog
from gym_gui.play.operators import Operators
from gym_gui.play.seat import Control
from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.home import Home
from gym_gui.storage.run_dir import RunDir
from gym_gui.storage.telemetry import TelemetryReader
from gym_gui.ui.daemon_link import DaemonLink
from gym_gui.ui.human_play import HumanPlayWidget
from gym_gui.ui.seat_control import TAKEOVER_KEY
from gym_gui.workers import OperatorPlan, OperatorSource, WorkerCatalog, WorkerPlugin, worker_catalog
from tests.support import run_record
from tests.ui.test_human_play import key, wait_for_state

TAXI_KEYS = {binding.key: binding.action for binding in catalog()["Taxi-v4"].keys}

# An operator kind of a third-party plugin: its process answers 0, or (STALL) holds every answer until
# the gate file appears (a minute at most: a failed test leaves no process behind for long).
SERVER = """
import os, sys, time
from pathlib import Path
from gym_gui_sdk.operator import Decision, OperatorCard, serve

class Gated:
    card = OperatorCard(name=os.environ["NAME"], kind="tp_operator")

    def begin(self, slot, seed):
        pass

    def act(self, turns):
        gate = Path(os.environ["GATE"])
        deadline = time.monotonic() + 60
        while os.environ.get("STALL") and not gate.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        return [Decision(0) for _ in turns]

    def end(self, slot):
        pass

    def close(self):
        pass

sys.exit(serve(Gated))
"""
# What the mismatching one learned on: CartPole's observations, which Taxi does not give.
CARTPOLE_CARD = OperatorCard(
    name="balancer",
    kind="tp_operator",
    observation=SpaceSpec("Box", shape=(4,)),
    action=SpaceSpec("Discrete", n=2),
    env_ids=("CartPole-v1",),
)


class GatedLauncher:
    """A third-party kind's launcher whose runs take the seat (``OperatorLauncher``)."""

    def __init__(self, script: Path, gate: Path) -> None:
        self.script = script
        self.gate = gate

    def operator(self, source: OperatorSource) -> OperatorPlan:
        behaviour = str(source.config.params["behaviour"])
        card = CARTPOLE_CARD if behaviour == "mismatch" else OperatorCard(name=behaviour, kind="tp_operator")
        env = {"NAME": behaviour, "GATE": str(self.gate), "STALL": "1" if behaviour == "stall" else ""}
        return OperatorPlan(card, [sys.executable, str(self.script)], env)


@pytest.fixture
def gated_operators(tmp_path: Path, home: Home) -> tuple[Any, Path]:
    """The home's operators plus two finished runs of a third-party kind: ``stall`` (its process holds
    each answer until the gate file appears) and ``mismatch`` (it acts on CartPole's observations)."""
    script = tmp_path / "gated_operator.py"
    script.write_text(SERVER)
    gate = tmp_path / "gate"
    plugin = WorkerPlugin(
        WorkerSpec(kind="tp_operator", display_name="Gated operators", lane=Lane.TELEMETRY),
        launcher=lambda _context: GatedLauncher(script, gate),  # type: ignore[arg-type,return-value]
    )
    catalog = WorkerCatalog([*worker_catalog().plugins(), plugin])
    records = []
    for behaviour in ("stall", "mismatch"):
        run_dir = RunDir(home.run_dir(behaviour))
        run_dir.create()
        config = {"worker": "tp_operator", "env_id": "Taxi-v4", "budget": {"episodes": 1}}
        run_dir.write_config(parse_run_config({**config, "params": {"behaviour": behaviour}}))
        records.append(
            run_record(behaviour, RunState.COMPLETED, worker="tp_operator", run_dir=str(run_dir.path))
        )

    def operators(client: DaemonClient) -> Operators:
        return Operators(home, catalog, lambda: [*client.list_runs(), *records])

    return operators, gate


def make_widget(qtbot: QtBot, link: DaemonLink, env_id: str, mode: Control, **kwargs: Any) -> HumanPlayWidget:
    widget = HumanPlayWidget(link, **kwargs)
    qtbot.addWidget(widget)
    widget.resize(900, 600)
    widget.show()
    widget.set_env(env_id)
    widget.set_seed(0)
    with qtbot.waitSignal(widget.picker.listed, timeout=20_000):
        widget.set_mode(mode)
    return widget


def start(qtbot: QtBot, widget: HumanPlayWidget, operator: str) -> None:
    widget.picker.choose(operator)
    with qtbot.waitSignal(widget.episode_started, timeout=30_000):
        widget.start_episode()
    qtbot.waitUntil(widget.session_ready, timeout=5_000)


def beat(qtbot: QtBot, widget: HumanPlayWidget) -> None:
    """One beat of the clock that steps: wait for that step to be shown."""
    assert widget.outcome is not None
    step = widget.outcome.step
    widget.tick()
    assert widget.step_pending
    qtbot.waitUntil(lambda: widget.outcome is not None and widget.outcome.step == step + 1, timeout=10_000)


def idle_beat(widget: HumanPlayWidget) -> None:
    """One beat on which nobody acts (the person holds control of a turn-based env, no key down)."""
    assert widget.outcome is not None
    step = widget.outcome.step
    widget.tick()
    assert not widget.step_pending and widget.outcome.step == step


def stored(client: DaemonClient, run_id: str) -> tuple[list[StepRecord], list[EpisodeRecord]]:
    reader = TelemetryReader(RunDir(client.get_run(run_id).record.run_dir).telemetry_path)
    try:
        return reader.steps(0), reader.episodes()
    finally:
        reader.close()


def random_proposals(n: int, actions: int, seed: int) -> list[int]:
    """The random operator's first ``n`` proposals of an episode seeded ``seed`` (its space's own draws)."""
    space = Discrete(actions)
    space.seed(seed)
    return [int(space.sample()) for _ in range(n)]


def test_hybrid_key_presses_take_over_at_the_beat_they_come_and_are_stored_with_the_proposals(
    qtbot: QtBot, link: DaemonLink, client: DaemonClient
) -> None:
    # Taxi: a random episode lasts its 200 steps, well past the presses. The clock is stepped by hand.
    widget = make_widget(qtbot, link, "Taxi-v4", Control.HYBRID, paced=False)
    assert widget.picker.enabled("random") and widget.picker.operator() == "random"
    start(qtbot, widget, "random")
    expected: list[tuple[str, Any]] = []  # per step: who acted, the person's action (None: operator's)

    def operator_beats(count: int) -> None:
        for _ in range(count):
            beat(qtbot, widget)
            expected.append(("operator", None))

    def person_beat(name: str) -> None:
        beat(qtbot, widget)
        expected.append(("human", TAXI_KEYS[name]))

    operator_beats(3)
    assert widget.control_label.text().startswith("random has control")
    # Held for two beats, then let go: control returns to the operator at the next beat.
    qtbot.keyPress(widget, key("Down"))
    assert widget.control_label.text() == "You have control (key held)"
    person_beat("Down")
    person_beat("Down")
    qtbot.keyRelease(widget, key("Down"))
    operator_beats(1)
    # Pressed and released between two beats: the next beat takes it, once (no press is lost or queued).
    qtbot.keyPress(widget, key("P"))
    qtbot.keyRelease(widget, key("P"))
    person_beat("P")
    operator_beats(1)
    # Two keys held: the latest one acts; releasing it leaves the other one's.
    qtbot.keyPress(widget, key("Left"))
    qtbot.keyPress(widget, key("Right"))
    person_beat("Right")
    qtbot.keyRelease(widget, key("Right"))
    person_beat("Left")
    qtbot.keyRelease(widget, key("Left"))
    operator_beats(2)
    # Three takeovers (Down Down, P, Right Left), five steps the person acted.
    assert widget.interventions_label.text() == "interventions this episode: 3 (5 steps yours)"

    run_id = widget.run_id
    widget.close_session()
    wait_for_state(qtbot, client, run_id, "CANCELLED")  # left in the middle of its only episode
    steps, _ = stored(client, run_id)
    proposals = random_proposals(len(expected), 6, seed=0)
    assert [step.actor for step in steps] == [actor for actor, _ in expected]
    for index, (step, (actor, pressed)) in enumerate(zip(steps, expected, strict=True)):
        if actor == "human":
            assert json.loads(step.action) == pressed
            assert json.loads(step.proposed_action) == proposals[index]
        else:
            assert json.loads(step.action) == proposals[index]
            assert step.proposed_action == ""


def test_the_takeover_key_holds_control_until_pressed_again(
    qtbot: QtBot, link: DaemonLink, client: DaemonClient
) -> None:
    widget = make_widget(qtbot, link, "Taxi-v4", Control.HYBRID, paced=False)
    last_key = widget.keys_table.item(widget.keys_table.rowCount() - 1, 0)
    assert last_key is not None and last_key.text() == TAKEOVER_KEY
    start(qtbot, widget, "random")
    beat(qtbot, widget)
    qtbot.keyClick(widget, key(TAKEOVER_KEY))
    assert widget.control_label.text() == f"You have control ({TAKEOVER_KEY} gives it back)"
    # Taxi is turn-based: with the person in control and no key down, the episode waits for them.
    idle_beat(widget)
    qtbot.keyClick(widget, key("Up"))
    beat(qtbot, widget)
    idle_beat(widget)  # the key was let go; control stays with the person
    qtbot.keyClick(widget, key(TAKEOVER_KEY))
    assert widget.control_label.text().startswith("random has control")
    beat(qtbot, widget)

    run_id = widget.run_id
    widget.close_session()
    wait_for_state(qtbot, client, run_id, "CANCELLED")
    steps, _ = stored(client, run_id)
    assert [(s.actor, json.loads(s.action)) for s in steps][1] == ("human", TAXI_KEYS["Up"])
    assert [s.actor for s in steps] == ["operator", "human", "operator"]


def test_agent_plays_episode_after_episode_at_the_envs_rate_without_a_key(
    qtbot: QtBot, link: DaemonLink, client: DaemonClient
) -> None:
    # FrozenLake's random episodes from seeds 0 and 1 end within a few steps; its rate is 4 a second.
    widget = make_widget(qtbot, link, "FrozenLake-v1", Control.AGENT)
    start(qtbot, widget, "random")
    assert widget.fps == 4.0
    qtbot.waitUntil(lambda: widget.outcome is not None and widget.outcome.episode == 1, timeout=30_000)
    assert widget.control_label.text() == "random plays"
    run_id = widget.run_id
    widget.close_session()
    wait_for_state(qtbot, client, run_id, "COMPLETED")  # whole episodes were played
    steps, episodes = stored(client, run_id)
    first = [step for step in steps if step.episode == 0]
    assert first and (first[-1].terminated or first[-1].truncated)
    assert {step.actor for step in steps} == {"operator"}
    assert [json.loads(step.action) for step in first] == random_proposals(len(first), 4, seed=0)
    info = json.loads(episodes[0].info)
    assert (info["operator"], info["interventions"]) == ("random", 0)
    config = RunDir(client.get_run(run_id).record.run_dir).read_config()
    assert (config.worker, config.params["control"]) == ("operator", "agent")


def test_an_operator_that_cannot_act_on_the_env_says_why_before_anything_starts(
    qtbot: QtBot, link: DaemonLink, client: DaemonClient, gated_operators: tuple[Any, Path]
) -> None:
    operators, _gate = gated_operators
    widget = make_widget(qtbot, link, "Taxi-v4", Control.AGENT, paced=False, operators=operators)
    why = "balancer on CartPole-v1 expects Box(4,) observations; Taxi-v4 gives Discrete(500)"
    # Listed greyed, the reason as its tooltip; the usable ones can be chosen.
    assert not widget.picker.enabled("mismatch")
    assert widget.picker.tooltip("mismatch") == f"Cannot play Taxi-v4: {why}"
    assert widget.picker.enabled("stall") and widget.picker.enabled("random")
    # Typed anyway: the check says why, and so does Start, which starts nothing.
    with qtbot.waitSignal(widget.picker.checked, timeout=20_000):
        widget.picker.choose("mismatch")
    assert widget.picker.refusal == f"operator mismatch: {why}"
    assert widget.control_label.text() == f"Cannot play: operator mismatch: {why}"
    widget.start_episode()
    qtbot.waitUntil(lambda: bool(widget.failure), timeout=20_000)
    assert widget.failure == f"Cannot start: operator mismatch: {why}"
    assert not widget.session_ready() and widget.run_id == ""
    assert client.list_runs() == []
    # A bad operator name is refused in one line too.
    with qtbot.waitSignal(widget.picker.checked, timeout=20_000):
        widget.picker.choose("no such operator")
    assert widget.picker.refusal.startswith("operator 'no such operator' is not RUN, RUN:CHECKPOINT")


def test_a_stalled_operator_leaves_the_window_live_and_one_that_dies_fails_its_run(
    qtbot: QtBot, link: DaemonLink, client: DaemonClient, gated_operators: tuple[Any, Path]
) -> None:
    operators, gate = gated_operators
    widget = make_widget(qtbot, link, "Taxi-v4", Control.HYBRID, paced=False, operators=operators)
    start(qtbot, widget, "stall")
    run_id = widget.run_id
    widget.tick()
    assert widget.step_pending  # the operator holds its answer
    # The event loop goes on while the step waits: a timer fires, keys take effect, the view says so.
    fired: list[bool] = []
    QTimer.singleShot(0, lambda: fired.append(True))
    qtbot.waitUntil(lambda: bool(fired), timeout=5_000)
    qtbot.keyClick(widget, key(TAKEOVER_KEY))
    qtbot.waitUntil(lambda: widget.control_label.text().startswith("You have control"), timeout=5_000)
    assert widget.step_pending and widget.outcome is not None and widget.outcome.step == 0
    assert not gate.exists()

    # Its process dies while answering: the view says why, the run is FAILED with the reason.
    session = widget.session
    assert session is not None and session.operator is not None
    os.kill(session.operator.pid, signal.SIGKILL)  # type: ignore[attr-defined]
    qtbot.waitUntil(lambda: bool(widget.failure), timeout=20_000)
    assert widget.failure == "Operator failed: stall was killed by signal 9 while answering"
    assert widget.control_label.text() == widget.failure
    assert not widget.session_ready() and not widget.step_pending
    record = client.wait_for_end(run_id, timeout=20)
    assert (
        record.state is RunState.FAILED
        and record.reason == "operator stall failed: stall was killed by signal 9 while answering"
    )

    # Nothing else broke: the next operator plays.
    start(qtbot, widget, "random")
    assert widget.failure == "" and widget.run_id != run_id
    widget.tick()
    qtbot.waitUntil(lambda: widget.outcome is not None and widget.outcome.step == 1, timeout=10_000)
    second = widget.run_id
    widget.close_session()
    wait_for_state(qtbot, client, second, "CANCELLED")
