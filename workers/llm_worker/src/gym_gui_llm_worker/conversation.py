"""Asking the model: one call's prompt, its reply read into a plan or a fallback, and an episode's conversation.

Both ways the model plays go through here: the worker's own runs (:mod:`gym_gui_llm_worker.agent`)
and the operator process (:mod:`gym_gui_llm_worker.operator`). :class:`ModelAsker` knows the
environment's text, the system prompt, the endpoint and the response log, and makes one call;
:class:`Conversation` is one episode's side of the exchange: the steps it recalls, the plan in hand,
and when to ask again (the plan is used up, an action changed nothing the model can see, the
person at the keys took another action, or ``replan_every`` steps passed).

A call's record (``info["llm"]`` of the step that made it) is described in docs/runbooks/llm.md,
"What a run stores"; with ``observation_input`` image or both, its user message carries the PNG
frame the model was sent, base64, under ``image``.
"""

from __future__ import annotations

import base64
import hashlib
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np

from gym_gui_llm_worker import prompts, replies
from gym_gui_llm_worker.endpoint import ChatEndpoint, EndpointError, Reply
from gym_gui_llm_worker.params import LLMParams
from gym_gui_llm_worker.responses import ResponseLog, request_key


def make_env(env_id: str, env_kwargs: dict[str, Any]) -> gym.Env[Any, Any]:
    """The environment the prompts are about, rendering RGB frames when it can (a pixel env's
    frames, and the image a vision model is shown)."""
    if env_id.startswith(("MiniGrid-", "BabyAI-")):
        import minigrid  # noqa: F401 - registers its ids

    creator = gym.envs.registration.load_env_creator(gym.spec(env_id).entry_point)  # type: ignore[arg-type]
    modes = getattr(creator, "metadata", {}).get("render_modes", [])
    return gym.make(env_id, render_mode="rgb_array" if "rgb_array" in modes else None, **env_kwargs)


@dataclass
class Call:
    """One question to the model and what came of it."""

    number: int  # the asker's call number, from 0
    actions: list[int]
    record: dict[str, Any]  # what the step that made the call carries under info["llm"]
    valid: bool
    reply: Reply
    # Why the plan is the fallback action ("" when the reply was read): "invalid reply: …" or "no reply: …".
    fallback_reason: str = ""


class ModelAsker:
    """Asks the model for plans about one environment.

    ``inline_system``: each call's record carries the system prompt among its messages (an operator's
    decisions, stored where no prefix event is), instead of naming the prefix by ``prefix_id``
    (a worker run stores the prefix once, as an event). ``endpoint_errors_fall_back``: a call the
    endpoint gave up on (timeouts, after the client's retries) falls back like an unreadable
    reply instead of raising (an operator must answer every turn; a run fails instead).
    """

    def __init__(
        self,
        params: LLMParams,
        endpoint: ChatEndpoint,
        log: ResponseLog,
        text: prompts.EnvText,
        *,
        inline_system: bool = False,
        endpoint_errors_fall_back: bool = False,
    ) -> None:
        self.params = params
        self.endpoint = endpoint
        self.log = log
        self.text = text
        self.inline_system = inline_system
        self.endpoint_errors_fall_back = endpoint_errors_fall_back
        template = params.system_prompt or prompts.template(text.family)
        self.system = prompts.system_prompt(
            template, text, params.plan_length, replies.instructions(params.reply_format, params.plan_length)
        )
        self.prefix_id = hashlib.sha256(self.system.encode("utf-8")).hexdigest()[:16]
        self.calls = 0

    def _user_text(self, seen: str, history: deque[str], step: int) -> str:
        lines = [f"Step {step} of this episode."]
        if history:
            lines += ["Recent steps:", *history]
        if not self.params.shows_text:
            lines.append("Now: the attached image shows the game.")
        else:
            lines += ["Now:", seen]
            if self.params.shows_image:
                lines.append("The attached image shows the same.")
        return "\n".join(lines)

    async def ask(
        self, seen: str, history: deque[str], step: int, frame: bytes | None, fallback: Callable[[], int]
    ) -> Call:
        """Ask for a plan; ``frame`` is the PNG shown with image input, ``fallback`` the action
        taken when the reply is no plan.

        Raises:
            ValueError: the parameters show an image and ``frame`` is None.
            EndpointError: the endpoint gave up (unless ``endpoint_errors_fall_back``).
        """
        params = self.params
        text = self._user_text(seen, history, step)
        user: dict[str, Any] = {"role": "user", "content": text}
        sent = user
        if params.shows_image:
            if frame is None:
                raise ValueError(f"observation_input {params.observation_input} needs a frame of the game")
            image = base64.b64encode(frame).decode("ascii")
            user = {**user, "image": image}
            url = f"data:image/png;base64,{image}"
            sent = {
                "role": "user",
                "content": [{"type": "text", "text": text}, {"type": "image_url", "image_url": {"url": url}}],
            }
        system = {"role": "system", "content": self.system}
        action_count = len(self.text.action_names)
        request: dict[str, Any] = {
            "model": params.model,
            "messages": [system, sent],
            "temperature": params.temperature,
            "max_tokens": params.max_tokens,
            **replies.request_options(params.reply_format, action_count, params.plan_length),
        }
        key = request_key(request)
        known = self.log.get(key)
        error = reason = ""
        if known is not None:
            reply = Reply.from_record(known)
        else:
            try:
                reply = await self.endpoint.complete(request)
            except EndpointError as exc:
                if not self.endpoint_errors_fall_back:
                    raise
                reply, error = Reply(content=None), str(exc)
                reason = f"no reply: {exc}"
            else:
                self.log.put(key, params.model, reply.record())
        number = self.calls
        self.calls += 1
        try:
            if error:
                raise replies.InvalidReply(error)
            actions = replies.parse(
                params.reply_format, reply.content, reply.tool_calls, action_count, params.plan_length
            )
        except replies.InvalidReply as exc:
            error = str(exc)
            reason = reason or f"invalid reply: {exc}"
            actions = [fallback()]
        messages = [system, user] if self.inline_system else [user]
        record: dict[str, Any] = {
            "prompt": {"prefix": "" if self.inline_system else self.prefix_id, "messages": messages},
            "reply": reply.content if not reply.tool_calls else None,
            "tool_calls": [{"name": name, "arguments": arguments} for name, arguments in reply.tool_calls],
            "actions": actions,
            "valid": not error,
            "error": error,
            "fallback": params.fallback if error else "",
            "latency_ms": round(reply.latency_ms, 3),
            "tokens_in": reply.tokens_in,
            "tokens_out": reply.tokens_out,
            "attempts": reply.attempts,
            "source": reply.source,
        }
        return Call(number, actions, record, not error, reply, reason)


class Conversation:
    """One episode's side of the exchange: what the model last saw, the steps it recalls, the plan
    in hand; ``rng`` draws the random fallback (the episode's own, so its seed decides it)."""

    def __init__(self, asker: ModelAsker, seen: str, rng: np.random.Generator) -> None:
        self.asker = asker
        self.seen = seen
        self.rng = rng
        self.history: deque[str] = deque(maxlen=asker.params.history)
        self.plan: list[int] = []
        self.call: Call | None = None
        self.since_call = 0
        self.step = 0
        self.last_action: int | None = None
        self.proposed: int | None = None

    async def next_action(self, frame: Callable[[], bytes | None]) -> tuple[int, dict[str, Any], Call | None]:
        """The action for what the model last saw, with the step's ``info["llm"]`` (the call's record
        on the step that made it) and the call when one was made (``frame`` is asked only then).

        Raises:
            EndpointError: as :meth:`ModelAsker.ask`.
        """
        params = self.asker.params
        made = None
        if (
            self.call is None
            or not self.plan
            or (params.replan_every and self.since_call >= params.replan_every)
        ):
            image = frame() if params.shows_image else None
            made = await self.asker.ask(self.seen, self.history, self.step, image, self._fallback)
            self.call = made
            self.plan = list(made.actions)
            self.since_call = 0
        action = self.plan.pop(0)
        llm: dict[str, Any] = {"call": self.call.number, "index": self.since_call}
        if self.since_call == 0:
            llm.update(self.call.record)
        self.proposed = action
        return action, llm, made

    def stepped(self, taken: int, reward: float, seen: str) -> bool:
        """The environment was stepped with ``taken`` and earned ``reward``; ``seen`` is what the model
        sees now. Returns whether that changed anything the model sees: when not, or when ``taken`` is
        not the action proposed (a person overrode it), the rest of the plan is dropped."""
        changed = seen != self.seen
        if not changed or taken != self.proposed:
            self.plan.clear()
        names = self.asker.text.action_names
        name = names[taken] if 0 <= taken < len(names) else f"action {taken}"
        self.history.append(
            f"step {self.step}: {name}, reward {reward:g}" + ("" if changed else " (nothing changed)")
        )
        self.seen = seen
        self.last_action = taken
        self.since_call += 1
        self.step += 1
        return changed

    def _fallback(self) -> int:
        fallback = self.asker.params.fallback
        text = self.asker.text
        if fallback == "noop" and text.noop is not None:
            return text.noop
        if fallback == "repeat" and self.last_action is not None:
            return self.last_action
        return int(self.rng.integers(len(text.action_names)))
