"""What the model reads: the system prompt templates per environment family, and observations as text.

Templates are files next to this module (``prompts/<family>.txt``), Python ``string.Template`` text
with ``$env_id``, ``$rules``, ``$legend``, ``$actions``, ``$plan_length`` and ``$reply_format``. The
families: ``toy_text`` (FrozenLake, CliffWalking, Taxi, Blackjack), ``minigrid``, ``babyai`` (MiniGrid's
BabyAI levels: the same grid, and the language their missions are written in) and ``vector`` (any
other environment with discrete actions: numeric observations with their names) and ``board`` (a seat of
a turn-based board game of gym_gui's PettingZoo family, whose text gym_gui draws and sends each turn).

A run's system prompt is the same for every call, so the mission, drawn again at every reset, is
not in it: each message starts with the episode's mission (``Mission: …``).

Grid games are read from the SDK's grid description (``gym_gui_sdk.render``), the same one the
window draws, so what the model sees and what the user sees come from one place.
"""

from __future__ import annotations

import string
from dataclasses import dataclass
from importlib import resources
from typing import Any

import numpy as np
from gym_gui_sdk import render

FAMILIES = ("toy_text", "minigrid", "babyai", "vector", "board")
PLACEHOLDERS = ("env_id", "rules", "legend", "actions", "plan_length", "reply_format")

# Action names by the env's spec name (``env.spec.name``); others are "action N".
ACTION_NAMES: dict[str, tuple[str, ...]] = {
    "FrozenLake": ("left", "down", "right", "up"),
    "FrozenLake8x8": ("left", "down", "right", "up"),
    "CliffWalking": ("up", "right", "down", "left"),
    "Taxi": ("south", "north", "east", "west", "pickup", "dropoff"),
    "Blackjack": ("stick", "hit"),
    "CartPole": ("push cart left", "push cart right"),
    "MountainCar": ("accelerate left", "no acceleration", "accelerate right"),
    "Acrobot": ("torque -1", "no torque", "torque +1"),
    "LunarLander": ("do nothing", "fire left engine", "fire main engine", "fire right engine"),
}
_MINIGRID_ACTIONS = ("turn left", "turn right", "forward", "pickup", "drop", "toggle", "done")
# Where minigrid's BabyAI levels are (``BabyAI-*`` ids): their missions are sentences of BabyAI's language.
_BABYAI_ENTRY_POINT = "minigrid.envs.babyai"
# Names of the numbers of a vector observation, by spec name.
OBSERVATION_NAMES: dict[str, tuple[str, ...]] = {
    "Blackjack": ("your sum", "dealer's showing card", "usable ace (1: yes)"),
    "CartPole": ("cart position", "cart velocity", "pole angle (rad)", "pole angular velocity"),
    "MountainCar": ("position", "velocity"),
    "Acrobot": ("cos θ1", "sin θ1", "cos θ2", "sin θ2", "angular velocity 1", "angular velocity 2"),
    "LunarLander": (
        "x",
        "y",
        "x velocity",
        "y velocity",
        "angle",
        "angular velocity",
        "left leg touches ground",
        "right leg touches ground",
    ),
}
RULES: dict[str, str] = {
    "frozenlake": "Walk from the start S to the goal G across a frozen lake. Stepping into a hole H ends "
    "the episode with nothing; reaching G ends it with reward 1. The ice may be slippery: you may move "
    "in another direction than the one you chose.",
    "cliffwalking": "Walk from the start S to the goal G. Every step costs -1; stepping onto the cliff C "
    "costs -100 and sends you back to S. Reaching G ends the episode.",
    "taxi": "Drive the taxi T to the passenger, pick them up, drive to their destination and drop them "
    "off (+20, the episode ends). Every step costs -1; a pickup or dropoff in the wrong place costs -10. "
    "You cannot drive through a wall |.",
    "minigrid": "Carry out the mission. You see the whole grid from above.",
    "babyai": "Carry out the mission, given at the start of each message (each episode has its own). You "
    "see the whole grid from above: a room, or a grid of rooms joined by doors. Success ends the "
    "episode with a reward that is larger the fewer steps it took.",
    "Blackjack": "Beat the dealer: end with a sum closer to 21 than the dealer's without going over 21. "
    "hit draws a card; stick ends your turn and the dealer plays. Win +1, draw 0, lose -1.",
}
LEGENDS: dict[str, str] = {
    "frozenlake": "S start, F frozen ice, H hole, G goal, A you",
    "cliffwalking": "S start, . ground, C cliff, G goal, A you",
    "taxi": "R G Y B the four stands, T the taxi, | a wall, : no wall",
    "minigrid": "W wall, . empty, D door, K key, A ball, B box, G goal, V lava; you are > v < ^ "
    "(facing right, down, left, up); rows are numbered from the top, columns from the left",
}
_MINIGRID_OBJECTS = {"D": "door", "K": "key", "A": "ball", "B": "box", "G": "goal", "V": "lava"}
_MINIGRID_COLORS = ("red", "green", "blue", "purple", "yellow", "grey")
_DOOR_STATES = ("open", "closed", "locked")
_ARROWS = ">v<^"


# Seats of turn-based board games (gym_gui's PettingZoo family): each turn's board and legal moves come
# as text with the turn (gym_gui draws them), so the env is not made here; its moves, by env id.
BOARD_GAMES: dict[str, tuple[str, ...]] = {
    "tictactoe_v3": tuple(f"mark cell {n}" for n in range(9)),
    "connect_four_v3": tuple(f"drop a piece in column {n}" for n in range(7)),
}
_BOARD_RULES = (
    "Two players take turns. Each message shows the board from your side (your pieces X, your "
    "opponent's O) and your legal moves; win the game. A move that is not legal is replaced by a "
    "random legal one."
)


@dataclass(frozen=True)
class EnvText:
    """What the prompts say about one environment: its family, game, rules, legend and actions."""

    env_id: str
    family: str
    game: str | None  # the grid game (render.grid_game), or None
    action_names: tuple[str, ...]
    rules: str
    legend: str
    observation_names: tuple[str, ...] = ()

    @property
    def noop(self) -> int | None:
        """The action that does nothing, where the environment has one (MiniGrid's done)."""
        return _MINIGRID_ACTIONS.index("done") if self.game == "minigrid" else None

    def actions_text(self) -> str:
        return "\n".join(f"{number}: {name}" for number, name in enumerate(self.action_names))


def board_env_text(env_id: str) -> EnvText | None:
    """What the prompts say about a seat of the board game ``env_id``; None when it is none of
    :data:`BOARD_GAMES`."""
    moves = BOARD_GAMES.get(env_id)
    if moves is None:
        return None
    return EnvText(env_id, "board", None, moves, _BOARD_RULES, "X your pieces, O your opponent's")


def env_text(env: Any, env_id: str) -> EnvText:
    """What the prompts say about ``env`` (a gymnasium env with a discrete action space).

    Raises:
        ValueError: the action space is not discrete (a model names one action of a few).
    """
    space = env.action_space
    if not hasattr(space, "n") or getattr(space, "shape", None) not in ((), None):
        raise ValueError(f"{env_id} has actions {space}; the LLM worker plays discrete actions only")
    count = int(space.n)
    spec = getattr(env, "spec", None)
    name = spec.name if spec is not None else env_id
    entry_point = str(getattr(spec, "entry_point", "") or "")
    game = render.grid_game(env)
    if game == "minigrid":
        names: tuple[str, ...] = _MINIGRID_ACTIONS
        family = "babyai" if entry_point.startswith(_BABYAI_ENTRY_POINT) else "minigrid"
    else:
        names = ACTION_NAMES.get(name, ())
        family = "toy_text" if "toy_text" in entry_point else "vector"
    if len(names) != count:
        names = tuple(f"action {n}" for n in range(count))
    observation_names = OBSERVATION_NAMES.get(name, ())
    rules = RULES.get(
        "babyai" if family == "babyai" else game or name,
        "Choose actions that earn as much reward as possible.",
    )
    legend = LEGENDS.get(game or "", "")
    if not legend and observation_names:
        legend = "the observation lists each number with its name"
    return EnvText(env_id, family, game, names, rules, legend or "none", observation_names)


def template(family: str) -> str:
    """The template shipped for ``family``."""
    if family not in FAMILIES:
        raise ValueError(f"unknown environment family {family!r}; known: {', '.join(FAMILIES)}")
    return resources.files("gym_gui_llm_worker").joinpath("prompts", f"{family}.txt").read_text("utf-8")


def check_template(text: str) -> str:
    """Why ``text`` is not a usable template ("" when it is)."""
    try:
        string.Template(text).substitute(dict.fromkeys(PLACEHOLDERS, ""))
    except KeyError as exc:
        return f"unknown placeholder ${exc.args[0]}; the placeholders are " + ", ".join(
            f"${name}" for name in PLACEHOLDERS
        )
    except ValueError as exc:
        return f"not a template: {exc} (write $$ for a dollar sign)"
    return ""


def system_prompt(text: str, env: EnvText, plan_length: int, reply_format: str) -> str:
    """The system prompt from a template ``text`` (see :func:`check_template`)."""
    return string.Template(text).substitute(
        env_id=env.env_id,
        rules=env.rules,
        legend=env.legend,
        actions=env.actions_text(),
        plan_length=plan_length,
        reply_format=reply_format,
    )


def observation_text(env: EnvText, observation: Any, grid: dict[str, Any] | None) -> str:
    """The observation as the model reads it; ``grid`` is the SDK's grid description of a grid game."""
    if grid is not None:
        return _GRID_TEXT[grid["game"]](grid)
    values = np.asarray(observation if not isinstance(observation, tuple) else list(observation))
    if values.ndim == 0:
        return f"state: {int(values)}"
    flat = [float(v) for v in values.reshape(-1)]
    names = env.observation_names if len(env.observation_names) == len(flat) else ()
    return "\n".join(f"{names[i] if names else f'x{i}'}: {_number(value)}" for i, value in enumerate(flat))


def _number(value: float) -> str:
    return str(int(value)) if value.is_integer() else f"{value:.4f}"


def _tiles_with_agent(grid: dict[str, Any], mark: str) -> list[str]:
    rows = [list(row) for row in grid["tiles"]]
    r, c = grid["agent"]
    rows[r][c] = mark
    return ["".join(row) for row in rows]


def _plain_grid(grid: dict[str, Any]) -> str:
    r, c = grid["agent"]
    lines = ["Map (top row first):", *_tiles_with_agent(grid, "A"), f"You are at row {r}, column {c}."]
    return "\n".join(lines)


def _taxi(grid: dict[str, Any]) -> str:
    r, c = grid["agent"]
    ascii_map = [list(line) for line in grid["map"]]
    ascii_map[r + 1][2 * c + 1] = "T"
    stands = "RGYB"
    passenger = "in the taxi" if grid["in_taxi"] else f"waiting at {stands[grid['passenger']]}"
    return "\n".join(
        [
            "Map (top row first):",
            *("".join(line) for line in ascii_map),
            f"The taxi is at row {r}, column {c}.",
            f"Passenger: {passenger}. Destination: {stands[grid['destination']]}.",
        ]
    )


def _minigrid(grid: dict[str, Any]) -> str:
    r, c = grid["agent"]
    lines = [f"Mission: {grid['mission']}", "Grid (top row first):"]
    lines += _tiles_with_agent(grid, _ARROWS[grid["dir"]])
    lines.append(f"You are at row {r}, column {c}, facing {('right', 'down', 'left', 'up')[grid['dir']]}.")
    objects = []
    for row, (tiles, colors, states) in enumerate(
        zip(grid["tiles"], grid["colors"], grid["states"], strict=True)
    ):
        for col, tile in enumerate(tiles):
            what = _MINIGRID_OBJECTS.get(tile)
            if what is None:
                continue
            color = _MINIGRID_COLORS[int(colors[col])] if int(colors[col]) < len(_MINIGRID_COLORS) else ""
            detail = f"{color}, {_DOOR_STATES[int(states[col]) % 3]}" if what == "door" else color
            objects.append(
                f"{what} ({detail}) at row {row}, column {col}"
                if detail
                else f"{what} at row {row}, column {col}"
            )
    if objects:
        lines.append("Objects: " + "; ".join(objects) + ".")
    carrying = grid.get("carrying")
    lines.append(f"You carry: {carrying['color']} {carrying['type']}." if carrying else "You carry nothing.")
    return "\n".join(lines)


_GRID_TEXT = {"frozenlake": _plain_grid, "cliffwalking": _plain_grid, "taxi": _taxi, "minigrid": _minigrid}
