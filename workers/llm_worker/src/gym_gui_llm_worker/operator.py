"""`python -m gym_gui_llm_worker.operator --config JSON`: an LLM configuration served as an operator.

``--config`` is ``{"env_id", "env_kwargs", "params"}`` of an llm run (the plugin's
:meth:`~gym_gui_llm_worker.plugin.LLMLauncher.operator` writes it; parameters hold no secret), the
endpoint's key comes from ``LLM_API_KEY`` in the environment, ``--cache`` is the home's response
cache when the parameters use it. The endpoint is checked (``GET /models``) before the card is sent,
so a wrong URL or model is refused in the endpoint's words.

Each slot is one episode's :class:`~gym_gui_llm_worker.conversation.Conversation`, asked exactly
as a worker run asks (the same prompts, reply reading, fallback and cache); a batch's turns are
asked concurrently. A decision's note is ``{"llm": <the step's info["llm"] as a run stores it>}``,
the system prompt inline in the call's messages (there is no prefix event to name), plus
``"fallback": "invalid reply: …" | "no reply: …"`` when the action is the fallback: an operator
answers every turn, so a call the endpoint gave up on (a timeout, after the client's retries)
falls back instead of failing.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from gym_gui_sdk.operator import Decision, OperatorCard, OperatorError, OperatorRefused, Turn, serve

from gym_gui_llm_worker import params as llm_params
from gym_gui_llm_worker import prompts
from gym_gui_llm_worker.card import operator_card
from gym_gui_llm_worker.conversation import Conversation, ModelAsker, make_env
from gym_gui_llm_worker.endpoint import ChatEndpoint, EndpointError
from gym_gui_llm_worker.responses import ResponseLog


@dataclass
class _Slot:
    rng: np.random.Generator
    conversation: Conversation | None = None


class LLMOperator:
    """A model asked for the actions of several episodes at once, each slot its own conversation."""

    def __init__(self, asker: ModelAsker, card: OperatorCard, loop: asyncio.AbstractEventLoop) -> None:
        self.asker = asker
        self._card = card
        # One loop for the process's life: the client's connections belong to the loop they opened on.
        self._loop = loop
        self._slots: dict[int, _Slot] = {}
        self._closed = False

    @property
    def card(self) -> OperatorCard:
        return self._card

    def begin(self, slot: int, seed: int | None) -> None:
        self._slots[slot] = _Slot(np.random.default_rng(seed))

    def act(self, turns: Sequence[Turn]) -> list[Decision]:
        slots = [turn.slot for turn in turns]
        if len(set(slots)) != len(slots):
            raise OperatorError(f"a batch asks for slots {slots}; each slot takes one turn at a time")
        return self._loop.run_until_complete(self._decide_all(turns))

    async def _decide_all(self, turns: Sequence[Turn]) -> list[Decision]:
        # Every call finishes before a failure is reported: none is left pending on the loop.
        decided = await asyncio.gather(*(self._decide(turn) for turn in turns), return_exceptions=True)
        for outcome in decided:
            if isinstance(outcome, BaseException):
                raise outcome
        return [outcome for outcome in decided if isinstance(outcome, Decision)]

    async def _decide(self, turn: Turn) -> Decision:
        slot = self._slots.get(turn.slot)
        if slot is None:
            raise OperatorError(f"slot {turn.slot} has no episode (no begin)")
        text = self.asker.text
        if text.game is not None and turn.grid is not None and turn.grid.get("game") != text.game:
            raise OperatorError(
                f"{self._card.name} is configured for {text.env_id} ({text.game}); "
                f"this environment's grid is {turn.grid.get('game')!r}"
            )
        if text.family == "board":
            if turn.text is None:
                raise OperatorError(
                    f"{self._card.name} plays {text.env_id} from its board's text; the turn has none"
                )
            seen = turn.text
        else:
            seen = self._seen(turn)
        conversation = slot.conversation
        if conversation is None:
            conversation = slot.conversation = Conversation(self.asker, seen, slot.rng)
        else:
            taken = conversation.proposed if turn.taken is None else turn.taken
            if not isinstance(taken, int) or isinstance(taken, bool):
                raise OperatorError(f"slot {turn.slot}: the action taken {taken!r} is no action number")
            conversation.stepped(taken, float(turn.reward or 0.0), seen)
        if self.asker.params.shows_image and turn.frame is None:
            raise OperatorError(
                f"{self._card.name} shows the model the frame (observation_input "
                f"{self.asker.params.observation_input}); the turn of slot {turn.slot} has none"
            )
        action, llm, call = await conversation.next_action(lambda: turn.frame)
        note: dict[str, Any] = {"llm": llm}
        if call is not None and call.fallback_reason:
            note["fallback"] = call.fallback_reason
        return Decision(action, note)

    def _seen(self, turn: Turn) -> str:
        text = self.asker.text
        try:
            seen = prompts.observation_text(text, turn.observation, turn.grid)
        except (KeyError, TypeError, ValueError) as exc:
            raise OperatorError(
                f"{self._card.name} cannot read the observation {turn.observation!r} of {text.env_id}: {exc}"
            ) from None
        return seen

    def end(self, slot: int) -> None:
        self._slots.pop(slot, None)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._loop.run_until_complete(self.asker.endpoint.close())
        self._loop.close()


def _arguments(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m gym_gui_llm_worker.operator")
    parser.add_argument("--config", required=True, help='{"env_id", "env_kwargs", "params"} as JSON')
    parser.add_argument("--source-run", default="", help="the run the configuration comes from")
    parser.add_argument("--cache", type=Path, help="the shared response cache (read and written)")
    return parser.parse_args(argv)


def make_operator(arguments: argparse.Namespace) -> LLMOperator:
    """The operator ``arguments`` describe, its endpoint checked.

    Raises:
        OperatorRefused: the configuration is not one, or the endpoint cannot be used (its words).
    """
    try:
        config = json.loads(arguments.config)
        params = llm_params.parse(config.get("params") or {})
        board = prompts.board_env_text(str(config["env_id"]))
        env = None if board else make_env(str(config["env_id"]), dict(config.get("env_kwargs") or {}))
    except (AttributeError, KeyError, TypeError, ValueError, gym.error.Error) as exc:
        raise OperatorRefused(f"not an LLM configuration: {type(exc).__name__}: {exc}") from None
    if board is not None:
        text = board
    else:
        assert env is not None
        try:
            text = prompts.env_text(env, str(config["env_id"]))
        except ValueError as exc:
            raise OperatorRefused(str(exc)) from None
        finally:
            env.close()
    cache = [arguments.cache] if arguments.cache else []
    log = ResponseLog(write_to=cache, read_from=cache, remember=bool(cache))
    endpoint = ChatEndpoint(params, os.environ.get(llm_params.API_KEY_ENV))
    asker = ModelAsker(params, endpoint, log, text, inline_system=True, endpoint_errors_fall_back=True)
    loop = asyncio.new_event_loop()
    try:
        loop.run_until_complete(endpoint.check())
    except EndpointError as exc:
        loop.run_until_complete(endpoint.close())
        loop.close()
        raise OperatorRefused(str(exc)) from None
    return LLMOperator(asker, operator_card(params, text, arguments.source_run), loop)


def main(argv: list[str] | None = None) -> int:
    arguments = _arguments(sys.argv[1:] if argv is None else argv)
    return serve(lambda: make_operator(arguments))


if __name__ == "__main__":
    sys.exit(main())
