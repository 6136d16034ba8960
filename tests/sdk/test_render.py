"""Render payloads from real gymnasium/minigrid envs, and the SDK's JSON encoding of RL values."""

from __future__ import annotations

import base64
import json
import math
from collections.abc import Iterator
from enum import Enum, IntEnum
from typing import Any

import gymnasium
import minigrid  # noqa: F401  (registers the MiniGrid ids)
import numpy as np
import pytest
from gym_gui_sdk.encoding import dumps, to_jsonable
from gym_gui_sdk.render import (
    GRID,
    NONE,
    PIXELS,
    GridPayloads,
    decode_payload,
    frame_payload,
    grid_description,
    grid_game,
    grid_payload,
    render_kind_of,
    render_payload,
)
from minigrid.core.world_object import Key


@pytest.fixture
def make() -> Iterator[Any]:
    made: list[gymnasium.Env[Any, Any]] = []

    def _make(env_id: str, **kwargs: Any) -> gymnasium.Env[Any, Any]:
        env = gymnasium.make(env_id, **kwargs)
        made.append(env)
        return env

    yield _make
    for env in made:
        env.close()


def _grid(env: Any) -> dict[str, Any]:
    payload = grid_payload(env)
    assert payload.startswith(b"{")
    decoded = decode_payload(payload)
    assert isinstance(decoded, dict)
    # Compact: no whitespace between tokens.
    assert payload == json.dumps(decoded, separators=(",", ":"), ensure_ascii=False).encode()
    assert decoded["v"] == 1
    assert len(decoded["tiles"]) == decoded["rows"]
    assert all(len(row) == decoded["cols"] for row in decoded["tiles"])
    return decoded


# --- render kinds ------------------------------------------------------------------------------


def test_render_kind_is_duck_typed(make: Any) -> None:
    assert render_kind_of(make("FrozenLake-v1")) == GRID
    assert render_kind_of(make("Taxi-v4")) == GRID
    assert render_kind_of(make("CliffWalking-v1")) == GRID
    assert render_kind_of(make("MiniGrid-Empty-5x5-v0")) == GRID
    assert render_kind_of(make("CartPole-v1", render_mode="rgb_array")) == PIXELS
    assert render_kind_of(make("Blackjack-v1", render_mode="rgb_array")) == PIXELS
    assert render_kind_of(make("CartPole-v1")) == NONE
    assert grid_game(make("Taxi-v4")) == "taxi"
    assert grid_game(make("FrozenLake8x8-v1")) == "frozenlake"
    assert grid_game(make("CartPole-v1")) is None


def test_grid_payload_refuses_pixel_envs_and_envs_not_reset(make: Any) -> None:
    with pytest.raises(ValueError, match="not a grid environment"):
        grid_payload(make("CartPole-v1"))
    with pytest.raises(ValueError, match="reset it first"):
        grid_payload(make("FrozenLake-v1"))


# --- FrozenLake ----------------------------------------------------------------------------------


def test_frozenlake_agent_moves_as_the_env_steps(make: Any) -> None:
    env = make("FrozenLake-v1", is_slippery=False)
    env.reset(seed=0)
    first = _grid(env)
    assert first["game"] == "frozenlake"
    assert (first["rows"], first["cols"]) == (4, 4)
    assert first["tiles"] == ["SFFF", "FHFH", "FFFH", "HFFG"]
    assert first["agent"] == [0, 0] and first["last_action"] is None

    obs, *_ = env.step(2)  # right
    moved = _grid(env)
    assert moved["agent"] == [0, 1] == list(divmod(obs, 4))
    assert moved["last_action"] == 2

    obs, reward, terminated, *_ = env.step(1)  # down, into the hole at (1, 1)
    fell = _grid(env)
    assert fell["agent"] == [1, 1] == list(divmod(obs, 4))
    assert terminated and reward == 0
    assert fell["tiles"][1][1] == "H"


def test_frozenlake_payload_follows_a_random_walk(make: Any) -> None:
    env = make("FrozenLake8x8-v1")
    obs, _ = env.reset(seed=3)
    env.action_space.seed(3)
    for _ in range(60):
        assert _grid(env)["agent"] == list(divmod(int(obs), 8))
        obs, _r, terminated, truncated, _i = env.step(env.action_space.sample())
        if terminated or truncated:
            obs, _ = env.reset()


# --- Taxi ------------------------------------------------------------------------------------------


def _assert_taxi_matches(env: Any, payload: dict[str, Any]) -> None:
    u = env.unwrapped
    row, col, passenger, destination = u.decode(u.s)
    assert payload["agent"] == [row, col]
    assert payload["passenger"] == passenger
    assert payload["destination"] == destination
    assert payload["destination_at"] == list(u.locs[destination])
    assert payload["in_taxi"] is bool(passenger == 4)
    assert payload["passenger_at"] == (None if passenger == 4 else list(u.locs[passenger]))


def test_taxi_payload_matches_decode_of_the_state(make: Any) -> None:
    env = make("Taxi-v4")
    env.reset(seed=7)
    env.action_space.seed(7)
    first = _grid(env)
    assert first["game"] == "taxi" and (first["rows"], first["cols"]) == (5, 5)
    assert first["tiles"] == ["R...G", ".....", ".....", ".....", "Y..B."]
    assert first["map"] == [line.decode() for line in (b"".join(r) for r in env.unwrapped.desc)]
    # A wall east of (0, 1) and none east of (0, 2), as the map shows.
    assert first["map"][1][2 * 1 + 2] == "|" and first["map"][1][2 * 2 + 2] == ":"
    for _ in range(100):
        _assert_taxi_matches(env, _grid(env))
        _obs, _r, terminated, truncated, _i = env.step(env.action_space.sample())
        if terminated or truncated:
            env.reset()


def test_taxi_payload_shows_the_passenger_in_the_taxi(make: Any) -> None:
    env = make("Taxi-v4")
    env.reset(seed=0)
    u = env.unwrapped
    u.s = u.encode(0, 0, 0, 3)  # taxi on the R stand, passenger waiting there, going to B
    assert _grid(env)["passenger_at"] == [0, 0]
    _obs, reward, *_ = env.step(4)  # pick up
    payload = _grid(env)
    assert reward == -1
    assert payload["in_taxi"] is True and payload["passenger"] == 4 and payload["passenger_at"] is None
    assert payload["destination_at"] == [4, 3]
    _assert_taxi_matches(env, payload)


# --- CliffWalking --------------------------------------------------------------------------------


def test_cliffwalking_payload(make: Any) -> None:
    env = make("CliffWalking-v1")
    env.reset(seed=0)
    start = _grid(env)
    assert start["game"] == "cliffwalking" and (start["rows"], start["cols"]) == (4, 12)
    assert start["tiles"] == ["." * 12] * 3 + ["S" + "C" * 10 + "G"]
    assert start["agent"] == [3, 0]

    obs, reward, *_ = env.step(0)  # up
    assert _grid(env)["agent"] == [2, 0] == list(divmod(obs, 12)) and reward == -1
    env.step(2)  # back down to the start
    obs, reward, *_ = env.step(1)  # right, off the cliff: back to the start
    after_fall = _grid(env)
    assert reward == -100 and after_fall["agent"] == [3, 0] and after_fall["last_action"] == 1


# --- MiniGrid ------------------------------------------------------------------------------------


def test_minigrid_agent_position_and_direction(make: Any) -> None:
    env = make("MiniGrid-Empty-5x5-v0")
    env.reset(seed=0)
    u = env.unwrapped
    first = _grid(env)
    assert first["game"] == "minigrid" and (first["rows"], first["cols"]) == (5, 5)
    assert first["tiles"] == ["WWWWW", "W...W", "W...W", "W..GW", "WWWWW"]
    assert first["agent"] == [1, 1] and first["dir"] == 0  # agent_pos (x=1, y=1) facing right
    assert first["mission"] == "get to the green goal square"
    assert first["carrying"] is None and first["step"] == 0 and first["max_steps"] == 100

    env.step(2)  # forward: x + 1
    moved = _grid(env)
    x, y = (int(v) for v in u.agent_pos)
    assert (x, y) == (2, 1) and moved["agent"] == [y, x] and moved["step"] == 1
    env.step(1)  # turn right: facing down
    turned = _grid(env)
    assert turned["dir"] == 1 == u.agent_dir and turned["agent"] == [1, 2]
    env.step(2)  # forward: y + 1
    assert _grid(env)["agent"] == [2, 2]


def test_minigrid_object_grid_matches_the_env(make: Any) -> None:
    env = make("MiniGrid-DoorKey-5x5-v0")
    env.reset(seed=1)
    u = env.unwrapped
    payload = _grid(env)
    letters = {
        "wall": "W",
        "door": "D",
        "key": "K",
        "goal": "G",
        "floor": "F",
        "ball": "A",
        "box": "B",
        "lava": "V",
    }
    encoded = u.grid.encode()
    for y in range(u.height):
        for x in range(u.width):
            cell = u.grid.get(x, y)
            assert payload["tiles"][y][x] == ("." if cell is None else letters[cell.type])
            assert int(payload["colors"][y][x]) == encoded[x, y, 1]
            assert int(payload["states"][y][x]) == encoded[x, y, 2]
    door_y, door_x = next((y, row.index("D")) for y, row in enumerate(payload["tiles"]) if "D" in row)
    assert payload["states"][door_y][door_x] == "2"  # locked
    assert payload["colors"][door_y][door_x] == "4"  # yellow

    u.carrying = Key("yellow")
    assert _grid(env)["carrying"] == {"type": "key", "color": "yellow"}


# --- frames --------------------------------------------------------------------------------------


def test_cartpole_frame_round_trips_through_png_exactly(make: Any) -> None:
    env = make("CartPole-v1", render_mode="rgb_array")
    env.reset(seed=0)
    env.step(1)
    frame = env.render()
    assert isinstance(frame, np.ndarray)
    payload = frame_payload(frame)
    assert payload.startswith(b"\x89PNG")
    decoded = decode_payload(payload)
    assert isinstance(decoded, np.ndarray)
    assert decoded.dtype == np.uint8 and decoded.shape == frame.shape
    assert np.array_equal(decoded, frame)
    via_env = render_payload(env)
    assert via_env is not None
    assert np.array_equal(np.asarray(decode_payload(via_env)), frame)


def test_render_payload_picks_the_kind(make: Any) -> None:
    lake = make("FrozenLake-v1")
    lake.reset(seed=0)
    assert json.loads(render_payload(lake) or b"")["game"] == "frozenlake"
    assert render_payload(make("CartPole-v1")) is None


def test_frame_payload_and_decode_reject_bad_input() -> None:
    with pytest.raises(ValueError, match="H x W x 3 uint8"):
        frame_payload(np.zeros((4, 4), dtype=np.uint8))
    with pytest.raises(ValueError, match="H x W x 3 uint8"):
        frame_payload(np.zeros((4, 4, 3), dtype=np.float32))
    with pytest.raises(ValueError, match="not a render payload"):
        decode_payload(b"GIF89a....")
    odd = np.arange(5 * 7 * 3, dtype=np.uint8).reshape(5, 7, 3)
    assert np.array_equal(
        np.asarray(decode_payload(frame_payload(odd[:, ::2]))), odd[:, ::2]
    )  # non-contiguous input


def test_grid_description_is_the_decoded_payload(make: Any) -> None:
    env = make("Taxi-v4")
    env.reset(seed=1)
    assert grid_description(env) == decode_payload(grid_payload(env))


@pytest.mark.parametrize(
    ("env_id", "kwargs"),
    [
        ("FrozenLake-v1", {"map_name": "8x8", "is_slippery": True}),
        ("CliffWalking-v1", {}),
        ("Taxi-v4", {}),
        ("MiniGrid-DoorKey-5x5-v0", {}),
    ],
)
def test_grid_payloads_of_an_env_are_grid_payload_byte_for_byte(
    make: Any, env_id: str, kwargs: dict[str, Any]
) -> None:
    env = make(env_id, **kwargs)
    payloads = GridPayloads(env)
    for episode in range(3):
        env.reset(seed=episode)
        env.action_space.seed(episode)
        assert payloads.payload() == grid_payload(env)  # before any step: last_action is null
        for _ in range(40):
            _obs, _reward, terminated, truncated, _info = env.step(env.action_space.sample())
            assert payloads.payload() == grid_payload(env)
            if terminated or truncated:
                break


def test_grid_payloads_refuse_what_grid_payload_refuses(make: Any) -> None:
    with pytest.raises(ValueError, match="is not a grid environment"):
        GridPayloads(make("CartPole-v1"))
    payloads = GridPayloads(make("FrozenLake-v1"))
    with pytest.raises(ValueError, match="reset it first"):
        payloads.payload()


# --- encoding ------------------------------------------------------------------------------------


class Color(Enum):
    RED = "red"


class Move(IntEnum):
    LEFT = 0
    FORWARD = 2


def test_numpy_scalars_become_python_scalars() -> None:
    values = [np.int64(3), np.int8(-2), np.uint16(7), np.float32(0.5), np.float64(1.25), np.bool_(True)]
    converted = [to_jsonable(v) for v in values]
    assert converted == [3, -2, 7, 0.5, 1.25, True]
    assert [type(v) for v in converted] == [int, int, int, float, float, bool]
    assert dumps(values) == "[3,-2,7,0.5,1.25,true]"


def test_arrays_become_nested_lists() -> None:
    assert to_jsonable(np.arange(6, dtype=np.int32).reshape(2, 3)) == [[0, 1, 2], [3, 4, 5]]
    assert to_jsonable(np.array([True, False])) == [True, False]
    image = np.zeros((2, 2, 3), dtype=np.uint8)
    assert dumps(image) == "[[[0,0,0],[0,0,0]],[[0,0,0],[0,0,0]]]"
    assert to_jsonable(np.array([0.5, np.nan, np.inf], dtype=np.float32)) == [0.5, None, None]
    assert to_jsonable(np.zeros((0, 3))) == []


def test_non_finite_floats_become_null() -> None:
    value = {"loss": math.nan, "up": math.inf, "down": -math.inf, "np": np.float32("nan"), "ok": 1.5}
    assert to_jsonable(value) == {"loss": None, "up": None, "down": None, "np": None, "ok": 1.5}
    assert dumps(value) == '{"loss":null,"up":null,"down":null,"np":null,"ok":1.5}'
    assert dumps(np.float64("inf")) == "null"


def test_nested_dicts_tuples_and_non_string_keys() -> None:
    value = {
        "obs": (np.int64(14), (1, 2)),
        "q": {(3, 1): np.float32(0.25), 7: [1, 2], True: None, 1.5: "x"},
        "info": {"action_mask": np.array([1, 0, 1], dtype=np.int8), "prob": 1.0},
    }
    expected = {
        "obs": [14, [1, 2]],
        "q": {"[3,1]": 0.25, "7": [1, 2], "true": None, "1.5": "x"},
        "info": {"action_mask": [1, 0, 1], "prob": 1.0},
    }
    assert to_jsonable(value) == expected
    text = dumps(value)
    assert " " not in text
    assert json.loads(text) == expected


def test_bytes_enums_sets_and_odd_objects() -> None:
    assert to_jsonable(b"\x00\xffab") == base64.b64encode(b"\x00\xffab").decode()
    assert to_jsonable(Color.RED) == "red"
    assert dumps({"a": Move.FORWARD, "c": Color.RED}) == '{"a":2,"c":"red"}'
    assert sorted(to_jsonable({3, 1, 2})) == [1, 2, 3]
    assert to_jsonable(np.str_("hi")) == "hi"

    class Opaque:
        def __str__(self) -> str:
            return "opaque!"

    assert to_jsonable({"thing": Opaque()}) == {"thing": "opaque!"}


def test_dumps_is_the_same_on_fast_and_slow_paths() -> None:
    samples: list[Any] = [
        {"a": 1, "b": [1.5, "x", None, False]},
        {1: "one", 2.5: "two", None: 0, False: 1},
        (np.arange(3), {"k": np.float32(2.0)}),
        {"nan": [1.0, math.nan]},
        {(1, 2): np.int64(3)},
        [Move.LEFT, Color.RED, b"ab", {1, 2}],
        "ünïcode",
        # Integer and boolean arrays orjson writes from their buffer (an Atari frame), and those it
        # does not: another byte order, a strided view, a 0-d array.
        np.arange(210 * 160 * 3, dtype=np.uint32).reshape(210, 160, 3).astype(np.uint8),
        np.array([[True, False], [False, True]]),
        np.arange(-6, 6, dtype=">i4").reshape(3, 4),
        np.arange(24, dtype=np.int16).reshape(4, 6)[:, ::2],
        np.array(7, dtype=np.uint8),
        # Arrays inside a dict (ViZDoom's observation: its screen and game variables), written from
        # their buffer or not.
        {
            "screen": np.arange(240 * 320 * 3, dtype=np.uint32).reshape(240, 320, 3).astype(np.uint8),
            "gamevariables": np.array([26.0, 100.0], dtype=np.float32),
        },
        {"view": np.arange(24, dtype=np.int16).reshape(4, 6)[:, ::2], "flags": np.array([True, False])},
        [np.arange(-6, 6, dtype=">i4"), np.array(7, dtype=np.uint8), {"n": np.arange(3)}],
    ]
    for sample in samples:
        text = dumps(sample)
        assert text == json.dumps(to_jsonable(sample), separators=(",", ":"), ensure_ascii=False)
        json.loads(text)


def test_a_real_step_encodes(make: Any) -> None:
    env = make("Blackjack-v1")
    obs, info = env.reset(seed=0)
    step = env.step(0)
    text = dumps({"obs": obs, "info": info, "step": step})
    decoded = json.loads(text)
    assert decoded["obs"] == list(obs)
    assert decoded["step"][0] == list(step[0])
    taxi = make("Taxi-v4")
    _obs, taxi_info = taxi.reset(seed=0)
    assert json.loads(dumps(taxi_info))["action_mask"] == taxi_info["action_mask"].tolist()
    grid = make("MiniGrid-Empty-5x5-v0")
    grid_obs, _ = grid.reset(seed=0)
    decoded_obs = json.loads(dumps(grid_obs))
    assert np.array_equal(np.asarray(decoded_obs["image"], dtype=np.uint8), grid_obs["image"])


def test_every_finite_float_reads_back_as_itself_and_what_orjson_refuses_still_encodes() -> None:
    rng = np.random.default_rng(0)
    bits = rng.integers(0, 2**64, size=20_000, dtype=np.uint64).view(np.float64)
    scaled = rng.random(20_000) * 10.0 ** rng.integers(-30, 30, size=20_000)
    values = [v for v in [*bits.tolist(), *scaled.tolist(), 1e-05, 5e-324, -0.0, 1e16] if math.isfinite(v)]
    assert json.loads(dumps(values)) == values
    assert [json.loads(dumps(v)) for v in values[:2000]] == values[:2000]
    huge = 2**100
    assert dumps({"n": huge, "s": "a\ud800b"}) == json.dumps(
        {"n": huge, "s": "a\ud800b"}, separators=(",", ":"), ensure_ascii=False
    )
