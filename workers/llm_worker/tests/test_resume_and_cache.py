"""Resuming a failed run without paying again for its calls, the shared response cache, and the cost estimate."""

from __future__ import annotations

import json

import pytest

from gym_gui.core.errors import ConfigError
from gym_gui.core.states import RunState
from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.home import Home
from workers.llm_worker.tests.chat_server import Answer, ChatServer, solver
from workers.llm_worker.tests.support import Stored, completed, llm_config, run_to_end, stored

PRICES = {"price_in": 3.0, "price_out": 15.0}  # USD per million tokens


def paid(run: Stored) -> float:
    """What the run's calls to the endpoint cost at PRICES (replies from a log cost nothing)."""
    return sum(
        (c["tokens_in"] * PRICES["price_in"] + c["tokens_out"] * PRICES["price_out"]) / 1e6
        for c in run.calls()
        if c["source"] == "endpoint"
    )


def test_a_failed_run_resumes_without_repeating_its_paid_calls(client: DaemonClient, home: Home) -> None:
    asked = {"n": 0}

    def then_fail(request: dict[str, object]) -> Answer:
        asked["n"] += 1
        return solver(request) if asked["n"] <= 8 else Answer(status=500)

    with ChatServer(then_fail) as server:
        failed = run_to_end(
            client, llm_config(server.url, env_id="CliffWalking-v1", episodes=3, retries=0, **PRICES)
        )
    assert failed.state is RunState.FAILED and "HTTP 500" in failed.reason
    before = stored(home, failed.run_id)
    assert len(before.calls()) == 8

    with ChatServer(solver) as server:
        config = llm_config(
            server.url, env_id="CliffWalking-v1", episodes=3, resume_from=failed.run_id, **PRICES
        )
        resumed = completed(client, config)
        fresh_calls = len(server.completions())
    after = stored(home, resumed.run_id)
    calls = after.calls()
    # CliffWalking's shortest way is 13 steps, the same from every start: 39 calls. The failed run paid
    # for the first 8 questions, and every episode asks them again, so 3 × 8 are answered from its log.
    assert [(e.steps, json.loads(e.info)["success"]) for e in after.episodes] == [(13, True)] * 3
    assert len(calls) == 39 and fresh_calls == 39 - 3 * 8
    sources = [c["source"] for c in calls]
    assert sources == (["cache"] * 8 + ["endpoint"] * 5) * 3
    assert [c["actions"] for c in calls[:8]] == [c["actions"] for c in before.calls()]
    assert after.last("llm/cached_calls") == 24
    assert paid(after) > 0 and after.last("llm/cost_usd") == pytest.approx(paid(after))


def test_the_response_cache_makes_a_rerun_reproducible_and_free(client: DaemonClient, home: Home) -> None:
    config_params = {"episodes": 3, "response_cache": True, **PRICES}
    with ChatServer(solver) as server:
        first = completed(client, llm_config(server.url, **config_params))
        # The lake is the same every episode: the questions repeat, and the cache answers them.
        assert len(server.completions()) == 6
        second = completed(client, llm_config(server.url, **config_params))
        assert len(server.completions()) == 6
    one, two = stored(home, first.run_id), stored(home, second.run_id)
    assert [s.action for s in one.steps] == [s.action for s in two.steps]
    assert [c["reply"] for c in one.calls()] == [c["reply"] for c in two.calls()]
    assert {c["source"] for c in two.calls()} == {"cache"} and two.last("llm/cost_usd") == 0.0
    assert paid(one) > 0 and one.last("llm/cost_usd") == pytest.approx(paid(one))
    assert one.last("llm/cached_calls") == 12 and two.last("llm/cached_calls") == 18
    episode_cost = sum(json.loads(e.info)["cost_usd"] for e in one.episodes)
    assert episode_cost == pytest.approx(paid(one))


def test_resuming_needs_a_run_of_the_same_environment_and_seed(client: DaemonClient, home: Home) -> None:
    with ChatServer(solver) as server:
        earlier = completed(client, llm_config(server.url, episodes=1))
        with pytest.raises(ConfigError, match="a resumed run plays the same environment with the same seed"):
            client.submit(llm_config(server.url, episodes=1, seed=5, resume_from=earlier.run_id))
