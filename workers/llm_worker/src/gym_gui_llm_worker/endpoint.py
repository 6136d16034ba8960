"""The chat-completions endpoint, through the official ``openai`` client: checked once, then asked.

Retries are the client's own: a request that timed out, lost its connection, or was answered 429
(after the server's Retry-After, up to two minutes) or 5xx is sent again up to ``retries`` times
with exponential backoff (0.5 s doubling, at most 8 s, jittered). Anything the client gives up on
becomes an :class:`EndpointError` with one line saying what and where.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import openai

from gym_gui_llm_worker.params import LLMParams


class EndpointError(RuntimeError):
    """The endpoint cannot be used: unreachable, no such model, refused, or stopped answering."""


@dataclass(frozen=True)
class Reply:
    """One answer of the model, from the endpoint or from a response log."""

    content: str | None
    tool_calls: list[tuple[str, str]] = field(default_factory=list)
    tokens_in: int = 0
    tokens_out: int = 0
    latency_ms: float = 0.0
    attempts: int = 0  # requests sent for it (1 + retries); 0 for a reply taken from a log
    source: str = "endpoint"  # or "cache"

    def record(self) -> dict[str, Any]:
        """What a response log keeps of it (see :mod:`gym_gui_llm_worker.responses`)."""
        return {
            "content": self.content,
            "tool_calls": [list(call) for call in self.tool_calls],
            "tokens_in": self.tokens_in,
            "tokens_out": self.tokens_out,
        }

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> Reply:
        return cls(
            content=record.get("content"),
            tool_calls=[(str(name), str(arguments)) for name, arguments in record.get("tool_calls") or []],
            tokens_in=int(record.get("tokens_in") or 0),
            tokens_out=int(record.get("tokens_out") or 0),
            source="cache",
        )


class ChatEndpoint:
    """An OpenAI-compatible endpoint as the run's parameters name it."""

    def __init__(self, params: LLMParams, api_key: str | None) -> None:
        self.params = params
        self.base_url = params.base_url
        # A local server takes any key; the client insists on one.
        self.client = openai.AsyncOpenAI(
            base_url=params.base_url,
            api_key=api_key or "no-key",
            timeout=params.timeout,
            max_retries=params.retries,
        )

    async def close(self) -> None:
        await self.client.close()

    async def check(self) -> None:
        """Make sure the endpoint answers and serves the model (``GET /models``).

        Raises:
            EndpointError: the endpoint is unreachable, refuses the key, or does not list the model
                (the message lists the models it serves). A server without ``/models`` passes.
        """
        try:
            page = await self.client.models.list()
        except openai.NotFoundError:
            return
        except openai.APIError as exc:
            raise EndpointError(f"cannot use the LLM endpoint at {self.base_url}: {_reason(exc)}") from None
        served = sorted(model.id for model in page.data)
        if self.params.model not in served:
            raise EndpointError(
                f"model {self.params.model!r} is not served at {self.base_url}; "
                f"it serves: {', '.join(served) or 'no models'}"
            )

    async def complete(self, request: dict[str, Any]) -> Reply:
        """Ask for one chat completion (``request``: the create call's arguments).

        Raises:
            EndpointError: the client gave up (after its retries), saying why.
        """
        started = time.perf_counter()
        try:
            raw = await self.client.chat.completions.with_raw_response.create(**request)
        except openai.APIError as exc:
            raise EndpointError(
                f"the LLM endpoint at {self.base_url} failed a request: {_reason(exc)} "
                f"(after {self.params.retries} retries)"
            ) from None
        latency_ms = (time.perf_counter() - started) * 1000.0
        completion = raw.parse()
        if not completion.choices:
            raise EndpointError(f"the LLM endpoint at {self.base_url} answered without a choice")
        message = completion.choices[0].message
        calls = [
            (call.function.name, call.function.arguments)
            for call in message.tool_calls or []
            if getattr(call, "function", None) is not None
        ]
        usage = completion.usage
        return Reply(
            content=message.content,
            tool_calls=calls,
            tokens_in=usage.prompt_tokens if usage else 0,
            tokens_out=usage.completion_tokens if usage else 0,
            latency_ms=latency_ms,
            attempts=raw.retries_taken + 1,
        )


def _reason(exc: openai.APIError) -> str:
    if isinstance(exc, openai.APITimeoutError):
        return "no answer within the timeout"
    if isinstance(exc, openai.APIConnectionError):
        cause = exc.__cause__ or exc.__context__
        return f"connection failed ({cause or exc})"
    if isinstance(exc, openai.APIStatusError):
        return f"HTTP {exc.status_code}: {_one_line(exc.message)}"
    return _one_line(str(exc))


def _one_line(text: str) -> str:
    return " ".join(text.split())[:300]
