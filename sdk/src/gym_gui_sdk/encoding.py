"""Fast, compact JSON for RL values: observations, actions, infos, with numpy inside.

Rules of :func:`to_jsonable` (and so of :func:`dumps`):

- ``None``, ``bool``, ``int``, ``str`` and finite ``float`` stay as they are; subclasses (``IntEnum``
  actions, numpy ``float64``) become the plain type.
- Non-finite floats (NaN, +inf, -inf), wherever they appear, become ``null``: JSON has no token
  for them, and ``null`` is what JavaScript's ``JSON.stringify`` writes too.
- numpy scalars become the matching Python scalar; numpy arrays become nested lists (``tolist``).
- tuples, lists, sets and other iterables of that kind become lists.
- dict keys that are not ``str`` become the JSON text of the key: ``1`` → ``"1"``, ``True`` →
  ``"true"``, ``(3, 1)`` → ``"[3,1]"`` (the first three as ``json`` itself does).
- ``bytes``, ``bytearray`` and ``memoryview`` become a base64 (standard alphabet) string.
- ``Enum`` members become their value.
- anything else with a ``tolist()`` method (e.g. a tensor) is converted through it; any other
  object becomes ``str(value)``, so a strange ``info`` entry never stops a worker.

A stored observation is one JSON value, and a large numeric array is stored compact (see
:func:`compact_json`): ``{"ndarray": {"dtype": "|u1", "shape": [210, 160, 3], "zlib": "<base64>"}}``,
its C-order bytes deflated and exact (NaN and infinities stay what they are, unlike ``null`` in a
list). :func:`loads_observation` reads either form back; every reader of stored observations uses it.
"""

from __future__ import annotations

import base64
import json
import math
import zlib
from collections.abc import Sequence
from enum import Enum
from typing import Any

import numpy as np
import orjson

_SEPARATORS = (",", ":")
_PLAIN = (str, int, bool, type(None))


def _float(value: float) -> float | None:
    return value if math.isfinite(value) else None


def _key(key: Any) -> str:
    if isinstance(key, str):
        return str(key)
    return json.dumps(to_jsonable(key), separators=_SEPARATORS, allow_nan=False, ensure_ascii=False)


def _array(value: np.ndarray) -> Any:
    kind = value.dtype.kind
    if kind in "biu":
        return value.tolist()
    if kind == "f":
        if value.size == 0 or bool(np.isfinite(value).all()):
            return value.tolist()
        # Only the rare array with NaN/inf pays for the object copy.
        copy = value.astype(object)
        copy[~np.isfinite(value)] = None
        return copy.tolist()
    # Complex, bytes, str and object arrays: let the general rules handle their elements.
    return to_jsonable(value.tolist())


def to_jsonable(value: Any) -> Any:
    """Return ``value`` as plain JSON-compatible Python (dict, list, str, int, float, bool, None).

    See the module docstring for the rules. The result never contains NaN or infinities.
    """
    kind = type(value)
    # Fast paths: the types nearly every step is made of.
    if kind in _PLAIN:
        return value
    if kind is float:
        return value if math.isfinite(value) else None
    if kind is np.ndarray:
        return _array(value)
    if isinstance(value, np.generic):
        if isinstance(value, np.floating):
            return _float(float(value))
        if isinstance(value, (np.integer, np.bool_)):
            return value.item()
        return to_jsonable(value.item())
    if kind is list or kind is tuple:
        return [to_jsonable(item) for item in value]
    if kind is dict:
        return {(key if type(key) is str else _key(key)): to_jsonable(item) for key, item in value.items()}
    # Slower, rarer cases.
    if isinstance(value, Enum):
        return to_jsonable(value.value)
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return _float(float(value))
    if isinstance(value, str):
        return str(value)
    if isinstance(value, np.ndarray):
        return _array(np.asarray(value))
    if isinstance(value, dict):
        return {_key(key): to_jsonable(item) for key, item in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [to_jsonable(item) for item in value]
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(value)).decode("ascii")
    tolist = getattr(value, "tolist", None)
    if callable(tolist):
        return to_jsonable(tolist())
    return str(value)


# The C encoder without a default hook: what the rare values orjson refuses go through.
_ENCODE = json.JSONEncoder(separators=_SEPARATORS, allow_nan=False, ensure_ascii=False).encode

# orjson writes the plain JSON types (and Enum members, as their values) itself, compact and with
# NaN and infinities as null, as these rules want; numpy values, subclasses of str/int/dict/list,
# dataclasses and datetimes come to ``_default`` so they follow the rules above, not orjson's own.
_ORJSON = orjson.dumps
_ORJSON_OPTIONS = (
    orjson.OPT_PASSTHROUGH_SUBCLASS | orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_DATETIME
)


# orjson writes integer and boolean arrays itself, in the text their tolist() gives: an Atari frame
# (210 x 160 x 3 bytes) in ~2 ms where building the nested lists first takes ~15. Floats keep the
# lists: orjson writes a float32 as its shortest float32 text, tolist() as the double it widens to.
_NUMPY_KINDS = "biu"


def _numpy_text(value: np.ndarray) -> str | None:
    """The JSON of an integer or boolean array written by orjson from its buffer, or None for an array
    it does not take so (floats, a 0-d array, a non-native byte order, a non-contiguous view)."""
    if value.dtype.kind in _NUMPY_KINDS and value.ndim and value.dtype.isnative and value.flags.c_contiguous:
        return _ORJSON(value, option=orjson.OPT_SERIALIZE_NUMPY).decode()
    return None


def _default(value: Any) -> Any:
    # The encoders call this only for what they cannot write themselves (numpy arrays and
    # scalars, bytes, odd objects).
    return to_jsonable(value)


def _orjson_default(value: Any) -> Any:
    # An integer array inside another value (ViZDoom's observation, a dict holding its screen) is
    # written by orjson from its buffer, as one array alone is: a 240x320 RGB screen in ~12 ms where
    # its nested lists take ~40.
    if type(value) is np.ndarray:
        text = _numpy_text(value)
        if text is not None:
            return orjson.Fragment(text)
    return to_jsonable(value)


def dumps(value: Any) -> str:
    """Return compact JSON text of ``value`` (no spaces), converted by the rules of :func:`to_jsonable`.

    Values go through orjson, which writes a step's info of a few floats ten times faster than
    ``json`` (the float's text is most of the cost); what it refuses (a dict key that is not a
    string, an integer beyond 64 bits, a lone surrogate) goes through ``json`` after conversion.
    Numbers may be written differently from ``json`` (``1e-05`` as ``0.00001``); they read back
    to the same value.
    """
    kind = type(value)
    if kind is int or kind is str or value is None:
        return _ENCODE(value)
    if kind is dict and not value:
        return "{}"  # the info of most steps
    if kind is np.ndarray and value.dtype.kind in "biuf":
        text = _numpy_text(value)
        if text is not None:
            return text
        value = value.tolist()
    try:
        return _ORJSON(value, default=_orjson_default, option=_ORJSON_OPTIONS).decode()
    except orjson.JSONEncodeError:
        pass
    try:
        return json.dumps(
            value, separators=_SEPARATORS, allow_nan=False, ensure_ascii=False, default=_default
        )
    except (ValueError, TypeError):
        return json.dumps(to_jsonable(value), separators=_SEPARATORS, allow_nan=False, ensure_ascii=False)


# Numeric kinds a batch's observations may travel packed in (booleans, integers, floats).
_PACKED_KINDS = "biuf"


def pack_spec(value: Any) -> tuple[np.dtype[Any], tuple[int, ...]] | None:
    """The dtype and shape under which ``value`` may travel packed, or None when it may not.

    Numeric numpy arrays travel packed: a batch's observations of one dtype and shape go as one
    C-order array, each observation its ``tobytes()``, and the batch names the dtype (``dtype.str``,
    byte order included) and the shape once. Anything else travels as :func:`dumps` text.
    """
    if type(value) is np.ndarray and value.dtype.kind in _PACKED_KINDS:
        return value.dtype, value.shape
    return None


# Arrays of more numbers than this are stored compact; smaller ones as JSON lists, readable as they are.
# An Atari frame (100,800) is 400 KB of list text and ~1 KB compact; a MuJoCo state (17) stays a list.
COMPACT_ABOVE = 4096
# zlib's fastest level: a frame in ~0.1 ms, and what an Atari screen's flat colours need.
_COMPACT_LEVEL = 1
_COMPACT_KEY = "ndarray"
_COMPACT_PREFIX = '{"ndarray":'
_COMPACT_FIELDS = frozenset(("dtype", "shape", "zlib"))


def _number_dtype(dtype_text: Any, what: str) -> np.dtype[Any]:
    """The plain number dtype ``dtype_text`` names (``dtype.str``, e.g. ``"<f4"``).

    Raises:
        ValueError: naming ``what`` when it names no dtype, or one that is not a plain number type.
    """
    if type(dtype_text) is not str:
        raise ValueError(f"{what}: dtype {dtype_text!r:.100} is not a numpy dtype's text")
    try:
        dtype = np.dtype(dtype_text)
    except (TypeError, ValueError):
        raise ValueError(f"{what}: {dtype_text!r:.100} is not a numpy dtype") from None
    if dtype.kind not in _PACKED_KINDS or dtype.fields is not None or dtype.subdtype is not None:
        raise ValueError(f"{what}: dtype {dtype_text!r} is not a plain number type")
    return dtype


def _compact_head(dtype: np.dtype[Any], shape: tuple[int, ...]) -> str:
    shape_text = ",".join(map(str, shape))
    return f'{_COMPACT_PREFIX}{{"dtype":"{dtype.str}","shape":[{shape_text}],"zlib":"'


def _compact_text(head: str, data: Any) -> str:
    return head + base64.b64encode(zlib.compress(data, _COMPACT_LEVEL)).decode("ascii") + '"}}'


def compact_json(array: np.ndarray) -> str:
    """The compact JSON text of a numeric array, whatever its size: one object,
    ``{"ndarray": {"dtype": D, "shape": [...], "zlib": B}}``, where ``D`` is the dtype's text with its
    byte order (``dtype.str``: ``"|u1"``, ``"<f4"``) and ``B`` the standard base64 of the array's
    C-order bytes deflated by zlib. Lossless: :func:`loads_observation` gives the same dtype, shape
    and bits back, NaN and infinities included.

    Raises:
        ValueError: when ``array`` is not of a plain number type (bool, integer, float).
    """
    array = np.asarray(array)
    dtype = _number_dtype(array.dtype.str, "compact array")
    return _compact_text(_compact_head(dtype, array.shape), np.ascontiguousarray(array).data)


def _compact_array(spec: Any) -> np.ndarray:
    """The array a parsed compact object's ``"ndarray"`` value (a dict of its three fields) holds.

    Raises:
        ValueError: naming what is wrong with it.
    """
    dtype = _number_dtype(spec["dtype"], "compact array")
    shape = spec["shape"]
    if type(shape) is not list or not all(type(n) is int and n >= 0 for n in shape):
        raise ValueError(f"compact array: shape {shape!r:.200} is not a list of sizes")
    if type(spec["zlib"]) is not str:
        raise ValueError("compact array: zlib is not base64 text")
    size = dtype.itemsize * math.prod(shape)
    try:
        deflated = base64.b64decode(spec["zlib"], validate=True)
        # Inflated no further than a byte past what the shape says: a wrong length is refused, never
        # a huge buffer made (max_length 0 would mean no limit).
        inflater = zlib.decompressobj()
        data = inflater.decompress(deflated, size + 1)
        complete = inflater.eof and not inflater.unconsumed_tail
    except (ValueError, zlib.error) as exc:
        raise ValueError(f"compact array: its bytes cannot be read: {exc}") from None
    if len(data) != size or not complete:
        raise ValueError(
            f"compact array: its bytes are not {size} (shape {shape}, dtype {dtype.str}) or are cut short"
        )
    return np.frombuffer(bytearray(data), dtype=dtype).reshape(shape)


def _not_json(name: str) -> None:
    raise ValueError(f"{name} is not JSON")


def loads_observation(text: str | bytes) -> Any:
    """A stored observation, read: a compact array (:func:`compact_json`) as the numpy array it was, in a
    Dict observation too, anything else as its parsed JSON (lists, dicts, numbers; a NaN stored in a
    list is ``None``). Only a JSON object of exactly that form, ``{"ndarray": {"dtype", "shape",
    "zlib"}}``, is read as an array.

    Every reader of stored observations reads through this, so either form reads wherever
    observations are read, and runs stored before arrays were stored compact read as they did.

    Raises:
        ValueError: when ``text`` is not one JSON value, or is a compact array that cannot be read.
    """
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        # What orjson refuses and JSON allows (an integer beyond 64 bits); NaN and Infinity are not JSON.
        value = json.loads(text, parse_constant=_not_json)
    return _arrays_read(value) if type(value) is dict else value


def _arrays_read(value: dict[str, Any]) -> Any:
    """``value`` with each compact array in it read: itself, or the values of a Dict observation
    (ViZDoom's screen beside its game variables), at any depth of dicts."""
    if len(value) == 1 and _is_compact(value.get(_COMPACT_KEY)):
        return _compact_array(value[_COMPACT_KEY])
    for key, item in value.items():
        if type(item) is dict:
            value[key] = _arrays_read(item)
    return value


def _is_compact(spec: Any) -> bool:
    # Only this exact shape is read as an array: a Dict observation with one key "ndarray" holding
    # anything else reads as the dict it is.
    return type(spec) is dict and spec.keys() == _COMPACT_FIELDS


# One array of a packed dict observation: its key, dtype and shape.
Field = tuple[str, np.dtype[Any], tuple[int, ...]]


def pack_fields(value: Any) -> tuple[Field, ...] | None:
    """The fields under which dict ``value`` may travel packed, or None when it may not.

    A dict of numeric numpy arrays by string key (a gymnasium Dict space: ViZDoom's screen and game
    variables) travels packed: its arrays' bytes one after another (:func:`pack_dict`), in the
    dict's order, and the batch names each key, dtype and shape once.
    """
    if type(value) is not dict or not value:
        return None
    fields = []
    for key, item in value.items():
        if type(key) is not str or type(item) is not np.ndarray or item.dtype.kind not in _PACKED_KINDS:
            return None
        fields.append((key, item.dtype, item.shape))
    return tuple(fields)


def pack_dict(value: dict[str, np.ndarray]) -> bytes:
    """The bytes of a dict :func:`pack_fields` accepts: each array's C-order bytes, in the dict's order."""
    return b"".join(item.tobytes() for item in value.values())


def unpack_dicts(data: bytes, fields: Sequence[tuple[str, str, tuple[int, ...]]], count: int) -> list[str]:
    """The JSON text of each of ``count`` packed dict observations of ``fields`` (key, dtype text,
    shape): what :func:`dumps` gives each dict.

    Raises:
        ValueError: naming what is wrong when a dtype is not numeric, a key repeats, or the bytes do
            not hold ``count`` dicts of ``fields``.
    """
    keys = [key for key, _dtype, _shape in fields]
    if not fields or len(set(keys)) != len(keys):
        raise ValueError(f"packed observations: the fields' keys must be some and distinct, got {keys}")
    sizes = [
        _number_dtype(dtype_text, "packed observations").itemsize * math.prod(shape)
        for _key, dtype_text, shape in fields
    ]
    row = sum(sizes)
    if len(data) != count * row:
        raise ValueError(
            f"packed observations: {len(data)} bytes, but {count} dicts of fields "
            f"{', '.join(f'{key} {dtype} {list(shape)}' for key, dtype, shape in fields)} take {count * row}"
        )
    rows = np.frombuffer(data, dtype=np.uint8).reshape(count, row)
    columns = []
    start = 0
    for (key, dtype_text, shape), size in zip(fields, sizes, strict=True):
        texts = unpack_observations(rows[:, start : start + size].tobytes(), dtype_text, shape, count)
        columns.append((_ORJSON(key).decode() + ":", texts))
        start += size
    return ["{" + ",".join(name + texts[i] for name, texts in columns) + "}" for i in range(count)]


def unpack_observations(data: bytes, dtype_text: str, shape: tuple[int, ...], count: int) -> list[str]:
    """The JSON text of each of ``count`` packed observations: what :func:`dumps` gives each array,
    or its :func:`compact_json` when it holds more than :data:`COMPACT_ABOVE` numbers.

    Raises:
        ValueError: naming what is wrong when the dtype is not numeric or the bytes do not hold
            ``count`` arrays of ``shape``.
    """
    dtype = _number_dtype(dtype_text, "packed observations")
    numbers = math.prod(shape)
    size = count * dtype.itemsize * numbers
    if len(data) != size:
        raise ValueError(
            f"packed observations: {len(data)} bytes, but {count} of shape {list(shape)} "
            f"and dtype {dtype_text} take {size}"
        )
    if numbers > COMPACT_ABOVE:
        head = _compact_head(dtype, shape)
        row = dtype.itemsize * numbers
        view = memoryview(data)
        return [_compact_text(head, view[start : start + row]) for start in range(0, size, row)]
    array = np.frombuffer(data, dtype=dtype).reshape((count, *shape))
    if shape and array.size and _numpy_text(array[0]) is not None:
        return [_ORJSON(row, option=orjson.OPT_SERIALIZE_NUMPY).decode() for row in array]
    rows = array.tolist()
    # orjson writes NaN and infinities as null, as dumps does.
    if count and not shape:
        # Scalars: the whole batch in one call, cut at its commas (a number's text has none): a
        # quarter of what a call a row costs.
        return _ORJSON(rows).decode()[1:-1].split(",")
    return [text.decode() for text in map(_ORJSON, rows)]
