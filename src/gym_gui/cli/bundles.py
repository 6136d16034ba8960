"""`gym-gui bundles install|list|check`: the worker bundles (the pinned venvs workers run in)."""

from __future__ import annotations

import time
from typing import Annotated

import typer
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Column, Table

from gym_gui.cli.app import JsonOption, app, console, open_home, print_json
from gym_gui.core.errors import ConfigError
from gym_gui.core.records import BundleProgress
from gym_gui.workers import (
    BundleDirectory,
    BundleExtra,
    BundleStatus,
    TorchBuild,
    TorchVariant,
    worker_catalog,
)

bundles_app = typer.Typer(
    help="Install and check worker bundles (the pinned virtual environments workers run in).",
    no_args_is_help=True,
)
app.add_typer(bundles_app, name="bundles")


def bundle_directory() -> BundleDirectory:
    return worker_catalog().bundle_directory(open_home().bundles_dir)


@bundles_app.command("install")
def bundles_install(
    name: Annotated[str, typer.Argument(help="Bundle name, e.g. cleanrl.")],
    force: Annotated[bool, typer.Option(help="Rebuild even when it is installed.")] = False,
    cuda: Annotated[
        bool | None,
        typer.Option(
            "--cuda/--cpu",
            help="Which build of torch: --cpu (CPU-only, the default for a new bundle) or --cuda "
            "(PyPI's CUDA build, Linux, several GB). Without either, an installed bundle keeps its build; "
            "naming the other one rebuilds it.",
        ),
    ] = None,
    extra: Annotated[
        list[str] | None,
        typer.Option(
            "--extra",
            help="An optional part of the bundle to add, e.g. --extra atari (repeatable; `gym-gui bundles "
            "list` shows what each bundle offers). Added to an installed bundle without rebuilding it.",
        ),
    ] = None,
) -> None:
    """Build a bundle's venv and add the extras asked for (a no-op when it is installed, its
    requirements have not changed, it holds the torch build asked for and those extras)."""
    manager = bundle_directory()
    extras = tuple(extra or ())
    torch = None if cuda is None else TorchVariant.CUDA if cuda else TorchVariant.CPU
    held = manager.status(name).torch
    if torch is not None and held is not None and held.variant is not torch:
        console.print(
            f"bundle {name} holds {held.text()}; rebuilding it with torch's {torch.label} build",
            markup=False,
            soft_wrap=True,
        )
    started = time.monotonic()
    steps: list[int] = []
    if console.is_terminal:
        columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
        with Progress(*columns, console=console, transient=True) as progress:
            task = progress.add_task(f"bundle {name}", total=None)

            def show(update: BundleProgress) -> None:
                steps.append(update.step)
                done = update.step if update.phase == "installed" else max(update.step - 1, 0)
                progress.update(task, total=update.total, completed=done, description=f"{update.message}…")
                if update.phase == "installing":
                    progress.console.print(f"{update.text()}…", markup=False, highlight=False)

            status = manager.install(name, progress=show, force=force, torch=torch, extras=extras)
    else:
        # Logs and `make` output get one line per step instead of a redrawn bar.
        def show_line(update: BundleProgress) -> None:
            steps.append(update.step)
            if update.phase != "installed":  # said once below, with where
                console.print(
                    f"bundle {name}: {update.text()}…", markup=False, highlight=False, soft_wrap=True
                )

        status = manager.install(name, progress=show_line, force=force, torch=torch, extras=extras)
    built = f" with {status.torch.text()}" if status.torch is not None else ""
    if status.extras:
        built += f"; extras: {', '.join(status.extras)}"
    if any(steps):
        elapsed = time.monotonic() - started
        console.print(
            f"bundle {name} installed at {status.path} in {elapsed:.1f}s{built}", markup=False, soft_wrap=True
        )
    else:
        console.print(
            f"bundle {name} is installed at {status.path} ({status.reason}){built}",
            markup=False,
            soft_wrap=True,
        )


@bundles_app.command("list")
def bundles_list(
    names: Annotated[
        list[str] | None, typer.Argument(help="Bundle names, e.g. cleanrl (default: every known bundle).")
    ] = None,
    json_: JsonOption = False,
) -> None:
    """Known bundles (all, or the ones named): installed or not, the torch build and the extras they
    hold (and the extras they offer), where, and why."""
    bundles = bundle_directory()
    statuses = bundles.list()
    if names:
        known = {status.name: status for status in statuses}
        unknown = [name for name in names if name not in known]
        if unknown:
            raise ConfigError(f"unknown bundle {unknown[0]!r}; known bundles: {', '.join(sorted(known))}")
        statuses = [known[name] for name in dict.fromkeys(names)]
    if json_:
        print_json(statuses)
        return
    # Paths and reasons are what a user copies: fold them rather than cut them with an ellipsis.
    table = Table(
        "bundle",
        "installed",
        "torch",
        Column("extras", overflow="fold"),
        Column("path", overflow="fold"),
        Column("status", overflow="fold"),
    )
    for status in statuses:
        installed = "[green]yes[/]" if status.installed else "[red]no[/]"
        torch = escape(_torch_cell(status.torch))
        extras = escape(_extras_cell(status, bundles.spec(status.name).extras))
        table.add_row(status.name, installed, torch, extras, escape(str(status.path)), escape(status.reason))
    console.print(table)


def _extras_cell(status: BundleStatus, offered: tuple[BundleExtra, ...]) -> str:
    """The extras a bundle holds and those it offers besides, for a bundle list:
    ``atari, mujoco; out of date: …; can add: envpool; not here: …`` (a bundle not installed: ``offers: …``)."""
    held = set(status.extras) | set(status.extras_out_of_date)
    parts = [", ".join(status.extras)] if status.extras else []
    if status.extras_out_of_date:
        parts.append(f"out of date: {', '.join(status.extras_out_of_date)}")
    others = sorted((extra for extra in offered if extra.name not in held), key=lambda extra: extra.name)
    addable = [extra.name for extra in others if not extra.unavailable]
    if addable:
        parts.append(f"{'can add' if status.installed else 'offers'}: {', '.join(addable)}")
    refused = [extra.name for extra in others if extra.unavailable]
    if refused:
        parts.append(f"not here: {', '.join(refused)}")
    return "; ".join(parts)


def _torch_cell(build: TorchBuild | None) -> str:
    """The torch build a bundle holds, for a bundle list; one installed before builds were recorded is marked."""
    if build is None:
        return ""
    return build.text() if build.recorded else f"{build.text()}, not recorded"


@bundles_app.command("check")
def bundles_check(name: Annotated[str, typer.Argument(help="Bundle name, e.g. cleanrl.")]) -> None:
    """Import the bundle's key packages in its venv; one line saying what is missing (exit 1 if anything)."""
    result = bundle_directory().check(name)
    console.print(result.message, markup=False, highlight=False, soft_wrap=True)
    if not result.ok:
        raise typer.Exit(1)
