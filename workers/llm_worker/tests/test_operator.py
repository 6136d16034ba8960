"""An LLM configuration as an operator: the plugin's plan started as a real process in the llm bundle,
asking the suite's chat server for each slot's actions; fallbacks, images, and what it refuses."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import gymnasium
import numpy as np
import pytest
from gym_gui_llm_worker.plugin import LLMLauncher
from gym_gui_sdk import render
from gym_gui_sdk.operator import OperatorError, OperatorProcess, OperatorRefused, SpaceSpec, Turn

from gym_gui.core.errors import ConfigError
from gym_gui.storage.home import Home
from gym_gui.workers import LaunchContext, OperatorPlan, OperatorSource, worker_catalog
from tests.fixtures import SHARED_BUNDLES
from tests.support import start_operator
from workers.llm_worker.tests.chat_server import MODEL, Answer, ChatServer, Sequence, fixed, prose, solver
from workers.llm_worker.tests.support import llm_config

KEY = "sk-operator-51c0"


@pytest.fixture(scope="module")
def llm_bundle() -> None:
    """The llm bundle the operator runs in; the suite fails (never skips) when it cannot be installed."""
    bundles = worker_catalog().bundle_directory(Path(SHARED_BUNDLES))
    if not bundles.installed("llm"):
        bundles.install("llm")


@pytest.fixture
def launcher(llm_bundle: None) -> LLMLauncher:
    return LLMLauncher(LaunchContext(Home(), worker_catalog().bundle_directory(Path(SHARED_BUNDLES))))


def plan_of(launcher: LLMLauncher, url: str, env_id: str = "FrozenLake-v1", **params: Any) -> OperatorPlan:
    return launcher.operator(OperatorSource("llm-run-1", llm_config(url, env_id, **params)))


@pytest.fixture
def started() -> Iterator[list[OperatorProcess]]:
    """Operators a test starts, closed after it."""
    operators: list[OperatorProcess] = []
    yield operators
    for operator in operators:
        operator.close()


def start(started: list[OperatorProcess], plan: OperatorPlan, tmp_path: Path) -> OperatorProcess:
    operator = start_operator(plan, tmp_path, {"LLM_API_KEY": KEY, "OTHER_SECRET": "no"})
    started.append(operator)
    return operator


class _NoFrames(gymnasium.Env[int, int]):
    """An environment that renders nothing (every installed one renders RGB frames)."""

    metadata: ClassVar[dict[str, Any]] = {"render_modes": []}

    def __init__(self, render_mode: str | None = None) -> None:
        self.observation_space = gymnasium.spaces.Discrete(3)
        self.action_space = gymnasium.spaces.Discrete(2)


NO_FRAMES = "GymGuiTests/NoFrames-v0"


@pytest.fixture
def no_frames() -> Iterator[None]:
    gymnasium.register(NO_FRAMES, entry_point=_NoFrames)
    yield
    del gymnasium.registry[NO_FRAMES]


def lake(seed: int) -> tuple[gymnasium.Env[Any, Any], Turn]:
    env = gymnasium.make("FrozenLake-v1", is_slippery=False, render_mode="rgb_array")
    observation, _info = env.reset(seed=seed)
    return env, Turn(0, int(observation), grid=render.grid_description(env))


def test_an_llm_operator_plays_each_slot_with_the_models_actions_asking_a_batch_at_once(
    launcher: LLMLauncher, started: list[OperatorProcess], tmp_path: Path
) -> None:
    with ChatServer(solver, latency=0.3) as server:
        plan = plan_of(launcher, server.url)
        assert plan.secrets == ("LLM_API_KEY",) and not any(KEY in arg for arg in plan.argv)
        operator = start(started, plan, tmp_path)
        card = operator.card
        assert card == plan.card
        assert (card.name, card.kind, card.source_run) == (MODEL, "llm", "llm-run-1")
        assert card.observation == SpaceSpec("any") and card.action == SpaceSpec("Discrete", n=4)
        assert card.env_ids == ("FrozenLake-v1",) and card.inputs == ("observation", "grid")
        assert not card.deterministic  # temperature 0 without the response cache: a server may vary

        # Two episodes side by side, each a slot of its own, stepped until both reach the goal.
        envs = {slot: gymnasium.make("FrozenLake-v1", is_slippery=False) for slot in (0, 1)}
        turns = {}
        for slot, env in envs.items():
            operator.begin(slot, slot)
            observation, _ = env.reset(seed=slot)
            turns[slot] = Turn(slot, int(observation), grid=render.grid_description(env))
        returns = dict.fromkeys(envs, 0.0)
        notes: list[dict[str, Any]] = []
        while turns:
            batch = list(turns.values())
            decisions = operator.act(batch)
            for turn, decision in zip(batch, decisions, strict=True):
                notes.append(decision.note)
                env = envs[turn.slot]
                observation, reward, terminated, truncated, _ = env.step(decision.action)
                returns[turn.slot] += float(reward)
                if terminated or truncated:
                    operator.end(turn.slot)
                    del turns[turn.slot]
                else:
                    turns[turn.slot] = Turn(
                        turn.slot,
                        int(observation),
                        render.grid_description(env),
                        None,
                        decision.action,
                        float(reward),
                    )
        assert returns == {0: 1.0, 1: 1.0}
        assert server.most_in_flight == 2  # the batch's two calls waited together
        assert {r.authorization for r in server.received} == {f"Bearer {KEY}"}
    llm = notes[0]["llm"]
    assert set(notes[0]) == {"llm"} and (llm["index"], llm["valid"], llm["source"]) == (0, True, "endpoint")
    # The whole prompt is in the record (no prefix event is stored for an operator's steps).
    messages = llm["prompt"]["messages"]
    assert llm["prompt"]["prefix"] == "" and [m["role"] for m in messages] == ["system", "user"]
    assert "Map (top row first):" in messages[1]["content"] and len(llm["actions"]) == 1
    later = [note["llm"] for note in notes[2:]]
    assert all("Recent steps:" in call["prompt"]["messages"][1]["content"] for call in later)


def test_unreadable_replies_and_timeouts_fall_back_saying_why(
    launcher: LLMLauncher, started: list[OperatorProcess], tmp_path: Path
) -> None:
    with ChatServer(prose) as server:
        operator = start(started, plan_of(launcher, server.url), tmp_path)
        _env, turn = lake(0)
        fallen: list[list[int]] = []
        for seeds in ((3, 3), (3, 3)):
            for slot, seed in enumerate(seeds):
                operator.begin(slot, seed)
            decisions = operator.act([Turn(slot, turn.observation, turn.grid) for slot in (0, 1)])
            for decision in decisions:
                assert decision.note["fallback"] == "invalid reply: not a JSON object"
                assert decision.note["llm"]["valid"] is False and decision.note["llm"]["fallback"] == "random"
            fallen.append([d.action for d in decisions])
        # The random fallback draws from the slot's own seed.
        assert fallen[0] == fallen[1] and fallen[0][0] == fallen[0][1]

    stalls = Sequence([Answer(content='{"actions": [1]}', delay=3.0)], then=fixed(2))
    with ChatServer(stalls) as server:
        operator = start(started, plan_of(launcher, server.url, timeout=0.5, retries=0), tmp_path)
        operator.begin(0, 1)
        env, turn = lake(0)
        (first,) = operator.act([turn])
        assert first.note["fallback"].startswith(
            f"no reply: the LLM endpoint at {server.url} failed a request"
        )
        assert "no answer within the timeout" in first.note["fallback"]
        assert first.note["llm"]["reply"] is None and not first.note["llm"]["valid"]
        observation, reward, *_ = env.step(first.action)
        grid = render.grid_description(env)
        (second,) = operator.act([Turn(0, int(observation), grid, None, first.action, float(reward))])
        assert second.action == 2 and "fallback" not in second.note  # the endpoint answers again


def test_an_image_input_sends_the_frame_as_a_png_image_part(
    launcher: LLMLauncher, started: list[OperatorProcess], tmp_path: Path
) -> None:
    env, turn = lake(0)
    frame = render.frame_payload(np.asarray(env.render()))
    with ChatServer(fixed(1)) as server:
        plan = plan_of(launcher, server.url, observation_input="image")
        assert plan.card.inputs == ("observation", "grid", "frame")
        operator = start(started, plan, tmp_path)
        operator.begin(0, 0)
        (decision,) = operator.act([Turn(0, turn.observation, turn.grid, frame)])
        assert decision.action == 1
        (request,) = server.completions()
    text, image = request.body["messages"][1]["content"]
    assert text["type"] == "text" and "Map" not in text["text"] and "attached image" in text["text"]
    assert image == {
        "type": "image_url",
        "image_url": {"url": "data:image/png;base64," + base64.b64encode(frame).decode()},
    }
    # The call record keeps the image with its message, for the conversation pane.
    assert base64.b64decode(decision.note["llm"]["prompt"]["messages"][1]["image"]) == frame
    with pytest.raises(OperatorError, match=r"shows the model the frame .* the turn of slot 0 has none"):
        operator.act([Turn(0, turn.observation, turn.grid)])


def test_what_cannot_be_an_operator_is_refused_naming_why(
    launcher: LLMLauncher, started: list[OperatorProcess], tmp_path: Path, no_frames: None
) -> None:
    with ChatServer(fixed(0), models=("another-model",)) as server:
        with pytest.raises(
            OperatorRefused,
            match=rf"^{MODEL} on FrozenLake-v1: model '{MODEL}' is not served at .*it serves: another-model$",
        ):
            start(started, plan_of(launcher, server.url), tmp_path)
        with pytest.raises(ConfigError, match=r"field 'params\.temperature'"):
            plan_of(launcher, server.url, temperature=9.0)
        with pytest.raises(ConfigError, match=r"field 'env_id': .*discrete actions only"):
            plan_of(launcher, server.url, env_id="Pendulum-v1")
        with pytest.raises(ConfigError, match="an LLM operator is an llm configuration, got 'random'"):
            launcher.operator(
                OperatorSource("r", llm_config(server.url).model_copy(update={"worker": "random"}))
            )
        with pytest.raises(
            ConfigError, match=r"field 'params\.observation_input': GymGuiTests/NoFrames-v0 renders no frames"
        ):
            plan_of(launcher, server.url, env_id=NO_FRAMES, observation_input="both")
        assert plan_of(launcher, server.url, env_id=NO_FRAMES).card.action == SpaceSpec("Discrete", n=2)
        cached = plan_of(launcher, server.url, response_cache=True)
        assert cached.card.deterministic and cached.argv[-2] == "--cache"
