"""`gym-gui prune`: delete ended runs by age and state, each sweep's best kept, saying the disk it gives back."""

from __future__ import annotations

import dataclasses
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from gym_gui.cli.app import JsonOption, app, connect, console, print_json, state_markup, when
from gym_gui.core.pruning import PruneResult, PruneRules, parse_age, summary
from gym_gui.core.run_query import parse_states
from gym_gui.storage.space import format_bytes


@app.command()
def prune(
    older_than: Annotated[
        str, typer.Option("--older-than", help="Runs that ended at least this long ago: 30d, 12h, 90m, 2w.")
    ] = "",
    state: Annotated[
        str,
        typer.Option("--state", help="Runs that ended in these states, comma-separated (FAILED,CANCELLED)."),
    ] = "",
    keep_best: Annotated[
        int, typer.Option("--keep-best", min=0, help="With --per-sweep: keep each sweep's N best trials.")
    ] = 0,
    per_sweep: Annotated[
        bool, typer.Option("--per-sweep", help="Only sweeps' trial runs, each sweep's --keep-best N kept.")
    ] = False,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Say what would go; change nothing.")] = False,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask.")] = False,
    json_: JsonOption = False,
) -> None:
    """Delete ended runs and their files (never a live run): those matching every rule given.

    Deleted, not archived: archiving frees no disk (docs/decisions/0050-prune-deletes-runs.md).
    """
    rules = PruneRules(
        older_than=parse_age(older_than) if older_than else None,
        states=parse_states(state, "--state"),
        keep_best=keep_best,
        per_sweep=per_sweep,
        dry_run=True,
    )
    with connect() as client:
        if dry_run or not yes:
            listed = client.prune(rules)
            if dry_run or not listed.runs:
                _show(listed, json_)
                return
            _show(listed, json_=False, table_only=True)
            question = (
                f"Delete these {len(listed.runs):,} runs and their files ({format_bytes(listed.bytes)})?"
            )
            if not typer.confirm(question, err=True):
                raise typer.Exit(1)
            # Exactly the runs shown: one that matched meanwhile waits for the next prune.
            rules = dataclasses.replace(rules, run_ids=tuple(run.record.run_id for run in listed.runs))
        result = client.prune(dataclasses.replace(rules, dry_run=False))
    _show(result, json_)


def _show(result: PruneResult, json_: bool, table_only: bool = False) -> None:
    if json_:
        print_json(result)
        return
    if result.runs:
        table = Table("run", "state", "ended", "disk")
        for run in result.runs:
            record = run.record
            table.add_row(
                record.run_id,
                state_markup(record.state),
                when(record.ended_at or record.created_at),
                format_bytes(run.bytes),
            )
        console.print(table)
    if table_only:
        return
    console.print(summary(result, format_bytes(result.bytes)))
    for note in result.skipped:
        console.print(f"[yellow]kept[/] {escape(note)}", highlight=False, soft_wrap=True)
