"""`gym-gui algorithms`: the algorithms a worker kind offers, or one algorithm's arguments."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from gym_gui.cli.app import app, connect, console
from gym_gui.cli.config import scripts_worker
from gym_gui.core.errors import ConfigError


@app.command()
def algorithms(
    worker: Annotated[
        str | None,
        typer.Option(help="Worker kind (default: the first in the roster that runs scripts, CleanRL's)."),
    ] = None,
    algo: Annotated[str | None, typer.Option(help="Show this algorithm's own arguments.")] = None,
    scripts_dir: Annotated[Path | None, typer.Option(help="Your own checkout of the kind's scripts.")] = None,
    python: Annotated[Path | None, typer.Option(help="The interpreter for --scripts-dir.")] = None,
) -> None:
    """The algorithms a worker offers (from the scripts present), or one algorithm's arguments."""
    worker = worker or scripts_worker()
    with connect() as client:
        description = client.describe_worker(
            worker,
            algorithm=algo or "",
            scripts_dir=str(scripts_dir.resolve()) if scripts_dir else "",
            python=str(python.absolute()) if python else "",
        )
    if not description.bundle_installed and python is None:
        raise ConfigError(
            f"the {description.bundle} bundle is not installed; run `gym-gui bundles install {description.bundle}`"
        )
    form = description.form
    if algo:
        table = Table("flag", "type", "default", "help", title=f"{algo} ({form.note or '?'})")
        for param in form.parameters:
            choices = f" {list(param.choices)}" if param.choices else ""
            table.add_row(
                param.command_flag, f"{param.type}{choices}", json.dumps(param.default), escape(param.help)
            )
        console.print(table)
        if form.envs is not None:  # the worker's word on what the script trains on in its bundle
            trains = ", ".join(form.trainable_envs()) or "none"
            console.print(f"{algo} trains on here: {trains}", markup=False, highlight=False)
        return
    table = Table("algorithm", "environments", "default env", "runnable")
    for variant in form.variants:
        runnable = "yes" if variant.runnable else f"[dim]no: {escape(variant.reason)}[/]"
        table.add_row(variant.name, variant.summary, variant.default_env, runnable)
    console.print(table)
