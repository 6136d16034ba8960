"""Response logs: every reply the endpoint gave, keyed by the request that got it; replayed for free.

A log is a JSON-lines file, one line per reply: ``{"key", "model", "content", "tool_calls",
"tokens_in", "tokens_out"}``. The key is the SHA-256 of the request as sent (model, messages,
temperature, max_tokens, reply format), so a reply is reused only for exactly the same question.

Every run writes its own log (:data:`RUN_LOG`, in the run directory). Resuming a run reads that
run's log first; the home's shared cache (parameter ``response_cache``) is read and appended to as
well. Lines are appended with one ``write`` each, so runs sharing the cache never interleave them;
a line cut short by a crash is skipped when read.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from gym_gui_sdk.json_object import json_object

# The run's own log, relative to its run directory.
RUN_LOG = "llm/responses.jsonl"
# The shared cache, relative to the home.
SHARED_CACHE = "cache/llm-responses.jsonl"


def request_key(request: dict[str, Any]) -> str:
    """The key of a chat-completions request (its arguments as sent)."""
    text = json.dumps(request, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class ResponseLog:
    """Replies by request key, read from the ``read_from`` files; new ones appended to every
    ``write_to`` file, and answered from memory when asked again only if ``remember`` (the shared
    cache is on): otherwise a run asks the model each time, as a sampling temperature wants."""

    def __init__(
        self, write_to: Iterable[Path], read_from: Iterable[Path] = (), remember: bool = False
    ) -> None:
        self._write_to = [Path(path) for path in write_to]
        self._remember = remember
        self._known: dict[str, dict[str, Any]] = {}
        for path in read_from:
            self._read(Path(path))
        for path in self._write_to:
            path.parent.mkdir(parents=True, exist_ok=True)

    def __len__(self) -> int:
        return len(self._known)

    def _read(self, path: Path) -> None:
        try:
            with open(path, encoding="utf-8") as lines:
                for line in lines:
                    try:
                        record = json_object(line)
                    except ValueError:
                        continue  # a line cut short by a crash
                    if isinstance(record.get("key"), str):
                        self._known.setdefault(record["key"], record)
        except FileNotFoundError:
            pass

    def get(self, key: str) -> dict[str, Any] | None:
        return self._known.get(key)

    def put(self, key: str, model: str, reply: dict[str, Any]) -> None:
        record = {"key": key, "model": model, **reply}
        if self._remember:
            self._known.setdefault(key, record)
        data = (json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")
        for path in self._write_to:
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                os.write(fd, data)
            finally:
                os.close(fd)
