"""The step payload keys the agent panes read, and what they make of them (plain Python, no Qt).

The keys are a contract between workers and the window (docs/workers.md, "Agent panes"): a run
whose steps carry them gets the panes, whatever its worker, and the window names no worker kind.

- ``info.q_before``, ``info.q_after`` (one number per action), with ``state``, ``epsilon``,
  ``explored``, ``td_error``: the action values of the step's state before and after its update.
- ``info.beliefs`` (strings), ``info.intention`` (goals, outermost first): a BDI agent's mind.
- ``info.llm``: the language-model call that chose the step's action (``call``, ``index`` in its
  plan; the step of index 0 carries the prompt, the reply and what was made of it; a message sent
  with an image carries it as base64 PNG under ``image``).
- The started spaces' ``q_table`` ``{"states", "actions"}`` with an event ``{"kind": "q_table",
  "q_table": rows}`` for a start table: the run's table is rebuilt from its steps' ``q_after``.
- An event ``{"llm_prefix": {"id", "messages"}}``: the prompt prefix the calls name by id.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import json
import math
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from gym_gui.core.errors import StorageError
from gym_gui.core.records import EventRecord
from gym_gui.envs.catalog import env_entry
from gym_gui.storage.telemetry import TelemetryReader

StepKey = tuple[int, int]  # (episode, step): the order of a run's steps

# The catalog's arrow keys as (row, column) moves on the grid.
_MOVES: dict[str, tuple[int, int]] = {"Up": (-1, 0), "Down": (1, 0), "Left": (0, -1), "Right": (0, 1)}


def _object(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except (ValueError, TypeError):
        return {}
    return value if isinstance(value, dict) else {}


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _integer(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _numbers(value: Any) -> tuple[float, ...] | None:
    """A non-empty list of numbers (null, the SDK's NaN, read as NaN), else None."""
    if not isinstance(value, list) or not value:
        return None
    numbers = [math.nan if x is None else _number(x) for x in value]
    return None if any(x is None for x in numbers) else tuple(x for x in numbers if x is not None)


def _strings(value: Any) -> tuple[str, ...] | None:
    if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
        return None
    return tuple(value)


@dataclass(frozen=True)
class ActionValues:
    """``q_before`` and ``q_after``: the values of each action in the step's state, before and after the step's update."""

    before: tuple[float, ...]
    after: tuple[float, ...]
    state: int | None = None
    epsilon: float | None = None
    explored: bool | None = None
    td_error: float | None = None

    @property
    def greedy(self) -> int:
        """The action the values now prefer (the first of equals)."""
        return int(np.argmax(self.after))


@dataclass(frozen=True)
class Deliberation:
    """``beliefs`` and ``intention``: what a BDI agent believed and pursued when it took the step."""

    beliefs: tuple[str, ...]
    intention: tuple[str, ...]


@dataclass(frozen=True)
class Message:
    """One chat message as sent to the model; ``image`` the PNG sent with it (a vision model's frame)."""

    role: str
    content: str
    image: bytes | None = None


@dataclass(frozen=True)
class CallRecord:
    """What one language-model call sent and got (``info.llm`` of the step that made it)."""

    prefix: str  # the id of the prompt prefix (an ``llm_prefix`` event), "" when none
    messages: tuple[Message, ...]  # the call's own messages, after the prefix
    reply: str | None
    tool_calls: tuple[tuple[str, str], ...]  # (name, arguments)
    actions: tuple[Any, ...]
    valid: bool
    error: str = ""
    fallback: str = ""
    latency_ms: float | None = None
    tokens_in: int | None = None
    tokens_out: int | None = None
    attempts: int | None = None
    source: str = ""


@dataclass(frozen=True)
class ModelCall:
    """``info.llm``: the call whose plan chose the step's action, and the step's place in that plan."""

    call: int
    index: int
    unchanged: bool = False
    record: CallRecord | None = None  # on the step that made the call (index 0) only


@dataclass(frozen=True)
class StepPayload:
    """One step as the panes read it; a part is None when the step does not carry its keys."""

    episode: int
    step: int
    action: str  # JSON
    values: ActionValues | None = None
    deliberation: Deliberation | None = None
    call: ModelCall | None = None

    @property
    def key(self) -> StepKey:
        return self.episode, self.step

    @property
    def call_step(self) -> StepKey | None:
        """The step that made this step's call (it carries the record), None without a call."""
        if self.call is None:
            return None
        return self.episode, self.step - self.call.index


def _action_values(info: Mapping[str, Any]) -> ActionValues | None:
    before, after = _numbers(info.get("q_before")), _numbers(info.get("q_after"))
    if before is None and after is None:
        return None
    before = before if before is not None else after
    after = after if after is not None else before
    assert before is not None and after is not None
    if len(before) != len(after):
        return None
    explored = info.get("explored")
    return ActionValues(
        before,
        after,
        state=_integer(info.get("state")),
        epsilon=_number(info.get("epsilon")),
        explored=explored if isinstance(explored, bool) else None,
        td_error=_number(info.get("td_error")),
    )


def _deliberation(info: Mapping[str, Any]) -> Deliberation | None:
    beliefs, intention = _strings(info.get("beliefs")), _strings(info.get("intention"))
    if beliefs is None and intention is None:
        return None
    return Deliberation(beliefs or (), intention or ())


def _png(value: Any) -> bytes | None:
    """The bytes of a base64 text (a message's ``image``), None for anything else."""
    if not isinstance(value, str):
        return None
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return None


def _messages(value: Any) -> tuple[Message, ...]:
    if not isinstance(value, list):
        return ()
    return tuple(
        Message(str(m.get("role", "")), str(m.get("content", "")), _png(m.get("image")))
        for m in value
        if isinstance(m, dict)
    )


def _call_record(llm: Mapping[str, Any]) -> CallRecord | None:
    prompt = llm.get("prompt")
    if not isinstance(prompt, dict):
        return None
    reply = llm.get("reply")
    tool_calls = llm.get("tool_calls")
    actions = llm.get("actions")
    return CallRecord(
        prefix=str(prompt.get("prefix") or ""),
        messages=_messages(prompt.get("messages")),
        reply=reply if isinstance(reply, str) else None,
        tool_calls=tuple(
            (str(c.get("name", "")), str(c.get("arguments", "")))
            for c in (tool_calls if isinstance(tool_calls, list) else [])
            if isinstance(c, dict)
        ),
        actions=tuple(actions) if isinstance(actions, list) else (),
        valid=llm.get("valid") is not False,
        error=str(llm.get("error") or ""),
        fallback=str(llm.get("fallback") or ""),
        latency_ms=_number(llm.get("latency_ms")),
        tokens_in=_integer(llm.get("tokens_in")),
        tokens_out=_integer(llm.get("tokens_out")),
        attempts=_integer(llm.get("attempts")),
        source=str(llm.get("source") or ""),
    )


def _model_call(info: Mapping[str, Any]) -> ModelCall | None:
    llm = info.get("llm")
    if not isinstance(llm, dict):
        return None
    call, index = _integer(llm.get("call")), _integer(llm.get("index"))
    if call is None or index is None or index < 0:
        return None
    return ModelCall(call, index, llm.get("unchanged") is True, _call_record(llm) if index == 0 else None)


def parse_step(episode: int, step: int, action: str, info: str) -> StepPayload:
    """What the panes read in one step (``action`` and ``info`` as stored: JSON text)."""
    data = _object(info)
    return StepPayload(episode, step, action, _action_values(data), _deliberation(data), _model_call(data))


# ---------------------------------------------------------------- the run's table of action values


def table_shape(spaces: Mapping[str, Any]) -> tuple[int, int] | None:
    """``(states, actions)`` of the table the started spaces declare (``q_table``), else None."""
    declared = spaces.get("q_table")
    if not isinstance(declared, dict):
        return None
    states, actions = _integer(declared.get("states")), _integer(declared.get("actions"))
    if states is None or actions is None or states < 1 or actions < 1:
        return None
    return states, actions


def start_table(events: Iterable[EventRecord], shape: tuple[int, int]) -> np.ndarray | None:
    """The table a run starts from: its ``q_table`` event's rows when they have ``shape``, else None."""
    table: np.ndarray | None = None
    for event in events:
        data = _object(event.data)
        if data.get("kind") != "q_table":
            continue
        try:
            rows = np.asarray(data.get("q_table"), dtype=np.float64)
        except (TypeError, ValueError):
            continue
        if rows.shape == shape:
            table = rows
    return table


@dataclass
class TableWrites:
    """What a stretch of steps writes into a table: the newest ``q_after`` row of each state it visits."""

    rows: dict[int, tuple[StepKey, tuple[float, ...]]] = field(default_factory=dict)
    through: StepKey | None = None  # the last step read (the next read starts after it)
    steps: int = 0


def table_writes(steps: Iterable[tuple[int, int, str]], shape: tuple[int, int]) -> TableWrites:
    """The writes of ``steps`` (``(episode, step, info)``) into a table of ``shape``.

    A step writes its ``q_after`` into row ``state``; a step without both, or whose row does not
    fit the table, writes nothing.
    """
    states, actions = shape
    writes = TableWrites()
    for episode, step, info in steps:
        key = (episode, step)
        writes.steps += 1
        if writes.through is None or key > writes.through:
            writes.through = key
        data = _object(info)
        state, row = _integer(data.get("state")), _numbers(data.get("q_after"))
        if state is None or row is None or not 0 <= state < states or len(row) != actions:
            continue
        held = writes.rows.get(state)
        if held is None or key > held[0]:
            writes.rows[state] = (key, row)
    return writes


class ValueTable:
    """A run's table of action values as of the newest step written into it.

    It starts as the start table (zeros, or the run's ``q_table`` event) and each step's ``q_after``
    replaces row ``state``. A row keeps the write of the newest step by (episode, step), so writes
    may arrive in any order and a step written twice changes nothing.
    """

    def __init__(self, shape: tuple[int, int], start: np.ndarray | None = None) -> None:
        self.shape = shape
        self.q = np.zeros(shape, dtype=np.float64) if start is None else np.array(start, dtype=np.float64)
        if self.q.shape != shape:
            raise ValueError(f"a start table of shape {self.q.shape} for a table of {shape}")
        self._written: list[StepKey | None] = [None] * shape[0]
        self.through: StepKey | None = None
        self.steps = 0

    def apply(self, writes: TableWrites) -> bool:
        """Write ``writes`` in; True when a row changed."""
        changed = False
        for state, (key, row) in writes.rows.items():
            held = self._written[state]
            if held is not None and key <= held:
                continue
            self._written[state] = key
            if not np.array_equal(self.q[state], row):
                self.q[state] = row
                changed = True
        self.steps += writes.steps
        if writes.through is not None and (self.through is None or writes.through > self.through):
            self.through = writes.through
        return changed

    def rebase(self, start: np.ndarray) -> bool:
        """Take ``start`` as the start table (it was read after the first steps): the rows no step
        wrote become its rows; True when one changed."""
        changed = False
        for state, held in enumerate(self._written):
            if held is None and not np.array_equal(self.q[state], start[state]):
                self.q[state] = start[state]
                changed = True
        return changed

    def best(self) -> np.ndarray:
        """The largest value of each state's row."""
        return np.asarray(self.q.max(axis=1))

    def greedy(self) -> np.ndarray:
        """The greedy action of each state, -1 where the row does not prefer one (all its values equal)."""
        greedy = np.asarray(self.q.argmax(axis=1), dtype=np.int64)
        greedy[self.q.max(axis=1) == self.q.min(axis=1)] = -1
        return greedy


# ---------------------------------------------------------------- actions as the catalog names them


def action_moves(env_id: str) -> dict[int, tuple[int, int]]:
    """The grid move of each action the catalog binds to an arrow key (for FrozenLake 2 is right: (0, 1))."""
    entry = env_entry(env_id)
    moves: dict[int, tuple[int, int]] = {}
    for binding in entry.keys if entry is not None else ():
        move = _MOVES.get(binding.key)
        if move is not None and isinstance(binding.action, int):
            moves.setdefault(binding.action, move)
    return moves


def action_labels(env_id: str, count: int) -> list[str]:
    """A label for each of ``count`` actions: its number and what the catalog's key map says it does."""
    entry = env_entry(env_id)
    described: dict[int, str] = {}
    for binding in entry.keys if entry is not None else ():
        if isinstance(binding.action, int):
            described.setdefault(binding.action, binding.description)
    return [f"{a} {described[a]}" if a in described else str(a) for a in range(count)]


# ---------------------------------------------------------------- what the run holds besides its steps


@dataclass(frozen=True)
class RunContext:
    """What the panes read of a run besides its steps: its started spaces and its events so far."""

    started: bool = False  # the worker reported its spaces
    shape: tuple[int, int] | None = None  # of the declared table of action values
    start: np.ndarray | None = None
    prefixes: Mapping[str, tuple[Message, ...]] = field(default_factory=dict)
    events_read: int = 0

    def prompt(self, record: CallRecord) -> tuple[Message, ...] | None:
        """The whole prompt of a call: its prefix's messages then its own; None when the prefix is unknown."""
        if not record.prefix:
            return record.messages
        prefix = self.prefixes.get(record.prefix)
        return None if prefix is None else prefix + record.messages


def prompt_prefixes(events: Iterable[EventRecord]) -> dict[str, tuple[Message, ...]]:
    """The prompt prefixes stored as ``llm_prefix`` events, by id."""
    prefixes: dict[str, tuple[Message, ...]] = {}
    for event in events:
        prefix = _object(event.data).get("llm_prefix")
        if isinstance(prefix, dict) and isinstance(prefix.get("id"), str):
            prefixes[prefix["id"]] = _messages(prefix.get("messages"))
    return prefixes


@contextlib.contextmanager
def _stored(path: Path) -> Iterator[TelemetryReader | None]:
    """The run's telemetry database read-only for the block; None until the run has created it."""
    reader: TelemetryReader | None = None
    if path.is_file():
        try:
            reader = TelemetryReader(path)
        except StorageError:
            reader = None  # not initialised yet: the run has not started
    try:
        yield reader
    finally:
        if reader is not None:
            reader.close()


def read_context(path: Path, known: RunContext) -> RunContext:
    """``known`` brought up to date from the run's telemetry database at ``path`` (its new events only).

    Raises:
        StorageError: when the database cannot be read.
    """
    with _stored(path) as reader:
        if reader is None:
            return known
        context = known
        if not context.started:
            spaces = reader.meta("spaces")
            if spaces is None:
                return known  # not started: its events would come before the shape they need
            context = replace(context, started=True, shape=table_shape(_object(spaces)))
        events = reader.events(since_id=context.events_read)
    if not events:
        return context
    prefixes = {**context.prefixes, **prompt_prefixes(events)}
    start = context.start
    if context.shape is not None:
        start = start_table(events, context.shape)
        start = start if start is not None else context.start
    return replace(context, prefixes=prefixes, start=start, events_read=context.events_read + len(events))


def read_table_writes(path: Path, shape: tuple[int, int], after: StepKey | None, limit: int) -> TableWrites:
    """The writes of the (at most ``limit``) steps stored after ``after``.

    Raises:
        StorageError: when the database cannot be read.
    """
    with _stored(path) as reader:
        writes = table_writes(reader.step_infos(after, limit) if reader is not None else [], shape)
    if writes.through is None:
        writes.through = after
    return writes


def read_step(path: Path, key: StepKey) -> StepPayload | None:
    """The stored step ``key`` as the panes read it, None when it is not stored.

    Raises:
        StorageError: when the database cannot be read.
    """
    with _stored(path) as reader:
        records = reader.steps(key[0], key[1], key[1] + 1) if reader is not None else []
    if not records:
        return None
    record = records[0]
    return parse_step(record.episode, record.step, record.action, record.info)
