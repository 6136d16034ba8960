"""The agent panes' reading of step payloads without Qt: the table rebuilt from steps, greedy arrows,
the prompt prefix resolved, the image a call was sent, and what storage gives them."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import numpy as np

from gym_gui.core.records import EventRecord, StepRow
from gym_gui.storage.telemetry_writer import TelemetryWriter
from gym_gui.ui.panes.payloads import (
    Message,
    RunContext,
    ValueTable,
    action_labels,
    action_moves,
    parse_step,
    prompt_prefixes,
    read_context,
    read_step,
    read_table_writes,
    start_table,
    table_shape,
    table_writes,
)


def info(state: int, q_after: list[float], **more: Any) -> str:
    return json.dumps({"state": state, "q_before": [0.0] * len(q_after), "q_after": q_after, **more})


def event(data: dict[str, Any]) -> EventRecord:
    return EventRecord(0.0, "worker", "INFO", "", json.dumps(data))


def test_the_table_is_the_start_table_with_each_steps_q_after_in_its_row_the_newest_winning() -> None:
    steps = [
        (0, 0, info(0, [0.0, 0.1, 0.0, 0.0])),
        (0, 1, info(1, [0.0, 0.0, 0.2, 0.0])),
        (1, 0, info(0, [0.0, 0.3, 0.0, 0.0])),  # state 0 again, later: its row wins
        (1, 1, json.dumps({"reward": 1})),  # no action values: writes nothing
        (1, 2, info(99, [1.0, 1.0, 1.0, 1.0])),  # no such state: writes nothing
        (1, 3, info(2, [1.0, 1.0])),  # a row of another width: writes nothing
    ]
    start = np.full((3, 4), 0.5)
    in_order = ValueTable((3, 4), start)
    assert in_order.apply(table_writes(steps, (3, 4)))
    assert in_order.q.tolist() == [[0.0, 0.3, 0.0, 0.0], [0.0, 0.0, 0.2, 0.0], [0.5] * 4]
    assert in_order.through == (1, 3) and in_order.steps == 6

    # Folding is order-free and idempotent: the same steps in two reads, the later one first.
    shuffled = ValueTable((3, 4), start)
    shuffled.apply(table_writes(steps[2:], (3, 4)))
    shuffled.apply(table_writes(steps[:2], (3, 4)))
    assert not shuffled.apply(table_writes(steps[:3], (3, 4)))
    assert np.array_equal(shuffled.q, in_order.q)

    # A start table read after the first steps fills only the rows no step wrote.
    late = ValueTable((3, 4))
    late.apply(table_writes(steps[:2], (3, 4)))
    assert late.rebase(start)
    assert late.q[0].tolist() == [0.0, 0.1, 0.0, 0.0] and late.q[2].tolist() == [0.5] * 4
    assert not late.rebase(start)


def test_greedy_actions_and_their_arrows_come_from_the_catalogs_key_map() -> None:
    table = ValueTable((3, 4))
    table.apply(table_writes([(0, 0, info(0, [0.0, 0.0, 0.7, 0.1])), (0, 1, info(1, [0.2] * 4))], (3, 4)))
    # A row of equal values (never updated, or all alike) prefers nothing: no arrow.
    assert table.greedy().tolist() == [2, -1, -1]
    assert table.best().tolist() == [0.7, 0.2, 0.0]
    # FrozenLake: 0 left, 1 down, 2 right, 3 up; CliffWalking: 0 up, 1 right, 2 down, 3 left.
    assert action_moves("FrozenLake-v1") == {0: (0, -1), 1: (1, 0), 2: (0, 1), 3: (-1, 0)}
    assert action_moves("CliffWalking-v1") == {0: (-1, 0), 1: (0, 1), 2: (1, 0), 3: (0, -1)}
    assert action_moves("Taxi-v4")[1] == (-1, 0) and 4 not in action_moves("Taxi-v4")
    assert action_moves("NoSuchEnv-v0") == {}
    assert action_labels("FrozenLake-v1", 4) == ["0 move left", "1 move down", "2 move right", "3 move up"]
    assert action_labels("NoSuchEnv-v0", 2) == ["0", "1"]


def test_the_declared_table_and_its_start_event() -> None:
    assert table_shape({"q_table": {"states": 16, "actions": 4}}) == (16, 4)
    assert table_shape({"observation": "Discrete(16)"}) is None
    assert table_shape({"q_table": {"states": 0, "actions": 4}}) is None
    rows = [[float(s + a) for a in range(4)] for s in range(16)]
    events = [event({"llm_prefix": {"id": "x", "messages": []}}), event({"kind": "q_table", "q_table": rows})]
    found = start_table(events, (16, 4))
    assert found is not None and found.tolist() == rows
    assert start_table(events, (500, 6)) is None  # a table of another shape is not this run's


def test_a_step_carrying_action_values_and_a_bdi_agents_mind() -> None:
    step = parse_step(
        3,
        7,
        "2",
        info(
            5,
            [0.1, 0.0, 0.31, 0.2],
            epsilon=0.42,
            explored=False,
            td_error=0.1,
            beliefs=["state(5)"],
            intention=["run", "step"],
        ),
    )
    assert step.key == (3, 7) and step.call is None
    assert step.values is not None and step.values.after == (0.1, 0.0, 0.31, 0.2)
    assert step.values.state == 5 and step.values.greedy == 2 and step.values.explored is False
    assert step.deliberation is not None and step.deliberation.intention == ("run", "step")
    assert step.deliberation.beliefs == ("state(5)",)
    # Keys that do not have the documented shape are not read as the panes' keys.
    other = parse_step(0, 0, "1", json.dumps({"q_after": "high", "beliefs": {"a": 1}, "llm": {"call": "x"}}))
    assert other.values is None and other.deliberation is None and other.call is None
    assert parse_step(0, 0, "1", "not json").values is None


def test_a_model_call_its_later_plan_steps_and_its_prompt_prefix() -> None:
    record = {
        "call": 4,
        "index": 0,
        "prompt": {"prefix": "b34d9a3bab9f0e87", "messages": [{"role": "user", "content": "Map:\nSFFF"}]},
        "reply": '{"actions": [2, 2]}',
        "tool_calls": [],
        "actions": [2, 2],
        "valid": True,
        "error": "",
        "fallback": "",
        "latency_ms": 203.4,
        "tokens_in": 412,
        "tokens_out": 9,
        "attempts": 1,
        "source": "endpoint",
    }
    first = parse_step(0, 5, "2", json.dumps({"llm": record}))
    assert first.call is not None and first.call.record is not None and first.call_step == (0, 5)
    assert first.call.record.messages == (Message("user", "Map:\nSFFF"),)
    assert first.call.record.actions == (2, 2) and first.call.record.tokens_in == 412
    later = parse_step(0, 6, "2", json.dumps({"llm": {"call": 4, "index": 1, "unchanged": True}}))
    assert later.call is not None and later.call.record is None and later.call.unchanged
    assert later.call_step == (0, 5)  # the step that made the call holds its record

    system = {"role": "system", "content": "You are playing FrozenLake."}
    prefixes = prompt_prefixes([event({"llm_prefix": {"id": "b34d9a3bab9f0e87", "messages": [system]}})])
    context = RunContext(started=True, prefixes=prefixes)
    assert context.prompt(first.call.record) == (
        Message("system", "You are playing FrozenLake."),
        Message("user", "Map:\nSFFF"),
    )
    assert RunContext().prompt(first.call.record) is None  # the prefix is not read yet


def test_an_image_sent_with_a_message_is_read_as_its_bytes_and_an_unreadable_one_as_none() -> None:
    png = b"\x89PNG\r\n\x1a\n fake but base64 round-trips"
    messages = [
        {"role": "system", "content": "rules"},
        {"role": "user", "content": "Now:", "image": base64.b64encode(png).decode("ascii")},
        {"role": "user", "content": "again", "image": "not base64!"},
    ]
    step = parse_step(
        0,
        0,
        "1",
        json.dumps({"llm": {"call": 0, "index": 0, "prompt": {"prefix": "", "messages": messages}}}),
    )
    assert step.call is not None and step.call.record is not None
    # No prefix: the record's messages are the whole prompt (an operator's calls carry it inline).
    assert RunContext().prompt(step.call.record) == (
        Message("system", "rules"),
        Message("user", "Now:", png),
        Message("user", "again", None),
    )


def write_run(path: Path, rows: list[StepRow], spaces: dict[str, Any], events: list[EventRecord]) -> None:
    writer = TelemetryWriter(path)
    writer.start()
    writer.set_meta("spaces", json.dumps(spaces))
    for record in events:
        writer.put_event(record)
    writer.put_steps(rows)
    assert writer.flush(timeout=30)
    writer.close(timeout=30)


def row(episode: int, step: int, info_json: str) -> StepRow:
    return (episode, step, 0.0, False, False, "1", "0", info_json, None, 0.0)


def test_what_the_panes_read_from_a_runs_telemetry(tmp_path: Path) -> None:
    path = tmp_path / "telemetry.sqlite"
    assert read_context(path, RunContext()) == RunContext()  # no database yet: not started
    start = [[0.25] * 4 for _ in range(16)]
    llm = {"call": 0, "index": 0, "prompt": {"prefix": "p1", "messages": [{"role": "user", "content": "hi"}]}}
    write_run(
        path,
        [row(0, s, info(s, [0.0, float(s), 0.0, 0.0])) for s in range(5)]
        + [row(1, 0, json.dumps({"llm": llm}))],
        {"q_table": {"states": 16, "actions": 4}},
        [event({"kind": "q_table", "q_table": start}), event({"llm_prefix": {"id": "p1", "messages": []}})],
    )
    context = read_context(path, RunContext())
    assert context.started and context.shape == (16, 4) and context.events_read == 2
    assert context.start is not None and context.start.tolist() == start and set(context.prefixes) == {"p1"}
    assert read_context(path, context) == context  # nothing new

    writes = read_table_writes(path, (16, 4), None, limit=3)
    assert writes.through == (0, 2) and set(writes.rows) == {0, 1, 2}
    rest = read_table_writes(path, (16, 4), writes.through, limit=100)
    assert rest.through == (1, 0) and set(rest.rows) == {3, 4}
    assert read_table_writes(path, (16, 4), rest.through, limit=100).through == (1, 0)

    step = read_step(path, (1, 0))
    assert step is not None and step.call is not None and step.call.record is not None
    assert read_step(path, (7, 7)) is None


def test_a_nan_value_written_as_null_is_read_as_nan() -> None:
    step = parse_step(0, 0, "2", json.dumps({"state": 0, "q_after": [0.0, None, 1.0, 0.0]}))
    assert step.values is not None and np.isnan(step.values.after[1]) and step.values.after[2] == 1.0
