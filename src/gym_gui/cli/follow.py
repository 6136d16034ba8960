"""Following a run from the terminal: its progress bar, its warnings as they happen, how it ended."""

from __future__ import annotations

import shlex
import time

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from gym_gui.cli.app import console, state_markup
from gym_gui.core.config import RunConfig
from gym_gui.core.errors import GymGuiError
from gym_gui.core.records import (
    LaunchPreview,
    RunRecord,
)
from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.run_dir import RunDir
from gym_gui.storage.telemetry import TelemetryReader


def print_plan(plan: LaunchPreview) -> None:
    """A dry run's plan: the exact command, the script it runs, where, and its environment (redacted)."""
    console.print("command:", shlex.join(plan.argv), highlight=False, soft_wrap=True)
    if plan.script_argv:
        console.print("script:", shlex.join(plan.script_argv), highlight=False, soft_wrap=True)
    console.print("as typed:", plan.display, highlight=False, soft_wrap=True)
    console.print("working directory:", plan.cwd, highlight=False)
    for key, value in sorted(plan.env.items()):
        console.print(f"  {key}={value}", highlight=False, soft_wrap=True)


def follow(client: DaemonClient, run_id: str, config: RunConfig) -> RunRecord:
    """Show a progress bar until the run ends, and the run's warnings as they happen; returns its final record."""
    by_episodes = config.budget.episodes is not None
    total = config.budget.episodes if by_episodes else config.budget.timesteps
    unit = "episodes" if by_episodes else "steps"
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn(unit),
        TimeElapsedColumn(),
        TextColumn("{task.fields[state]}"),
    )
    warnings = RunWarnings()
    with Progress(*columns, console=console, transient=False) as progress:
        task = progress.add_task(run_id[:48], total=total, state="")
        while True:
            detail = client.get_run(run_id)
            progress_ = detail.progress
            done = progress_.episodes if by_episodes else max(progress_.steps, progress_.global_step)
            progress.update(task, completed=done, state=state_markup(detail.record.state))
            # Above the bar, when they happen: a warning explains what the run does next.
            warnings.show(detail.record.run_dir, progress.console)
            if detail.record.state.terminal:
                break
            time.sleep(0.25)
    warnings.show(detail.record.run_dir, console)
    return detail.record


class RunWarnings:
    """The WARNING and ERROR events of a run (GPU fallback, W&B offline, a refused step …), each shown once."""

    LEVELS = ("WARNING", "ERROR")

    def __init__(self) -> None:
        self.seen = 0  # events read so far (their ids have no gaps)

    def show(self, run_dir: str, where: Console) -> None:
        path = RunDir(run_dir).telemetry_path if run_dir else None
        if path is None or not path.exists():
            return
        try:
            reader = TelemetryReader(path)
            try:
                events = reader.events(self.seen)
            finally:
                reader.close()
        except GymGuiError:
            return  # not initialised yet: the next look finds them
        self.seen += len(events)
        for event in events:
            if event.level in self.LEVELS:
                where.print(f"[yellow]{event.level}:[/] {escape(event.message)}", soft_wrap=True)


def print_end(info: RunRecord) -> None:
    reason = f": {escape(info.reason)}" if info.reason else ""
    console.print(f"run [bold]{info.run_id}[/] {state_markup(info.state)}{reason}", soft_wrap=True)
