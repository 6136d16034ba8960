"""How the model is asked to answer, and the strict reading of its answer into actions.

Three reply formats (parameter ``reply_format``):

- ``json``: the request carries ``response_format`` with a JSON schema; the reply's content must be
  exactly one JSON object ``{"actions": [2, 2, 1]}`` (1 to ``plan_length`` action numbers).
- ``tool``: the request offers one tool, ``act``, with the same schema as its parameters and asks
  for it; the reply must call it once with such an object.
- ``text``: for servers with neither; the reply's last non-empty line must be
  ``actions: 2, 2, 1`` (case-insensitive), any text before it is the model's own reasoning.

Anything else — prose, a fenced block, an unknown key, an action number out of range, too many
actions — is an invalid reply (:class:`InvalidReply`, with the reason).
"""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

TOOL_NAME = "act"
_TEXT_LINE = re.compile(r"^\s*actions\s*:\s*(\d+(?:\s*,\s*\d+)*)\s*$", re.IGNORECASE)


class InvalidReply(ValueError):
    """The model's reply is not a valid plan of actions; the message says why."""


class _Plan(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    actions: list[int] = Field(min_length=1)


def schema(action_count: int, plan_length: int) -> dict[str, Any]:
    """The JSON schema of a reply: 1 to ``plan_length`` action numbers below ``action_count``."""
    return {
        "type": "object",
        "properties": {
            "actions": {
                "type": "array",
                "items": {"type": "integer", "enum": list(range(action_count))},
                "minItems": 1,
                "maxItems": plan_length,
            }
        },
        "required": ["actions"],
        "additionalProperties": False,
    }


def instructions(reply_format: str, plan_length: int) -> str:
    """What the system prompt tells the model about the shape of its answer."""
    count = "one action number" if plan_length == 1 else f"1 to {plan_length} action numbers, in order"
    if reply_format == "json":
        return f'Reply with one JSON object and nothing else: {{"actions": [...]}} holding {count}.'
    if reply_format == "tool":
        return f"Answer by calling the tool {TOOL_NAME} with {count} in its list actions."
    return (
        "Think briefly if you wish, then end your reply with one line of the form "
        f"'actions: 2, 0' holding {count}."
    )


def request_options(reply_format: str, action_count: int, plan_length: int) -> dict[str, Any]:
    """The chat-completions request's extra arguments for ``reply_format``."""
    shape = schema(action_count, plan_length)
    if reply_format == "json":
        return {
            "response_format": {
                "type": "json_schema",
                "json_schema": {"name": "plan", "strict": True, "schema": shape},
            }
        }
    if reply_format == "tool":
        return {
            "tools": [
                {
                    "type": "function",
                    "function": {
                        "name": TOOL_NAME,
                        "description": "Take these actions, in order.",
                        "parameters": shape,
                    },
                }
            ],
            "tool_choice": {"type": "function", "function": {"name": TOOL_NAME}},
        }
    return {}


def parse(
    reply_format: str,
    content: str | None,
    tool_calls: list[tuple[str, str]],
    action_count: int,
    plan_length: int,
) -> list[int]:
    """The actions a reply plans (``tool_calls`` as ``(name, arguments JSON)``).

    Raises:
        InvalidReply: the reply is not a plan in ``reply_format``; the message says why.
    """
    if reply_format == "tool":
        if len(tool_calls) != 1:
            raise InvalidReply(f"expected one call of the tool {TOOL_NAME}, got {len(tool_calls)}")
        name, arguments = tool_calls[0]
        if name != TOOL_NAME:
            raise InvalidReply(f"called an unknown tool {name!r}")
        actions = _json_plan(arguments)
    elif reply_format == "json":
        actions = _json_plan(content or "")
    else:
        lines = [line for line in (content or "").splitlines() if line.strip()]
        match = _TEXT_LINE.match(lines[-1]) if lines else None
        if match is None:
            raise InvalidReply("its last line is not 'actions: N[, N…]'")
        actions = [int(number) for number in match.group(1).split(",")]
    if len(actions) > plan_length:
        raise InvalidReply(f"planned {len(actions)} actions; at most {plan_length} are allowed")
    for action in actions:
        if not 0 <= action < action_count:
            raise InvalidReply(f"action {action} does not exist (0 to {action_count - 1})")
    return actions


def _json_plan(text: str) -> list[int]:
    try:
        data = json.loads(text)
    except ValueError:
        raise InvalidReply("not a JSON object") from None
    try:
        return _Plan.model_validate(data).actions
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(part) for part in error["loc"]) or "reply"
        raise InvalidReply(f"{where}: {error['msg']}") from None
