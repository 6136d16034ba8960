"""The Optuna side of a sweep: its study (sampler, pruner, distributions, directions) and the objective
computed from a run's stored metric points.

The daemon (``daemon/sweeping.py``) asks trials here, runs them as runs, and tells the outcomes here;
nothing in this module knows of runs beyond their ids and their telemetry files.
"""

from __future__ import annotations

import contextlib
import json
import math
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gym_gui.core.config import redact_url
from gym_gui.core.errors import GymGuiError
from gym_gui.core.records import MetricPoint
from gym_gui.storage.telemetry import TelemetryReader
from gym_gui.sweeps.spec import Choices, FloatRange, IntRange, Objective, SweepSpec
from gym_gui.sweeps.study import (
    STUDY_CONFIG_ATTR,
    STUDY_SPEC_ATTR,
    STUDY_SWEEP_ATTR,
    TRIAL_HOME_ATTR,
    TRIAL_RUNS_ATTR,
    StudyError,
    StudyView,
    error_line,
    release,
    study_view,
)

if TYPE_CHECKING:
    import optuna

# A trial's user attributes the daemon writes beside TRIAL_RUNS_ATTR.
TRIAL_REASON_ATTR = "gym_gui.reason"  # why a trial failed or was pruned, in the run's words
TRIAL_PRUNED_ATTR = "gym_gui.pruned"  # the pruner's decision, kept so a restarted daemon carries it out
# Config fields each daemon joining a study may set its own way: how its runs are executed.
_PER_DAEMON = ("executor",)
# The first key of the PostgreSQL advisory lock daemons take to ask a study's trials ("gymg").
_LOCK_SPACE = 0x67796D67


def aggregate(objective: Objective, points: Sequence[MetricPoint]) -> float | None:
    """The objective's value over ``points`` (in step order), or None when there are none (or NaN)."""
    values = [p.value for p in points if not math.isnan(p.value)]
    if not values:
        return None
    match objective.aggregate:
        case "last_mean":
            window = values[-objective.window :]
            return sum(window) / len(window)
        case "mean":
            return sum(values) / len(values)
        case "max":
            return max(values)
        case "min":
            return min(values)
        case _:
            return values[-1]


def metric_points(telemetry: Path, tag: str) -> list[MetricPoint]:
    """The stored points of ``tag`` in a run's telemetry file, by step; none when it has no file yet."""
    if not telemetry.exists():
        return []
    try:
        reader = TelemetryReader(telemetry)
    except GymGuiError:
        return []
    try:
        return sorted(reader.metrics(tag), key=lambda p: (p.step, p.wall_time))
    except GymGuiError:
        return []
    finally:
        reader.close()


def run_values(spec: SweepSpec, telemetry: Path) -> list[float | None]:
    """Each objective's value for one run, from its stored metrics."""
    return [aggregate(o, metric_points(telemetry, o.metric)) for o in spec.objective]


def distributions(spec: SweepSpec) -> dict[str, optuna.distributions.BaseDistribution]:
    import optuna

    out: dict[str, optuna.distributions.BaseDistribution] = {}
    for name, dist in spec.space.items():
        if isinstance(dist, FloatRange):
            out[name] = optuna.distributions.FloatDistribution(
                dist.low, dist.high, log=dist.log, step=dist.step
            )
        elif isinstance(dist, IntRange):
            out[name] = optuna.distributions.IntDistribution(
                dist.low, dist.high, log=dist.log, step=dist.step
            )
        else:
            out[name] = optuna.distributions.CategoricalDistribution(dist.choices)
    return out


def grid(spec: SweepSpec) -> dict[str, list[Any]]:
    """Every value of each parameter, for the grid sampler (the spec checked each has a finite grid)."""
    values: dict[str, list[Any]] = {}
    for name, dist in spec.space.items():
        if isinstance(dist, Choices):
            values[name] = list(dist.choices)
        elif isinstance(dist, IntRange):
            values[name] = list(range(dist.low, dist.high + 1, dist.step))
        else:
            assert dist.step is not None
            count = round((dist.high - dist.low) / dist.step) + 1
            values[name] = [dist.low + i * dist.step for i in range(count)]
    return values


def sampler(spec: SweepSpec, asked: int = 0) -> optuna.samplers.BaseSampler:
    """The spec's sampler; ``asked``: trials the study already holds (a sweep taken up again after a
    daemon restart), added to the seed so the new sampler does not draw the first trials' values again.
    """
    import optuna

    seed = None if spec.sampler.seed is None else spec.sampler.seed + asked
    match spec.sampler.name:
        case "random":
            return optuna.samplers.RandomSampler(seed=seed)
        case "cmaes":
            return optuna.samplers.CmaEsSampler(seed=seed)
        case "grid":

            class AskTellGrid(optuna.samplers.GridSampler):
                """Optuna's grid sampler, minus stopping the study once the grid is played: that works
                only inside ``study.optimize``, and a sweep asks and tells (it counts the grid itself)."""

                def after_trial(self, *args: Any, **kwargs: Any) -> None:
                    pass

            return AskTellGrid(grid(spec), seed=seed)
        case _:
            return optuna.samplers.TPESampler(seed=seed)


def pruner(spec: SweepSpec) -> optuna.pruners.BasePruner:
    import optuna

    p = spec.pruner
    match p.name:
        case "median":
            return optuna.pruners.MedianPruner(
                n_startup_trials=p.n_startup_trials,
                n_warmup_steps=p.n_warmup_steps,
                interval_steps=p.interval_steps,
                n_min_trials=p.n_min_trials,
            )
        case "successive_halving":
            return optuna.pruners.SuccessiveHalvingPruner(
                min_resource=p.min_resource,
                reduction_factor=p.reduction_factor,
                min_early_stopping_rate=p.min_early_stopping_rate,
            )
        case "hyperband":
            return optuna.pruners.HyperbandPruner(
                min_resource=p.min_resource,  # type: ignore[arg-type]  # Optuna takes "auto" too
                max_resource=p.max_resource,
                reduction_factor=p.reduction_factor,
            )
        case _:
            return optuna.pruners.NopPruner()


def joined_spec(spec: SweepSpec) -> dict[str, Any]:
    """What daemons playing one study must agree on, as JSON data (the study's :data:`STUDY_SPEC_ATTR`):
    the config every trial starts from (less how it is executed), the space, the objective, the
    trial count and the seeds per trial. Sampler, pruner and parallelism are each daemon's own."""
    data = json.loads(spec.model_dump_json())
    config = {key: value for key, value in data["config"].items() if key not in _PER_DAEMON}
    return {
        "config": config,
        "space": data["space"],
        "objective": data["objective"],
        "trials": data["trials"],
        "seeds": data["seeds"],
    }


def _differences(path: str, theirs: Any, mine: Any) -> list[tuple[str, Any, Any]]:
    """Where two JSON values differ: ``(dotted path, theirs, mine)`` at the deepest mapping key."""
    if isinstance(theirs, dict) and isinstance(mine, dict):
        found: list[tuple[str, Any, Any]] = []
        for key in sorted(set(theirs) | set(mine), key=str):
            found += _differences(f"{path}.{key}" if path else str(key), theirs.get(key), mine.get(key))
        return found
    return [] if theirs == mine else [(path, theirs, mine)]


def pruner_label(spec: SweepSpec) -> str:
    return {"median": "median", "successive_halving": "successive halving", "hyperband": "Hyperband"}.get(
        spec.pruner.name, spec.pruner.name
    )


class SweepStudy:
    """A sweep's study in its storage, opened for writing: ask trials, report, tell.

    Several daemons (each with its home) may play one study on a database server: each trial is
    marked with the id of the home that plays it (:data:`TRIAL_HOME_ATTR`), and trials are asked
    under a lock the daemons share (:meth:`ask_within`), so together they never ask more than the
    spec's count. Optuna's study is not shared between threads here: the daemon's sweep driver
    calls it from its one thread.
    """

    def __init__(
        self, spec: SweepSpec, url: str, name: str, sweep_id: str, *, home_id: str, create: bool
    ) -> None:
        """Open the study ``name`` in ``url``.

        ``create``: a new sweep's study, created, or joined when the storage already has a study of
        that name made by a gym_gui sweep with the same spec (``joined`` tells which). Otherwise
        (a sweep taken up after a daemon restart) the study must exist.

        Raises:
            StudyError: the storage cannot be opened, or the study there was made from another spec
                (naming the difference) or not by a gym_gui sweep.
        """
        import optuna

        optuna.logging.set_verbosity(optuna.logging.WARNING)
        self.spec = spec
        self.url = url
        self.name = name
        self.home_id = home_id
        self.joined = False
        self.distributions = distributions(spec)
        storage: optuna.storages.RDBStorage | None = None
        try:
            storage = optuna.storages.RDBStorage(url)
            if create:
                try:
                    self.study = optuna.create_study(
                        storage=storage,
                        study_name=name,
                        directions=[optuna.study.StudyDirection[d.upper()] for d in spec.directions],
                        sampler=sampler(spec),
                        pruner=pruner(spec),
                        load_if_exists=False,
                    )
                except optuna.exceptions.DuplicatedStudyError:
                    self.study = optuna.load_study(storage=storage, study_name=name, pruner=pruner(spec))
                    self._check_join()
                    self.joined = True
                else:
                    self.study.set_user_attr(STUDY_SPEC_ATTR, joined_spec(spec))
                    self.study.set_user_attr(STUDY_SWEEP_ATTR, sweep_id)
                    self.study.set_user_attr(STUDY_CONFIG_ATTR, spec.config.model_dump(mode="json"))
                    if len(spec.objective) > 1:
                        self.study.set_metric_names([o.metric for o in spec.objective])
            else:
                self.study = optuna.load_study(storage=storage, study_name=name, pruner=pruner(spec))
            # A sweep taken up again or joining: a seed of its own, so it does not draw the values
            # the first trials were given again.
            asked = len(self.study.get_trials(deepcopy=False))
            self.study.sampler = sampler(spec, asked)
        except StudyError:
            release(storage)
            raise
        except Exception as exc:  # sqlalchemy's, a missing driver's: each its own class
            release(storage)
            first = error_line(exc.__cause__ or exc)
            raise StudyError(f"{redact_url(url)}: cannot open the study {name!r}: {first}") from None

    def _check_join(self) -> None:
        """Refuse to join a study this spec would not play the same way (naming what differs)."""
        where = f"{redact_url(self.url)}: study {self.name!r}"
        # The daemon that created the study writes its spec just after: give it a moment.
        deadline = time.monotonic() + 5.0
        while STUDY_SPEC_ATTR not in self.study.user_attrs and time.monotonic() < deadline:
            time.sleep(0.2)
        theirs = self.study.user_attrs.get(STUDY_SPEC_ATTR)
        if not isinstance(theirs, dict):
            raise StudyError(
                f"{where} was not made by a gym_gui sweep (or by one older than shared studies): "
                "name another study to start a sweep"
            )
        differences = _differences("", theirs, joined_spec(self.spec))
        if differences:
            path, study_value, spec_value = differences[0]
            more = f" (and {', '.join(p for p, _, _ in differences[1:])})" if len(differences) > 1 else ""
            raise StudyError(
                f"{where} cannot be joined: the spec's {path} is {json.dumps(spec_value)}, "
                f"the study's is {json.dumps(study_value)}{more}"
            )

    def ask_within(self, total: int) -> optuna.trial.Trial | None:
        """Ask a new trial, marked as this home's, unless the study already holds ``total`` trials
        (in any state: complete, pruned, failed, running, waiting); None then.

        The count and the ask happen under a lock every daemon sharing the study takes (on
        PostgreSQL an advisory lock on the study), so two daemons never ask the last trial both.
        """
        with self._claim():
            if len(self.study.get_trials(deepcopy=False)) >= total:
                return None
            trial = self.study.ask(self.distributions)
            self.set_attr(trial.number, TRIAL_HOME_ATTR, self.home_id)
            return trial

    @contextlib.contextmanager
    def _claim(self) -> Iterator[None]:
        """Hold the study's lock: a PostgreSQL advisory lock for the transaction of a connection of
        its own (Optuna's writes, on other connections, are not blocked by it). Other databases: a
        daemon's own sweep thread is the only one asking (a study there is not shared)."""
        from sqlalchemy import text

        storage = self.study._storage
        engine = getattr(storage, "engine", None)
        if engine is None or engine.dialect.name != "postgresql":
            yield
            return
        with engine.connect() as connection, connection.begin():
            connection.execute(
                text("SELECT pg_advisory_xact_lock(:space, :study)"),
                {"space": _LOCK_SPACE, "study": self.study._study_id},
            )
            yield

    def trial(self, number: int) -> optuna.trial.Trial:
        """A running trial by number, to report or tell it (e.g. after a daemon restart)."""
        import optuna

        return optuna.trial.Trial(self.study, self._trial_id(number))

    def _trial_id(self, number: int) -> int:
        return self.study._storage.get_trial_id_from_study_id_trial_number(self.study._study_id, number)

    def set_runs(self, number: int, run_ids: list[str]) -> None:
        self.study._storage.set_trial_user_attr(self._trial_id(number), TRIAL_RUNS_ATTR, list(run_ids))

    def set_reason(self, number: int, reason: str) -> None:
        self.set_attr(number, TRIAL_REASON_ATTR, reason)

    def set_attr(self, number: int, key: str, value: Any) -> None:
        self.study._storage.set_trial_user_attr(self._trial_id(number), key, value)

    def own_running_trials(self) -> list[optuna.trial.FrozenTrial]:
        """The running trials this home plays (another daemon's are left alone). A trial with no
        home mark is this home's: its sweep was started before trials were marked, or the daemon
        stopped between asking it and marking it (under the lock, so it was never another's to play).
        """
        import optuna

        with self._claim():
            trials = self.study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING,))
        return [t for t in trials if t.user_attrs.get(TRIAL_HOME_ATTR, self.home_id) == self.home_id]

    def report(self, number: int, value: float, step: int) -> bool:
        """Tell the trial its objective so far at ``step``; returns whether the pruner says prune."""
        trial = self.trial(number)
        trial.report(value, step)
        return bool(trial.should_prune())

    def tell_complete(self, number: int, values: list[float]) -> None:
        import optuna

        self.study.tell(number, values, state=optuna.trial.TrialState.COMPLETE, skip_if_finished=True)

    def tell_pruned(self, number: int) -> None:
        import optuna

        self.study.tell(number, state=optuna.trial.TrialState.PRUNED, skip_if_finished=True)

    def tell_failed(self, number: int, reason: str) -> None:
        import optuna

        self.set_reason(number, reason)
        self.study.tell(number, state=optuna.trial.TrialState.FAIL, skip_if_finished=True)

    def counts(self) -> tuple[int, int]:
        """How many trials the study holds, and how many of them this home played."""
        trials = self.study.get_trials(deepcopy=False)
        return len(trials), sum(
            t.user_attrs.get(TRIAL_HOME_ATTR, self.home_id) == self.home_id for t in trials
        )

    def grid_exhausted(self) -> bool:
        """Whether a grid sampler has handed out every point of its grid."""
        import optuna

        if not isinstance(self.study.sampler, optuna.samplers.GridSampler):
            return False
        done = {tuple(sorted(t.params.items())) for t in self.study.get_trials(deepcopy=False) if t.params}
        size = 1
        for values in grid(self.spec).values():
            size *= len(values)
        return len(done) >= size

    def view(self) -> StudyView:
        """The study as it is now, read through this open study (not a storage opened again).

        Raises:
            StudyError: the storage cannot be read.
        """
        try:
            return study_view(self.study, self.url)
        except Exception as exc:  # sqlalchemy's, a database server's: each its own class
            first = error_line(exc.__cause__ or exc)
            raise StudyError(
                f"{redact_url(self.url)}: cannot read the study {self.name!r}: {first}"
            ) from None

    def close(self) -> None:
        release(self.study._storage)
