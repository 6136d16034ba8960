"""The worker's parameters: their specs (the SDK's contract), defaults and help, and the values a run gets.

Plain Python on purpose: the plugin (in gym_gui's process) checks and describes them, the worker
process (in the llm bundle) reads them, and neither needs the other's imports for it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any
from urllib.parse import urlsplit

from gym_gui_sdk.contract import ParameterSpec, parameter_problems, resolve_parameters, shown

# The environment variable holding the endpoint's API key. It reaches the worker as a run secret
# only (never stored, never logged, ``***`` in previews); a local server needs none.
API_KEY_ENV = "LLM_API_KEY"

REPLY_FORMATS = ("json", "tool", "text")
FALLBACKS = ("random", "noop", "repeat")
# What each call shows the model of the observation: its text rendering, the rendered frame as an
# image (a vision model behind the same API), or both.
TEXT, IMAGE, BOTH = "text", "image", "both"
OBSERVATION_INPUTS = (TEXT, IMAGE, BOTH)
# Ollama's endpoint on this machine, where a first run looks for a model.
DEFAULT_BASE_URL = "http://127.0.0.1:11434/v1"
_ENDPOINT = "Endpoint"
_PLAY = "Play"
_COST = "Cost"
# Text parameters that may not be empty, and the longest each text may be.
_NOT_EMPTY = ("base_url", "model")
_LONGEST = {"system_prompt": 20_000, "resume_from": 200}

PARAMETERS = (
    ParameterSpec(
        "base_url",
        "str",
        DEFAULT_BASE_URL,
        "OpenAI-compatible endpoint (Ollama's by default; vLLM, llama.cpp server, a hosted API).",
        _ENDPOINT,
    ),
    ParameterSpec("model", "str", "llama3.2", "Model name as the endpoint knows it.", _ENDPOINT),
    ParameterSpec("temperature", "float", 0.0, "Sampling temperature.", _ENDPOINT, low=0.0, high=2.0),
    ParameterSpec("max_tokens", "int", 256, "Most tokens a reply may have.", _ENDPOINT, low=1, high=32768),
    ParameterSpec(
        "timeout",
        "float",
        60.0,
        "Seconds one request may take.",
        _ENDPOINT,
        low=0.0,
        high=3600.0,
        open_low=True,
    ),
    ParameterSpec(
        "retries",
        "int",
        3,
        "Retries of a request that timed out, hit a rate limit (429, after its Retry-After) "
        "or a server error (5xx), with exponential backoff.",
        _ENDPOINT,
        low=0,
        high=20,
    ),
    ParameterSpec(
        "plan_length",
        "int",
        1,
        "Most actions one reply may plan (1: one action per call).",
        _PLAY,
        low=1,
        high=64,
    ),
    ParameterSpec(
        "replan_every",
        "int",
        0,
        "Ask again after this many steps of a plan (0: only when it is used up or an action "
        "changes nothing).",
        _PLAY,
        low=0,
        high=10_000,
    ),
    ParameterSpec("history", "int", 4, "Past steps the prompt recalls.", _PLAY, low=0, high=100),
    ParameterSpec(
        "reply_format",
        "str",
        "json",
        "json: a JSON object under a schema; tool: a tool call; text: a line 'actions: 2, 1'.",
        _PLAY,
        choices=REPLY_FORMATS,
    ),
    ParameterSpec(
        "fallback",
        "str",
        "random",
        "The action taken on a reply that is not a valid action (counted as invalid): random, "
        "noop (MiniGrid's done) or repeat (the last action).",
        _PLAY,
        choices=FALLBACKS,
    ),
    ParameterSpec(
        "observation_input",
        "str",
        TEXT,
        "What each call shows the model: text (the grid or the numbers), image (the rendered "
        "frame as PNG, for vision models) or both.",
        _PLAY,
        choices=OBSERVATION_INPUTS,
    ),
    ParameterSpec("parallel", "int", 4, "Episodes played at once.", _PLAY, low=1, high=64),
    ParameterSpec(
        "system_prompt",
        "text",
        "",
        "System prompt template ($env_id, $rules, $legend, $actions, $plan_length, "
        "$reply_format); empty: the environment family's template shipped with the worker.",
        _PLAY,
    ),
    ParameterSpec("price_in", "float", 0.0, "USD per million prompt tokens (for the cost).", _COST, low=0.0),
    ParameterSpec("price_out", "float", 0.0, "USD per million reply tokens (for the cost).", _COST, low=0.0),
    ParameterSpec(
        "response_cache",
        "bool",
        False,
        "Answer a request seen before (same model, settings and prompt) from the home's "
        "response cache, and keep new replies there: a re-run is reproducible and free.",
    ),
    ParameterSpec(
        "resume_from",
        "str",
        "",
        "A cancelled or failed run of the same environment and seed to resume: its replies "
        "are replayed without calling the endpoint, then the run goes on.",
    ),
)


@dataclass(frozen=True)
class LLMParams:
    """What a run of the LLM worker asks, of which endpoint, and how it plays (every parameter's value)."""

    base_url: str
    model: str
    temperature: float
    max_tokens: int
    timeout: float
    retries: int
    plan_length: int
    replan_every: int
    history: int
    reply_format: str
    fallback: str
    observation_input: str
    parallel: int
    system_prompt: str
    price_in: float
    price_out: float
    response_cache: bool
    resume_from: str

    @property
    def shows_text(self) -> bool:
        return self.observation_input in (TEXT, BOTH)

    @property
    def shows_image(self) -> bool:
        return self.observation_input in (IMAGE, BOTH)


def describe(defaults: Mapping[str, Any] | None = None) -> tuple[ParameterSpec, ...]:
    """The parameters as gym_gui's generated form shows them (``defaults`` replace the specs' own
    where the environment decides them: the system prompt's template)."""
    chosen = defaults or {}
    return tuple(
        ParameterSpec(**{**vars(p), "default": chosen[p.name]}) if p.name in chosen else p for p in PARAMETERS
    )


def _endpoint_problem(url: str) -> str:
    """Why ``url`` is no endpoint a run may call ("" when it is one): an http(s) address of a host,
    without credentials (the key is a run secret, ``LLM_API_KEY``)."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 (reading it checks it: a port out of range raises)
        scheme, host, credentials = parts.scheme, parts.hostname, parts.username or parts.password
    except ValueError:  # an unclosed bracket of an IPv6 host, a port out of range
        scheme, host, credentials = "", None, None
    if scheme not in ("http", "https") or not host:
        return f"must be an http or https address with a host, such as {DEFAULT_BASE_URL}, got {shown(url)}"
    if credentials:
        return f"must not hold credentials: give the key as {API_KEY_ENV} in the worker's environment"
    return ""


def parse(params: Mapping[str, Any]) -> LLMParams:
    """The run's parameters, checked.

    Raises:
        ValueError: ``field 'params.NAME': why`` for the first bad or unknown parameter.
    """
    problems = parameter_problems(PARAMETERS, params)
    problems += [(name, "must not be empty") for name in _NOT_EMPTY if params.get(name) == ""]
    base_url = params.get("base_url")
    if isinstance(base_url, str) and base_url and (why := _endpoint_problem(base_url)):
        problems.append(("base_url", why))
    problems += [
        (name, f"must be at most {longest} characters, got {len(params[name])}")
        for name, longest in _LONGEST.items()
        if isinstance(params.get(name), str) and len(params[name]) > longest
    ]
    if problems:
        name, why = problems[0]
        raise ValueError(f"field 'params.{name}': {why}")
    values = resolve_parameters(PARAMETERS, params)
    for parameter in PARAMETERS:
        if parameter.type == "float":
            values[parameter.name] = float(values[parameter.name])
    return LLMParams(**{item.name: values[item.name] for item in fields(LLMParams)})
