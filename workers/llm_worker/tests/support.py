"""Helpers of the LLM worker's tests: run configs against the test chat server, and reading what a run stored."""

from __future__ import annotations

import json
import socket
from dataclasses import dataclass
from typing import Any

from gym_gui.core.config import RunConfig, parse_run_config
from gym_gui.core.records import EpisodeRecord, MetricPoint, RunRecord, StepRecord
from gym_gui.core.states import RunState
from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.home import Home
from gym_gui.storage.run_dir import RunDir
from gym_gui.storage.telemetry import TelemetryReader
from workers.llm_worker.tests.chat_server import MODEL


def llm_config(
    base_url: str, env_id: str = "FrozenLake-v1", episodes: int = 3, seed: int = 0, **params: Any
) -> RunConfig:
    """A short LLM run of ``env_id`` (FrozenLake without slipping, so a right plan reaches the goal)."""
    return parse_run_config(
        {
            "worker": "llm",
            "env_id": env_id,
            "seed": seed,
            "budget": {"episodes": episodes},
            "env_kwargs": {"is_slippery": False} if env_id.startswith("FrozenLake") else {},
            "params": {"base_url": base_url, "model": MODEL, "parallel": 1, "timeout": 10, **params},
        }
    )


def unused_url() -> str:
    """The URL of a loopback port nothing listens on."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


@dataclass
class Stored:
    """What one run stored: its steps (by episode and step), episodes, metrics and events."""

    steps: list[StepRecord]
    episodes: list[EpisodeRecord]
    metrics: dict[str, list[MetricPoint]]
    prefixes: dict[str, list[dict[str, Any]]]  # system prompt id → its messages (the stored-once prefix)

    def llm(self, step: StepRecord) -> dict[str, Any]:
        info: dict[str, Any] = json.loads(step.info)["llm"]
        return info

    def calls(self) -> list[dict[str, Any]]:
        """The steps' call records, one per call, in the run's call order."""
        made = [self.llm(step) for step in self.steps if self.llm(step)["index"] == 0]
        return sorted(made, key=lambda call: call["call"])

    def last(self, tag: str) -> float:
        return self.metrics[tag][-1].value


def stored(home: Home, run_id: str) -> Stored:
    reader = TelemetryReader(RunDir(home.run_dir(run_id)).telemetry_path)
    try:
        episodes = reader.episodes()
        steps = [step for episode in sorted(reader.steps_per_episode()) for step in reader.steps(episode)]
        metrics = {tag: reader.metrics(tag) for tag in reader.metric_tags()}
        prefixes = {}
        for event in reader.events():
            prefix = json.loads(event.data).get("llm_prefix")
            if prefix:
                prefixes[prefix["id"]] = prefix["messages"]
        return Stored(steps, episodes, metrics, prefixes)
    finally:
        reader.close()


def run_to_end(client: DaemonClient, config: RunConfig, secrets: dict[str, str] | None = None) -> RunRecord:
    record, _ = client.submit(config, secrets)
    # The first run of a fresh bundles directory builds the llm bundle first.
    return client.wait_for_end(record.run_id, timeout=600)


def completed(client: DaemonClient, config: RunConfig, secrets: dict[str, str] | None = None) -> RunRecord:
    final = run_to_end(client, config, secrets)
    assert final.state is RunState.COMPLETED, final.reason
    return final
