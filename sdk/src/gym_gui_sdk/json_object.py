"""Reading a JSON object from text, each caller raising its own error when the text holds none."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any


def _not_json(reason: str) -> ValueError:
    return ValueError(f"not valid JSON: {reason}")


def _not_object(value: object) -> ValueError:
    return ValueError(f"holds {type(value).__name__}, not a JSON object")


def json_object(
    text: str | bytes,
    not_json: Callable[[str], Exception] = _not_json,
    not_object: Callable[[Any], Exception] = _not_object,
) -> dict[str, Any]:
    """The JSON object ``text`` holds.

    Both the app and workers read JSON objects they did not write (files, wire fields, markers);
    each says what was wrong in its own words and error type, so this takes them as factories.

    Args:
        text: the JSON text.
        not_json: makes the error raised when ``text`` is not JSON, from the parser's reason
            (``Expecting value: line 1 column 1 (char 0)``, ``it nests too deeply``).
        not_object: makes the error raised when ``text`` holds JSON other than an object, from
            the value it holds.

    Raises:
        What ``not_json`` or ``not_object`` makes; ValueError by default.
    """
    try:
        value = json.loads(text)
    except ValueError as exc:  # UnicodeDecodeError (bytes) is one too
        raise not_json(str(exc)) from None
    except RecursionError:  # arrays or objects nested deeper than the parser's recursion allows
        raise not_json("it nests too deeply") from None
    if not isinstance(value, dict):
        raise not_object(value)
    return value
