"""Sweeps driven by the daemon: trials asked of the study, played as runs, watched, judged and told.

A trial is played by ``seeds`` runs submitted like any run (so they queue within the daemon's
concurrency limit); each is a run of its own with its sweep and trial in its row and manifest. While
they go, the first objective's value so far is reported to the trial at regular steps and a pruner's
"prune" stops them (PRUNED); when they end, the objective is computed from their stored metrics and
told. The sweep's state and its trials' runs are in the registry, the rest in the study, so a
restarted daemon resumes the sweeps it left (:meth:`Sweeping.resume`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import shutil
import threading
import time
from typing import Any

from gym_gui.bus.run_bus import RUNS_TOPIC
from gym_gui.core.config import parse_run_config, redact_url
from gym_gui.core.errors import ConfigError, GymGuiError, RunBusy
from gym_gui.core.ids import make_sweep_id, validate_sweep_id
from gym_gui.core.records import RunRecord, SweepDetail, SweepRecord
from gym_gui.core.states import RunState, SweepState
from gym_gui.daemon.live import TrialLink
from gym_gui.daemon.supervisor import Supervisor
from gym_gui.storage.run_dir import RunDir
from gym_gui.sweeps.optimise import (
    TRIAL_PRUNED_ATTR,
    SweepStudy,
    aggregate,
    metric_points,
    pruner_label,
    run_values,
)
from gym_gui.sweeps.spec import (
    STUDY_FILE,
    Choices,
    SweepSpec,
    check_space,
    check_storage,
    read_spec,
    write_spec,
)
from gym_gui.sweeps.study import read_study
from gym_gui.workers import ONLY, PARAMETERS, HelperOwner

log = logging.getLogger(__name__)

TICK_SECONDS = 0.5


@dataclasses.dataclass(eq=False)
class ActiveSweep:
    """A sweep the daemon drives now: its spec, its study, and the trials being played."""

    sweep_id: str
    spec: SweepSpec
    url: str  # the study's storage (never with a password: the spec refuses one)
    study: SweepStudy
    parallel: int
    inflight: dict[int, list[str]] = dataclasses.field(default_factory=dict)  # trial → its runs
    marks: dict[int, int] = dataclasses.field(default_factory=dict)  # trial → the last step reported
    pruning: dict[int, str] = dataclasses.field(default_factory=dict)  # trial → why it is pruned
    stopping: bool = False


class Sweeping:
    """The daemon's sweeps: started, stopped, resumed, and driven by a thread of their own."""

    def __init__(self, supervisor: Supervisor, tick_seconds: float = TICK_SECONDS) -> None:
        self.supervisor = supervisor
        self.registry = supervisor.registry
        self.home = supervisor.home
        self.home_id = supervisor.home.home_id
        self.tick_seconds = tick_seconds
        self._lock = threading.RLock()
        self._active: dict[str, ActiveSweep] = {}
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------ the loop

    def start_loop(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="gym-gui-sweeps", daemon=True)
        self._thread.start()
        threading.Thread(target=self._watch_ends, name="gym-gui-sweep-ends", daemon=True).start()

    def _watch_ends(self) -> None:
        """Wake the loop the moment a trial's run ends, so the next trial is asked without waiting a tick."""
        subscription = self.supervisor.bus.subscribe(RUNS_TOPIC)
        try:
            while not self._stop.is_set():
                event = subscription.get(timeout=0.5)
                if event is None or event.kind != "updated":
                    continue
                record: RunRecord = event.payload
                if record.sweep_id and record.state.terminal:
                    self._wake.set()
        finally:
            subscription.close()

    def stop_loop(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(10)
        with self._lock:
            for sweep in self._active.values():
                sweep.study.close()

    def _loop(self) -> None:
        while not self._stop.is_set():
            self._wake.wait(self.tick_seconds)
            self._wake.clear()
            if self._stop.is_set():
                return
            try:
                self.tick()
            except Exception:  # the loop must outlive any one sweep's trouble
                log.exception("sweep tick failed")

    def tick(self) -> None:
        """One pass over every active sweep: settle ended trials, report and prune, ask new ones."""
        with self._lock:
            for sweep in list(self._active.values()):
                try:
                    self._step(sweep)
                except Exception as exc:
                    log.exception("sweep %s: driving it failed", sweep.sweep_id)
                    self._end(
                        sweep, SweepState.FAILED, f"the daemon failed driving it: {type(exc).__name__}: {exc}"
                    )

    # ------------------------------------------------------------ what clients ask

    def start(self, spec: SweepSpec) -> SweepRecord:
        """Check ``spec`` against its worker, create its study (or join the one of that name another
        daemon plays) and its directory, record it and begin.

        Raises:
            ConfigError: a field of the spec, or a trial's config, is wrong (named); so is a storage
                inside the home other than a sweep's own study file.
            StudyError: the storage cannot be opened, or its study of that name was made from
                another spec (the difference named) or not by a gym_gui sweep.
        """
        if spec.storage is not None:
            check_storage(spec.storage, self.home)
        launcher = self.supervisor.launchers.get(spec.config.worker)
        if isinstance(launcher, HelperOwner):
            launcher.prepare(spec.config)  # warm while the spec is checked and the study made
        self._check(spec)
        now = time.time()
        with self._lock:
            sweep_id = make_sweep_id(spec.label(), int(now), exists=self._taken)
            directory = self.home.sweep_dir(sweep_id)
            directory.mkdir(parents=True)
            try:
                url = spec.storage or f"sqlite:///{directory / STUDY_FILE}"
                spec = spec.model_copy(update={"storage": url, "study": spec.study or sweep_id})
                assert spec.study is not None
                study = SweepStudy(spec, url, spec.study, sweep_id, home_id=self.home_id, create=True)
                write_spec(directory, spec)
                record = SweepRecord(
                    sweep_id=sweep_id,
                    name=spec.label(),
                    state=SweepState.RUNNING,
                    directory=str(directory),
                    storage=redact_url(url),
                    study=spec.study,
                    spec=_shown_spec(spec),
                    created_at=now,
                )
                self.registry.create_sweep(record)
            except BaseException:
                shutil.rmtree(directory, ignore_errors=True)
                raise
            self._active[sweep_id] = ActiveSweep(
                sweep_id=sweep_id,
                spec=spec,
                url=url,
                study=study,
                parallel=min(spec.parallel, self.supervisor.settings.max_concurrent),
            )
            log.info(
                "sweep %s: %s study %s in %s",
                sweep_id,
                "joined the" if study.joined else "started with the",
                spec.study,
                record.storage,
            )
        self._wake.set()
        return record

    def stop(self, sweep_id: str) -> SweepRecord:
        """No new trials; the running trials' runs are cancelled; the sweep ends STOPPED once they have.

        Raises:
            SweepNotFound: no such sweep.
            RunBusy: it has already ended.
        """
        with self._lock:
            record = self.registry.sweep(validate_sweep_id(sweep_id))
            sweep = self._active.get(sweep_id)
            if sweep is None or record.state.ended:
                raise RunBusy(f"sweep {sweep_id} already ended ({record.state})")
            sweep.stopping = True
            record = self.registry.set_sweep_state(sweep_id, SweepState.STOPPING, "stopped by user")
            self._cancel_runs(sweep)
        self._wake.set()
        return record

    def sweeps(self) -> list[SweepRecord]:
        return self.registry.sweeps()

    def get(self, sweep_id: str) -> SweepDetail:
        """The sweep's row and its study as it is now.

        Raises:
            SweepNotFound: no such sweep.
        """
        record = self.registry.sweep(validate_sweep_id(sweep_id))
        try:
            with self._lock:  # the sweep driver's lock: its study is used by one thread at a time
                active = self._active.get(sweep_id)
                # A running sweep is read through its open study: opening its storage again costs
                # ~0.1 s of the daemon's CPU, and a window or a script watching it asks every few
                # tenths of a second.
                view = active.study.view() if active is not None else None
            if view is None:
                spec = read_spec(self.home.sweep_dir(sweep_id))
                assert spec.storage is not None
                view = read_study(spec.storage, record.study)
            study: dict[str, Any] = view.to_data()
        except GymGuiError as exc:
            study = {"error": str(exc)}
        return SweepDetail(record=record, study=study)

    def resume(self) -> None:
        """Take up the sweeps an earlier daemon left running or stopping (after the runs were
        reconciled, before the loop starts): trials whose runs are gone are told FAIL, the others
        watched again, and new trials asked until the count is reached."""
        for record in self.registry.sweeps(SweepState.RUNNING, SweepState.STOPPING):
            try:
                spec = read_spec(self.home.sweep_dir(record.sweep_id))
                assert spec.storage is not None and spec.study is not None
                study = SweepStudy(
                    spec, spec.storage, spec.study, record.sweep_id, home_id=self.home_id, create=False
                )
            except GymGuiError as exc:
                self.registry.set_sweep_state(record.sweep_id, SweepState.FAILED, f"cannot resume it: {exc}")
                continue
            sweep = ActiveSweep(
                sweep_id=record.sweep_id,
                spec=spec,
                url=spec.storage,
                study=study,
                parallel=min(spec.parallel, self.supervisor.settings.max_concurrent),
                stopping=record.state is SweepState.STOPPING,
            )
            runs: dict[int, list[str]] = {}
            for run in self.registry.sweep_runs(record.sweep_id):
                if run.trial is not None:
                    runs.setdefault(run.trial, []).append(run.run_id)
            for trial in study.own_running_trials():
                ids = runs.get(trial.number)
                if not ids:
                    study.tell_failed(trial.number, "its runs were lost when the daemon stopped")
                    continue
                sweep.inflight[trial.number] = ids
                if trial.intermediate_values:
                    sweep.marks[trial.number] = max(trial.intermediate_values)
                reason = trial.user_attrs.get(TRIAL_PRUNED_ATTR)
                if isinstance(reason, str):
                    sweep.pruning[trial.number] = reason
            with self._lock:
                self._active[record.sweep_id] = sweep
            log.info("sweep %s: resumed with %d trials in flight", record.sweep_id, len(sweep.inflight))

    # ------------------------------------------------------------ driving one sweep

    def _step(self, sweep: ActiveSweep) -> None:
        for number, run_ids in list(sweep.inflight.items()):
            records = [self.registry.get(run_id) for run_id in run_ids]
            if all(record.state.terminal for record in records):
                self._settle(sweep, number, records)
                del sweep.inflight[number]
                sweep.marks.pop(number, None)
                sweep.pruning.pop(number, None)
            elif number in sweep.pruning:
                for record in records:
                    if not record.state.terminal:
                        self.supervisor.prune(record.run_id, sweep.pruning[number])
            elif sweep.spec.pruner.name != "none":
                self._report(sweep, number, records)
        if sweep.stopping:
            if not sweep.inflight:
                self._end(sweep, SweepState.STOPPED, "stopped by user")
            return
        while len(sweep.inflight) < sweep.parallel and not sweep.study.grid_exhausted():
            if not self._play(sweep):
                break
        if not sweep.inflight:
            asked, here = sweep.study.counts()
            done = "every point of the grid played" if asked < sweep.spec.trials else f"{asked} trials played"
            if here < asked:
                done += f", {here} of them by this daemon"
            self._end(sweep, SweepState.COMPLETED, done)

    def _play(self, sweep: ActiveSweep) -> bool:
        """Ask a trial and submit its runs (one per seed); False when the study (which other daemons
        may share) already holds the spec's count of trials."""
        spec = sweep.spec
        trial = sweep.study.ask_within(spec.trials)
        if trial is None:
            return False
        number = trial.number
        assert spec.study is not None
        link = TrialLink(sweep.sweep_id, number, redact_url(sweep.url), spec.study)
        base = spec.config.model_dump(mode="json")
        run_ids: list[str] = []
        try:
            for k in range(spec.seeds):
                data = {**base, "params": {**base["params"], **trial.params}}
                if spec.config.seed is not None:
                    data["seed"] = spec.config.seed + k
                record, _token, _plan = self.supervisor.submit(parse_run_config(data), trial=link)
                run_ids.append(record.run_id)
                sweep.study.set_runs(number, run_ids)
        except GymGuiError as exc:
            for run_id in run_ids:
                with contextlib.suppress(GymGuiError):
                    self.supervisor.cancel(run_id)
            sweep.study.tell_failed(number, f"its run could not be submitted: {exc}")
            log.warning("sweep %s: trial %d not played: %s", sweep.sweep_id, number, exc)
            return True
        sweep.inflight[number] = run_ids
        log.info(
            "sweep %s: trial %d plays %s with %s", sweep.sweep_id, number, ", ".join(run_ids), trial.params
        )
        return True

    def _report(self, sweep: ActiveSweep, number: int, records: list[RunRecord], final: bool = False) -> None:
        """Report the first objective at each step mark the trial's runs have passed; prune when told to.

        A mark is reported once every run's points have gone past it (or the run has ended), the
        value at a mark being the aggregate of the points up to it, averaged over the seeds. Marks
        fall on the same steps in every trial, which is where Optuna's pruners compare trials.
        ``final``: the runs have ended; report every mark left, to compare later trials with.
        """
        spec = sweep.spec
        objective = spec.objective[0]
        every = report_steps(spec)
        points = [metric_points(self._telemetry(r.run_id), objective.metric) for r in records]
        last = [run[-1].step if run else -1 for run in points]
        if final:
            reach = max(last)
        else:
            reach = min(step for step, record in zip(last, records, strict=True) if not record.state.terminal)
        mark = sweep.marks.get(number, 0) + every
        while mark <= reach:
            values = [aggregate(objective, [p for p in run if p.step <= mark]) for run in points]
            if any(value is None for value in values):
                break
            value = sum(v for v in values if v is not None) / len(values)
            prune = sweep.study.report(number, value, mark)
            sweep.marks[number] = mark
            if prune and not final:
                reason = (
                    f"pruned by the {pruner_label(spec)} pruner at step {mark}: "
                    f"{objective.label} was {value:.6g}"
                )
                sweep.pruning[number] = reason
                sweep.study.set_attr(number, TRIAL_PRUNED_ATTR, reason)
                for record in records:
                    if not record.state.terminal:
                        self.supervisor.prune(record.run_id, reason)
                log.info("sweep %s: trial %d %s", sweep.sweep_id, number, reason)
                return
            mark += every

    def _settle(self, sweep: ActiveSweep, number: int, records: list[RunRecord]) -> None:
        """Tell the study how a trial whose runs have all ended went."""
        study = sweep.study
        pruned = [r for r in records if r.state is RunState.PRUNED]
        if pruned or number in sweep.pruning:
            study.set_reason(number, pruned[0].reason if pruned else sweep.pruning[number])
            study.tell_pruned(number)
            return
        for record in records:
            if record.state is not RunState.COMPLETED:
                study.tell_failed(number, f"run {record.run_id} {record.state.value}: {record.reason}")
                return
        per_run = [run_values(sweep.spec, self._telemetry(r.run_id)) for r in records]
        values: list[float] = []
        for i, objective in enumerate(sweep.spec.objective):
            column = [values_of_run[i] for values_of_run in per_run]
            missing = [r.run_id for r, v in zip(records, column, strict=True) if v is None]
            if missing:
                study.tell_failed(number, f"run {missing[0]} stored no points of {objective.metric}")
                return
            values.append(sum(v for v in column if v is not None) / len(column))
        if sweep.spec.pruner.name != "none":
            self._report(sweep, number, records, final=True)
        study.tell_complete(number, values)
        log.info("sweep %s: trial %d complete: %s", sweep.sweep_id, number, values)

    def _cancel_runs(self, sweep: ActiveSweep) -> None:
        for run_ids in sweep.inflight.values():
            for run_id in run_ids:
                with contextlib.suppress(RunBusy):
                    self.supervisor.cancel(run_id)

    def _end(self, sweep: ActiveSweep, state: SweepState, reason: str) -> None:
        with contextlib.suppress(GymGuiError):
            self.registry.set_sweep_state(sweep.sweep_id, state, reason)
        self._active.pop(sweep.sweep_id, None)
        sweep.study.close()
        log.info("sweep %s: %s (%s)", sweep.sweep_id, state, reason)

    def _check(self, spec: SweepSpec) -> None:
        """The search space against the worker's description, and one trial's config as the daemon
        would submit it (its first values), checked as a submit checks it."""
        config = spec.config
        launcher = self.supervisor.launchers.get(config.worker)
        if launcher is None:
            known = ", ".join(sorted(self.supervisor.launchers)) or "none"
            raise ConfigError(
                f"sweep spec: field 'config.worker': {config.worker!r} is no worker the daemon launches ({known})"
            )
        query = {ONLY: PARAMETERS, **({"algorithm": config.algorithm} if config.algorithm else {})}
        check_space(spec, launcher.describe(query))
        first = {
            name: dist.choices[0] if isinstance(dist, Choices) else dist.low
            for name, dist in spec.space.items()
        }
        data = config.model_dump(mode="json")
        data["params"] = {**data["params"], **first}
        try:
            self.supervisor.preview(parse_run_config(data))
        except ConfigError as exc:
            raise ConfigError(f"sweep spec: a trial's config is refused: {exc}") from None

    def _taken(self, sweep_id: str) -> bool:
        return self.registry.sweep_taken(sweep_id) or self.home.sweep_dir(sweep_id).exists()

    def _telemetry(self, run_id: str) -> Any:
        return RunDir(self.home.run_dir(run_id)).telemetry_path


def report_steps(spec: SweepSpec) -> int:
    """Every how many steps a trial's objective so far is reported to its pruner."""
    if spec.pruner.report_steps is not None:
        return spec.pruner.report_steps
    budget = spec.config.budget
    if budget.timesteps:
        return max(1, budget.timesteps // 10)
    return max(1, (budget.episodes or 10) // 10)


def _shown_spec(spec: SweepSpec) -> str:
    data = json.loads(spec.model_dump_json())
    if spec.storage:
        data["storage"] = redact_url(spec.storage)
    return json.dumps(data)
