"""`gym-gui workers` (the installed worker kinds) and `gym-gui wandb sync` (a run's offline W&B data)."""

from __future__ import annotations

import dataclasses
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Column, Table

from gym_gui.cli.app import JsonOption, app, connect, console, open_home, print_json
from gym_gui.cli.bundles import bundle_directory
from gym_gui.core.ids import validate_run_id
from gym_gui.workers import worker_catalog
from gym_gui.workers.wandb_sync import sync_offline_runs


@app.command()
def workers(json_: JsonOption = False) -> None:
    """The worker kinds installed as plugins: roster name, lane, controls, default budget, bundle — and
    broken plugins with their error."""
    catalog = worker_catalog()
    bundles = bundle_directory()
    if json_:
        print_json(
            {
                "workers": [
                    {
                        **dataclasses.asdict(plugin.spec),
                        "available": plugin.spec.available,
                        "bundle_installed": None
                        if plugin.bundle is None
                        else bundles.installed(plugin.bundle.name),
                    }
                    for plugin in catalog.plugins()
                ],
                "broken": catalog.broken,
            }
        )
        return
    table = Table(
        "kind",
        "roster name",
        "lane",
        "controls",
        "default budget",
        "bundle",
        Column("status", overflow="fold"),
    )
    for plugin in catalog.plugins():
        spec = plugin.spec
        controls = [name for name, on in dataclasses.asdict(spec.capabilities).items() if on]
        if plugin.bundle is None:
            bundle = spec.bundle
        else:
            bundle = spec.bundle + ("" if bundles.installed(plugin.bundle.name) else " (not installed)")
        status = "available" if spec.available else f"[dim]unavailable: {escape(spec.unavailable_reason)}[/]"
        budget = "" if spec.default_budget is None else "{1} {0}".format(*spec.default_budget)
        table.add_row(
            spec.kind, spec.display_name, spec.lane.value, ", ".join(controls), budget, bundle, status
        )
    console.print(table)
    # Whole lines, not table cells: an import error is read in full, not folded into a column.
    for broken in catalog.broken:
        console.print(
            f"[red]broken[/] plugin {escape(broken.name)} ({escape(broken.source)}): {escape(broken.error)}",
            soft_wrap=True,
        )


wandb_app = typer.Typer(help="Weights & Biases runs of gym_gui runs.", no_args_is_help=True)
app.add_typer(wandb_app, name="wandb")


@wandb_app.command("sync")
def wandb_sync(run: Annotated[str, typer.Argument(help="Run id.")]) -> None:
    """Upload a run's offline W&B data to its W&B server (key: WANDB_API_KEY or `wandb login`; never stored)."""
    run_id = validate_run_id(run)
    home = open_home()
    with connect() as client:
        worker = client.get_run(run_id).record.worker

    def show(step: int, total: int, name: str) -> None:
        console.print(f"{step}/{total} wandb sync {name}…", markup=False, highlight=False)

    console.print(sync_offline_runs(home.run_dir(run_id), worker, home.bundles_dir, show), markup=False)
