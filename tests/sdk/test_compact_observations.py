"""Large numeric observations are stored compact (zlib, base64, with dtype and shape) and read back exact
by the one reader of stored observations; small ones stay the JSON lists they always were."""

from __future__ import annotations

import base64
import json
import zlib

import numpy as np
import orjson
import pytest
from gym_gui_sdk import encoding

from gym_gui.core.states import RunState
from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.home import Home
from gym_gui.storage.run_dir import RunDir
from gym_gui.storage.telemetry import TelemetryReader
from tests.sdk.test_worker_steps import human_session

FRAME = (210, 160, 3)  # an Atari screen


def frames(count: int) -> list[np.ndarray]:
    rng = np.random.default_rng(7)
    screen = np.zeros(FRAME, dtype=np.uint8)
    out = []
    for _ in range(count):
        row, col = rng.integers(0, 200), rng.integers(0, 150)
        screen[row : row + 10, col : col + 10] = rng.integers(0, 255, 3, dtype=np.uint8)
        out.append(screen.copy())
    return out


def assert_same_array(read: object, sent: np.ndarray) -> None:
    assert isinstance(read, np.ndarray)
    assert (read.dtype.str, read.shape) == (sent.dtype.str, sent.shape)
    # Bit for bit: NaN, infinities and -0.0 are what they were.
    assert read.tobytes() == np.ascontiguousarray(sent).tobytes()


@pytest.mark.parametrize("dtype", ["|u1", "|i1", "<u2", "<i4", ">i8", "<f2", "<f4", ">f8", "|b1"])
@pytest.mark.parametrize("shape", [(), (0,), (5,), (3, 0, 2), (64, 65), (4, 84, 84)])
def test_the_compact_form_reads_back_the_same_dtype_shape_and_values(
    dtype: str, shape: tuple[int, ...]
) -> None:
    rng = np.random.default_rng(0)
    array = np.asarray(rng.normal(0, 1000, shape), dtype=dtype)
    if array.dtype.kind == "f" and array.size >= 4:
        array.flat[:4] = (np.nan, np.inf, -np.inf, -0.0)
    text = encoding.compact_json(array)
    assert list(json.loads(text)) == ["ndarray"]  # one JSON value, as every stored observation
    assert_same_array(encoding.loads_observation(text), array)
    assert_same_array(encoding.loads_observation(text.encode()), array)


def test_a_non_contiguous_array_is_stored_in_c_order() -> None:
    array = np.arange(40, dtype=np.int16).reshape(5, 8).T[::2]
    assert_same_array(encoding.loads_observation(encoding.compact_json(array)), array)


def test_the_compact_form_is_refused_for_what_is_not_a_plain_number_array() -> None:
    with pytest.raises(ValueError, match="compact array: dtype '<U1' is not a plain number type"):
        encoding.compact_json(np.array(["a"]))


def test_packed_arrays_above_the_threshold_become_compact_and_the_rest_stay_json_lists() -> None:
    small = np.arange(encoding.COMPACT_ABOVE, dtype=np.float32) / 3  # at the threshold: a list
    large = np.arange(encoding.COMPACT_ABOVE + 1, dtype=np.float32) / 3
    large[7] = np.nan
    for array in (small, large):
        texts = encoding.unpack_observations(array.tobytes() * 2, array.dtype.str, array.shape, 2)
        assert len(texts) == 2
        if array is small:
            assert texts == [encoding.dumps(array)] * 2
            assert encoding.loads_observation(texts[0]) == json.loads(encoding.dumps(array))
        else:
            assert texts[0].startswith('{"ndarray":{"dtype":"<f4","shape":[4097],"zlib":"')
            for text in texts:
                assert_same_array(encoding.loads_observation(text), array)
    # NaN stays NaN in the compact form; a JSON list holds null where it was.
    assert np.isnan(encoding.loads_observation(texts[1])[7])
    assert encoding.loads_observation("[1.0,null]") == [1.0, None]


def test_every_other_stored_observation_reads_as_its_json() -> None:
    for text in ("3", "[0.5,-1,null]", '{"image":[[1]],"mission":"go"}', '"text"', '{"ndarray":[1,2]}'):
        assert encoding.loads_observation(text) == json.loads(text)
    # A Dict observation with a key "ndarray" that is not the compact form's three fields is a dict.
    nested = '{"ndarray":{"dtype":"|u1","shape":[1]}}'
    assert encoding.loads_observation(nested) == json.loads(nested)
    with pytest.raises(ValueError):
        encoding.loads_observation("NaN")
    # A run stored before screens were stored compact holds them as JSON lists: they read as lists.
    screen = frames(1)[0]
    assert encoding.loads_observation(encoding.dumps(screen)) == screen.tolist()


def test_a_dict_observations_packed_arrays_read_back_as_arrays_beside_its_other_values() -> None:
    # ViZDoom's Dict observation: a screen stored compact beside small game variables stored as a list.
    screen = frames(1)[0]
    variables = np.array([100.0, 26.0], dtype=np.float32)
    fields = (("screen", "|u1", screen.shape), ("gamevariables", "<f4", variables.shape))
    (text,) = encoding.unpack_dicts(
        encoding.pack_dict({"screen": screen, "gamevariables": variables}), fields, 1
    )
    read = encoding.loads_observation(text)
    assert list(read) == ["screen", "gamevariables"]
    assert_same_array(read["screen"], screen)
    assert read["gamevariables"] == [100.0, 26.0]
    # Inside a dict within the dict too; a key "ndarray" of anything else stays the dict it is.
    nested = encoding.loads_observation(
        f'{{"agent":{{"view":{encoding.compact_json(screen)}}},"ndarray":{{"a":1}}}}'
    )
    assert_same_array(nested["agent"]["view"], screen)
    assert nested["ndarray"] == {"a": 1}


def compact(dtype: object, shape: object, data: bytes) -> str:
    payload = base64.b64encode(zlib.compress(data)).decode()
    return orjson.dumps({"ndarray": {"dtype": dtype, "shape": shape, "zlib": payload}}).decode()


@pytest.mark.parametrize(
    ("text", "says"),
    [
        (compact("|u1", [4], b"\0" * 3), "compact array: its bytes are not 4"),
        (compact("|u1", [4], b"\0" * 5), "compact array: its bytes are not 4"),
        (compact("|u1", [2, 2], zlib.compress(b"x" * 10**6)), "compact array: its bytes are not 4"),
        (compact("O", [1], b"\0" * 8), "compact array: dtype 'O' is not a plain number type"),
        (compact("float128x", [1], b"\0"), "compact array: 'float128x' is not a numpy dtype"),
        (compact(7, [1], b"\0"), "compact array: dtype 7 is not a numpy dtype's text"),
        (compact("|u1", [-1], b""), "compact array: shape \\[-1\\] is not a list of sizes"),
        (compact("|u1", "4", b"\0" * 4), "compact array: shape '4' is not a list of sizes"),
        ('{"ndarray":{"dtype":"|u1","shape":[1],"zlib":"%%%"}}', "compact array: its bytes cannot be read"),
        ('{"ndarray":{"dtype":"|u1","shape":[1],"zlib":"AAAA"}}', "compact array: its bytes cannot be read"),
    ],
)
def test_a_damaged_compact_array_is_refused_naming_what_is_wrong(text: str, says: str) -> None:
    with pytest.raises(ValueError, match=says):
        encoding.loads_observation(text)


def test_frames_sent_packed_are_stored_compact_and_read_back_exact(client: DaemonClient, home: Home) -> None:
    session = human_session(client, batch_steps=4)
    sent = frames(10)
    for i, frame in enumerate(sent):
        session.step(0, i, 0.0, False, False, "0", frame)
    # Beside JSON text in one batch the frame travels as text, compact all the same.
    sent += ["[1,2]", frames(1)[0]]
    session.step(0, 10, 0.0, False, False, "0", sent[10])
    session.step(0, 11, 0.0, True, False, "0", sent[11])
    session.episode(0, steps=12, total_reward=0.0, terminated=True, truncated=False, started_at=0.0)
    session.finish()
    assert client.wait_for_end(session.run_id, timeout=60).state is RunState.COMPLETED
    reader = TelemetryReader(RunDir(home.run_dir(session.run_id)).telemetry_path)
    try:
        stored = [record.observation for record in reader.steps(0)]
    finally:
        reader.close()
    assert len(stored) == 12
    for text, frame in zip(stored, sent, strict=True):
        if isinstance(frame, str):
            assert text == frame
            continue
        assert text.startswith('{"ndarray":{"dtype":"|u1","shape":[210,160,3],"zlib":"')
        assert len(text) < frame.nbytes // 20  # mostly flat colour, as a game screen is
        assert_same_array(encoding.loads_observation(text), frame)
