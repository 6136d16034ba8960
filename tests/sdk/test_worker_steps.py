"""Steps recorded column-wise (``WorkerSession.steps``) reach storage as the same rows ``step`` stores; numpy
observations (and dicts of them) travel packed and are stored as the JSON text ``encoding.dumps`` makes of
them."""

from __future__ import annotations

import math
import queue
import threading
from typing import Any

import numpy as np
import pytest
from gym_gui_sdk import encoding
from gym_gui_sdk.courier import _Outbox
from gym_gui_sdk.worker import WorkerSession

from gym_gui.core.config import parse_run_config
from gym_gui.core.states import RunState
from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.home import Home
from gym_gui.storage.run_dir import RunDir
from gym_gui.storage.telemetry import TelemetryReader


def human_session(client: DaemonClient, batch_steps: int) -> WorkerSession:
    config = parse_run_config({"worker": "human", "env_id": "FrozenLake-v1", "budget": {"episodes": 1}})
    record, token = client.submit(config)
    session = WorkerSession(client.info.address, record.run_id, token, batch_steps=batch_steps)
    session.start()
    session.started("none")
    return session


def test_columns_of_steps_are_stored_row_for_row_across_batches(client: DaemonClient, home: Home) -> None:
    session = human_session(client, batch_steps=7)
    n = 30  # more than four batches: the columns are split at batch_steps
    session.step(0, 0, 0.5, False, False, "1", "[0]", '{"a":1}', b"grid", 10.0)
    session.steps(
        [0] * n,
        list(range(1, n + 1)),
        [float(i) for i in range(n)],
        [i == n - 1 for i in range(n)],
        [False] * n,
        [str(i % 4) for i in range(n)],
        [f"[{i}]" for i in range(n)],
        wall_time=[100.0 + i for i in range(n)],
    )
    session.episode(0, steps=n + 1, total_reward=1.0, terminated=True, truncated=False, started_at=0.0)
    session.finish()
    assert client.wait_for_end(session.run_id, timeout=60).state is RunState.COMPLETED
    reader = TelemetryReader(RunDir(home.run_dir(session.run_id)).telemetry_path)
    try:
        rows = reader.steps(0)
    finally:
        reader.close()
    assert [r.step for r in rows] == list(range(n + 1))
    assert (rows[0].info, rows[0].render, rows[0].wall_time) == ('{"a":1}', b"grid", 10.0)
    last = rows[-1]
    assert (last.reward, last.terminated, last.action, last.observation) == (
        float(n - 1),
        True,
        str((n - 1) % 4),
        f"[{n - 1}]",
    )
    assert (last.info, last.render, last.wall_time) == ("{}", None, 100.0 + n - 1)


def test_columns_of_unequal_length_are_refused_and_nothing_is_recorded(client: DaemonClient) -> None:
    session = human_session(client, batch_steps=100)
    with pytest.raises(ValueError, match="step columns differ in length: 2 steps"):
        session.steps([0, 0], [0, 1], [0.0, 0.0], [False, True], [False], ["0", "1"], ["0", "1"])
    session.finish()
    assert client.wait_for_end(session.run_id, timeout=60).state is RunState.COMPLETED


def stored_observations(home: Home, run_id: str) -> list[str]:
    reader = TelemetryReader(RunDir(home.run_dir(run_id)).telemetry_path)
    try:
        return [record.observation for record in reader.steps(0)]
    finally:
        reader.close()


def test_array_observations_travel_packed_and_are_stored_as_their_json(
    client: DaemonClient, home: Home
) -> None:
    session = human_session(client, batch_steps=4)
    buffer = np.zeros(3, dtype=np.float32)  # one buffer the "env" writes every step into
    sent: list[Any] = []
    for i in range(10):
        buffer[:] = (i, i / 3, -i)
        if i == 5:
            buffer[1] = np.nan
        sent.append(buffer.copy())
        session.step(0, i, 0.0, False, False, "0", buffer)
    # Within one batch: JSON text, an array of another shape and dtype, anything else.
    odd = ["[1,2]", np.arange(4, dtype=np.int64).reshape(2, 2), {"x": np.float64(0.5)}, np.float32(2.5)]
    for i, observation in enumerate(odd, start=10):
        sent.append(observation)
        session.step(0, i, 0.0, i == 13, False, "0", observation)
    session.finish()
    assert client.wait_for_end(session.run_id, timeout=60).state is RunState.COMPLETED
    expected = [o if isinstance(o, str) else encoding.dumps(o) for o in sent]
    assert stored_observations(home, session.run_id) == expected
    assert expected[5] == f"[5.0,null,{encoding.dumps(np.float32(-5.0))}]"


@pytest.mark.parametrize("shape", [(), (0,), (3,), (2, 3)])
@pytest.mark.parametrize("count", [0, 1, 3])
def test_packed_observations_round_trip_every_numeric_dtype_and_shape(
    shape: tuple[int, ...], count: int
) -> None:
    for dtype in ("<f4", ">f8", "<i8", "|u1", "|b1", "<u2"):
        # np.asarray: arithmetic on a 0-d array gives a numpy scalar, which travels as text.
        base = np.asarray(np.arange(math.prod(shape)).reshape(shape) * 1.37 - 2, dtype=dtype)
        arrays = [np.asarray(base + k, dtype=dtype) for k in range(count)]
        spec = encoding.pack_spec(base)
        assert spec is not None
        packed_dtype, packed_shape = spec
        data = b"".join(a.tobytes() for a in arrays)
        assert encoding.unpack_observations(data, packed_dtype.str, packed_shape, count) == [
            encoding.dumps(a) for a in arrays
        ]
    assert encoding.pack_spec(np.array(["a"])) is None
    assert encoding.pack_spec([1.0, 2.0]) is None


def test_dict_observations_travel_packed_and_are_stored_as_their_json(
    client: DaemonClient, home: Home
) -> None:
    """A Dict space's observations (ViZDoom's: its screen and game variables) travel as their arrays'
    bytes, and are stored as the JSON object ``encoding.dumps`` makes of each."""
    session = human_session(client, batch_steps=3)
    screen = np.zeros((4, 5, 3), dtype=np.uint8)  # buffers the "env" writes every step into
    variables = np.zeros(2, dtype=np.float32)
    sent: list[Any] = []
    for i in range(8):
        screen[:] = i
        variables[:] = (i / 3, 100 - i)
        if i == 4:
            variables[0] = np.nan
        observation = {"screen": screen, "gamevariables": variables}
        sent.append({key: value.copy() for key, value in observation.items()})
        session.step(0, i, 0.0, False, False, "0", observation)
    # Within one batch: the same keys in another order or shape, a value that is no array, an array.
    odd = [
        {"gamevariables": variables.copy(), "screen": screen.copy()},
        {"screen": np.zeros((2, 2, 3), dtype=np.uint8), "gamevariables": variables.copy()},
        {"screen": screen.copy(), "notifications": "you got the shotgun"},
        np.arange(3, dtype=np.int64),
    ]
    for i, observation in enumerate(odd, start=8):
        sent.append(observation)
        session.step(0, i, 0.0, i == 11, False, "0", observation)
    session.finish()
    assert client.wait_for_end(session.run_id, timeout=60).state is RunState.COMPLETED
    stored = stored_observations(home, session.run_id)
    assert stored == [encoding.dumps(o) for o in sent]
    assert stored[4].endswith(',"gamevariables":[null,96.0]}')


@pytest.mark.parametrize("count", [0, 1, 3])
def test_packed_dicts_round_trip_every_numeric_dtype_and_shape(count: int) -> None:
    shapes = {"<f4": (), ">f8": (0,), "<i8": (3,), "|u1": (2, 3), "|b1": (2,), "<u2": (1, 1)}
    dicts = [
        {
            f"k{dtype}": np.asarray(np.arange(math.prod(shape)).reshape(shape) * 1.37 - 2 + k, dtype=dtype)
            for dtype, shape in shapes.items()
        }
        for k in range(count)
    ]
    base = {f"k{dtype}": np.zeros(shape, dtype=dtype) for dtype, shape in shapes.items()}
    fields = encoding.pack_fields(base)
    assert fields is not None and [key for key, _dtype, _shape in fields] == list(base)
    data = b"".join(encoding.pack_dict(d) for d in dicts)
    as_text = [(key, dtype.str, shape) for key, dtype, shape in fields]
    assert encoding.unpack_dicts(data, as_text, count) == [encoding.dumps(d) for d in dicts]
    # Only a dict of numeric arrays by string key packs.
    for refused in ({}, {"a": [1, 2]}, {"a": np.array(["x"])}, {1: np.zeros(2)}, {"a": np.float32(1.0)}):
        assert encoding.pack_fields(refused) is None


def test_a_vector_envs_observation_array_is_packed_row_by_row_and_stored_as_each_rows_json(
    client: DaemonClient, home: Home
) -> None:
    session = human_session(client, batch_steps=5)
    block = np.arange(24, dtype=np.float32).reshape(8, 3) / 7  # 8 steps of 3 floats: splits at 5
    session.steps([0] * 8, list(range(8)), [0.0] * 8, [False] * 8, [False] * 8, ["0"] * 8, block)
    # A batch already packing another dtype: the block's rows become text beside it.
    session.step(0, 8, 0.0, False, False, "0", np.zeros(2, dtype=np.int64))
    odd = np.ones((2, 3), dtype=np.float64)
    session.steps([0, 0], [9, 10], [0.0, 0.0], [False, True], [False, False], ["0", "0"], odd)
    session.finish()
    assert client.wait_for_end(session.run_id, timeout=60).state is RunState.COMPLETED
    expected = [encoding.dumps(row) for row in block] + [encoding.dumps(np.zeros(2, dtype=np.int64))]
    expected += [encoding.dumps(row) for row in odd]
    assert stored_observations(home, session.run_id) == expected


def test_the_outbox_keeps_order_holds_a_full_put_until_a_get_and_says_full_after_a_timeout() -> None:
    outbox = _Outbox(2)
    outbox.put("a")
    outbox.put("b")
    with pytest.raises(queue.Full):
        outbox.put("c", timeout=0.05)
    held = threading.Event()
    put_done = threading.Event()

    def put_d() -> None:
        held.set()
        outbox.put("d")
        put_done.set()

    putter = threading.Thread(target=put_d, daemon=True)
    putter.start()
    assert held.wait(10)
    assert outbox.get() == "a"  # makes room: the waiting put goes through
    assert put_done.wait(10)
    assert [outbox.get(), outbox.get()] == ["b", "d"]
    putter.join(10)
