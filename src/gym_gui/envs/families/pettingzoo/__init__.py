"""PettingZoo: multi-agent environments. Classic's turn-based board and card games (one seat acts at a
time, its legal moves given by an action mask) and Butterfly's cooperative parallel games (every agent
acts at each step), made by id by the family's module (:mod:`gym_gui.envs.families.pettingzoo.envs`).
"""

from __future__ import annotations

from gym_gui.core.envs import EnvFamily, RenderKind, env_entry_of

NAME = "pettingzoo"
_PIXELS = RenderKind.PIXELS
PLAYERS = ("player_0", "player_1")

FAMILY = EnvFamily(
    name=NAME,
    title="PettingZoo",
    import_module=f"{__name__}.envs",  # makes the ids; imports pettingzoo
    modules=("pettingzoo", "chess", "rlcard", "pymunk"),
    entries=(
        # Turn-based (AEC) games: not realtime, one seat at a time.
        env_entry_of(
            "tictactoe_v3", NAME, "Tic-Tac-Toe", _PIXELS, realtime=False, agents=("player_1", "player_2")
        ),
        env_entry_of("connect_four_v3", NAME, "Connect Four", _PIXELS, realtime=False, agents=PLAYERS),
        env_entry_of("rps_v2", NAME, "Rock-Paper-Scissors", _PIXELS, realtime=False, agents=PLAYERS),
        env_entry_of("chess_v6", NAME, "Chess", _PIXELS, realtime=False, agents=PLAYERS),
        env_entry_of("go_v5", NAME, "Go", _PIXELS, realtime=False, agents=("black_0", "white_0")),
        env_entry_of(
            "texas_holdem_v4", NAME, "Texas Hold'em (limit)", _PIXELS, realtime=False, agents=PLAYERS
        ),
        # Parallel games: every agent acts at each step, at the env's pace.
        env_entry_of(
            "pistonball_v6",
            NAME,
            "Pistonball",
            _PIXELS,
            realtime=True,
            agents=tuple(f"piston_{i}" for i in range(20)),
        ),
        env_entry_of(
            "cooperative_pong_v6",
            NAME,
            "Cooperative Pong",
            _PIXELS,
            realtime=True,
            agents=("paddle_0", "paddle_1"),
        ),
    ),
    # The versions gym_gui was written against; chess (Chess), rlcard (Texas Hold'em) and pymunk
    # (Butterfly) are PettingZoo's classic and butterfly extras without OpenSpiel and Shimmy, which
    # only PettingZoo's wrappers of other libraries' games need.
    packages=("pettingzoo==1.27.0", "chess==1.11.2", "rlcard==1.2.0", "pymunk==7.3.1"),
    docs=__name__,
    rank=72,
)
