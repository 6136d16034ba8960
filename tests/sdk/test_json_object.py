"""The one reader of a JSON object: the caller's own error for text that is not JSON or holds no object."""

from __future__ import annotations

import pytest
from gym_gui_sdk.json_object import json_object


class Refused(Exception):
    pass


def test_an_object_is_returned_as_a_dict_from_text_or_bytes() -> None:
    assert json_object('{"a": [1, 2]}') == {"a": [1, 2]}
    assert json_object(b'{"a": null}') == {"a": None}


def test_the_callers_errors_say_what_was_wrong_in_its_words() -> None:
    def read(text: str) -> dict[str, object]:
        return json_object(
            text,
            lambda why: Refused(f"spec.json is not valid JSON: {why}"),
            lambda value: Refused(f"spec.json holds {type(value).__name__}, not an object"),
        )

    with pytest.raises(Refused, match=r"^spec.json is not valid JSON: Expecting value: line 1 column 1"):
        read("nope")
    with pytest.raises(Refused, match=r"^spec.json holds list, not an object$"):
        read("[1, 2]")


def test_without_errors_of_its_own_a_caller_gets_a_value_error() -> None:
    with pytest.raises(ValueError, match=r"^not valid JSON: Expecting value"):
        json_object("")
    with pytest.raises(ValueError, match=r"^holds str, not a JSON object$"):
        json_object('"text"')
    with pytest.raises(ValueError, match=r"^not valid JSON: "):
        json_object(b"\xff{}")  # not UTF-8


def test_text_nested_deeper_than_the_parser_recurses_is_not_json_in_the_callers_words() -> None:
    deep = '{"q": ' + "[" * 100_000 + "]" * 100_000 + "}"
    with pytest.raises(Refused, match=r"^spec.json is not valid JSON: it nests too deeply$"):
        json_object(deep, lambda why: Refused(f"spec.json is not valid JSON: {why}"))
    with pytest.raises(ValueError, match=r"^not valid JSON: it nests too deeply$"):
        json_object(deep.encode())
