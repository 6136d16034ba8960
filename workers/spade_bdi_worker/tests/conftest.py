"""Fixtures for the Spade BDI worker tests: its real bundle, a daemon per module, and run helpers."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gym_gui.core.config import RunConfig, parse_run_config
from gym_gui.core.records import ArtifactRecord, EpisodeRecord, RunRecord, StepRecord
from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.home import Home
from gym_gui.storage.run_dir import RunDir
from gym_gui.storage.telemetry import TelemetryReader
from gym_gui.workers import worker_catalog
from tests.fixtures import SHARED_BUNDLES
from tests.support import module_daemon

# A few hundred episodes of the 4x4 lake take seconds; a run that needs minutes is a hung one.
RUN_TIMEOUT = 180.0


@pytest.fixture(scope="module")
def spade_bundle() -> None:
    """The spade_bdi bundle the runs use; the suite fails (never skips) when it cannot be installed."""
    bundles = worker_catalog().bundle_directory(Path(SHARED_BUNDLES))
    if not bundles.installed("spade_bdi"):
        bundles.install("spade_bdi")


@pytest.fixture(scope="module")
def bdi_daemon(
    tmp_path_factory: pytest.TempPathFactory, spade_bundle: None
) -> Iterator[tuple[DaemonClient, Home]]:
    """A daemon for the module's runs (one XMPP server per worker, so they may share it)."""
    with module_daemon(
        tmp_path_factory.mktemp("bdi") / "home",
        SHARED_BUNDLES,
        ["--heartbeat-timeout", "10", "--cancel-grace", "5"],
    ) as (client, home):
        yield client, home


def bdi_config(env_id: str = "FrozenLake-v1", episodes: int = 300, **params: Any) -> RunConfig:
    """A Spade BDI run: by default the 4x4 lake without ice, decaying by 0.98 an episode (a parameter
    given as None is left out: the worker's default)."""
    if env_id == "FrozenLake-v1":
        params = {"slippery": False, "map": "4x4", **params}
    params = {"epsilon_decay": 0.98, **params}
    return parse_run_config(
        {
            "worker": "spade_bdi",
            "env_id": env_id,
            "seed": 0,
            "budget": {"episodes": episodes},
            "params": {name: value for name, value in params.items() if value is not None},
        }
    )


def run_to_end(
    client: DaemonClient, config: RunConfig, secret_env: dict[str, str] | None = None
) -> RunRecord:
    record, _ = client.submit(config, secret_env)
    return client.wait_for_end(record.run_id, RUN_TIMEOUT)


@contextlib.contextmanager
def reader(home: Home, run_id: str) -> Iterator[TelemetryReader]:
    telemetry = TelemetryReader(RunDir(home.run_dir(run_id)).telemetry_path)
    try:
        yield telemetry
    finally:
        telemetry.close()


def episodes(home: Home, run_id: str) -> list[EpisodeRecord]:
    with reader(home, run_id) as telemetry:
        return telemetry.episodes()


def all_steps(home: Home, run_id: str) -> list[StepRecord]:
    with reader(home, run_id) as telemetry:
        return [step for episode in telemetry.episodes() for step in telemetry.steps(episode.episode)]


def artifacts(home: Home, run_id: str) -> list[ArtifactRecord]:
    with reader(home, run_id) as telemetry:
        return telemetry.artifacts()


def success_rate(episodes: list[EpisodeRecord]) -> float:
    return sum(json.loads(e.info)["goal_reached"] for e in episodes) / len(episodes)


def final_table(home: Home, run_id: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((home.run_dir(run_id) / "checkpoints" / "q_table.json").read_text())
    return data
