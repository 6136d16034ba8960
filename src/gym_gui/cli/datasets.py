"""`gym-gui dataset …`: the home's offline datasets (Minari's), written from stored runs, listed, checked."""

from __future__ import annotations

import json
import math
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from gym_gui.cli.app import app, connect, console, open_home, when
from gym_gui.core.errors import ConfigError
from gym_gui.core.ids import validate_dataset_id
from gym_gui.core.records import RunRecord
from gym_gui.datasets import DatasetCard, DatasetStore, Recorded, RunSource, episode_returns, record_dataset
from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.space import format_bytes

dataset_app = typer.Typer(
    help="Offline datasets: stored runs written as Minari datasets under the home, listed, checked, imported.",
    no_args_is_help=True,
)
app.add_typer(dataset_app, name="dataset")


def store() -> DatasetStore:
    return DatasetStore(open_home())


@dataset_app.command("create")
def dataset_create(
    name: Annotated[str, typer.Argument(help="The dataset's Minari id, e.g. cartpole/random-v0.")],
    more: Annotated[
        list[str] | None, typer.Argument(help="More runs, sweeps or comparisons.", show_default=False)
    ] = None,
    from_: Annotated[
        list[str] | None,
        typer.Option("--from", help="A run, a sweep (its trials' runs) or an arena comparison (its runs)."),
    ] = None,
) -> None:
    """Write the ended episodes of stored runs as a Minari dataset, every stored step of them."""
    references = [*(from_ or []), *(more or [])]
    if not references:
        raise ConfigError("name the runs to write with --from RUN [RUN...]")
    datasets = store()
    _free_name(datasets, name)
    with connect() as client:
        sources = resolve_sources(client, references)
    recorded = record_dataset(datasets, name, sources)
    print_recorded(recorded)


def record_from_run(name: str, record: RunRecord) -> Recorded:
    """Write one ended run as dataset ``name`` (what `gym-gui eval --dataset` does once its run ends)."""
    return record_dataset(store(), name, [RunSource.of(record.run_id, record.run_dir)])


def dataset_env(name: str) -> str:
    """The environment dataset ``name`` was recorded on (an offline run's env when none is named).

    Raises:
        ConfigError: no such dataset, or it was recorded without an environment.
    """
    card = store().card(validate_dataset_id(name))
    if card.env_id is None:
        raise ConfigError(f"dataset {name!r} names no environment: give the run's with --env")
    return card.env_id


def check_new_dataset(name: str) -> None:
    """Refuse, before anything runs, a name that is not a dataset id or is taken."""
    _free_name(store(), name)


def _free_name(datasets: DatasetStore, name: str) -> None:
    validate_dataset_id(name)
    if datasets.exists(name):
        raise ConfigError(f"dataset {name!r} already exists; delete it first or choose another name")


def print_recorded(recorded: Recorded) -> None:
    card = recorded.card
    console.print(
        f"dataset [bold]{escape(card.name)}[/]: {recorded.episodes} episodes, {recorded.steps} steps, "
        f"{format_bytes(card.size_bytes)} in {escape(str(card.path))}",
        highlight=False,
        soft_wrap=True,
    )
    if recorded.left_out:
        console.print(f"{len(recorded.left_out)} episodes left out:", highlight=False)
        for line in recorded.left_out[:20]:
            console.print(f"  {escape(line)}", highlight=False, soft_wrap=True)
        if len(recorded.left_out) > 20:
            console.print(f"  … and {len(recorded.left_out) - 20} more", highlight=False)


def resolve_sources(client: DaemonClient, references: list[str]) -> list[RunSource]:
    """The runs named by ``references``, each a run id, a sweep id (its trials' runs) or a comparison
    (the runs of an arena session or evaluation batch), in the order named, each once.

    Raises:
        ConfigError: a reference names nothing, or a run named has not ended.
    """
    records = client.list_runs(include_archived=True)
    by_id = {record.run_id: record for record in records}
    chosen: dict[str, RunRecord] = {}
    comparisons: dict[str, list[RunRecord]] | None = None
    for reference in references:
        if reference in by_id:
            found = [by_id[reference]]
        else:
            found = [record for record in records if record.sweep_id == reference]
            if not found:
                if comparisons is None:
                    comparisons = _comparisons(records)
                found = comparisons.get(reference, [])
        if not found:
            raise ConfigError(f"--from {reference!r}: no run, sweep or comparison of that id")
        for record in found:
            if not record.state.terminal:
                raise ConfigError(
                    f"run {record.run_id} is {record.state.value}: write a dataset once it has ended"
                )
            chosen.setdefault(record.run_id, record)
    return [RunSource.of(record.run_id, record.run_dir) for record in chosen.values()]


def _comparisons(records: list[RunRecord]) -> dict[str, list[RunRecord]]:
    found: dict[str, list[RunRecord]] = {}
    for record in records:
        try:
            comparison = RunSource.of(record.run_id, record.run_dir).config.comparison
        except ConfigError:
            continue
        if comparison:
            found.setdefault(comparison, []).append(record)
    return found


@dataset_app.command("list")
def dataset_list() -> None:
    """The home's datasets: made here, imported, or put there by Minari's own tools."""
    datasets = store()
    names = datasets.names()
    if not names:
        console.print(f"no datasets in {escape(str(datasets.root))}; write one with `gym-gui dataset create`")
        return
    table = Table("dataset", "env", "episodes", "steps", "size", "from", "recorded")
    for name in names:
        try:
            card = datasets.card(name)
        except ConfigError as exc:
            table.add_row(escape(name), "", "", "", "", escape(str(exc)), "")
            continue
        table.add_row(
            escape(card.name),
            escape(card.env_id or "—"),
            str(card.episodes),
            str(card.steps),
            format_bytes(card.size_bytes),
            _origin(card),
            f"{card.recorded} {when(card.recorded_at)}" if card.recorded and card.recorded_at else "not yet",
        )
    console.print(table)


def _origin(card: DatasetCard) -> str:
    if card.source_runs:
        return escape(f"{len(card.source_runs)} run(s): {card.operator or ''}")
    return escape(card.algorithm or "Minari")


@dataset_app.command("show")
def dataset_show(name: Annotated[str, typer.Argument(help="The dataset's id.")]) -> None:
    """One dataset: its environment, spaces, size, where it came from, its digest and its returns."""
    datasets = store()
    card = datasets.card(validate_dataset_id(name))
    rows = [
        ("dataset", card.name),
        ("path", str(card.path)),
        ("env", card.env_id or "—"),
        ("observation space", _space(card.observation_space)),
        ("action space", _space(card.action_space)),
        ("episodes", str(card.episodes)),
        ("steps", str(card.steps)),
        ("size", format_bytes(card.size_bytes)),
        ("operator", card.operator or "—"),
        ("algorithm", card.algorithm or "—"),
        ("source runs", ", ".join(card.source_runs) or "—"),
        (
            "recorded",
            f"{card.recorded} {when(card.recorded_at)}"
            if card.recorded and card.recorded_at
            else "not yet (at first use)",
        ),
        ("sha256", card.sha256 or "—"),
    ]
    if card.ref_min_score is not None and card.ref_max_score is not None:
        rows.append(
            ("reference scores", f"{card.ref_min_score:g} (random) … {card.ref_max_score:g} (expert)")
        )
    for label, value in rows:
        console.print(f"[bold]{label}[/]: {escape(value)}", highlight=False, soft_wrap=True)
    returns = episode_returns(datasets, card.name)
    if returns:
        console.print(
            f"[bold]returns[/]: mean {sum(returns) / len(returns):.4g}, min {min(returns):.4g}, max {max(returns):.4g}",
            highlight=False,
        )
        for line in histogram(returns):
            console.print(f"  {line}", highlight=False)


def _space(text: str) -> str:
    try:
        space = json.loads(text)
    except ValueError:
        return text
    kind = space.get("type", "?")
    if kind == "Discrete":
        return f"Discrete({space.get('n')})"
    if "shape" in space:
        return f"{kind}{tuple(space['shape'])} {space.get('dtype', '')}".strip()
    return kind


def histogram(values: list[float], bins: int = 10, width: int = 40) -> list[str]:
    """A text histogram of ``values``: one line a bin, its range and a bar."""
    low, high = min(values), max(values)
    if math.isclose(low, high):
        return [f"{low:>10.4g}  {'█' * width} {len(values)}"]
    step = (high - low) / bins
    counts = [0] * bins
    for value in values:
        counts[min(int((value - low) / step), bins - 1)] += 1
    most = max(counts)
    return [
        f"{low + i * step:>10.4g}  {'█' * round(width * count / most):<{width}} {count}"
        for i, count in enumerate(counts)
    ]


@dataset_app.command("import")
def dataset_import(
    path: Annotated[str, typer.Argument(help="A Minari dataset's directory (the one holding data/).")],
) -> None:
    """Copy a Minari dataset made elsewhere into the home, under its own id, its digests recorded."""
    from pathlib import Path

    card = store().import_(Path(path))
    console.print(
        f"dataset [bold]{escape(card.name)}[/]: {card.episodes} episodes, {card.steps} steps, "
        f"{format_bytes(card.size_bytes)} imported",
        highlight=False,
    )


@dataset_app.command("push")
def dataset_push(
    name: Annotated[str, typer.Argument(help="The dataset's id, NAMESPACE/NAME-vN.")],
    repo: Annotated[
        str, typer.Option(help="The Hub dataset repository, ORG/NAMESPACE (created when missing).")
    ],
    private: Annotated[bool, typer.Option(help="Create the repository private.")] = False,
) -> None:
    """Publish a dataset to the Hugging Face Hub in one commit, in the layout Minari's own remote reads,
    so `minari download hf://ORG/NAMESPACE/NAME-vN` fetches it (with MINARI_REMOTE unset or any).

    The token is huggingface_hub's (HF_TOKEN or `hf auth login`); HF_ENDPOINT names another Hub.
    """
    from gym_gui.hub.datasets import push_dataset  # huggingface_hub only for the command that uses it
    from gym_gui.hub.publish import require_token

    validate_dataset_id(name)
    require_token("dataset push")
    pushed = push_dataset(store(), name, repo, private)
    console.print(
        f"dataset [bold]{escape(name)}[/] pushed to {escape(repo)} — {escape(pushed.commit_url)}",
        highlight=False,
    )


@dataset_app.command("delete")
def dataset_delete(name: Annotated[str, typer.Argument(help="The dataset's id.")]) -> None:
    """Delete a dataset, unless a run that has not ended learns from it."""
    datasets = store()
    datasets.card(validate_dataset_id(name))
    with connect() as client:
        users = [
            record.run_id
            for record in client.list_runs(include_archived=True)
            if not record.state.terminal and _dataset_of(record) == name
        ]
    if users:
        raise ConfigError(
            f"dataset {name!r} is used by run {', '.join(users)}; delete it once that has ended"
        )
    datasets.delete(name)
    console.print(f"dataset [bold]{escape(name)}[/] deleted", highlight=False)


def _dataset_of(record: RunRecord) -> str | None:
    try:
        return RunSource.of(record.run_id, record.run_dir).config.dataset
    except ConfigError:
        return None
