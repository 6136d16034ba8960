"""LLM runs through a real daemon, the worker's real openai client against the test chat server on loopback."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

import gymnasium as gym
import minigrid  # noqa: F401 - registers its ids
import pytest

from gym_gui.core.errors import ConfigError
from gym_gui.core.states import RunState
from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.home import Home
from gym_gui.storage.run_dir import RunDir
from gym_gui.workers import worker_catalog
from tests.fixtures import SHARED_BUNDLES
from tests.support import files_containing, gym_gui
from workers.llm_worker.tests.chat_server import (
    MODEL,
    Answer,
    ChatServer,
    answer_actions,
    plan_length,
    prose,
    solver,
)
from workers.llm_worker.tests.support import completed, llm_config, run_to_end, stored, unused_url

KEY = "sk-test-4f1c2e9b7a"


def test_a_solver_model_reaches_the_goal_and_every_step_keeps_its_conversation(
    client: DaemonClient, home: Home
) -> None:
    with ChatServer(solver) as server:
        final = completed(client, llm_config(server.url, episodes=3))
    run = stored(home, final.run_id)
    # Without slipping the lake's shortest way is 6 steps; one call per step (plan_length 1).
    assert [(e.episode, e.steps, e.total_reward) for e in run.episodes] == [
        (0, 6, 1.0),
        (1, 6, 1.0),
        (2, 6, 1.0),
    ]
    assert len(run.steps) == 18 and len(server.completions()) == 18
    assert [json.loads(e.info)["success"] for e in run.episodes] == [True] * 3

    # The system prompt is stored once; each call names it and carries only what follows it.
    ((prefix_id, prefix),) = run.prefixes.items()
    assert prefix[0]["role"] == "system" and "FrozenLake-v1" in prefix[0]["content"]
    first = run.llm(run.steps[0])
    assert first["call"] == 0 and first["index"] == 0 and first["prompt"]["prefix"] == prefix_id
    (user,) = first["prompt"]["messages"]
    assert user["role"] == "user" and "Map (top row first):\nAFFF" in user["content"]
    sent = server.completions()[0].body
    assert sent["messages"] == [*prefix, user] and sent["model"] == MODEL
    assert json.loads(first["reply"]) == {"actions": first["actions"]} and first["actions"] == [
        json.loads(run.steps[0].action)
    ]
    assert first["valid"] and first["error"] == "" and first["fallback"] == ""
    assert first["tokens_in"] > 0 and first["tokens_out"] > 0 and first["latency_ms"] > 0
    assert first["attempts"] == 1 and first["source"] == "endpoint"
    # Later steps recall the episode's history.
    assert "Recent steps:\nstep 0: " in run.llm(run.steps[1])["prompt"]["messages"][0]["content"]

    assert run.last("llm/success_rate") == 1.0 and run.last("llm/invalid_reply_rate") == 0.0
    assert run.last("llm/calls") == 18 and run.last("llm/cost_usd") == 0.0
    assert run.last("llm/latency_p95_ms") >= run.last("llm/latency_p50_ms") > 0
    tokens = [p.value for p in run.metrics["llm/tokens_per_episode"]]
    assert tokens == [
        float(sum(run.llm(s)["tokens_in"] + run.llm(s)["tokens_out"] for s in run.steps if s.episode == e))
        for e in range(3)
    ]
    assert RunDir(home.run_dir(final.run_id)).read_manifest().command[-1] == "gym_gui_llm_worker"


@pytest.mark.parametrize("reply_format", ["tool", "text"])
def test_tool_calls_and_the_text_format_are_read_too(
    client: DaemonClient, home: Home, reply_format: str
) -> None:
    with ChatServer(solver) as server:
        final = completed(client, llm_config(server.url, episodes=1, reply_format=reply_format))
        body = server.completions()[0].body
    run = stored(home, final.run_id)
    assert run.episodes[0].total_reward == 1.0 and run.last("llm/invalid_reply_rate") == 0.0
    assert ("tools" in body) == (reply_format == "tool") and "response_format" not in body
    first = run.llm(run.steps[0])
    if reply_format == "tool":
        assert first["reply"] is None and first["tool_calls"][0]["name"] == "act"
    else:
        assert first["reply"].endswith(f"actions: {first['actions'][0]}")


def test_replies_that_are_no_action_are_counted_and_the_fallback_plays_on(
    client: DaemonClient, home: Home
) -> None:
    with ChatServer(prose) as server:
        final = completed(client, llm_config(server.url, episodes=2, fallback="random"))
    run = stored(home, final.run_id)
    assert len(run.episodes) == 2
    calls = run.calls()
    assert len(calls) == len(run.steps) > 0
    assert all(
        not c["valid"] and c["error"] == "not a JSON object" and c["fallback"] == "random" for c in calls
    )
    assert all(c["reply"].startswith("I would carefully") for c in calls)
    assert run.last("llm/invalid_reply_rate") == 1.0


def _turner(request: dict[str, Any]) -> Answer:
    """Turns left as many times as the request allows (every turn changes what the model sees)."""
    return answer_actions(request, [0] * plan_length(request))


def test_a_babyai_run_tells_the_model_each_episodes_mission(client: DaemonClient, home: Home) -> None:
    env_id = "BabyAI-PickupLoc-v0"
    # The missions of seeds 4 and 5; drawing seed 4's level, minigrid rejects three samples, printing
    # "Sampling rejected: …" to standard output (the worker's too), which must not disturb the run.
    env = gym.make(env_id)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        missions = [env.reset(seed=seed)[0]["mission"] for seed in (4, 5)]
    env.close()
    assert missions == ["pick up a green key", "pick up a blue box"]
    assert printed.getvalue().count("Sampling rejected") == 3

    with ChatServer(_turner) as server:
        final = completed(client, llm_config(server.url, env_id=env_id, episodes=2, seed=4, plan_length=8))
    run = stored(home, final.run_id)
    assert [(e.episode, e.steps) for e in run.episodes] == [(0, 64), (1, 64)]
    ((_prefix_id, prefix),) = run.prefixes.items()
    system = prefix[0]["content"]
    assert f"BabyAI level {env_id}" in system and "Each message starts with this episode's mission" in system
    calls_by_episode = {
        episode: [run.llm(s) for s in run.steps if s.episode == episode and run.llm(s)["index"] == 0]
        for episode in (0, 1)
    }
    for episode, calls in calls_by_episode.items():
        assert len(calls) == 8
        for call in calls:
            (user,) = call["prompt"]["messages"]
            assert f"Now:\nMission: {missions[episode]}\nGrid (top row first):" in user["content"]
    # The worker printed them too, into its run's log.
    assert "Sampling rejected" in RunDir(home.run_dir(final.run_id)).worker_stdout_log.read_text()


def test_the_issue_command_line_trains_the_kinds_default_budget(client: DaemonClient, home: Home) -> None:
    # `gym-gui train --worker llm --env FrozenLake-v1 --param base_url=… --param model=…`, nothing more:
    # the run takes the LLM kind's default budget (20 episodes).
    with ChatServer(solver) as server:
        result = gym_gui(
            "train", "--worker", "llm", "--env", "FrozenLake-v1",
            "--param", f"base_url={server.url}", "--param", f"model={MODEL}",
            home=home.root, timeout=900,
        )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "COMPLETED" in result.stdout
    (record,) = client.list_runs()
    budget = json.loads(client.get_run(record.run_id).config_json)["budget"]
    assert budget["episodes"] == 20 and budget.get("timesteps") is None
    assert [e.episode for e in stored(home, record.run_id).episodes] == list(range(20))


def test_an_unreachable_endpoint_fails_the_run_before_its_first_episode_naming_the_url(
    client: DaemonClient, home: Home
) -> None:
    url = unused_url()
    final = run_to_end(client, llm_config(url, retries=0))
    assert final.state is RunState.FAILED
    assert final.reason.startswith(f"cannot use the LLM endpoint at {url}: connection failed"), final.reason
    assert RunState.RUNNING not in [t.to_state for t in client.get_run(final.run_id).history]


def test_an_unknown_model_fails_the_run_listing_the_served_models(client: DaemonClient, home: Home) -> None:
    with ChatServer(solver, models=["qwen2.5:7b", "llama3.2"]) as server:
        final = run_to_end(client, llm_config(server.url))
        assert server.completions() == []
    assert final.state is RunState.FAILED
    assert final.reason == (
        f"model 'test-model' is not served at {server.url}; it serves: llama3.2, qwen2.5:7b"
    )


def test_the_api_key_reaches_the_endpoint_only(client: DaemonClient, home: Home) -> None:
    with ChatServer(solver) as server:
        config = llm_config(server.url, episodes=1)
        preview = client.preview(config, {"LLM_API_KEY": KEY, "WANDB_API_KEY": "wandb-other"})
        final = completed(client, config, {"LLM_API_KEY": KEY, "WANDB_API_KEY": "wandb-other"})
        assert {r.authorization for r in server.received} == {f"Bearer {KEY}"}
    assert preview.env["LLM_API_KEY"] == "***" and "WANDB_API_KEY" not in preview.env
    assert "LLM_API_KEY=***" in preview.display
    assert files_containing(home.root, KEY.encode()) == []
    assert KEY not in json.dumps(client.get_run(final.run_id).config_json)


@pytest.mark.parametrize(
    ("env_id", "params", "message"),
    [
        (
            "FrozenLake-v1",
            {"temprature": 0.5},
            "field 'params.temprature': unknown parameter; the parameters are",
        ),
        (
            "FrozenLake-v1",
            {"plan_length": 0},
            r"field 'params.plan_length': must be in \[1, 64\], got 0",
        ),
        (
            "FrozenLake-v1",
            {"system_prompt": "Play $game"},
            "field 'params.system_prompt': unknown placeholder $game",
        ),
        (
            "FrozenLake-v1",
            {"fallback": "noop"},
            "field 'params.fallback': FrozenLake-v1 has no action that does nothing",
        ),
        (
            "FrozenLake-v1",
            {"base_url": "not a url"},
            "field 'params.base_url': must be an http or https address with a host",
        ),
        (
            "FrozenLake-v1",
            {"base_url": "file:///etc/passwd"},
            "field 'params.base_url': must be an http or https address with a host",
        ),
        ("Pendulum-v1", {}, "field 'env_id': Pendulum-v1 has actions Box"),
        ("FrozenLake-v1", {"resume_from": "nope"}, "field 'params.resume_from': no run nope"),
    ],
)
def test_bad_configs_are_refused_by_name_before_anything_is_stored(
    client: DaemonClient, env_id: str, params: dict[str, object], message: str, tmp_path: Path
) -> None:
    with pytest.raises(ConfigError, match=message.replace("$", r"\$")):
        base_url = str(params.get("base_url", "http://127.0.0.1:1/v1"))
        others = {name: value for name, value in params.items() if name != "base_url"}
        client.submit(llm_config(base_url, env_id=env_id, **others))
    assert client.list_runs() == []


def test_a_runs_manifest_records_its_bundles_packages(client: DaemonClient, home: Home) -> None:
    """Issue 30: LLM runs recorded gym_gui's own venv's ``pip freeze`` under their bundle's name."""
    record, _plan = client.dry_run(llm_config(unused_url(), episodes=1))
    assert client.wait_for_end(record.run_id, timeout=60).state is RunState.COMPLETED
    environment = RunDir(home.run_dir(record.run_id)).read_manifest().environment
    bundles = worker_catalog().bundle_directory(Path(SHARED_BUNDLES))
    assert environment.bundle == "llm"
    assert environment.packages == bundles.freeze("llm")
    assert any(line.lower().startswith("openai==") for line in environment.packages)
    assert client.preview(llm_config(unused_url(), episodes=1)).packages == environment.packages
