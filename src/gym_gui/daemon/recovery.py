"""After a daemon restart: adopt the runs whose worker still lives, re-queue the queued, LOST the rest."""

from __future__ import annotations

import logging
import secrets
from collections.abc import Callable
from typing import TYPE_CHECKING

from gym_gui.core.errors import GymGuiError, StorageError
from gym_gui.core.processes import process_alive
from gym_gui.core.states import RunState
from gym_gui.daemon.executors import WorkerProcess
from gym_gui.daemon.live import LiveRun, LiveRuns, token_digest
from gym_gui.storage.run_dir import ManifestWriter, RunDir
from gym_gui.workers import WorkerCatalog

if TYPE_CHECKING:
    from gym_gui.daemon.ray_jobs import RayExecutor

log = logging.getLogger(__name__)


def reconcile(runs: LiveRuns, catalog: WorkerCatalog, ray_executor: Callable[[str], RayExecutor]) -> None:
    """Settle the runs an earlier daemon left active or queued (call before the loop starts).

    A run whose worker process is gone becomes LOST; one whose process still lives is adopted,
    waiting for its worker to reconnect with its run token. A run started as a Ray job (its
    manifest names the head and the job) is adopted by asking Ray for that job again; Ray's
    answer (still running, ended, or unknown) then ends it as any Ray run. A queued run is queued again with a
    fresh run token (the earlier one died with the earlier daemon), or FAILED when its worker
    kind or config is gone.
    """
    registry = runs.registry
    home = runs.home
    for record in registry.in_states(*(state for state in RunState if state.active)):
        try:
            spec = catalog.spec(record.worker)
        except GymGuiError as exc:
            runs.transition_id(record.run_id, RunState.LOST, f"daemon restarted and {exc}")
            continue
        job: WorkerProcess | None = None
        if record.pid is None:
            try:
                job = _ray_job(RunDir(home.run_dir(record.run_id)), ray_executor)
            except GymGuiError as exc:
                runs.transition_id(record.run_id, RunState.LOST, f"daemon restarted and {exc}")
                continue
        if job is not None or (record.pid is not None and process_alive(record.pid)):
            try:
                config = RunDir(home.run_dir(record.run_id)).read_config()
            except StorageError as exc:
                runs.transition_id(
                    record.run_id,
                    RunState.LOST,
                    f"daemon restarted and the run's config is unreadable: {exc}",
                )
                continue
            run = LiveRun(
                run_id=record.run_id,
                spec=spec,
                config=config,
                run_dir=home.run_dir(record.run_id),
                token_hash=registry.token_hash(record.run_id) or "",
                process=job,
                orphan_pid=record.pid,
                adopted=True,
                started=record.state is not RunState.STARTING,
            )
            run.manifest = _open_manifest(run)
            runs.open_writer(run)
            runs.add(run)
            log.info(
                "run %s: its worker still runs (%s), waiting for it to reconnect",
                record.run_id,
                job or record.pid,
            )
        else:
            runs.transition_id(
                record.run_id, RunState.LOST, "the worker process vanished while no daemon watched it"
            )
    for record in registry.in_states(RunState.QUEUED):
        try:
            spec = catalog.spec(record.worker)
            config = RunDir(home.run_dir(record.run_id)).read_config()
        except GymGuiError as exc:
            runs.transition_id(
                record.run_id,
                RunState.FAILED,
                f"queued run cannot start after the daemon restarted: {exc}",
            )
            continue
        run = LiveRun(run_id=record.run_id, spec=spec, config=config, run_dir=home.run_dir(record.run_id))
        run.token = secrets.token_urlsafe(32)
        run.token_hash = token_digest(run.token)
        registry.set_token_hash(run.run_id, run.token_hash)
        run.manifest = _open_manifest(run)
        runs.add(run)


def _ray_job(files: RunDir, ray_executor: Callable[[str], RayExecutor]) -> WorkerProcess | None:
    """The Ray job a run's manifest names, watched again through its head's executor (``ray_executor``:
    one per head, however many runs it has); None when it names none.

    Raises:
        ConfigError: its Ray head cannot be reached (naming it).
        StorageError: the manifest is unreadable.
    """
    handle = files.read_manifest().executor
    if handle is None or handle.get("kind") != "ray":
        return None
    return ray_executor(str(handle["ray_address"])).adopt(str(handle["job_id"]))


def _open_manifest(run: LiveRun) -> ManifestWriter | None:
    # A manifest that cannot be opened costs the run its record of artifacts, not its supervision.
    try:
        return RunDir(run.run_dir).open_manifest()
    except StorageError as exc:
        log.error("run %s: its manifest is not kept up to date: %s", run.run_id, exc)
        return None
