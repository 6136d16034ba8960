"""A real daemon lists its registry's runs a page at a time over gRPC: filtered, sorted, counted."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from gym_gui.core.errors import ConfigError
from gym_gui.core.run_query import RunQuery
from gym_gui.core.states import RunState
from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.registry import RunRegistry
from tests.fixtures import SHARED_BUNDLES
from tests.support import module_daemon, run_record

# Rows of ended runs written into the daemon's registry directly (as bench/scale.py does, decision
# 0032): listing reads rows, and a run's files play no part in it.
STATES = (RunState.COMPLETED, RunState.FAILED, RunState.CANCELLED)


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DaemonClient]:
    root: Path = tmp_path_factory.mktemp("listing_home")
    with module_daemon(root, SHARED_BUNDLES, ["--cancel-grace", "3"]) as (client, home):
        registry = RunRegistry(home.registry_path)
        for index in range(30):
            registry.create(
                run_record(
                    f"run-{index:02d}",
                    STATES[index % 3],
                    created_at=1_000.0 + index,
                    worker=("random", "cleanrl")[index % 2],
                    env_id="CartPole-v1" if index < 20 else "FrozenLake-v1",
                    sweep_id="s1" if index >= 25 else "",
                    trial=index - 25 if index >= 25 else None,
                    archived=index == 0,
                )
            )
        registry.close()
        yield client


def test_pages_of_the_newest_runs_follow_one_another_and_say_how_many_match(client: DaemonClient) -> None:
    first = client.list_page(RunQuery(descending=True, limit=10))
    assert first.total == 29  # the archived run is left out
    assert [run.run_id for run in first.runs] == [f"run-{index:02d}" for index in range(29, 19, -1)]
    assert first.runs[0].run_dir.endswith("run-29")
    seen, page = [run.run_id for run in first.runs], first
    while page.next:
        page = client.list_page(RunQuery(descending=True, limit=10, after=page.next))
        seen += [run.run_id for run in page.runs]
    assert seen == [run.run_id for run in reversed(client.list_runs())]
    assert len(client.list_runs(include_archived=True)) == 30


def test_a_page_is_filtered_on_the_daemon(client: DaemonClient) -> None:
    failed = client.list_page(RunQuery(states=(RunState.FAILED,), worker="cleanrl", limit=2))
    # FAILED are 1, 4, 7, …; cleanrl the odd ones: 1, 7, 13, 19, 25.
    assert failed.total == 5 and [run.run_id for run in failed.runs] == ["run-01", "run-07"]
    frozen = client.list_page(RunQuery(env_id="FrozenLake-v1", sweep_id="s1", sort="run", descending=True))
    assert [run.run_id for run in frozen.runs] == [f"run-{index}" for index in range(29, 24, -1)]
    assert [run.trial for run in frozen.runs] == [4, 3, 2, 1, 0]
    assert client.list_page(RunQuery(text="RUN-0", include_archived=True)).total == 10


def test_a_bad_listing_is_refused_naming_what_was_wrong(client: DaemonClient) -> None:
    with pytest.raises(ConfigError, match="after: 'page two' is not the cursor of a page"):
        client.list_page(RunQuery(after="page two"))
