"""`gym-gui compare`: one metric of several runs, mean ± std across the seeds of each experiment (the
window's Compare view as a table), and its picture."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Column, Table

from gym_gui.cli.app import app, connect, console
from gym_gui.core.curves import DEFAULT_SMOOTHING, Band, ema, mean_std_band
from gym_gui.core.errors import ConfigError
from gym_gui.core.ids import validate_run_id
from gym_gui.storage.comparison import (
    ComparedRun,
    Series,
    common_tags,
    experiment_differences,
    group_by_experiment,
    load_runs,
    load_series,
)


@dataclass(frozen=True)
class Experiment:
    """One group of compared runs (same config but for the seed) and its metric's mean ± std."""

    runs: list[ComparedRun]
    label: str  # what the experiment is: worker, algorithm, env and what sets it apart
    band: Band | None  # None: its runs share no step range (or one run has a single point)


@app.command()
def compare(
    runs: Annotated[
        list[str], typer.Argument(metavar="RUN", help="Two or more run ids.", show_default=False)
    ],
    metric: Annotated[
        str,
        typer.Option(
            metavar="TAG",
            help=(
                "The metric, e.g. charts/episodic_return (`gym-gui show RUN` lists a run's metrics), or "
                "episodes/total_reward: the stored episodes' returns by episode number."
            ),
        ),
    ],
    smoothing: Annotated[
        float,
        typer.Option(
            min=0.0, max=0.99, help="TensorBoard's smoothing, as the window's slider (0: raw points)."
        ),
    ] = DEFAULT_SMOOTHING,
    plot: Annotated[
        Path | None,
        typer.Option(
            metavar="FILE.png",
            help="Also draw the curves, with each experiment's mean ± std band (PNG; .svg or .pdf by the suffix).",
        ),
    ] = None,
) -> None:
    """Compare one metric of several runs: runs whose config differs only in seed, notes and tracking are
    one experiment, shown as the mean ± std of their (smoothed) curves at the last step they all reached."""
    run_ids = [validate_run_id(run) for run in dict.fromkeys(runs)]
    if len(run_ids) < 2:
        raise ConfigError("compare takes two or more runs")
    with connect() as client:
        records = [client.get_run(run_id).record for run_id in run_ids]
    compared = load_runs(records)
    _check_metric(compared, metric)
    curves = {
        run_id: (steps, ema(values, smoothing)[0])
        for run_id, (steps, values) in load_series(compared, metric).items()
    }
    experiments = _experiments(compared, curves)
    if plot is not None:
        _draw(plot, metric, experiments, curves)
    table = Table(
        Column("experiment", overflow="fold"),
        "seeds",
        Column("runs", overflow="fold"),
        Column("step", justify="right"),
        Column(f"{escape(metric)} mean ± std", justify="right"),
        title=f"{escape(metric)}, smoothing {smoothing:g}",
    )
    for experiment in experiments:
        seeds = ", ".join(str(run.config.get("seed", "?")) for run in experiment.runs)
        step, value = _final(experiment)
        table.add_row(
            escape(experiment.label),
            f"{len(experiment.runs)} ({seeds})",
            "\n".join(run.info.run_id for run in experiment.runs),
            step,
            value,
        )
    console.print(table)
    if plot is not None:
        console.print(f"plot written to {plot}", markup=False, highlight=False, soft_wrap=True)


def _check_metric(compared: list[ComparedRun], metric: str) -> None:
    """Refuse a metric some of the runs do not have, naming them and what they have in common."""
    missing = [run.info.run_id for run in compared if metric not in run.tags]
    if not missing:
        return
    common = common_tags(compared)
    offered = f"the metrics they all have: {', '.join(common)}" if common else "they have no metric in common"
    if len(missing) == len(compared):
        raise ConfigError(f"no run has the metric {metric!r}; {offered}")
    raise ConfigError(
        f"{', '.join(missing)} {'has' if len(missing) == 1 else 'have'} no metric {metric!r}; {offered}"
    )


def _experiments(compared: list[ComparedRun], curves: dict[str, Series]) -> list[Experiment]:
    """The runs grouped as the window groups them, each group with its band over the smoothed curves."""
    groups = group_by_experiment(compared, curves)
    experiments = []
    for group, differences in zip(groups, experiment_differences(groups), strict=True):
        first = group[0]
        algorithm = first.config.get("algorithm") or ""
        label = " ".join(part for part in (first.info.worker, algorithm, "on", first.info.env_id) if part)
        band = mean_std_band([run.info.run_id for run in group], [curves[run.info.run_id] for run in group])
        experiments.append(Experiment(group, f"{label} {differences}".strip(), band))
    return experiments


def _final(experiment: Experiment) -> tuple[str, str]:
    """The step and the mean ± std cells of an experiment: where its band ends (its runs' last common step)."""
    band = experiment.band
    if band is None:
        return "-", "no step all its runs reached"
    spread = f" ± {band.std[-1]:.4g}" if len(experiment.runs) > 1 else ""
    return f"{band.steps[-1]:,.0f}", f"{band.mean[-1]:.4g}{spread}"


def _draw(path: Path, metric: str, experiments: list[Experiment], curves: dict[str, Series]) -> None:
    """Each run's smoothed curve, faint, and each experiment's mean ± std band, in its own colour.

    Raises:
        ConfigError: the picture cannot be written there (no such directory, not allowed, a format
            matplotlib does not know).
    """
    from matplotlib.figure import Figure  # a second to import: only a plot needs it

    figure = Figure(figsize=(10, 5.5), layout="constrained")
    axes = figure.subplots()
    for index, experiment in enumerate(experiments):
        colour = f"C{index % 10}"
        several = len(experiment.runs) > 1 and experiment.band is not None
        for run in experiment.runs:
            steps, values = curves[run.info.run_id]
            label = None if several else f"{experiment.label} ({run.info.run_id})"
            axes.plot(steps, values, color=colour, alpha=0.35 if several else 1.0, linewidth=1, label=label)
        if several and experiment.band is not None:
            band = experiment.band
            axes.fill_between(band.steps, band.mean - band.std, band.mean + band.std, color=colour, alpha=0.2)
            axes.plot(
                band.steps,
                band.mean,
                color=colour,
                linewidth=2,
                label=f"{experiment.label}: mean ± std of {len(experiment.runs)} seeds",
            )
    axes.set_xlabel("step")
    axes.set_ylabel(metric)
    axes.grid(alpha=0.25)
    axes.legend(fontsize="small")
    try:
        figure.savefig(path)
    except OSError as exc:
        raise ConfigError(f"cannot write the plot to {path}: {exc.strerror or exc}") from None
    except ValueError as exc:  # matplotlib's word on a suffix it has no format for
        raise ConfigError(f"cannot write the plot to {path}: {exc}") from None
