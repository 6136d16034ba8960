"""`gym-gui sweep start|show|best|stop`: Optuna sweeps whose trials are runs."""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from gym_gui.cli.app import JsonOption, app, clipped, connect, console, print_json, when
from gym_gui.cli.config import (
    ExecutorOption,
    RayAddressOption,
    apply_overrides,
    executor_overrides,
)
from gym_gui.core.errors import ConfigError
from gym_gui.core.ids import validate_sweep_id
from gym_gui.core.records import SweepRecord
from gym_gui.core.states import SweepState
from gym_gui.protocol.client import DaemonClient
from gym_gui.storage.home import Home
from gym_gui.sweeps.optimise import TRIAL_REASON_ATTR
from gym_gui.sweeps.spec import load_spec, parse_spec
from gym_gui.sweeps.study import (
    StudyError,
    StudyView,
    TrialRow,
    history_title,
    importance_note,
    objective_names,
    param_importances,
    read_study,
    storage_url,
)

sweep_app = typer.Typer(help="Optuna sweeps whose trials are runs.", no_args_is_help=True)
app.add_typer(sweep_app, name="sweep")
_SWEEP_STYLE = {
    SweepState.RUNNING: "bold cyan",
    SweepState.STOPPING: "yellow",
    SweepState.COMPLETED: "green",
    SweepState.STOPPED: "magenta",
    SweepState.FAILED: "bold red",
}
_TRIAL_STYLE = {"COMPLETE": "green", "PRUNED": "cyan", "FAIL": "bold red", "RUNNING": "bold cyan"}


@sweep_app.command("start")
def sweep_start(
    spec: Annotated[Path, typer.Argument(help="The sweep spec: a JSON or YAML file.")],
    wait: Annotated[
        bool, typer.Option("--wait", help="Follow the trials as they end; print the best.")
    ] = False,
    executor: ExecutorOption = None,
    ray_address: RayAddressOption = None,
) -> None:
    """Start a sweep: its trials are runs the daemon queues like any other (--executor and
    --ray-address override the spec's base config, so every trial runs there)."""
    checked = load_spec(spec)
    if executor is not None or ray_address is not None:
        data = checked.model_dump(mode="json")
        apply_overrides(data["config"], executor_overrides(executor, ray_address))
        checked = parse_spec(data)
    with connect() as client:
        record = client.start_sweep(checked.model_dump_json())
        console.print(
            f"sweep {record.sweep_id} started: study {record.study} in {record.storage}",
            markup=False,
            highlight=False,
        )
        if wait:
            _follow_sweep(client, record.sweep_id)


def _follow_sweep(client: DaemonClient, sweep_id: str) -> None:
    told: set[int] = set()
    here = Home().known_home_id()
    while True:
        detail = client.get_sweep(sweep_id)
        view = _study_of(detail.study)
        for trial in sorted(view.trials, key=lambda t: t.number):
            if trial.number in told or trial.state in ("RUNNING", "WAITING"):
                continue
            told.add(trial.number)
            console.print(
                f"trial {trial.number} {_trial_state(trial.state)} {_values(trial)} "
                f"{escape(_params(trial.params))} runs {_runs(trial, here)}",
                highlight=False,
            )
        if detail.record.state.ended:
            console.print(
                f"sweep {sweep_id} {_sweep_state(detail.record.state)}: {escape(detail.record.reason)}"
            )
            _print_best(view)
            return
        time.sleep(1.0)


@sweep_app.command("show")
def sweep_show(
    sweep: Annotated[str | None, typer.Argument(help="Sweep id; none: the table of sweeps.")] = None,
    storage: Annotated[
        str | None,
        typer.Option("--storage", help="A study made elsewhere: its storage (URL or SQLite file)."),
    ] = None,
    study: Annotated[str | None, typer.Option("--study", help="With --storage: the study's name.")] = None,
    history: Annotated[
        bool,
        typer.Option(
            "--history",
            help="The optimisation history instead of the trials: each value and the best so far.",
        ),
    ] = False,
    importances: Annotated[
        bool,
        typer.Option(
            "--importances",
            help="The parameters' importances for the first objective instead of the trials (as the "
            "window's Optuna tab computes them).",
        ),
    ] = False,
    json_: JsonOption = False,
) -> None:
    """The sweeps; a sweep's trials (best first), its optimisation history or its parameters' importances;
    or any Optuna study (--storage, no daemon needed)."""
    if storage is not None:
        if sweep is not None:
            raise ConfigError("give a sweep id or --storage, not both")
        url = storage_url(storage)
        view = read_study(url, study)
        if json_:
            print_json(_study_document(view, url, history, importances))
        else:
            _show_study(view, url, history, importances)
        return
    if study is not None:
        raise ConfigError("--study names a study of --storage; give --storage too")
    if sweep is None and (history or importances):
        raise ConfigError("--history and --importances show one study: give a sweep id (or --storage)")
    with connect() as client:
        if sweep is None:
            records = client.list_sweeps()
            if json_:
                print_json([_sweep_data(record) for record in records])
            else:
                _print_sweeps(records)
            return
        detail = client.get_sweep(validate_sweep_id(sweep))
    record = detail.record
    if json_:
        document = _study_document(_study_of(detail.study), record.storage, history, importances)
        print_json({"sweep": _sweep_data(record), **document})
        return
    table = Table(show_header=False, box=None)
    table.add_row("sweep", record.sweep_id)
    table.add_row(
        "state", _sweep_state(record.state) + (f": {escape(record.reason)}" if record.reason else "")
    )
    table.add_row("study", f"{record.study} in {escape(record.storage)}")
    table.add_row("directory", record.directory)
    console.print(table)
    # The sweep's storage URL holds no password (a spec with one is refused), so it opens as it reads.
    _show_study(_study_of(detail.study), record.storage, history, importances)


def _show_study(view: StudyView, url: str, history: bool, importances: bool) -> None:
    """Print the trials of ``view`` (read from the storage ``url``), or its history and/or importances."""
    if not (history or importances):
        _print_trials(view)
    if history:
        _print_history(view)
    if importances:
        _print_importances(view, param_importances(url, view.name))


def _sweep_data(record: SweepRecord) -> dict[str, Any]:
    """A sweep's record as ``--json`` gives it: its spec as an object, not as text holding JSON."""
    return {**dataclasses.asdict(record), "spec": json.loads(record.spec)}


def _study_document(view: StudyView, url: str, history: bool, importances: bool) -> dict[str, Any]:
    """``sweep show --json`` of the study ``view`` (read from ``url``): its trials, the best, and its
    history and importances when asked."""
    document: dict[str, Any] = {"study": view.to_data(), "best": [trial.number for trial in view.best()]}
    if history:
        document["history"] = [
            {"trial": number, "value": value, "best": best} for number, value, best in view.history()
        ]
    if importances:
        document["importances"] = param_importances(url, view.name)
    return document


def _print_history(view: StudyView) -> None:
    points = view.history()
    if not points:
        console.print(f"study {view.name}: no trial has completed yet", markup=False, highlight=False)
        return
    objective = objective_names(view)[0]
    table = Table("trial", objective, "best so far", title=history_title(view))
    for number, value, best in points:
        table.add_row(str(number), f"{value:.6g}", f"{best:.6g}")
    console.print(table)


def _print_importances(view: StudyView, importances: dict[str, float]) -> None:
    note = importance_note(view, importances)
    if note:
        console.print(note, markup=False, highlight=False, soft_wrap=True)
        return
    table = Table("parameter", "importance", "", title=f"parameter importances ({objective_names(view)[0]})")
    for name, importance in importances.items():
        table.add_row(escape(name), f"{importance:.3f}", "█" * round(importance * 40))
    console.print(table)


@sweep_app.command("best")
def sweep_best(sweep: Annotated[str, typer.Argument(help="Sweep id.")]) -> None:
    """The best trial of a sweep (the Pareto front of a multi-objective one): parameters, value(s), runs."""
    with connect() as client:
        detail = client.get_sweep(validate_sweep_id(sweep))
    _print_best(_study_of(detail.study))


@sweep_app.command("stop")
def sweep_stop(sweep: Annotated[str, typer.Argument(help="Sweep id.")]) -> None:
    """No new trials; the running trials' runs are cancelled; the sweep is recorded stopped."""
    with connect() as client:
        record = client.stop_sweep(validate_sweep_id(sweep))
    console.print(f"sweep {record.sweep_id} {_sweep_state(record.state)}: {escape(record.reason)}")


def _study_of(data: dict[str, Any]) -> StudyView:
    if "error" in data:
        raise StudyError(str(data["error"]))
    return StudyView.from_data(data)


def _sweep_state(state: SweepState) -> str:
    return f"[{_SWEEP_STYLE[state]}]{state.value}[/]"


def _trial_state(state: str) -> str:
    return f"[{_TRIAL_STYLE.get(state, 'dim')}]{state}[/]"


def _values(trial: TrialRow) -> str:
    return ", ".join(f"{v:.6g}" for v in trial.values) if trial.values else "-"


def _params(params: dict[str, Any]) -> str:
    return " ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in params.items())


def _print_sweeps(records: list[SweepRecord]) -> None:
    table = Table("sweep", "state", "study", "storage", "created", "reason")
    for record in records:
        table.add_row(
            record.sweep_id,
            _sweep_state(record.state),
            record.study,
            escape(record.storage),
            when(record.created_at),
            escape(clipped(record.reason, 60)),
        )
    console.print(table)


def _runs(trial: TrialRow, here: str | None) -> str:
    """A trial's runs; another home's trial is named by that home (its runs are not in this one)."""
    if here is not None and trial.elsewhere(here):
        return f"in home {trial.home}"
    return ", ".join(trial.run_ids) or "-"


def _print_trials(view: StudyView) -> None:
    here = Home().known_home_id()
    best = {trial.number for trial in view.best()}
    directions = ", ".join(view.directions)
    table = Table("", "trial", "state", f"value ({directions})", "params", "runs", "reason", title=view.name)
    for trial in view.ranked():
        reason = trial.user_attrs.get(TRIAL_REASON_ATTR, "")
        table.add_row(
            "[bold green]best[/]" if trial.number in best else "",
            str(trial.number),
            _trial_state(trial.state),
            _values(trial),
            escape(_params(trial.params)),
            escape(_runs(trial, here)),
            escape(clipped(str(reason), 80)),
        )
    console.print(table)


def _print_best(view: StudyView) -> None:
    best = view.best()
    if not best:
        console.print(f"study {view.name}: no trial has completed yet", markup=False, highlight=False)
        return
    for trial in best:
        console.print(
            f"best trial {trial.number}: value {_values(trial)}\n"
            f"  params {_params(trial.params)}\n"
            f"  runs {_runs(trial, Home().known_home_id())}",
            markup=False,
            highlight=False,
        )
