"""Checking that a file is AgentSpeak plans before anything reads it as such (in the bundle).

The agent's parser (``agentspeak``, under spade_bdi) logs each error with the offending line
underneath, and follows ``{include("…")}`` directives to any file. Pointed at a file that is no
plans file (``/proc/self/environ``, a home's ``daemon.json``), it copied that file's lines into the
run's log. This check reads the file the same way but says only where it is wrong (a line number
and the parser's own words, never the file's text), refuses includes, and wants a plan for the goal
the worker posts. The plugin runs it in the bundle before a run is stored and again before launch
(``python -m gym_gui_spade_bdi_worker.plans FILE``: a JSON line, ``{"plans": N}`` or
``{"error": …}``); the worker reads its plans through it once more, and its agent is built from
the text that was checked, never from the file again.
"""

from __future__ import annotations

import json
import logging
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import agentspeak
import agentspeak.lexer
import agentspeak.parser

from gym_gui_spade_bdi_worker.params import PLANS_SUFFIX

# How large a plans file may be (the shipped plans are 3 KB).
MAX_BYTES = 1 << 20
# The goal the worker posts once the agent is up; plans without a plan for it would sit idle.
START_GOAL = "run"


class PlansRefused(ValueError):
    """The file is no plans file the agent may read; the message names the file and a line, never its text."""


@dataclass(frozen=True)
class Plans:
    """A plans file's text as it was checked, and how many plans it holds."""

    path: Path
    text: str
    count: int


class _Errors(logging.Handler):
    """Keeps the parser's records instead of printing them (with the source line under each)."""

    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def _line_of(text: str, index: int) -> int:
    return text.count("\n", 0, index) + 1


def _text(path: Path) -> str:
    """The file's text; refused when it is too large, or is not UTF-8 text (naming the first bad line)."""
    try:
        with open(path, "rb") as file:
            data = file.read(MAX_BYTES + 1)
    except OSError as exc:
        raise PlansRefused(f"{path} cannot be read: {exc.strerror or exc}") from None
    if len(data) > MAX_BYTES:
        raise PlansRefused(f"{path} is not AgentSpeak plans: it is larger than {MAX_BYTES // 1024} KiB")
    where = data.find(b"\0")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        where = exc.start if where < 0 else min(where, exc.start)
    if where >= 0:
        line = data.count(b"\n", 0, where) + 1
        raise PlansRefused(f"{path} is not AgentSpeak plans: line {line}: not text")
    return text


def _include_line(text: str, log: agentspeak.Log) -> int | None:
    """The line of the first ``{include(…)}`` directive, or None."""
    previous = ""
    for token in agentspeak.lexer.tokenize(agentspeak.StringSource("plans", text), log):
        if previous == "{" and token.lexeme == "include":
            return int(token.loc.lineno)
        previous = token.lexeme
    return None


def _first_error(path: Path, errors: _Errors) -> PlansRefused:
    """The parser's first error as a line number and its message with the lexemes it quotes left out."""
    record = next((r for r in errors.records if r.levelno >= logging.ERROR), None)
    if record is None:
        return PlansRefused(f"{path} is not AgentSpeak plans")
    loc = record.__dict__.get("loc")
    # The message's format only: its arguments are pieces of the file.
    words = re.sub(r"%[-#0 +]*\d*(?:\.\d+)?[a-z]", "…", str(record.msg))
    where = f"line {loc.lineno}: " if loc is not None else ""
    return PlansRefused(f"{path} is not AgentSpeak plans: {where}{words}")


def read_plans(path: Path) -> Plans:
    """Read ``path`` and check that it holds AgentSpeak plans the worker can run.

    Raises:
        PlansRefused: its name does not end in .asl, it cannot be read, is not UTF-8 text, does not
            parse (the line and the parser's words), includes another file, or has no plan for
            ``+!run``.
    """
    if path.suffix != PLANS_SUFFIX:
        raise PlansRefused(f"{path} is not a plans file: its name must end in {PLANS_SUFFIX}")
    text = _text(path)
    errors = _Errors()
    logger = logging.Logger(f"{__name__}.parser")  # not registered: no handler but ours, no propagation
    logger.addHandler(errors)
    log = agentspeak.Log(logger, 1)
    try:
        line = _include_line(text, log)
        if line is not None:
            raise PlansRefused(
                f"{path} is not AgentSpeak plans gym_gui runs: line {line}: an include directive "
                "(put the plans in one file)"
            )
        tokens = agentspeak.lexer.TokenStream(agentspeak.StringSource(str(path), text), log)
        agent = agentspeak.parser.parse(str(path), tokens, log)
        log.throw()
    except agentspeak.AggregatedError:
        raise _first_error(path, errors) from None
    except RecursionError:  # nesting deeper than the parser's recursion allows
        raise PlansRefused(f"{path} is not AgentSpeak plans: it nests too deeply") from None
    starts = [
        plan
        for plan in agent.plans
        if plan.event.trigger is agentspeak.Trigger.addition
        and plan.event.goal_type is agentspeak.GoalType.achievement
        and getattr(plan.event.head, "functor", None) == START_GOAL
    ]
    if not starts:
        raise PlansRefused(
            f"{path} has no plan for +!{START_GOAL}: the worker posts !{START_GOAL} to start the agent"
        )
    return Plans(path, text, len(agent.plans))


def main(argv: list[str] | None = None) -> int:
    """``python -m gym_gui_spade_bdi_worker.plans FILE``: one JSON line, exit 0 when it holds plans."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print(json.dumps({"error": "usage: python -m gym_gui_spade_bdi_worker.plans FILE"}))
        return 2
    try:
        count = read_plans(Path(args[0])).count
    except PlansRefused as exc:
        print(json.dumps({"error": str(exc)}))
        return 1
    except Exception as exc:  # the parser failing otherwise: its message may quote the file
        print(json.dumps({"error": f"{args[0]} could not be checked as plans: {type(exc).__name__}"}))
        return 1
    print(json.dumps({"plans": count}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
