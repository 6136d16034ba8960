"""Plans of several actions, episodes played concurrently, and an endpoint that refuses, errs or stalls."""

from __future__ import annotations

from gym_gui.core.controls import Control
from gym_gui.core.states import RunState
from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.home import Home
from tests.support import wait_until, wait_until_stable
from workers.llm_worker.tests.chat_server import Answer, ChatServer, Sequence, fixed, solver
from workers.llm_worker.tests.support import completed, llm_config, run_to_end, stored


def test_a_plan_is_played_to_its_end_then_the_model_is_asked_again(client: DaemonClient, home: Home) -> None:
    with ChatServer(solver) as server:
        final = completed(client, llm_config(server.url, episodes=2, plan_length=3))
        assert len(server.completions()) == 4
    run = stored(home, final.run_id)
    assert [(e.steps, e.total_reward) for e in run.episodes] == [(6, 1.0), (6, 1.0)]
    assert [run.llm(s)["index"] for s in run.steps if s.episode == 0] == [0, 1, 2, 0, 1, 2]
    first = run.llm(run.steps[0])
    assert len(first["actions"]) == 3 and first["actions"] == [int(s.action) for s in run.steps[:3]]
    assert "at most" not in first and run.last("llm/calls") == 4


def test_replan_every_asks_again_before_the_plan_is_used_up(client: DaemonClient, home: Home) -> None:
    with ChatServer(solver) as server:
        final = completed(client, llm_config(server.url, episodes=1, plan_length=4, replan_every=2))
    run = stored(home, final.run_id)
    assert [run.llm(s)["index"] for s in run.steps] == [0, 1, 0, 1, 0, 1]
    assert run.episodes[0].total_reward == 1.0


def test_an_action_that_changes_nothing_drops_the_rest_of_the_plan(client: DaemonClient, home: Home) -> None:
    # Left from the lake's top-left corner: the agent stays where it is.
    with ChatServer(fixed(0)) as server:
        final = completed(
            client,
            llm_config(server.url, episodes=1, plan_length=3).model_copy(update={"budget": {"timesteps": 4}}),
        )
        assert len(server.completions()) == 4
    run = stored(home, final.run_id)
    assert [(run.llm(s)["index"], run.llm(s)["unchanged"]) for s in run.steps] == [(0, True)] * 4
    assert all(len(run.llm(s)["actions"]) == 3 for s in run.steps)
    assert (
        "step 0: left, reward 0 (nothing changed)"
        in run.llm(run.steps[1])["prompt"]["messages"][0]["content"]
    )


def test_episodes_run_concurrently_each_in_its_own_environment(client: DaemonClient, home: Home) -> None:
    with ChatServer(solver, latency=0.2) as server:
        final = completed(client, llm_config(server.url, episodes=8, parallel=4))
        assert server.most_in_flight == 4
    run = stored(home, final.run_id)
    assert sorted(e.episode for e in run.episodes) == list(range(8))
    assert all((e.steps, e.total_reward) == (6, 1.0) for e in run.episodes)
    assert len(run.steps) == 48 and len({run.llm(s)["call"] for s in run.steps}) == 48
    # Steps of different episodes interleave in time: the episodes overlapped.
    first_ends = min(max(s.wall_time for s in run.steps if s.episode == e) for e in range(8))
    assert sum(s.wall_time < first_ends for s in run.steps if s.episode != run.steps[0].episode) > 0
    assert run.last("llm/success_rate") == 1.0


def test_rate_limits_and_server_errors_are_retried_honouring_retry_after(
    client: DaemonClient, home: Home
) -> None:
    refusals = [Answer(status=429, headers={"Retry-After": "2"}), Answer(status=500), Answer(status=503)]
    with ChatServer(Sequence(refusals, solver)) as server:
        final = completed(client, llm_config(server.url, episodes=1, retries=3))
        asked = server.completions()
    run = stored(home, final.run_id)
    assert run.episodes[0].total_reward == 1.0
    assert run.llm(run.steps[0])["attempts"] == 4 and run.llm(run.steps[1])["attempts"] == 1
    assert len(asked) == 6 + 3
    # The second request waited for the 429's Retry-After (the client's own backoff starts at 0.5 s).
    assert asked[1].at - asked[0].at >= 1.9


def test_a_server_that_stops_answering_fails_the_run_keeping_every_finished_step(
    client: DaemonClient, home: Home
) -> None:
    calls = {"n": 0}

    def then_stall(request: dict[str, object]) -> Answer:
        calls["n"] += 1
        return solver(request) if calls["n"] <= 3 else Answer(content=None, delay=30)

    with ChatServer(then_stall) as server:
        final = run_to_end(client, llm_config(server.url, episodes=2, timeout=1, retries=1))
        asked = len(server.completions())
    assert final.state is RunState.FAILED, final.reason
    assert final.reason == (
        f"the LLM endpoint at {server.url} failed a request: no answer within the timeout (after 1 retries)"
    )
    assert asked == 3 + 2
    run = stored(home, final.run_id)
    assert [(s.episode, s.step) for s in run.steps] == [(0, 0), (0, 1), (0, 2)]
    assert run.episodes == []


def test_a_pause_holds_every_episode_between_two_steps_and_resume_goes_on(
    client: DaemonClient, home: Home
) -> None:
    with ChatServer(solver, latency=0.05) as server:
        record, _ = client.submit(llm_config(server.url, episodes=6, parallel=3))
        # The worker calls the model as soon as it is set up; the run is RUNNING once the daemon has
        # read its STARTED, which its courier may still be carrying.
        wait_until(
            lambda: (
                len(server.completions()) >= 3
                and client.get_run(record.run_id).record.state is RunState.RUNNING
            ),
            600,
            "the first calls of a RUNNING run",
        )
        client.control(record.run_id, Control.PAUSE)
        wait_until(lambda: client.get_run(record.run_id).record.state is RunState.PAUSED, 60, "PAUSED")
        held = wait_until_stable(lambda: len(server.completions()), what="calls while paused")
        assert held < 36
        client.control(record.run_id, Control.RESUME)
        final = client.wait_for_end(record.run_id, timeout=120)
    assert final.state is RunState.COMPLETED, final.reason
    run = stored(home, final.run_id)
    assert len(run.episodes) == 6 and len(run.steps) == 36
    states = [t.to_state for t in client.get_run(final.run_id).history]
    assert states.count(RunState.PAUSED) == 1 and states[-1] is RunState.COMPLETED
