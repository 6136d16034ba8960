"""What a process's error output says went wrong, its warnings (Python's, a library's) left out."""

from __future__ import annotations

import re
from collections.abc import Iterable

# Python's warnings.showwarning: "FILE:LINE: CATEGORY: MESSAGE", then the source line, indented.
_PYTHON_WARNING = re.compile(r"^.+:\d+: \w*Warning: ")
# A logger's or a library's warning line ("WARNING: …", "WARN: …", coloured or not).
_WARNING_LINE = re.compile(r"^\s*(?:\x1b\[[0-9;]*m)?(?:WARNING|WARN|Warning)\b")


def without_warnings(lines: Iterable[str]) -> list[str]:
    """``lines`` without the warnings among them: a warning's line, and the indented source line
    Python prints under it (gym's deprecation banner ends with ``  deprecation(``)."""
    kept: list[str] = []
    in_warning = False
    for line in lines:
        if _PYTHON_WARNING.match(line) or _WARNING_LINE.match(line):
            in_warning = True
        elif not (in_warning and line[:1].isspace() and line.strip()):
            in_warning = False
            kept.append(line)
    return kept


def error_line(lines: Iterable[str]) -> str:
    """The line of a process's error output that says what went wrong, stripped; "" when none does.

    argparse's ``error:`` line when there is one, else the last line that is not a warning (a
    traceback's exception, a fatal error): never a warning, however late it came.
    """
    kept = [line.strip() for line in without_warnings(lines) if line.strip()]
    for line in reversed(kept):
        if ": error:" in line:
            return line
    return kept[-1] if kept else ""
