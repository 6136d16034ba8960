"""Acting on one run: `gym-gui cancel`, `pause`, `resume`, `checkpoint`, `render-rate`, `archive`,
`delete` and `export`."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from gym_gui.cli.app import app, connect, console, open_home, state_markup
from gym_gui.core.controls import Control
from gym_gui.core.errors import GymGuiError
from gym_gui.core.ids import validate_run_id
from gym_gui.core.records import ArtifactRecord
from gym_gui.core.states import RunState
from gym_gui.storage.run_dir import RunDir
from gym_gui.storage.telemetry import TelemetryReader


@app.command()
def cancel(run: Annotated[str, typer.Argument(help="Run id.")]) -> None:
    """Cancel a run (SIGTERM to its process group, SIGKILL after a grace period)."""
    run_id = validate_run_id(run)
    with connect() as client:
        client.cancel(run_id)
        final = client.wait_for_end(run_id, timeout=60)
    console.print(f"run [bold]{run_id}[/] {state_markup(final.state.value)}")


@app.command()
def pause(
    run: Annotated[str, typer.Argument(help="Run id.")],
    timeout: Annotated[float, typer.Option(help="Seconds to wait for the worker to pause.")] = 30.0,
) -> None:
    """Pause a run: its worker keeps its process and stops stepping until `gym-gui resume`."""
    _change_state(validate_run_id(run), Control.PAUSE, RunState.PAUSED, timeout)


@app.command()
def resume(
    run: Annotated[str, typer.Argument(help="Run id.")],
    timeout: Annotated[float, typer.Option(help="Seconds to wait for the worker to resume.")] = 30.0,
) -> None:
    """Resume a paused run: it goes on from the step it was paused at."""
    _change_state(validate_run_id(run), Control.RESUME, RunState.RUNNING, timeout)


def _change_state(run_id: str, control: Control, target: RunState, timeout: float) -> None:
    """Send ``control`` and wait until the worker has reported the run ``target`` (or it ended)."""
    with connect() as client:
        client.control(run_id, control)
        record = client.wait_for_state(run_id, target, timeout=timeout)
    if record.state is not target:
        reason = f": {record.reason}" if record.reason else ""
        raise GymGuiError(f"run {run_id} ended ({record.state.value}{reason}) before it was {target.value}")
    console.print(f"run [bold]{run_id}[/] {state_markup(record.state.value)}")


@app.command()
def checkpoint(
    run: Annotated[str, typer.Argument(help="Run id.")],
    timeout: Annotated[
        float, typer.Option(help="Seconds to wait for the checkpoint to be reported (0: do not wait).")
    ] = 120.0,
) -> None:
    """Ask a run's worker to save a checkpoint now, then print where it was saved."""
    run_id = validate_run_id(run)
    path = RunDir(open_home().run_dir(run_id)).telemetry_path
    with connect() as client:
        before = {a.path for a in _checkpoints(path)}
        client.control(run_id, Control.CHECKPOINT)
        console.print(f"checkpoint asked of run [bold]{run_id}[/]")
        if timeout <= 0:
            return
        deadline = time.monotonic() + timeout
        # The worker saves at its next training step and reports the file; storage holds the report.
        while True:
            fresh = [a for a in _checkpoints(path) if a.path not in before and _requested(a)]
            if fresh:
                saved = fresh[-1]
                break
            info = client.get_run(run_id).record
            if info.state.terminal:
                raise GymGuiError(f"run {run_id} ended ({info.state.value}) before a checkpoint was reported")
            if time.monotonic() > deadline:
                raise GymGuiError(f"run {run_id} reported no checkpoint within {timeout:.0f}s")
            time.sleep(0.25)
    console.print(
        f"checkpoint saved: {escape(str(path.parent / saved.path))} (step {saved.step})",
        highlight=False,
        soft_wrap=True,
    )


def _checkpoints(path: Path) -> list[ArtifactRecord]:
    """The checkpoint artifacts a run has reported so far (none while its storage is not set up)."""
    if not path.exists():
        return []
    try:
        reader = TelemetryReader(path)
    except GymGuiError:
        return []
    try:
        return [a for a in reader.artifacts() if a.kind == "checkpoint"]
    finally:
        reader.close()


def _requested(artifact: ArtifactRecord) -> bool:
    try:
        return json.loads(artifact.meta or "{}").get("requested") is True
    except (ValueError, AttributeError):
        return False


@app.command("render-rate")
def render_rate(
    run: Annotated[str, typer.Argument(help="Run id.")],
    fps: Annotated[float, typer.Argument(help="Frames per second for pixel environments (0: none).")],
) -> None:
    """Change how many frames a second a running pixel-env run renders for the live view and replay."""
    run_id = validate_run_id(run)
    with connect() as client:
        client.control(run_id, Control.RENDER_RATE, render_fps=fps)
    console.print(f"run [bold]{run_id}[/]: render rate {fps:g} frames/s")


@app.command()
def archive(
    run: Annotated[str, typer.Argument(help="Run id.")],
    undo: Annotated[bool, typer.Option("--undo", help="Bring an archived run back.")] = False,
) -> None:
    """Hide a run from the runs table (kept on disk; `runs --all` shows it)."""
    with connect() as client:
        info = client.archive(validate_run_id(run), archived=not undo)
    console.print(f"run {info.run_id} {'archived' if info.archived else 'restored'}")


@app.command()
def delete(
    run: Annotated[str, typer.Argument(help="Run id.")],
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask.")] = False,
) -> None:
    """Delete a run and its directory (refused while it runs: cancel it first)."""
    run_id = validate_run_id(run)
    if not yes and not typer.confirm(f"Delete run {run_id} and all its files?"):
        raise typer.Exit(1)
    with connect() as client:
        client.delete(run_id)
    console.print(f"run {run_id} deleted")


@app.command()
def export(
    run: Annotated[str, typer.Argument(help="Run id.")],
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Archive path (default: ./RUN.tar.gz).")
    ] = None,
) -> None:
    """Pack a run directory into a .tar.gz outside the home (databases copied consistently, even while
    the run writes)."""
    run_id = validate_run_id(run)
    target = output or Path.cwd() / f"{run_id}.tar.gz"
    home = open_home()
    RunDir(home.run_dir(run_id)).export(target, home=home)
    console.print(f"exported {run_id} to {target}")
