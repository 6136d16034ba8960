"""Classic boards as a language model reads them, from real PettingZoo games."""

from __future__ import annotations

from gym_gui.envs.check import make_multi_agent_env
from gym_gui.envs.families.pettingzoo.text import board_text, legal_moves


def test_tictactoe_text_shows_the_seats_marks_and_the_moves_left() -> None:
    env = make_multi_agent_env("tictactoe_v3")
    env.reset(seed=0)
    for move in (0, 4, 1):  # X takes 0 and 1 (down the first column), O the centre
        env.step(move)
    observation = env.observe(env.agent_selection)  # the second seat's turn: it is X in its own text
    text = board_text("tictactoe_v3", observation)
    assert text is not None
    assert text.splitlines()[2:] == ["O | 3 | 6", "O | X | 7", "2 | 5 | 8", "Legal moves: 2, 3, 5, 6, 7, 8"]
    assert legal_moves(observation) == [2, 3, 5, 6, 7, 8]
    env.close()


def test_connect_four_text_drops_pieces_to_the_bottom_and_lists_open_columns() -> None:
    env = make_multi_agent_env("connect_four_v3")
    env.reset(seed=0)
    for _ in range(6):  # column 0 filled: no longer a legal move
        env.step(0)
    text = board_text("connect_four_v3", env.observe(env.agent_selection))
    assert text is not None
    lines = text.splitlines()
    assert [line[0] for line in lines[2:8]] == ["O", "X", "O", "X", "O", "X"]
    assert lines[-1] == "Legal moves: 1, 2, 3, 4, 5, 6"
    assert board_text("chess_v6", {}) is None
    env.close()
