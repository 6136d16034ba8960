"""`gym-gui schema` and `gym-gui demo`: a run config's schema and a first run to watch."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from gym_gui.cli.app import app, connect, console
from gym_gui.cli.follow import follow, print_end
from gym_gui.cli.views import show
from gym_gui.core.config import parse_run_config, run_config_schema


@app.command()
def schema() -> None:
    """Print the JSON schema of RunConfig."""
    print(json.dumps(run_config_schema(), indent=2))


@app.command()
def demo(
    episodes: Annotated[int, typer.Option(help="Episodes of the demo run.")] = 100,
) -> None:
    """Start the daemon and run a short random-agent run on FrozenLake with live progress."""
    config = parse_run_config(
        {"worker": "random", "env_id": "FrozenLake-v1", "seed": 0, "budget": {"episodes": episodes}}
    )
    with connect() as client:
        health = client.health()
        console.print(f"daemon at {health.address}, home {health.home}")
        record, _ = client.submit(config)
        final = follow(client, record.run_id, config)
    print_end(final)
    show(final.run_id)
