"""How a run ends: watching its worker for the end, the verdict on it, and finishing the run."""

from __future__ import annotations

import contextlib
import logging
import time
from dataclasses import dataclass
from pathlib import Path

from gym_gui_sdk.stderr import without_warnings

from gym_gui.core.errors import GymGuiError, StorageError
from gym_gui.core.processes import process_alive
from gym_gui.core.rerun import RERUN_EVENT, compare_returns
from gym_gui.core.states import RunState
from gym_gui.core.workers import Launch
from gym_gui.daemon.executors import signal_group, tail
from gym_gui.daemon.live import Command, LiveRun, LiveRuns, Phase, SupervisorSettings
from gym_gui.storage.event_files import write_event_files
from gym_gui.storage.run_dir import RunDir
from gym_gui.storage.telemetry import TelemetryReader

log = logging.getLogger(__name__)
# The kind of the event a run exporting its TensorBoard event files at its end gets.
TENSORBOARD_EVENT = "tensorboard"

# How long a stream may go on draining into storage after its worker process is gone.
STREAM_DRAIN_SECONDS = 10.0


@dataclass(frozen=True)
class Outcome:
    """The facts a run's end is judged on, gathered once its worker is gone."""

    violation: str = ""  # the protocol or storage failure that stopped the stream, if any
    pruned: str = ""  # why a sweep's pruner stopped it (which pruner, at which step, which value)
    cancel_requested: bool = False
    heartbeat_lost: bool = False
    exit_code: int | None = None  # negative: killed by that signal; None: not known
    reported: int = Phase.PHASE_UNSPECIFIED  # the end the worker reported (COMPLETED, FAILED, CANCELLED)
    reported_message: str = ""
    adopted: bool = False  # started by an earlier daemon, so its exit code cannot be known
    stderr_tail: str = ""  # the end of the worker's stderr log
    executor_end: tuple[RunState, str] | None = None  # what its executor says that no exit code tells

    @classmethod
    def of(cls, run: LiveRun) -> Outcome:
        code = run.exit_code
        failed = code is not None and code != 0
        return cls(
            violation=run.violation,
            pruned=run.pruned,
            cancel_requested=run.cancel_requested_at is not None,
            heartbeat_lost=run.heartbeat_lost,
            exit_code=code,
            reported=run.reported,
            reported_message=run.reported_message,
            adopted=run.orphan_pid is not None,
            stderr_tail=_tail_without_warnings(RunDir(run.run_dir).worker_stderr_log) if failed else "",
            executor_end=run.process.outcome() if run.process is not None else None,
        )


def verdict(outcome: Outcome, heartbeat_timeout: float) -> tuple[RunState, str]:
    """The final state of a run and the reason shown with it; the first rule that applies wins:

    a violation → FAILED with it; a sweep's pruner → PRUNED with its words; a cancel → CANCELLED;
    the executor's own word (a Ray job lost → LOST, failed by Ray → FAILED, stopped on the cluster
    → CANCELLED); a lost heartbeat → FAILED; a non-zero
    exit → FAILED with the exit code or signal and the worker's own message (or else its stderr);
    then the end the worker reported; otherwise FAILED, for it never reported completing.
    """
    code = outcome.exit_code
    if outcome.violation:
        return RunState.FAILED, outcome.violation
    if outcome.pruned:
        return RunState.PRUNED, outcome.pruned
    if outcome.cancel_requested:
        return RunState.CANCELLED, "cancelled by user"
    if outcome.executor_end is not None:
        return outcome.executor_end
    if outcome.heartbeat_lost:
        return RunState.FAILED, f"heartbeat lost: no message for {heartbeat_timeout:.0f}s"
    if code is not None and code != 0:
        how = f"killed by signal {-code}" if code < 0 else f"exit code {code}"
        if outcome.reported == Phase.FAILED and outcome.reported_message:
            # The worker named the cause (e.g. the script's own error line): say that.
            return RunState.FAILED, f"{how}: {outcome.reported_message}"
        return RunState.FAILED, f"{how}: {outcome.stderr_tail}" if outcome.stderr_tail else how
    if outcome.reported == Phase.COMPLETED:
        return RunState.COMPLETED, outcome.reported_message or "completed"
    if outcome.reported == Phase.CANCELLED:
        return RunState.CANCELLED, outcome.reported_message or "stopped by the worker"
    if outcome.reported == Phase.FAILED:
        return RunState.FAILED, outcome.reported_message or "the worker reported a failure"
    if outcome.adopted and code is None:
        return (
            RunState.FAILED,
            "worker ended without reporting completion (exit code unknown: started by an earlier daemon)",
        )
    return RunState.FAILED, "worker exited without reporting completion"


class Ending:
    """Watches each run's worker (exit, heartbeats, cancel grace, registration, its directory) and
    finishes the run.

    Finishing is the last thing that happens to a run: its end is decided once (the first cause
    stands), its telemetry is flushed, its manifest gets its end, the registry its final state;
    only then is its writer closed and its viewers let go. An end that cannot be recorded yet is
    held and tried again on every tick until it is.
    """

    def __init__(self, runs: LiveRuns, settings: SupervisorSettings) -> None:
        self.runs = runs
        self.settings = settings

    def check(self, run: LiveRun, now: float) -> None:
        """One look at a run (under the lock): note its exit, stop it if it must, finish it if it ended."""
        if run.end is not None:
            # Decided earlier but not recorded yet (the registry refused it): try again.
            self.record_end(run)
            return
        settings = self.settings
        if run.process is not None and run.exit_code is None:
            code = run.process.poll()
            if code is not None:
                run.exit_code = code
                run.exited_at = now
        elif run.orphan_pid is not None and run.exited_at is None and not process_alive(run.orphan_pid):
            run.exited_at = now

        if not run.violation and not run.run_dir.is_dir():
            # Its files are gone: nothing it stores from now on could be read, so it stops here.
            run.violation = f"run directory {run.run_dir} was removed while the run was live"
            log.error("run %s: %s", run.run_id, run.violation)
        if run.violation and not run.killed:
            self.kill(run)
        if (
            run.cancel_requested_at is not None
            and not run.killed
            and now - run.cancel_requested_at > settings.cancel_grace
        ):
            self.kill(run)

        if (
            run.stream_open
            and not run.stream_busy
            and not run.heartbeat_lost
            and now - run.last_seen > settings.heartbeat_timeout
        ):
            run.heartbeat_lost = True
            log.warning("run %s: no heartbeat for %.0fs", run.run_id, now - run.last_seen)
            self.kill(run)

        client_driven = run.spec.launch is Launch.CLIENT
        has_worker = client_driven or run.process is not None or run.orphan_pid is not None
        if (
            has_worker
            and not run.ever_streamed
            and not run.heartbeat_lost
            and now - run.launched_at > settings.register_timeout
        ):
            run.heartbeat_lost = True
            run.violation = run.violation or f"worker did not connect within {settings.register_timeout:.0f}s"
            self.kill(run)

        if client_driven:
            ended = (
                (run.ever_streamed and run.stream_done.is_set()) or run.heartbeat_lost or bool(run.violation)
            )
        elif not has_worker and not run.launching:
            # Never launched (still queued): only a violation ends it before it starts.
            ended = bool(run.violation)
        else:
            process_gone = run.exited_at is not None
            # Give the stream a moment to drain into storage after the process is gone.
            stream_settled = not run.stream_open or (
                run.exited_at is not None and now - run.exited_at > STREAM_DRAIN_SECONDS
            )
            ended = process_gone and stream_settled
        if ended:
            state, reason = verdict(Outcome.of(run), settings.heartbeat_timeout)
            self.finish(run, state, reason)

    def kill(self, run: LiveRun) -> None:
        """Stop a run's worker now: STOP on its control stream and SIGKILL to its process group."""
        run.killed = True
        run.send(Command.STOP, reason=run.violation or "stopping")
        if run.process is not None:
            run.process.kill()
        elif run.orphan_pid is not None:
            signal_group(run.orphan_pid, 9)

    def finish(self, run: LiveRun, state: RunState, reason: str) -> None:
        """Decide a run's end as ``state`` (FAILED instead of COMPLETED when its telemetry could not be
        stored) and record it. The first end decided stands: a later call records that one.
        """
        if run.end is None:
            writer = run.writer
            if writer is not None:
                with contextlib.suppress(StorageError):
                    writer.flush(timeout=60)
                if writer.error is not None and state is RunState.COMPLETED:
                    state, reason = RunState.FAILED, f"storage failed: {writer.error}"
            if run.config.rerun_of is not None and not run.config.dry_run:
                self._compare_returns(run, run.config.rerun_of)
            if run.config.tracking.tensorboard_export and not run.config.dry_run:
                self._export_event_files(run)
            run.end = (state, reason)
        self.record_end(run)

    def _compare_returns(self, run: LiveRun, original: str) -> None:
        """Say, as an event of the re-run stored before its end is, whether its episodic returns are
        the original's (:func:`gym_gui.core.rerun.compare_returns`)."""
        data: dict[str, object] = {"rerun_of": original}
        try:
            original_files = RunDir(self.runs.home.run_dir(original))
            if not original_files.path.is_dir():
                raise StorageError(f"run {original} was deleted")
            before = _episodic_returns(original_files, run.spec.return_metric)
            after = _episodic_returns(RunDir(run.run_dir), run.spec.return_metric)
        except GymGuiError as exc:
            message = f"re-run of {original}: its returns cannot be compared: {exc}"
            self.runs.event(run, "WARNING", message, kind=RERUN_EVENT, data=data)
        else:
            comparison = compare_returns(before, after)
            data.update(
                identical=comparison.identical,
                episodes=len(comparison.rerun),
                original_episodes=len(comparison.original),
                first_difference=comparison.first_difference,
            )
            level = "INFO" if comparison.identical else "WARNING"
            message = f"re-run of {original}: {comparison.text()}"
            self.runs.event(run, level, message, kind=RERUN_EVENT, data=data)
        if run.writer is not None:
            with contextlib.suppress(StorageError):
                run.writer.flush(timeout=60)

    def _export_event_files(self, run: LiveRun) -> None:
        """Write the run's episodes and metrics as TensorBoard event files (``tracking.tensorboard_export``),
        once its telemetry is flushed, and say what was written, or why not, as an event of the run."""
        try:
            written = write_event_files(RunDir(run.run_dir))
        except GymGuiError as exc:
            self.runs.event(run, "WARNING", f"no TensorBoard event files: {exc}", kind=TENSORBOARD_EVENT)
        else:
            message = (
                f"TensorBoard event files of {written.episodes} episodes and {written.metric_points} "
                f"metric points written into {written.directory}"
            )
            self.runs.event(run, "INFO", message, kind=TENSORBOARD_EVENT)
        if run.writer is not None:
            with contextlib.suppress(StorageError):
                run.writer.flush(timeout=60)

    def record_end(self, run: LiveRun) -> None:
        """Record a run's decided end: its manifest, then the registry; then let the run go.

        When the registry cannot take it (its disk is full and the space reserve spent, it is
        locked, or anything else fails), the end is held: the run stays live with the reason as its
        warning, and the supervision loop calls this again on its next tick.
        """
        assert run.end is not None
        state, reason = run.end
        # Everything on disk is final before anyone hears the run ended.
        if run.manifest is not None:
            try:
                run.manifest.update(ended_at=time.time(), final_state=state.value)
            except StorageError as exc:
                if not run.held_end:  # said once, not on every try of a held end
                    log.error("run %s: its end is not in its manifest: %s", run.run_id, exc)
        try:
            if not self.runs.registry.get(run.run_id).state.terminal:
                self.runs.transition(run, state, reason, exit_code=run.exit_code)
        except Exception as exc:  # whatever it is, the run must not be forgotten unrecorded
            self._hold(run, exc)
            return
        writer = run.writer
        if writer is not None:
            writer.close()
            run.writer = None
        self.runs.remove(run.run_id)
        self.runs.bus.close_run(run.run_id)
        log.info("run %s: %s (%s)", run.run_id, state.value, reason)

    def _hold(self, run: LiveRun, exc: Exception) -> None:
        assert run.end is not None
        state, reason = run.end
        held = f"{exc}; its end ({state.value}: {reason}) is held until it can be recorded"
        if run.held_end == held:
            return
        run.held_end = held
        # gym_gui's own errors say what went wrong; anything else is a bug, logged with its traceback.
        log.error("run %s: %s", run.run_id, held, exc_info=None if isinstance(exc, GymGuiError) else exc)
        with contextlib.suppress(GymGuiError):
            self.runs.publish_row(run.run_id)


def _tail_without_warnings(log: Path) -> str:
    """The end of a worker's stderr log with its warnings left out: a warning (a library's
    deprecation banner, the last thing a killed script printed) is never why a run failed."""
    return "\n".join(without_warnings(tail(log, 1500).splitlines())).strip()


def _episodic_returns(files: RunDir, metric: str) -> list[float]:
    """A run's episodic returns as stored (:meth:`TelemetryReader.episodic_returns`, of its kind's
    return metric); [] when it stored nothing."""
    if not files.telemetry_path.exists():
        return []
    reader = TelemetryReader(files.telemetry_path)
    try:
        return reader.episodic_returns(metric)
    finally:
        reader.close()
