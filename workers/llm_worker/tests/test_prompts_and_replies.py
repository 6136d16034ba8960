"""What the model reads (system prompts, observations as text) and how its replies are read, without a server."""

from __future__ import annotations

import json
from typing import Any

import gymnasium as gym
import minigrid  # noqa: F401 - registers its ids
import pytest
from gym_gui_llm_worker import params, prompts, replies
from gym_gui_sdk import render
from gym_gui_sdk.contract import FormSpec


def _text(env_id: str, **kwargs: Any) -> tuple[prompts.EnvText, str]:
    env = gym.make(env_id, **kwargs)
    try:
        observation, _ = env.reset(seed=0)
        text = prompts.env_text(env, env_id)
        grid = render.grid_description(env) if render.grid_game(env) else None
        return text, prompts.observation_text(text, observation, grid)
    finally:
        env.close()


def test_toy_text_grids_are_drawn_with_the_agent_and_named_actions() -> None:
    text, seen = _text("FrozenLake-v1")
    assert text.family == "toy_text" and text.action_names == ("left", "down", "right", "up")
    assert seen.splitlines() == [
        "Map (top row first):",
        "AFFF",
        "FHFH",
        "FFFH",
        "HFFG",
        "You are at row 0, column 0.",
    ]
    system = prompts.system_prompt(prompts.template(text.family), text, 3, replies.instructions("json", 3))
    assert "FrozenLake-v1" in system and "H hole" in system and "2: right" in system
    assert '{"actions": [...]} holding 1 to 3 action numbers' in system

    text, seen = _text("CliffWalking-v1")
    assert seen.splitlines()[-2] == "ACCCCCCCCCCG" and text.action_names[0] == "up"


def test_taxi_shows_its_walls_passenger_and_destination() -> None:
    text, seen = _text("Taxi-v4")
    assert text.action_names[4:] == ("pickup", "dropoff")
    lines = seen.splitlines()
    assert lines[1] == "+---------+" and sum(line.count("T") for line in lines[1:8]) == 1
    assert lines[-1].startswith("Passenger: waiting at ") and "Destination: " in lines[-1]


def test_minigrid_shows_the_mission_the_grid_and_its_objects() -> None:
    text, seen = _text("MiniGrid-DoorKey-5x5-v0")
    assert text.family == "minigrid" and text.noop == text.action_names.index("done")
    assert seen.startswith(
        "Mission: use the key to open the door and then get to the goal\nGrid (top row first):"
    )
    assert "key (yellow) at row" in seen and "door (yellow, locked) at row" in seen
    assert "You carry nothing." in seen and any(arrow in seen for arrow in "><v^")


def test_babyai_levels_get_their_language_and_each_episode_its_mission() -> None:
    env = gym.make("BabyAI-PutNextLocal-v0")
    try:
        text = prompts.env_text(env, "BabyAI-PutNextLocal-v0")
        assert text.family == "babyai" and text.action_names == _text("MiniGrid-Empty-5x5-v0")[0].action_names
        system = prompts.system_prompt(
            prompts.template(text.family), text, 2, replies.instructions("json", 2)
        )
        assert "BabyAI level BabyAI-PutNextLocal-v0" in system and '"A after you B": B first' in system
        missions = []
        for seed in (0, 1):
            observation, _ = env.reset(seed=seed)
            seen = prompts.observation_text(text, observation, render.grid_description(env))
            # The mission the env drew at this reset opens the message; the run's system prompt has none.
            assert seen.startswith(f"Mission: {observation['mission']}\nGrid (top row first):")
            assert observation["mission"] not in system
            missions.append(observation["mission"])
        assert missions == [
            "put the green ball next to the green key",
            "put the yellow key next to the purple box",
        ]
    finally:
        env.close()


def test_vector_observations_carry_their_names() -> None:
    text, seen = _text("CartPole-v1")
    assert text.family == "vector" and text.action_names == ("push cart left", "push cart right")
    assert [line.split(":")[0] for line in seen.splitlines()] == [
        "cart position",
        "cart velocity",
        "pole angle (rad)",
        "pole angular velocity",
    ]
    text, seen = _text("Blackjack-v1")
    assert text.family == "toy_text" and seen.splitlines()[0].startswith("your sum: ")


def test_continuous_actions_are_refused() -> None:
    env = gym.make("Pendulum-v1")
    with pytest.raises(ValueError, match=r"Pendulum-v1 has actions Box.*discrete actions only"):
        prompts.env_text(env, "Pendulum-v1")
    env.close()


def test_a_template_with_an_unknown_placeholder_is_named() -> None:
    assert prompts.check_template("You play $env_id. $actions") == ""
    assert prompts.check_template("Cost: $$5, $nope").startswith(
        "unknown placeholder $nope; the placeholders are $env_id"
    )
    for family in prompts.FAMILIES:
        assert prompts.check_template(prompts.template(family)) == ""


@pytest.mark.parametrize(
    ("reply_format", "content", "calls", "actions"),
    [
        ("json", '{"actions": [2, 1]}', [], [2, 1]),
        ("json", ' {"actions": [0]}\n', [], [0]),
        ("tool", None, [("act", '{"actions": [3]}')], [3]),
        ("text", "The hole is below.\nactions: 2, 2", [], [2, 2]),
        ("text", "ACTIONS:1", [], [1]),
    ],
)
def test_valid_replies_are_read(
    reply_format: str, content: str | None, calls: list[tuple[str, str]], actions: list[int]
) -> None:
    assert replies.parse(reply_format, content, calls, 4, 2) == actions


@pytest.mark.parametrize(
    ("reply_format", "content", "calls", "why"),
    [
        ("json", "go right", [], "not a JSON object"),
        ("json", '```json\n{"actions": [1]}\n```', [], "not a JSON object"),
        ("json", '{"actions": [1], "why": "x"}', [], "why: Extra inputs are not permitted"),
        ("json", '{"actions": []}', [], "actions: List should have at least 1 item after validation, not 0"),
        ("json", '{"actions": ["1"]}', [], "actions.0: Input should be a valid integer"),
        ("json", '{"actions": [4]}', [], "action 4 does not exist (0 to 3)"),
        ("json", '{"actions": [1, 1, 1]}', [], "planned 3 actions; at most 2 are allowed"),
        ("tool", "right", [], "expected one call of the tool act, got 0"),
        ("tool", None, [("move", "{}")], "called an unknown tool 'move'"),
        ("text", "actions: 1\nthat is all", [], "its last line is not 'actions: N[, N…]'"),
    ],
)
def test_anything_else_is_an_invalid_reply(
    reply_format: str, content: str | None, calls: list[tuple[str, str]], why: str
) -> None:
    with pytest.raises(replies.InvalidReply) as raised:
        replies.parse(reply_format, content, calls, 4, 2)
    assert str(raised.value) == why


def test_request_options_carry_the_schema_of_a_plan() -> None:
    json_options = replies.request_options("json", 4, 3)
    schema = json_options["response_format"]["json_schema"]["schema"]
    assert schema["properties"]["actions"] == {
        "type": "array",
        "items": {"type": "integer", "enum": [0, 1, 2, 3]},
        "minItems": 1,
        "maxItems": 3,
    }
    tool = replies.request_options("tool", 4, 3)
    assert tool["tools"][0]["function"]["parameters"] == schema
    assert tool["tool_choice"] == {"type": "function", "function": {"name": "act"}}
    assert replies.request_options("text", 4, 3) == {}


def test_parameters_are_described_for_the_form_and_checked_by_name() -> None:
    described = {spec.name: spec for spec in params.describe()}
    assert described["base_url"].default == "http://127.0.0.1:11434/v1"
    assert described["reply_format"].choices == ("json", "tool", "text")
    assert described["system_prompt"].type == "text"
    assert described["max_tokens"].type == "int" and described["response_cache"].type == "bool"
    # A DescribeWorker answer is JSON that every client checks against the contract.
    form = FormSpec(parameters=params.describe({"system_prompt": "Play $env_id."}))
    assert FormSpec.from_json(json.loads(json.dumps(form.to_json()))) == form
    assert form.parameter("system_prompt").default == "Play $env_id."  # type: ignore[union-attr]
    with pytest.raises(ValueError, match=r"^field 'params.temperature': must be in \[0, 2\], got 3$"):
        params.parse({"temperature": 3})
    with pytest.raises(ValueError, match=r"^field 'params.model': must not be empty$"):
        params.parse({"model": ""})
    with pytest.raises(ValueError, match=r"^field 'params.resume_from': must be at most 200 characters"):
        params.parse({"resume_from": "r" * 201})
    # The endpoint is an http(s) address of a host, and the key goes in LLM_API_KEY, never in it.
    for url in ("not a url", "file:///etc/passwd", "http://", "ftp://models.lab/v1", "127.0.0.1:11434/v1"):
        with pytest.raises(
            ValueError, match=r"^field 'params.base_url': must be an http or https address with a host"
        ):
            params.parse({"base_url": url})
    with pytest.raises(ValueError, match=r"^field 'params.base_url': must not hold credentials") as refused:
        params.parse({"base_url": "https://me:sk-s3cr3t@models.lab/v1"})
    assert "s3cr3t" not in str(refused.value)
    for url in ("http://127.0.0.1:11434/v1", "https://api.openai.com/v1", "http://[::1]:8000/v1"):
        assert params.parse({"base_url": url}).base_url == url
    # Numbers given as whole numbers reach the worker as the floats its parameters are.
    parsed = params.parse({"temperature": 1, "max_tokens": 64})
    assert parsed.temperature == 1.0 and isinstance(parsed.temperature, float) and parsed.max_tokens == 64
    with pytest.raises(
        ValueError, match=r"^field 'params.api_base': unknown parameter; the parameters are base_url"
    ):
        params.parse({"api_base": "x"})
