"""`gym-gui import-model`: a model file stored as a finished run of its own."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from gym_gui.cli.app import app, connect, console, state_markup
from gym_gui.cli.config import scripts_worker


@app.command("import-model")
def import_model(
    file: Annotated[Path, typer.Argument(help="The model file, e.g. a .cleanrl_model saved by a run.")],
    env: Annotated[str, typer.Option(help="The environment it was trained on, e.g. CartPole-v1.")],
    algo: Annotated[str, typer.Option(help="The algorithm (script) that trained it, e.g. ppo.")],
    worker: Annotated[
        str | None, typer.Option(help="Worker kind (default: the one installed kind that runs scripts).")
    ] = None,
) -> None:
    """Store a model file as a finished run of its own (checked by loading it first), to evaluate or browse."""
    worker = worker or scripts_worker()
    with connect() as client:
        record = client.import_model(str(file.absolute()), worker, algo, env)
    console.print(
        f"run [bold]{record.run_id}[/] {state_markup(record.state.value)}: {escape(record.reason)}",
        soft_wrap=True,
    )
