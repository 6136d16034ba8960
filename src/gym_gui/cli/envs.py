"""`gym-gui envs` (the environment catalog, with what each env needs) and `gym-gui envs install FAMILY`."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Column, Table

from gym_gui.cli.app import JsonOption, app, console, print_json
from gym_gui.core.records import BundleProgress
from gym_gui.envs import catalog

envs_app = typer.Typer(
    help="The environment catalog by family, with what each env needs; `envs install` adds a family.",
    invoke_without_command=True,
)
app.add_typer(envs_app, name="envs")


@envs_app.callback()
def envs(
    ctx: typer.Context,
    family: Annotated[str | None, typer.Option(help="Only this family (e.g. atari).")] = None,
    installed: Annotated[
        bool, typer.Option("--installed", help="Only envs whose family is installed.")
    ] = False,
    json_: JsonOption = False,
) -> None:
    """The catalog's envs by family: installed or what installs them, playable by keyboard or not."""
    if ctx.invoked_subcommand is not None:
        return
    names = [catalog.env_family(family).name] if family else list(catalog.env_families())
    rows = []
    families = []
    for name in names:
        info = catalog.env_family(name)
        ready = catalog.family_installed(name)
        if installed and not ready:
            continue
        needs = "" if ready else info.install_hint
        entries = catalog.family_entries(name)
        families.append((info, ready, needs, len(entries)))
        for entry in entries:
            rows.append((entry, info, ready, needs))
    if json_:
        print_json(
            {
                "families": [
                    {
                        "name": info.name,
                        "title": info.title,
                        "installed": ready,
                        "needs": needs,
                        "envs": count,
                    }
                    for info, ready, needs, count in families
                ],
                "envs": [
                    {
                        "env_id": entry.env_id,
                        "family": entry.family,
                        "title": entry.title,
                        "installed": ready,
                        "human_playable": entry.human_playable,
                        "needs": needs,
                    }
                    for entry, _info, ready, needs in rows
                ],
                "broken": catalog.families().broken,
            }
        )
        return
    table = Table("env", "family", "title", "keyboard", Column("needs", overflow="fold"))
    for entry, info, ready, needs in rows:
        table.add_row(
            entry.env_id,
            info.title,
            entry.title,
            "yes" if entry.human_playable else "",
            "installed" if ready else f"[dim]{escape(needs)}[/]",
        )
    # A family whose envs are read from its installed package (Atari's games) has none to list
    # until then: its line says what installs it.
    for info, _ready, needs, count in families:
        if not count:
            table.add_row(
                "[dim](its envs, once installed)[/]", info.title, "", "", f"[dim]{escape(needs)}[/]"
            )
    console.print(table)
    for broken in catalog.families().broken:
        console.print(
            f"[red]broken[/] family plugin {escape(broken.name)} ({escape(broken.source)}): {escape(broken.error)}",
            soft_wrap=True,
        )


@envs_app.command("install")
def envs_install(family: Annotated[str, typer.Argument(help="Family name, e.g. atari.")]) -> None:
    """Install a family into gym_gui's environment and its extra into the bundles of the kinds that
    train on it (only what it declares; a failed install keeps nothing)."""
    # Imported here: listing the catalog needs neither the worker plugins nor their bundles.
    from gym_gui.cli.bundles import bundle_directory
    from gym_gui.workers.family_install import install_family

    name = catalog.env_family(family).name
    bundles = bundle_directory()
    if console.is_terminal:
        columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
        with Progress(*columns, console=console, transient=True) as progress:
            task = progress.add_task(f"family {name}", total=None)

            def show(update: BundleProgress) -> None:
                progress.update(
                    task, total=update.total, completed=max(update.step - 1, 0), description=update.message
                )

            done = install_family(name, bundles, show)
    else:

        def show_line(update: BundleProgress) -> None:
            console.print(f"{update.bundle}: {update.text()}", markup=False, soft_wrap=True)

        done = install_family(name, bundles, show_line)
    for line in done:
        console.print(line, markup=False, soft_wrap=True)
