"""Fixtures for the storage tests: a temporary home, a registry in it, run records and step rows."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from gym_gui.core.records import RunRecord
from gym_gui.core.states import RunState
from gym_gui.storage.home import Home
from gym_gui.storage.registry import RunRegistry


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # No storage test may touch the real user data directory.
    monkeypatch.setenv("GYM_GUI_HOME", str(tmp_path / "gym_gui_home"))


@pytest.fixture
def home(tmp_path: Path) -> Home:
    return Home(tmp_path / "home").ensure()


@pytest.fixture
def registry(home: Home) -> Iterator[RunRegistry]:
    reg = RunRegistry(home.registry_path)
    yield reg
    reg.close()


@pytest.fixture
def make_record() -> Callable[..., RunRecord]:
    def make(
        run_id: str = "FrozenLake-v1__random__0__1700000000",
        state: RunState = RunState.QUEUED,
        created_at: float = 1_700_000_000.0,
        **fields: object,
    ) -> RunRecord:
        values: dict[str, object] = {
            "worker": "random",
            "env_id": "FrozenLake-v1",
            "lane": "telemetry",
        }
        values.update(fields)
        return RunRecord(run_id=run_id, state=state, created_at=created_at, **values)  # type: ignore[arg-type]

    return make
