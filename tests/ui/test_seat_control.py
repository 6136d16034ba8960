"""Who acts in the play view, beat by beat: held keys, taps between beats, the takeover key, the picker's lines."""

from __future__ import annotations

import numpy as np
from gym_gui_sdk.operator import OperatorCard, SpaceSpec

from gym_gui.core.envs import KeyBinding
from gym_gui.envs.catalog import catalog, env_entry
from gym_gui.play.operators import HUMAN_CARD, OperatorListing, OperatorRef, RandomOperator
from gym_gui.play.seat import Control
from gym_gui.ui.seat_control import (
    MAX_RATE,
    TAKEOVER_KEY,
    Move,
    PickerEntry,
    SeatControl,
    picker_entries,
    play_rate,
)


def control_on(env_id: str, mode: Control) -> SeatControl:
    control = SeatControl()
    control.set_env(env_entry(env_id))
    control.set_mode(mode)
    return control


def key(env_id: str, name: str) -> KeyBinding:
    entry = catalog()[env_id]
    return next(binding for binding in entry.keys if binding.key == name)


def test_no_key_map_binds_the_takeover_key() -> None:
    assert all(binding.key != TAKEOVER_KEY for entry in catalog().values() for binding in entry.keys)


def test_hybrid_the_person_acts_while_a_key_is_held_or_was_tapped_since_the_last_beat() -> None:
    control = control_on("Taxi-v4", Control.HYBRID)
    down, pick_up = key("Taxi-v4", "Down"), key("Taxi-v4", "P")
    assert control.move() == Move(human=False)
    control.press(down)
    assert control.person_acts
    assert control.move() == Move(human=True, action=down.action)
    assert control.move() == Move(human=True, action=down.action)  # held: every beat
    control.release(down)
    assert control.move() == Move(human=False)
    # Pressed and let go between two beats: the next beat takes it, once.
    control.press(pick_up)
    control.release(pick_up)
    assert control.indicator("random") == "You have control (key held)"
    assert control.move() == Move(human=True, action=pick_up.action)
    assert control.move() == Move(human=False)
    assert control.indicator("random").startswith("random has control")


def test_the_takeover_key_holds_control_until_pressed_again() -> None:
    control = control_on("Taxi-v4", Control.HYBRID)
    left = key("Taxi-v4", "Left")
    assert control.toggle() is True
    # A turn-based env waits for the person's key while they hold control.
    assert control.move() is None
    assert control.indicator("random") == f"You have control ({TAKEOVER_KEY} gives it back)"
    control.press(left)
    control.release(left)
    assert control.move() == Move(human=True, action=left.action)
    assert control.move() is None  # letting go does not give control back
    assert control.toggle() is False
    assert control.move() == Move(human=False)

    # A real-time env with a no-op gets it while the person holds control with no key down.
    lander = control_on("LunarLander-v3", Control.HYBRID)
    lander.toggle()
    idle = catalog()["LunarLander-v3"].idle_action
    assert idle is not None and lander.move() == Move(human=True, action=idle)


def test_agent_ignores_keys_and_human_waits_where_there_is_no_noop() -> None:
    agent = control_on("Taxi-v4", Control.AGENT)
    agent.press(key("Taxi-v4", "Down"))
    assert agent.toggle() is False
    assert agent.move() == Move(human=False)
    assert agent.indicator("ppo") == "ppo plays"

    cartpole = control_on("CartPole-v1", Control.HUMAN)
    assert cartpole.move() is None  # CartPole has no no-op
    cartpole.press(key("CartPole-v1", "Left"))
    assert cartpole.move() == Move(human=True, action=0)
    # Switching leaves the keys and the takeover.
    cartpole.set_mode(Control.HYBRID)
    cartpole.toggle()
    cartpole.set_mode(Control.AGENT)
    assert not cartpole.locked and not cartpole.held


def test_continuous_keys_add_up_and_are_clipped() -> None:
    control = control_on("LunarLanderContinuous-v3", Control.HYBRID)
    control.set_bounds(np.array([-1.0, -1.0]), np.array([1.0, 1.0]))
    for binding in catalog()["LunarLanderContinuous-v3"].keys:
        if binding.key in ("Up", "Left"):
            control.press(binding)
    move = control.move()
    assert move is not None and move.human
    assert np.all(np.abs(move.action) <= 1.0) and move.action.dtype == np.float32


def test_the_rate_is_the_envs_own_up_to_60() -> None:
    assert play_rate(4.0) == 4.0
    assert play_rate(125.0) == MAX_RATE == 60.0


def test_picker_lines_grey_what_cannot_act_and_leave_the_person_to_the_switch() -> None:
    ppo = OperatorCard(
        name="ppo",
        kind="cleanrl",
        source_run="run-1",
        observation=SpaceSpec("Box", shape=(4,)),
        env_ids=("CartPole-v1",),
    )
    problem = "ppo on CartPole-v1 expects Box(4,) observations; Taxi-v4 gives Discrete(500)"
    listing = [
        OperatorListing(OperatorRef("random"), RandomOperator(None).card),
        OperatorListing(OperatorRef("human"), HUMAN_CARD),
        OperatorListing(OperatorRef("run-1", run_id="run-1"), ppo, problem),
        OperatorListing(OperatorRef("run-2", run_id="run-2"), None, "no model of a kind that can act"),
    ]
    assert picker_entries(listing) == [
        PickerEntry("random", "random"),
        PickerEntry("ppo on CartPole-v1 · run-1", "run-1", problem),
        PickerEntry("run-2", "run-2", "no model of a kind that can act"),
    ]


def test_a_key_tapped_before_the_focus_leaves_still_takes_the_next_step_once() -> None:
    control = control_on("Taxi-v4", Control.HYBRID)
    assert control.entry is not None
    up = next(binding for binding in control.entry.keys if binding.key == "Up")
    control.press(up)
    control.release(up)
    control.release_all()  # the focus left before the beat came
    move = control.move()
    assert move is not None and move.human and move.action == up.action
    assert control.move() == Move(human=False)  # once: the operator acts at the beat after
    control.press(up)
    control.reset()  # a new seat forgets it
    assert control.move() == Move(human=False)
