"""`prune`: the ended runs a prune's rules match, each one's disk counted, deleted as `delete` deletes one."""

from __future__ import annotations

import logging
import time

from gym_gui.core.errors import GymGuiError
from gym_gui.core.pruning import ENDED_STATES, PrunedRun, PruneResult, PruneRules
from gym_gui.core.records import RunRecord
from gym_gui.daemon.supervisor import Supervisor
from gym_gui.daemon.sweeping import Sweeping
from gym_gui.storage.space import disk_usage
from gym_gui.sweeps.study import StudyView

log = logging.getLogger(__name__)


def prune(supervisor: Supervisor, sweeping: Sweeping, rules: PruneRules) -> PruneResult:
    """Delete (or, in a dry run, only list) the ended runs ``rules`` match, oldest first.

    Only runs whose state is final are considered; the trials of a sweep still playing, each sweep's
    best trials (``keep_best``) and a run the supervisor refuses to delete stay, and the result says
    why. A run's disk is counted before it goes.
    """
    registry = supervisor.registry
    candidates = registry.in_states(*(rules.states or ENDED_STATES))
    if rules.older_than is not None:
        cutoff = time.time() - rules.older_than
        candidates = [run for run in candidates if _ended_at(run) <= cutoff]
    if rules.run_ids:
        chosen = set(rules.run_ids)
        candidates = [run for run in candidates if run.run_id in chosen]
    skipped: list[str] = []
    playing = {sweep.sweep_id for sweep in registry.sweeps() if not sweep.state.ended}
    for run in candidates:
        if run.sweep_id in playing:
            skipped.append(f"{run.run_id}: its sweep {run.sweep_id} is still playing")
    candidates = [run for run in candidates if run.sweep_id not in playing]
    kept: list[str] = []
    if rules.per_sweep:
        candidates = [run for run in candidates if run.sweep_id]
        best = {
            sweep_id: _best_trials(sweeping, sweep_id, rules.keep_best) for sweep_id in _sweeps(candidates)
        }
        for run in candidates:
            trials = best[run.sweep_id]
            if trials is None:
                skipped.append(
                    f"{run.run_id}: its sweep {run.sweep_id}'s study cannot be read to find its best"
                )
            elif run.trial in trials:
                kept.append(run.run_id)
        candidates = [run for run in candidates if best[run.sweep_id] is not None and run.run_id not in kept]
    pruned: list[PrunedRun] = []
    for run in candidates:
        size = disk_usage(supervisor.home.run_dir(run.run_id))
        if not rules.dry_run:
            try:
                supervisor.delete(run.run_id)
            except GymGuiError as exc:  # deleted meanwhile, or a worker of it came back
                skipped.append(f"{run.run_id}: {exc}")
                continue
        pruned.append(PrunedRun(run, size))
    given = sum(run.bytes for run in pruned)
    if not rules.dry_run:
        log.info("pruned %d runs, %d bytes given back", len(pruned), given)
    return PruneResult(runs=pruned, bytes=given, dry_run=rules.dry_run, kept=kept, skipped=skipped)


def _ended_at(run: RunRecord) -> float:
    # A run ended without its time recorded (a registry older than that) is as old as its creation.
    return run.ended_at if run.ended_at is not None else run.created_at


def _sweeps(runs: list[RunRecord]) -> list[str]:
    return list(dict.fromkeys(run.sweep_id for run in runs))


def _best_trials(sweeping: Sweeping, sweep_id: str, count: int) -> set[int] | None:
    """The numbers of the sweep's ``count`` best complete trials by its first objective; None when its
    study cannot be read (then none of its runs is pruned: which are best is unknown)."""
    try:
        study = sweeping.get(sweep_id).study
        if "error" in study:
            return None
        view = StudyView.from_data(study)
    except GymGuiError:
        return None
    done = view.complete()
    return {trial.number for trial in view.ranked()[:count] if trial in done}
