"""`gym-gui export-tensorboard RUN`: a run's stored episodes and metrics as TensorBoard event files in its directory."""

from __future__ import annotations

from typing import Annotated

import typer

from gym_gui.cli.app import app, connect, console
from gym_gui.core.ids import validate_run_id
from gym_gui.storage.event_files import EPISODE_LENGTH, EPISODE_RETURN, write_event_files
from gym_gui.storage.run_dir import RunDir


@app.command("export-tensorboard")
def export_tensorboard(run: Annotated[str, typer.Argument(help="Run id.")]) -> None:
    """Write a run's stored episode returns and lengths and its metrics as TensorBoard event files in
    the run's tensorboard/ directory (replacing an earlier export), for the TensorBoard tab or
    `tensorboard --logdir`. Any kind, finished or running."""
    run_id = validate_run_id(run)
    with connect() as client:
        record = client.get_run(run_id).record
    written = write_event_files(RunDir(record.run_dir))
    console.print(
        f"wrote {written.episodes} episodes ({EPISODE_RETURN}, {EPISODE_LENGTH}) and "
        f"{written.metric_points} points of {written.metric_tags} metrics into {written.directory}",
        highlight=False,
        soft_wrap=True,
    )
