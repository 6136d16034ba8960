"""The worker's parameters: one pydantic model, its defaults and help, and the form's description of it.

Plain pydantic on purpose: the plugin (in gym_gui's process) checks and describes them, the worker
process (in the llm bundle) reads them, and neither needs the other's imports for it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError

# The environment variable holding the endpoint's API key. It reaches the worker as a run secret
# only (never stored, never logged, ``***`` in previews); a local server needs none.
API_KEY_ENV = "LLM_API_KEY"

ReplyFormat = Literal["json", "tool", "text"]
Fallback = Literal["random", "noop", "repeat"]


class LLMParams(BaseModel):
    """What a run of the LLM worker asks, of which endpoint, and how it plays."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    base_url: str = Field(
        default="http://127.0.0.1:11434/v1",
        min_length=1,
        description="OpenAI-compatible endpoint (Ollama's by default; vLLM, llama.cpp server, a hosted API).",
    )
    model: str = Field(default="llama3.2", min_length=1, description="Model name as the endpoint knows it.")
    temperature: float = Field(default=0.0, ge=0.0, le=2.0, description="Sampling temperature.")
    max_tokens: int = Field(default=256, ge=1, le=32768, description="Most tokens a reply may have.")
    timeout: float = Field(default=60.0, gt=0.0, le=3600.0, description="Seconds one request may take.")
    retries: int = Field(
        default=3,
        ge=0,
        le=20,
        description="Retries of a request that timed out, hit a rate limit (429, after its Retry-After) "
        "or a server error (5xx), with exponential backoff.",
    )
    plan_length: int = Field(
        default=1, ge=1, le=64, description="Most actions one reply may plan (1: one action per call)."
    )
    replan_every: int = Field(
        default=0,
        ge=0,
        le=10_000,
        description="Ask again after this many steps of a plan (0: only when it is used up or an action "
        "changes nothing).",
    )
    history: int = Field(default=4, ge=0, le=100, description="Past steps the prompt recalls.")
    reply_format: ReplyFormat = Field(
        default="json",
        description="json: a JSON object under a schema; tool: a tool call; text: a line 'actions: 2, 1'.",
    )
    fallback: Fallback = Field(
        default="random",
        description="The action taken on a reply that is not a valid action (counted as invalid): random, "
        "noop (MiniGrid's done) or repeat (the last action).",
    )
    parallel: int = Field(default=4, ge=1, le=64, description="Episodes played at once.")
    system_prompt: str = Field(
        default="",
        max_length=20_000,
        description="System prompt template ($env_id, $rules, $legend, $actions, $plan_length, "
        "$reply_format); empty: the environment family's template shipped with the worker.",
    )
    price_in: float = Field(default=0.0, ge=0.0, description="USD per million prompt tokens (for the cost).")
    price_out: float = Field(default=0.0, ge=0.0, description="USD per million reply tokens (for the cost).")
    response_cache: bool = Field(
        default=False,
        description="Answer a request seen before (same model, settings and prompt) from the home's "
        "response cache, and keep new replies there: a re-run is reproducible and free.",
    )
    resume_from: str = Field(
        default="",
        max_length=200,
        description="A cancelled or failed run of the same environment and seed to resume: its replies "
        "are replayed without calling the endpoint, then the run goes on.",
    )


# Form editor types by annotation; choices come from Literal annotations.
_TYPES: dict[Any, str] = {str: "str", int: "int", float: "float", bool: "bool"}
# Parameters edited as multi-line text in the form.
_MULTILINE = frozenset({"system_prompt"})


def describe(defaults: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    """The parameters as gym_gui's generated form shows them, one editor each (``defaults`` replace
    the model's own where the environment decides them: the system prompt's template)."""
    described = []
    for name, field in LLMParams.model_fields.items():
        choices = list(get_args(field.annotation))
        entry: dict[str, Any] = {
            "name": name,
            "type": "text" if name in _MULTILINE else _TYPES.get(field.annotation, "str"),
            "default": (defaults or {}).get(name, field.default),
            "help": field.description or "",
        }
        if choices:
            entry["choices"] = choices
        described.append(entry)
    return described


def parse(params: Mapping[str, Any]) -> LLMParams:
    """The run's parameters, checked.

    Raises:
        ValueError: ``field 'params.NAME': why`` for the first bad or unknown parameter.
    """
    try:
        return LLMParams.model_validate(dict(params))
    except ValidationError as exc:
        error = exc.errors()[0]
        name = ".".join(str(part) for part in error["loc"]) or "params"
        if error["type"] == "extra_forbidden":
            known = ", ".join(LLMParams.model_fields)
            raise ValueError(
                f"field 'params.{name}': unknown parameter; the parameters are {known}"
            ) from None
        raise ValueError(f"field 'params.{name}': {error['msg']} (got {error.get('input')!r})") from None
