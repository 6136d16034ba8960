"""What the study view shows of a study, as plain data: the trials table, which trial a follow-up
run takes and what goes into the form. No Qt here (an import-linter contract)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from gym_gui.sweeps.study import (
    StudyError,
    StudyView,
    TrialRow,
    objective_names,
    param_names,
    params_as_flags,
)
from gym_gui.ui.forms.model import FollowUp

BEST_MARK = "★"  # Optuna's best trial; with several objectives, each trial of the Pareto front


@dataclass(frozen=True)
class TrialLine:
    """One row of the trials table: the trial, whether it is (among) the best, and its cells."""

    trial: TrialRow
    best: bool
    cells: tuple[str, ...]


@dataclass(frozen=True)
class StudyTable:
    """The trials best first by the first objective (then the unfinished ones by number)."""

    columns: tuple[str, ...]
    lines: tuple[TrialLine, ...]

    def row_of(self, number: int) -> int | None:
        """The row showing trial ``number``, or None."""
        return next((row for row, line in enumerate(self.lines) if line.trial.number == number), None)


def shown(value: Any) -> str:
    """A cell's text: floats to 6 significant digits, nothing for a missing value."""
    if value is None:
        return ""
    if isinstance(value, float) and not isinstance(value, bool):
        return f"{value:.6g}" if math.isfinite(value) else str(value)
    return str(value)


def study_table(view: StudyView, home_id: str | None = None) -> StudyTable:
    """The table the view shows: trial, state, one column per objective and per parameter, the runs.

    ``home_id``: the home the window shows; a trial another home's daemon plays (a study shared on
    PostgreSQL) names that home instead of runs, which are not in this one.
    """
    objectives = objective_names(view)
    params = param_names(view)
    best = {trial.number for trial in view.best()}
    lines = []
    for trial in view.ranked():
        values = list(trial.values) if trial.values else [None] * len(objectives)
        mark = f" {BEST_MARK}" if trial.number in best else ""
        cells = (
            f"{trial.number}{mark}",
            trial.state,
            *(shown(value) for value in values),
            *(shown(trial.params.get(name)) for name in params),
            f"in home {trial.home}" if home_id and trial.elsewhere(home_id) else " ".join(trial.run_ids),
        )
        lines.append(TrialLine(trial, trial.number in best, cells))
    columns = ("trial", "state", *objectives, *params, "runs")
    return StudyTable(columns, tuple(lines))


def trial_for_training(view: StudyView, selected: int | None) -> TrialRow:
    """The trial Train with best takes: the best one; with several objectives, the selected trial of
    the Pareto front.

    Raises:
        StudyError: no trial completed yet, or (several objectives) the selection is not on the front.
    """
    best = view.best()
    if not best:
        raise StudyError(f"study {view.name!r} has no complete trial yet: nothing to train with")
    if len(view.directions) == 1:
        return best[0]
    chosen = next((trial for trial in best if trial.number == selected), None)
    if chosen is None:
        front = ", ".join(str(trial.number) for trial in best)
        raise StudyError(
            f"study {view.name!r} has {len(view.directions)} objectives: select a trial of its Pareto front "
            f"(marked {BEST_MARK}: {front}) to train with"
        )
    return chosen


def follow_up(view: StudyView, trial: TrialRow) -> FollowUp:
    """The follow-up run of ``trial``: a gym_gui sweep's trial params are RunConfig.params names and
    go over its base config; a study made elsewhere names them by the script's flags."""
    config = view.base_config
    params = dict(trial.params) if config is not None else params_as_flags(trial.params)
    return FollowUp(config, params, f"study {view.name!r}, trial {trial.number}")
