"""An LLM configuration's operator card: what it acts on (plain Python, made by the plugin and the operator process).

The card's rules, and why (the kind's README, "As an operator"):

- name: the model's name; kind ``llm``;
- observations: any (the prompt renders them as text or the frame as an image); actions:
  ``Discrete(n)`` of the configured environment (the prompt names its actions);
- inputs: the observation, the grid of a grid game or a board game's text (what the model reads), the
  frame with image input;
- deterministic only at temperature 0 with the response cache: a re-run then reads every reply from
  the cache; without it a server may answer the same prompt differently even at temperature 0.
"""

from __future__ import annotations

from gym_gui_sdk.operator import ANY_SPACE, FRAME, GRID, OBSERVATION, TEXT, OperatorCard, SpaceSpec

from gym_gui_llm_worker.params import LLMParams
from gym_gui_llm_worker.prompts import EnvText

KIND = "llm"


def operator_card(params: LLMParams, text: EnvText, source_run: str = "") -> OperatorCard:
    """The card of ``params`` playing the environment ``text`` describes."""
    inputs = [OBSERVATION]
    if text.game is not None:
        inputs.append(GRID)
    if text.family == "board":
        inputs.append(TEXT)
    if params.shows_image:
        inputs.append(FRAME)
    return OperatorCard(
        name=params.model,
        kind=KIND,
        source_run=source_run,
        observation=ANY_SPACE,
        action=SpaceSpec("Discrete", n=len(text.action_names)),
        env_ids=(text.env_id,),
        inputs=tuple(inputs),
        deterministic=params.temperature == 0 and params.response_cache,
        # Its prompt describes this env: another with the same actions would be misdescribed.
        env_bound=True,
    )
