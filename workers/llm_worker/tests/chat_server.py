"""A chat-completions server on loopback, speaking the OpenAI HTTP protocol, with scripted replies.

The one stand-in the suite allows, for a hosted model: the LLM worker's real ``openai`` client talks
to it over HTTP. Scripts decide each answer from the request: :func:`solver` reads the grid in the
prompt and answers the actions of a shortest way to the goal (so success is real), others answer
prose, stall past the client's timeout, or refuse with 429 (and Retry-After) or 500.
"""

from __future__ import annotations

import itertools
import json
import re
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.loopback import LoopbackServer

MODEL = "test-model"
_MOVES = {"up": (-1, 0), "down": (1, 0), "left": (0, -1), "right": (0, 1)}


@dataclass
class Answer:
    """One HTTP answer: a completion (``content`` or ``tool_calls``) or an error ``status``."""

    content: str | None = None
    tool_calls: list[tuple[str, str]] = field(default_factory=list)
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0  # seconds before answering


Script = Callable[[dict[str, Any]], Answer]


@dataclass(frozen=True)
class Received:
    """A request the server got: its path, body, Authorization header and arrival (monotonic clock)."""

    path: str
    body: dict[str, Any]
    authorization: str
    at: float


class ChatServer(LoopbackServer):
    """Serves ``GET /v1/models`` (``models``) and ``POST /v1/chat/completions`` (answered by ``script``,
    after ``latency`` seconds) on 127.0.0.1; a context manager."""

    def __init__(self, script: Script, models: Iterable[str] = (MODEL,), latency: float = 0.0) -> None:
        self.script = script
        self.models = list(models)
        self.latency = latency
        self.received: list[Received] = []
        self.in_flight = 0
        self.most_in_flight = 0  # the most completions answered at once
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # Headers and body leave in two writes: without TCP_NODELAY the second waits for the
            # client's delayed ACK (40 ms), a latency no real server adds.
            disable_nagle_algorithm = True

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                server._record(self, {})
                if self.path.rstrip("/") == "/v1/models":
                    data = [{"id": name, "object": "model", "owned_by": "tests"} for name in server.models]
                    self._send(200, {"object": "list", "data": data})
                else:
                    self._send(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                server._record(self, body)
                if self.path.rstrip("/") != "/v1/chat/completions":
                    self._send(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
                    return
                answer = server.script(body)
                with server._lock:
                    server.in_flight += 1
                    server.most_in_flight = max(server.most_in_flight, server.in_flight)
                time.sleep(server.latency + answer.delay)
                with server._lock:
                    server.in_flight -= 1
                if answer.status != 200:
                    message = {"error": {"message": f"scripted {answer.status}", "type": "server_error"}}
                    self._send(answer.status, message, answer.headers)
                    return
                self._send(200, server._completion(body, answer), answer.headers)

            def _send(
                self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None
            ) -> None:
                data = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for name, value in (headers or {}).items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up waiting (a timeout test)

        super().__init__(Handler, "chat-server")

    @property
    def url(self) -> str:
        return f"{super().url}/v1"

    def completions(self) -> list[Received]:
        with self._lock:
            return [r for r in self.received if r.path.rstrip("/").endswith("/chat/completions")]

    def _record(self, handler: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        with self._lock:
            self.received.append(
                Received(handler.path, body, handler.headers.get("Authorization") or "", time.monotonic())
            )

    def _completion(self, body: dict[str, Any], answer: Answer) -> dict[str, Any]:
        number = next(self._ids)
        prompt = sum(len(str(m.get("content") or "")) for m in body.get("messages", []))
        calls = [
            {
                "id": f"call_{number}_{i}",
                "type": "function",
                "function": {"name": name, "arguments": arguments},
            }
            for i, (name, arguments) in enumerate(answer.tool_calls)
        ]
        message: dict[str, Any] = {"role": "assistant", "content": answer.content}
        if calls:
            message["tool_calls"] = calls
        reply = answer.content or "".join(arguments for _name, arguments in answer.tool_calls)
        return {
            "id": f"chatcmpl-{number}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", ""),
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}],
            # Roughly what a tokenizer counts: four characters a token.
            "usage": {
                "prompt_tokens": prompt // 4,
                "completion_tokens": max(1, len(reply) // 4),
                "total_tokens": prompt // 4 + max(1, len(reply) // 4),
            },
        }


# ------------------------------------------------------------------ scripts


def answer_actions(request: dict[str, Any], actions: list[int]) -> Answer:
    """``actions`` in the reply format the request asks for (a tool call, JSON, or the text line)."""
    plan = json.dumps({"actions": actions})
    if request.get("tools"):
        return Answer(tool_calls=[(request["tools"][0]["function"]["name"], plan)])
    if request.get("response_format"):
        return Answer(content=plan)
    return Answer(content="The goal is near.\nactions: " + ", ".join(map(str, actions)))


def plan_length(request: dict[str, Any]) -> int:
    """The most actions the request allows in a reply (from its schema, else its instructions)."""
    if request.get("tools"):
        schema = request["tools"][0]["function"]["parameters"]
    elif request.get("response_format"):
        schema = request["response_format"]["json_schema"]["schema"]
    else:
        match = re.search(r"holding 1 to (\d+) action", request["messages"][0]["content"])
        return int(match.group(1)) if match else 1
    return int(schema["properties"]["actions"]["maxItems"])


def solver(request: dict[str, Any]) -> Answer:
    """The actions of a shortest safe way to the goal G of the grid in the prompt (FrozenLake,
    CliffWalking), as many as the request allows."""
    system, user = request["messages"][0]["content"], request["messages"][-1]["content"]
    numbers = {name: int(n) for n, name in re.findall(r"^(\d+): (\w+)$", system, re.MULTILINE)}
    rows = user.split("Map (top row first):\n", 1)[1].split("\nYou are at", 1)[0].splitlines()
    start = next((r, row.index("A")) for r, row in enumerate(rows) if "A" in row)
    path = _shortest(rows, start)
    return answer_actions(request, [numbers[move] for move in path[: plan_length(request)]] or [0])


def _shortest(rows: list[str], start: tuple[int, int]) -> list[str]:
    came: dict[tuple[int, int], tuple[tuple[int, int], str] | None] = {start: None}
    queue = deque([start])
    while queue:
        cell = queue.popleft()
        if rows[cell[0]][cell[1]] == "G":
            moves: list[str] = []
            while (back := came[cell]) is not None:
                cell, move = back[0], back[1]
                moves.append(move)
            return moves[::-1]
        for move, (dr, dc) in _MOVES.items():
            r, c = cell[0] + dr, cell[1] + dc
            if 0 <= r < len(rows) and 0 <= c < len(rows[r]) and rows[r][c] not in "HC" and (r, c) not in came:
                came[(r, c)] = (cell, move)
                queue.append((r, c))
    return []


def fixed(action: int) -> Script:
    """Always ``action``, as many times as the request allows."""
    return lambda request: answer_actions(request, [action] * plan_length(request))


def prose(request: dict[str, Any]) -> Answer:
    """A reply that names no action the worker can read."""
    return Answer(content="I would carefully consider moving towards the goal.")


class Sequence:
    """The ``first`` answers in order, one per request, then ``then`` for every request after."""

    def __init__(self, first: Iterable[Answer], then: Script) -> None:
        self._first = deque(first)
        self._then = then
        self._lock = threading.Lock()

    def __call__(self, request: dict[str, Any]) -> Answer:
        with self._lock:
            if self._first:
                return self._first.popleft()
        return self._then(request)
