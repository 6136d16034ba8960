"""A dataset's episode played again in its environment: its recorded actions from its recorded seed,
stored as a run, so an episode of a dataset made outside gym_gui replays like any other (no Qt)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from gym_gui_sdk.operator import Decision, OperatorCard, Turn

from gym_gui.core.config import MAX_RENDER_FPS
from gym_gui.core.errors import ConfigError
from gym_gui.datasets import DatasetStore, RecordedEpisode, recorded_episode
from gym_gui.play.operators import OperatorChoice, OperatorRef
from gym_gui.play.seat import Control, Seat
from gym_gui.protocol.client import DaemonClient

# How a re-enacted episode's operator is named in its run's config (params.operator).
DATASET_PREFIX = "dataset:"


class RecordedActions:
    """An operator that looks at nothing: the actions of one recorded episode, in their order."""

    def __init__(self, title: str, actions: Sequence[Any]) -> None:
        self.card = OperatorCard(name=title, kind="dataset", deterministic=True)
        self._actions = actions
        self._next = 0

    def begin(self, slot: int, seed: int | None) -> None:
        self._next = 0

    def act(self, turns: Sequence[Turn]) -> list[Decision]:
        decisions = []
        for _ in turns:
            action = self._actions[self._next]
            self._next += 1
            decisions.append(Decision(action.tolist() if isinstance(action, np.ndarray) else action))
        return decisions

    def end(self, slot: int) -> None:
        pass

    def close(self) -> None:
        pass


@dataclass(frozen=True)
class Reenacted:
    """A re-enacted episode: its run (one episode, every step stored, frames at up to the render
    cap), its steps, and the first step whose observation differs from the dataset's (None: none)."""

    run_id: str
    steps: int
    diverged_at: int | None

    def summary(self, name: str, index: int) -> str:
        played = f"dataset {name!r} episode {index} played again as run {self.run_id} ({self.steps} steps)"
        if self.diverged_at is None:
            return f"{played}: every observation as recorded"
        return (
            f"{played}: from step {self.diverged_at} the environment's observations differ from the "
            "dataset's (recorded elsewhere, or with another version of the env)"
        )


def _same(stored: Any, seen: Any) -> bool:
    try:
        return bool(np.allclose(np.asarray(stored, dtype=float), np.asarray(seen, dtype=float), atol=1e-5))
    except (TypeError, ValueError):  # a Dict or Text observation: compared as it is
        return bool(np.all(stored == seen))


def reenact(client: DaemonClient, store: DatasetStore, name: str, index: int) -> Reenacted:
    """Play episode ``index`` of dataset ``name`` again in its environment, reset with the episode's
    seed, its actions in order, as a run of the Operator kind; blocking (the window calls it off its
    thread).

    Raises:
        ConfigError: the dataset names no environment, the episode has no seed (its first state
            cannot be made again), or no such dataset or episode.
    """
    card = store.card(name)
    if card.env_id is None:
        raise ConfigError(
            f"dataset {name!r} was recorded without an environment: there is none to play it in"
        )
    recorded: RecordedEpisode = recorded_episode(store, name, index)
    if recorded.seed is None:
        raise ConfigError(
            f"dataset {name!r} episode {index} was recorded without a seed: its first state cannot be made again"
        )
    title = f"{name} episode {index}"
    operator = RecordedActions(title, recorded.actions)
    choice = OperatorChoice(
        OperatorRef(f"{DATASET_PREFIX}{name}#{index}"), operator.card, in_process=lambda _space: operator
    )
    seat = Seat(
        client,
        card.env_id,
        choice,
        control=Control.AGENT,
        seed=recorded.seed,
        render_fps=MAX_RENDER_FPS,
        episodes=1,
    )
    outcome = seat.start()
    diverged = None if _same(recorded.observations[0], outcome.observation) else 0
    try:
        for step in range(recorded.steps):
            outcome = seat.step()
            if diverged is None and not _same(recorded.observations[step + 1], outcome.observation):
                diverged = step + 1
            if outcome.done:
                break
    finally:
        seat.close(f"{title} played again")
    return Reenacted(seat.run_id, outcome.step, diverged)
