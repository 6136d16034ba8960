"""The Arena's plain model: the setup's one-line refusals, the lock-step's rounds and resets, the
scoreboard's cells, a box plot's figures."""

from __future__ import annotations

import numpy as np
import pytest

from gym_gui.core.errors import ConfigError
from gym_gui.ui.arena.model import (
    ArenaSetup,
    LockStep,
    PaneState,
    Scoreboard,
    box_figures,
)


@pytest.mark.parametrize(
    ("operators", "env_id", "episodes", "message"),
    [
        (("random",), "FrozenLake-v1", 1, "an arena seats 2 to 4 operators, 1 chosen"),
        (("random",) * 5, "FrozenLake-v1", 1, "an arena seats 2 to 4 operators, 5 chosen"),
        (("human", "random", "human"), "FrozenLake-v1", 1, "an arena seats one person"),
        (("random", "random"), "", 1, "choose the environment"),
        (("random", "random"), "FrozenLake-v1", 0, "at least one episode, got 0"),
    ],
)
def test_a_setup_refuses_in_one_line_what_cannot_be_played(
    operators: tuple[str, ...], env_id: str, episodes: int, message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        ArenaSetup(operators, env_id, 0, episodes).check()


def test_a_setup_knows_the_persons_pane() -> None:
    setup = ArenaSetup(("random", "human", "random"), "FrozenLake-v1", 0)
    setup.check()
    assert setup.person == 1
    assert ArenaSetup(("random", "random"), "FrozenLake-v1", 0).person is None


def test_rounds_step_every_pane_in_play_once_and_wait_for_all_answers() -> None:
    lock = LockStep(3, episodes=2)
    assert not lock.round_due  # every pane is still starting
    for index in range(3):
        lock.ready(index)
    assert lock.begin_round() == [0, 1, 2]
    assert lock.begin_round() == []  # nothing begins while answers are out
    lock.stepped(0, episode_over=False)
    lock.stepped(1, episode_over=True)
    assert not lock.round_due
    lock.stepped(2, episode_over=False)
    # Pane 1's episode is over: it waits while the others play on.
    assert lock.begin_round() == [0, 2]
    assert not lock.reset_due
    lock.stepped(0, episode_over=True)
    lock.stepped(2, episode_over=True)
    assert lock.reset_due and not lock.round_due
    assert lock.begin_reset() == [0, 1, 2]
    for index in range(3):
        lock.ready(index)
    assert lock.begin_round() == [0, 1, 2]
    for index in range(3):
        lock.stepped(index, episode_over=True)
    # Both episodes played: nothing more is due.
    assert lock.states == [PaneState.DONE] * 3
    assert lock.finished and not lock.reset_due and not lock.round_due
    assert lock.rounds == 3


def test_a_failed_pane_is_out_and_a_persons_pane_holds_the_round() -> None:
    lock = LockStep(3, episodes=1, person=2)
    for index in range(3):
        lock.ready(index)
    assert lock.waits_for_person
    assert lock.begin_round() == [0, 1, 2]
    lock.stepped(0, episode_over=False)
    lock.failed(1)
    lock.stepped(2, episode_over=True)
    assert not lock.waits_for_person  # the person's episode is over: the operators go on alone
    assert lock.begin_round() == [0]
    lock.stepped(0, episode_over=True)
    assert lock.finished
    assert lock.states == [PaneState.DONE, PaneState.FAILED, PaneState.DONE]


def test_the_scoreboard_shows_each_episode_the_one_in_play_the_totals_and_fallbacks() -> None:
    board = Scoreboard(["random", "llm:chat.json", "you"])
    board.rename(1, "llm")  # seated: its operator's title
    board.stepped(0, 0.0, 1, False, None, False)
    board.stepped(1, 0.0, 1, True, None, False)
    board.stepped(0, 1.0, 2, False, True, True)
    board.stepped(1, 0.0, 2, True, False, True)
    board.stepped(2, 0.0, 3, False, False, True)
    board.stepped(0, 0.0, 1, False, None, False)
    board.failed(1, "llm died")
    assert board.columns == ["random", "llm (out)", "you"]
    assert board.rows() == [
        ("episode 1", ["1 · 2 steps · success", "0 · 2 steps · failed", "0 · 3 steps · failed"]),
        ("episode 2", ["0 · 1 step (playing)", "-", ""]),
        (
            "total",
            [
                "1 in 1 episodes · 2.0 steps on average · 1/1 successes",
                "0 in 1 episodes · 2.0 steps on average · 0/1 successes",
                "0 in 1 episodes · 3.0 steps on average · 0/1 successes",
            ],
        ),
        ("fallbacks", ["0", "2", "0"]),
    ]
    assert [e.fallbacks for e in board.episodes(1)] == [2]


def test_box_figures_are_tukeys() -> None:
    values = [1.0, 2.0, 3.0, 4.0, 5.0, 100.0]
    figures = box_figures(values)
    assert figures is not None
    q1, median, q3 = np.percentile(values, [25, 50, 75])
    assert (figures.q1, figures.median, figures.q3) == (q1, median, q3)
    assert (figures.low, figures.high, figures.outliers) == (1.0, 5.0, (100.0,))
    assert box_figures([]) is None
    assert box_figures([float("nan")]) is None
    single = box_figures([2.0])
    assert single is not None and (single.low, single.median, single.high) == (2.0, 2.0, 2.0)
