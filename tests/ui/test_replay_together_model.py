"""Replay together's model without Qt, on runs a real daemon stored: two random operators of one
comparison read at one shared step, a person's runs with who acted, and the number of runs refused."""

from __future__ import annotations

import pytest

from gym_gui.core.errors import ConfigError
from gym_gui.core.records import EpisodeRecord, RunRecord, StepRecord
from gym_gui.core.states import RunState
from gym_gui.play.batch import EvaluationBatch, new_comparison_id
from gym_gui.play.operators import Operators
from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.home import Home
from gym_gui.storage.run_dir import RunDir
from gym_gui.storage.telemetry import TelemetryReader
from gym_gui.ui.replay_together.model import Shown, TogetherReplay, check_run_count
from gym_gui.workers import worker_catalog
from tests.support import publish_acted_run, run_record

ENV = "FrozenLake-v1"
# The seeds of the two random operators' batches: their first episodes differ in length (checked).
SEEDS = (1, 2)


def play_comparison(client: DaemonClient, home: Home) -> tuple[str, list[RunRecord]]:
    """Two random operators, each an evaluation batch of 2 FrozenLake episodes on its own seed, their
    runs one comparison (as an arena's); their records once COMPLETED, in order."""
    comparison = new_comparison_id("test")
    operators = Operators(home, worker_catalog(), client.list_runs)
    run_ids = []
    for seed in SEEDS:
        batch = EvaluationBatch(
            client, [operators.choose("random", ENV)], ENV, 2, seed, comparison=comparison
        )
        (result,) = batch.run()
        assert not result.error, result.error
        run_ids.append(result.run_id)
    records = [client.wait_for_end(run_id, timeout=60) for run_id in run_ids]
    assert [record.state for record in records] == [RunState.COMPLETED] * 2
    return comparison, records


def stored_steps(run: RunRecord, episode: int) -> list[StepRecord]:
    reader = TelemetryReader(RunDir(run.run_dir).telemetry_path)
    try:
        return reader.steps(episode)
    finally:
        reader.close()


def reader_episode(run: RunRecord, episode: int) -> EpisodeRecord:
    reader = TelemetryReader(RunDir(run.run_dir).telemetry_path)
    try:
        return reader.episode(episode)
    finally:
        reader.close()


def test_each_run_is_read_at_the_shared_step_and_a_shorter_episode_stays_done_at_its_last(
    client: DaemonClient, home: Home
) -> None:
    _comparison, runs = play_comparison(client, home)
    stored = [stored_steps(run, 0) for run in runs]
    lasts = [len(steps) - 1 for steps in stored]
    assert lasts[0] != lasts[1], "the seeds must give first episodes of different lengths"
    assert all(step.render for steps in stored for step in steps)  # a grid payload every step

    replay = TogetherReplay(runs, window=4)  # a small window: seeking crosses windows
    try:
        listing = replay.open()
        assert [run.title for run in listing.runs] == ["random", "random"]
        assert listing.episodes == [0, 1] and listing.errors == []
        returns = " · ".join(f"{reader_episode(run, 0).total_reward:g}" for run in runs)
        assert listing.label(0) == f"episode 0 — returns {returns}"  # the seeds differ: none said

        shown = replay.select(0)
        assert (shown.episode, shown.step, shown.last_step, shown.live) == (0, 0, max(lasts), False)
        for step in [*range(max(lasts) + 1), 2, 0]:
            shown = replay.seek(step)
            assert_shows(shown, step, stored)
        assert replay.seek(max(lasts) + 10).step == max(lasts)  # clamped to the longest episode
        assert replay.seek(-3).step == 0
    finally:
        replay.close()

    # Runs that played an episode on one seed (an arena's) say it in its label.
    same = TogetherReplay([runs[0], runs[0]])
    try:
        returned = f"{reader_episode(runs[0], 1).total_reward:g}"
        assert same.open().label(1) == f"episode 1, seed {SEEDS[0] + 1} — returns {returned} · {returned}"
    finally:
        same.close()


def assert_shows(shown: Shown, step: int, stored: list[list[StepRecord]]) -> None:
    """Every pane shows its own run's stored step ``step``, or its last one, done, past its end."""
    assert shown.step == step
    for pane, steps in zip(shown.panes, stored, strict=True):
        last = len(steps) - 1
        own = steps[min(step, last)]
        assert pane.record == own
        assert (pane.step, pane.last_step, pane.picture) == (own.step, last, own.render)
        assert pane.return_so_far == pytest.approx(sum(s.reward for s in steps[: own.step + 1]))
        assert pane.actor == "operator"
        assert pane.done == (step >= last) and pane.finished
        where = f"done at step {last}" if step >= last else f"step {step}"
        assert pane.status() == f"{where} · return {pane.return_so_far:g}"


def test_who_acted_a_run_without_the_episode_and_a_persons_title(client: DaemonClient) -> None:
    # A person took over at step 2 of the first run's first episode; the second run has one episode.
    first = publish_acted_run(client, "ooh", "oo")
    second = publish_acted_run(client, "hho")
    replay = TogetherReplay([first, second])
    try:
        listing = replay.open()
        assert [run.title for run in listing.runs] == ["human", "human"]
        assert listing.episodes == [0, 1]
        assert listing.label(1) == "episode 1 — returns 0 · –"

        shown = replay.select(0)
        assert [pane.actor for pane in shown.panes] == ["operator", "human"]
        assert [pane.spans for pane in shown.panes] == [
            [(0, 2, "operator"), (2, 3, "human")],
            [(0, 2, "human"), (2, 3, "operator")],
        ]
        assert [pane.actor for pane in replay.seek(2).panes] == ["human", "operator"]

        shown = replay.select(1)
        assert shown.last_step == 1
        assert [pane.actor for pane in shown.panes] == ["operator", ""]
        assert shown.panes[1].note == "this run stores no episode 1"
        assert shown.panes[1].status() == "this run stores no episode 1"
        assert shown.panes[1].record is None
    finally:
        replay.close()


def test_two_to_four_runs_are_replayed_together_and_other_counts_refused_in_one_line() -> None:
    for count in (2, 4):
        check_run_count(count)
    runs = [run_record(f"run{i}", RunState.COMPLETED) for i in range(5)]
    with pytest.raises(ConfigError) as refused:
        TogetherReplay(runs, what="comparison arena-1")
    assert str(refused.value) == "Replay together shows 2 to 4 runs side by side; comparison arena-1 has 5"
    with pytest.raises(ConfigError, match=r"; the selection has 1$"):
        TogetherReplay(runs[:1])
