"""Who acts in the person's play view: the Human | Hybrid | Agent switch, held keys, the takeover key (no Qt).

The view asks :meth:`SeatControl.move` at every beat of its clock what the next step is: the person's
action (the keys held at that moment, or one tapped since the last beat), the operator's, or nothing
(wait). Nothing is queued, so a key pressed between two beats acts at the next one.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from gym_gui.core.envs import Action, EnvEntry, KeyBinding
from gym_gui.envs.check import MAX_DRAW_FPS, draw_rate
from gym_gui.play.operators import HUMAN, OperatorListing
from gym_gui.play.seat import Control

# Holds control with the person until pressed again (Hybrid). No catalog key map binds it (a test
# says so); T for "take over".
TAKEOVER_KEY = "T"
# The most steps a second the view plays, whatever the env's own rate.
MAX_RATE = MAX_DRAW_FPS

# The switch, in its order.
CONTROL_TITLES = {Control.HUMAN: "Human", Control.HYBRID: "Hybrid", Control.AGENT: "Agent"}


def play_rate(env_fps: float) -> float:
    """Steps a second at the env's own rate, capped at :data:`MAX_RATE` (the rate its view draws at)."""
    return draw_rate(env_fps)


def chord_action(entry: EnvEntry, held: list[str]) -> Action | None:
    """The action of keys ``held`` (names, in the order pressed) on an entry with chords: the largest
    chord all of whose keys are held, the one whose keys were pressed last winning a tie; with none
    held, the idle action (Up + Right + Space is UPRIGHTFIRE where the game has it, else UPRIGHT,
    RIGHTFIRE or UPFIRE, whichever leaves out the key pressed first)."""
    order = {name: index for index, name in enumerate(held)}
    fitting = [chord for chord in entry.chords if all(name in order for name in chord.keys)]
    if not fitting:
        return entry.idle_action
    best = max(
        fitting, key=lambda chord: (len(chord.keys), sorted((order[k] for k in chord.keys), reverse=True))
    )
    return best.action


@dataclass(frozen=True)
class Move:
    """The next step: the person's ``action`` when ``human``, else the operator's choice."""

    human: bool
    action: Any = None


class SeatControl:
    """The switch, the keys the person holds and who acts next.

    Human: the person's keys alone (a real-time env's idle action with none held). Agent: the
    operator alone; keys do nothing. Hybrid: the operator, except while the person holds an action
    key (or tapped one since the last step), or after :data:`TAKEOVER_KEY` until it is pressed again;
    then the person acts, and with no key held a real-time env gets its idle action and a turn-based
    one waits for a key.
    """

    def __init__(self) -> None:
        self.mode = Control.HUMAN
        self.entry: EnvEntry | None = None
        self.locked = False  # the takeover key holds control with the person
        self._held: list[KeyBinding] = []
        self._tapped: KeyBinding | None = None  # pressed since the last move, maybe released since
        self._low: np.ndarray | None = None
        self._high: np.ndarray | None = None

    # ------------------------------------------------------------ what is played

    def set_mode(self, mode: Control) -> None:
        self.mode = mode
        self.reset()

    def set_env(self, entry: EnvEntry | None) -> None:
        self.entry = entry
        self._low = self._high = None
        self.reset()

    def reset(self) -> None:
        """A new seat: no key held, control not held by the takeover key."""
        self.locked = False
        self.release_all()
        self._tapped = None

    def set_bounds(self, low: Any, high: Any) -> None:
        """The action space's bounds (Box), which summed continuous key actions are clipped to."""
        self._low = None if low is None else np.asarray(low, dtype=np.float32)
        self._high = None if high is None else np.asarray(high, dtype=np.float32)

    # ------------------------------------------------------------ keys

    @property
    def held(self) -> list[KeyBinding]:
        return list(self._held)

    def press(self, binding: KeyBinding) -> None:
        """An action key goes down (the latest one held gives a discrete action)."""
        if self.mode is Control.AGENT:
            return
        if binding in self._held:
            self._held.remove(binding)
        self._held.append(binding)
        self._tapped = binding

    def release(self, binding: KeyBinding) -> None:
        if binding in self._held:
            self._held.remove(binding)

    def release_all(self) -> None:
        """Every key up (the focus left: their releases will not arrive). A key tapped since the last
        beat still counts once: it was pressed while the view had the keyboard."""
        self._held.clear()

    def toggle(self) -> bool:
        """The takeover key: hold control with the person, or give it back (Hybrid only); the new state."""
        if self.mode is Control.HYBRID:
            self.locked = not self.locked
        return self.locked

    @property
    def person_acts(self) -> bool:
        """Whether the next step is the person's."""
        if self.mode is Control.HUMAN:
            return True
        if self.mode is Control.AGENT:
            return False
        return self.locked or bool(self._held) or self._tapped is not None

    # ------------------------------------------------------------ each beat

    def held_action(self) -> Any:
        """The person's action now: from the held keys (else the one tapped), else the idle action
        (None: the env waits for a key)."""
        entry = self.entry
        if entry is None:
            return None
        keys = self._held or ([self._tapped] if self._tapped is not None else [])
        if not keys:
            return self._as_action(entry.idle_action if entry.realtime else None)
        if entry.chords:
            return self._as_action(chord_action(entry, [binding.key for binding in keys]))
        latest = keys[-1].action
        if isinstance(latest, int):
            return latest
        total = np.zeros(len(latest), dtype=np.float64)
        for binding in keys:
            if not isinstance(binding.action, int):
                total += np.asarray(binding.action, dtype=np.float64)
        return self._as_action(tuple(float(x) for x in total))

    def move(self) -> Move | None:
        """The step this beat takes, or None to wait; a tapped key counts once."""
        if not self.person_acts:
            self._tapped = None
            return Move(human=False)
        action = self.held_action()
        self._tapped = None
        return None if action is None else Move(human=True, action=action)

    def _as_action(self, action: Action | None) -> Any:
        if action is None or isinstance(action, int):
            return action
        vector = np.asarray(action, dtype=np.float32)
        if self._low is not None and self._high is not None:
            vector = np.clip(vector, self._low, self._high).astype(np.float32)
        return vector

    # ------------------------------------------------------------ showing

    def indicator(self, operator: str) -> str:
        """Who has control, in a line (``operator``: the chosen operator's name)."""
        if self.mode is Control.HUMAN:
            return "You play"
        if self.mode is Control.AGENT:
            return f"{operator or 'The operator'} plays"
        if self.locked:
            return f"You have control ({TAKEOVER_KEY} gives it back)"
        if self._held or self._tapped is not None:
            return "You have control (key held)"
        return f"{operator or 'The operator'} has control (hold a key or press {TAKEOVER_KEY} to take over)"


@dataclass(frozen=True)
class PickerEntry:
    """One line of the operator picker: what it shows, the name it chooses, why it is greyed ("" usable)."""

    label: str
    operator: str
    problem: str = ""


def picker_entries(listing: Iterable[OperatorListing]) -> list[PickerEntry]:
    """The picker's lines from ``Operators.listing``; the person is the Human switch, not a line."""
    entries = []
    for item in listing:
        if item.ref.builtin == HUMAN:
            continue
        card = item.card
        if card is None:
            label = item.ref.text
        elif card.source_run:
            label = f"{card.title} · {card.source_run}"
        else:
            label = card.title
        problem = item.problem or ("" if item.usable else "cannot act")
        entries.append(PickerEntry(label, item.ref.text, problem))
    return entries
