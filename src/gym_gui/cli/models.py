"""`gym-gui models` (the saved models of every run, as the window's browser lists them) and
`gym-gui import-model` (a model file stored as a finished run of its own)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Column, Table

from gym_gui.cli.app import app, connect, console, state_markup
from gym_gui.cli.config import scripts_worker
from gym_gui.core.errors import ConfigError
from gym_gui.storage.model_index import DigestCache, ModelEntry, gather_models, group_models
from gym_gui.workers import worker_catalog


@app.command()
def models(
    env: Annotated[
        str | None, typer.Option(help="Only the models trained on this environment, e.g. CartPole-v1.")
    ] = None,
    algo: Annotated[
        str | None,
        typer.Option(
            help="Only the models of this algorithm, e.g. ppo (a kind without algorithms: its name)."
        ),
    ] = None,
) -> None:
    """The saved models of every run, archived ones too (the window's Saved models browser as a table):
    by environment and algorithm, each with its run, step, the run's final return, size and sha256."""
    with connect() as client:
        runs = client.list_runs(include_archived=True)
    entries = gather_models(runs, worker_catalog().return_metric)
    chosen = [entry for entry in entries if _matches(entry, env, algo)]
    if not chosen:
        if env is None and algo is None:
            console.print(
                "no saved model yet: CleanRL runs save their final model when training ends; "
                "`gym-gui import-model` takes one from disk",
                markup=False,
                highlight=False,
                soft_wrap=True,
            )
            return
        held = ", ".join(
            f"{env_id} ({', '.join(groups)})" for env_id, groups in group_models(entries).items()
        )
        asked = " and ".join(f"--{name} {value}" for name, value in (("env", env), ("algo", algo)) if value)
        raise ConfigError(
            f"no saved model matches {asked}; "
            + (f"there are models of {held}" if held else "there is none yet")
        )
    digests = DigestCache()
    table = Table(
        "env",
        "worker / algorithm",
        Column("run", overflow="fold"),
        "model",
        Column("step", justify="right"),
        Column("final return", justify="right"),
        Column("size", justify="right"),
        "sha256",
    )
    for env_id, groups in group_models(chosen).items():
        for group, group_entries in groups.items():
            for entry in group_entries:
                model = entry.model
                table.add_row(
                    env_id,
                    group,
                    entry.run_id,
                    model.path.rsplit("/", 1)[-1],
                    f"{model.step:,}",
                    "-" if entry.final_return is None else f"{entry.final_return:.6g}",
                    f"{model.size / 1024:,.1f} KiB" if model.exists else "missing",
                    _digest(entry, digests),
                )
    console.print(table)


def _matches(entry: ModelEntry, env: str | None, algo: str | None) -> bool:
    if env is not None and entry.env_id != env:
        return False
    return algo is None or algo == (entry.algorithm or entry.worker)


def _digest(entry: ModelEntry, digests: DigestCache) -> str:
    """The first 12 hex digits of the model file's sha256 ("" when it is gone or unreadable)."""
    if not entry.model.exists:
        return ""
    try:
        return digests.digest(entry.file)[:12]
    except OSError:
        return ""


@app.command("import-model")
def import_model(
    source: Annotated[
        str,
        typer.Argument(
            metavar="FILE|hf://ORG/NAME",
            help="A model file (e.g. a .cleanrl_model a run saved), or a Hub model: hf://ORG/NAME[@REVISION].",
        ),
    ],
    env: Annotated[
        str | None,
        typer.Option(
            help="The environment it was trained on, e.g. CartPole-v1 (from a Hub model: its card's)."
        ),
    ] = None,
    algo: Annotated[
        str | None,
        typer.Option(help="The algorithm (script) that trained it, e.g. ppo (from a Hub model: its card's)."),
    ] = None,
    worker: Annotated[
        str | None,
        typer.Option(
            help="Worker kind (default: the one installed kind that runs scripts; from a Hub model: its card's)."
        ),
    ] = None,
) -> None:
    """Store a model file as a finished run of its own (checked by loading it first), to evaluate or browse.

    hf://ORG/NAME downloads a model published on the Hugging Face Hub (by `gym-gui publish`, or by
    CleanRL's --upload-model) with huggingface_hub's client (HF_ENDPOINT, HF_TOKEN): its card says the
    kind, algorithm and env, and the kind's loader checks the file is that. Nothing of the repository
    is run.
    """
    if source.startswith("hf://"):
        from gym_gui.hub.fetch import fetch_model  # huggingface_hub only for a Hub model

        published = fetch_model(source, worker, algo, env)
        path, worker, algo, env = published.file, published.worker, published.algorithm, published.env_id
        origin = published.url
        console.print(f"downloaded {escape(published.url)}: {worker} {algo} on {env}", highlight=False)
    else:
        path, origin = Path(source), ""
        for option, value in (("--env", env), ("--algo", algo)):
            if value is None:
                raise ConfigError(f"{option} is needed to import a model file: what it was trained on")
        worker = worker or scripts_worker()
    assert env is not None and algo is not None
    with connect() as client:
        record = client.import_model(str(path.absolute()), worker, algo, env, origin)
    console.print(
        f"run [bold]{record.run_id}[/] {state_markup(record.state.value)}: {escape(record.reason)}",
        soft_wrap=True,
    )
