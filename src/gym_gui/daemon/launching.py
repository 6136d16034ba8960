"""Launching a run's worker: its kind's plan, its bundle, its environment, the manifest, the executor."""

from __future__ import annotations

import dataclasses
import logging
import secrets
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gym_gui_sdk import (
    ENV_DAEMON_ADDRESS,
    ENV_FAMILY_MODULE,
    ENV_RUN_DIR,
    ENV_RUN_ID,
    ENV_RUN_TOKEN,
    ENV_TLS_CA,
)

from gym_gui.core.errors import ConfigError, GymGuiError, StorageError
from gym_gui.core.records import BundleProgress, LaunchPreview
from gym_gui.core.rerun import PackageChange, package_changes
from gym_gui.core.states import RunState
from gym_gui.core.workers import Launch
from gym_gui.daemon.ending import Ending
from gym_gui.daemon.executors import Executor, LaunchSpec
from gym_gui.daemon.live import LiveRun, LiveRuns, token_digest
from gym_gui.daemon.preview import launch_preview
from gym_gui.datasets import MINARI_ROOT_VAR
from gym_gui.envs.catalog import env_environment, env_module
from gym_gui.storage.run_dir import RunDir
from gym_gui.workers import (
    BundleDirectory,
    InterpreterChooser,
    LaunchContext,
    LaunchPlan,
    WorkerCatalog,
    WorkerLauncher,
)
from gym_gui.workers.bundles import app_environment
from gym_gui.workers.process_env import worker_base_env

if TYPE_CHECKING:
    from gym_gui.daemon.ray_jobs import RayExecutor

log = logging.getLogger(__name__)


class Launching:
    """Turns a run that may start into a running worker process.

    The run goes to STARTING at once; its command is resolved on a thread of its own (a
    launcher may ask its bundle, which takes seconds) by the launcher its kind's plugin gives;
    the plan goes into the manifest, and the executor starts it with the worker's environment.
    A dry run stops before the executor and shows its plan as an event. A missing bundle is
    installed on first use, every waiting run told how it goes.
    """

    def __init__(
        self,
        runs: LiveRuns,
        ending: Ending,
        executor: Executor,
        address: str,
        catalog: WorkerCatalog,
        bundles: BundleDirectory,
        thread_env: dict[str, str],
        tls_ca: str | None = None,
    ) -> None:
        self.runs = runs
        self.thread_env = thread_env
        self.tls_ca = tls_ca
        # The CA certificate as PEM text, for workers on other machines (they cannot read this path).
        self.tls_ca_text = Path(tls_ca).read_text(encoding="ascii") if tls_ca else None
        self.ending = ending
        self.executor = executor
        self.address = address
        self.catalog = catalog
        self.bundles = bundles
        context = LaunchContext(runs.home, bundles)
        # The launcher of every kind whose runs this daemon starts, built once from its plugin.
        self.launchers: dict[str, WorkerLauncher] = {}
        for plugin in catalog.plugins():
            launcher = plugin.launcher(context) if plugin.spec.available else None
            if launcher is not None:
                self.launchers[plugin.kind] = launcher
        self._installing: set[str] = set()
        self._ray: dict[str, RayExecutor] = {}  # a Ray executor per head address, connected on first use

    def launcher(self, kind: str) -> WorkerLauncher:
        launcher = self.launchers.get(kind)
        if launcher is None:
            raise ConfigError(f"worker {kind!r} cannot be launched by the daemon")
        return launcher

    def begin(self, run: LiveRun, reason: str) -> None:
        """STARTING, then resolve the command outside the lock (it may ask a bundle) and start it."""
        run.launching = True
        self.runs.open_writer(run)
        self.runs.transition(run, RunState.STARTING, reason)
        threading.Thread(target=self._prepare, args=(run,), name=f"launch-{run.run_id}", daemon=True).start()

    def dry_run(self, run: LiveRun) -> LaunchPreview | None:
        """STARTING, then resolve the command here and record it without starting anything; returns
        the plan (None when it could not be resolved: the run failed, saying why)."""
        run.launching = True
        self.runs.open_writer(run)
        self.runs.transition(run, RunState.STARTING, "dry-run: resolving the command")
        return self._prepare(run)

    def preview(self, run: LiveRun) -> LaunchPreview:
        """The plan ``run`` (never stored) would get, as a dry run would show it.

        Raises:
            GymGuiError: the launcher's refusal, naming the field.
        """
        plan = self.launcher(run.config.worker).plan(run.run_id, run.config, run.run_dir, run.secret_env)
        preview = self._preview(run, plan, *self._launch_env(run, plan))
        packages = self._environment(run, plan)["packages"]
        changes: list[PackageChange] = []
        if run.config.rerun_of is not None:
            original = RunDir(self.runs.home.run_dir(run.config.rerun_of)).read_manifest()
            changes = package_changes(original.environment.packages, packages)
        return dataclasses.replace(preview, packages=packages, package_changes=changes)

    def _environment(self, run: LiveRun, plan: LaunchPlan) -> dict[str, Any]:
        """The interpreter the run's worker runs in and its package set, as its manifest records it
        (and a re-run's drift check compares): its launcher's word, else its kind's bundle's (its
        ``pip freeze``, kept until the bundle is installed again), else gym_gui's own.

        Raises:
            BundleError: the bundle's ``pip freeze`` failed.
        """
        environment = plan.manifest.get("environment")
        if isinstance(environment, dict) and isinstance(environment.get("packages"), list):
            return {**environment, "packages": [str(line) for line in environment["packages"]]}
        bundle = self._bundle_of(run)
        launcher = self.launchers.get(run.config.worker)
        own = isinstance(launcher, InterpreterChooser) and not launcher.uses_bundle(run.config)
        if bundle is not None and not own and self.bundles.installed(bundle):
            python = self.bundles.python(bundle)
            return {"bundle": bundle, "python": str(python), "packages": self.bundles.freeze(bundle)}
        return app_environment(run.spec.bundle).model_dump()

    def executor_for(self, run: LiveRun) -> Executor:
        """The executor ``run``'s config names: this daemon's own, or a Ray head's (reached now).

        Raises:
            ConfigError: the Ray extra is missing or the head does not answer, naming its address.
        """
        options = run.config.executor
        return self.executor if options.kind == "local" else self.ray_executor(options.ray_url)

    def ray_executor(self, address: str) -> RayExecutor:
        """The executor of the Ray head at ``address``: connected on first use, then kept (runs
        launched and runs a restarted daemon takes up again share it).

        Raises:
            ConfigError: the Ray extra is missing or the head does not answer, naming its address.
        """
        executor = self._ray.get(address)
        if executor is None:
            from gym_gui.daemon.ray_jobs import RayExecutor

            executor = self._ray.setdefault(address, RayExecutor(address, self.tls_ca_text))
        return executor

    def _prepare(self, run: LiveRun) -> LaunchPreview | None:
        """Resolve a run's command and start it; a dry run instead records the plan and returns it."""
        lock = self.runs.lock
        finish = self.ending.finish
        try:
            plan = self.launcher(run.config.worker).plan(run.run_id, run.config, run.run_dir, run.secret_env)
            environment = self._environment(run, plan)  # out of the lock: a first pip freeze takes a second
            executor = self.executor if run.config.dry_run else self.executor_for(run)
        except GymGuiError as exc:
            with lock:
                finish(run, RunState.FAILED, f"not launched: {exc}")
            return None
        except Exception as exc:  # a launcher bug must fail the run, never the daemon
            log.exception("run %s: resolving its command failed", run.run_id)
            with lock:
                finish(run, RunState.FAILED, f"not launched: {type(exc).__name__}: {exc}")
            return None
        with lock:
            if run.finalized:
                return None
            env, worker_secrets = self._launch_env(run, plan)
            if run.manifest is not None:
                try:
                    run.manifest.update(
                        command=plan.argv,
                        cwd=str(run.run_dir),
                        extras=plan.extras.to_json(),
                        **{**plan.manifest, "environment": environment},
                    )
                except StorageError as exc:
                    finish(run, RunState.FAILED, f"not launched: {exc}")
                    return None
            for warning in plan.warnings:
                self.runs.event(run, "WARNING", warning)
            if run.config.dry_run:
                preview = self._preview(run, plan, env, worker_secrets)
                self.runs.event(
                    run,
                    "INFO",
                    "dry run: nothing launched",
                    kind="dry-run",
                    data={
                        "argv": preview.argv,
                        "cwd": preview.cwd,
                        "env": preview.env,
                        "display": preview.display,
                        **plan.manifest,
                        "extras": plan.extras.to_json(),
                    },
                )
                finish(run, RunState.COMPLETED, "dry-run")
                return preview
            if run.cancel_requested_at is not None:
                finish(run, RunState.CANCELLED, "cancelled by user before it started")
                return None
            self._start_process(run, plan.argv, env, executor)
            return None

    def _launch_env(self, run: LiveRun, plan: LaunchPlan) -> tuple[dict[str, str], dict[str, str]]:
        """The worker's whole environment, and the run's secrets that reach it."""
        worker_secrets = run.secret_env if plan.secrets is None else plan.secrets
        return {**self._worker_env(run), **plan.env, **worker_secrets}, dict(worker_secrets)

    def _preview(
        self, run: LiveRun, plan: LaunchPlan, env: dict[str, str], worker_secrets: dict[str, str]
    ) -> LaunchPreview:
        bundle_dirs = {name: self.bundles.path(name) for name in self.catalog.bundles()}
        return launch_preview(run.run_id, plan, run.run_dir, env, worker_secrets, bundle_dirs)

    def _worker_env(self, run: LiveRun) -> dict[str, str]:
        env = worker_base_env(self.thread_env)
        env.update(
            {
                ENV_DAEMON_ADDRESS: self.address,
                ENV_RUN_ID: run.run_id,
                ENV_RUN_TOKEN: run.token,
                ENV_RUN_DIR: str(run.run_dir),
                "GYM_GUI_HOME": str(self.runs.home.root),
            }
        )
        # What the env's family needs to make and draw it there: its variables (MuJoCo renders through
        # EGL) and the module that registers its ids.
        env.update(env_environment(run.config.env_id))
        module = env_module(run.config.env_id)
        if module is not None:
            env[ENV_FAMILY_MODULE] = module
        if run.config.dataset is not None:
            env[MINARI_ROOT_VAR] = str(self.runs.home.datasets_dir)
        if self.tls_ca:
            env[ENV_TLS_CA] = self.tls_ca
        return env

    def _start_process(self, run: LiveRun, argv: list[str], env: dict[str, str], executor: Executor) -> None:
        files = RunDir(run.run_dir)
        options = run.config.executor
        claim = secrets.token_urlsafe(32) if executor.remote else ""
        if executor.remote and self.tls_ca_text:
            env = {**env, ENV_TLS_CA: self.tls_ca_text}
        spec = LaunchSpec(
            run_id=run.run_id,
            argv=argv,
            cwd=run.run_dir,
            env=env,
            stdout_path=files.worker_stdout_log,
            stderr_path=files.worker_stderr_log,
            secret_keys=frozenset(run.secret_env),
            claim=claim,
            cpus=options.cpus,
            gpus=options.gpus,
        )
        run.secret_env = {}
        if claim:
            run.pending_launch = spec
            run.claim_hash = token_digest(claim)
        run.launched_at = time.monotonic()
        try:
            run.process = executor.launch(spec)
        except OSError as exc:
            run.pending_launch = None
            run.claim_hash = ""
            self.ending.finish(run, RunState.FAILED, f"could not start the worker: {exc}")
            return
        finally:
            run.launching = False
        self.runs.registry.set_process(run.run_id, run.process.pid)
        if run.manifest is not None and run.process.pid is None:
            try:
                run.manifest.update(executor=run.process.handle)
            except StorageError as exc:
                log.error("run %s: its executor's handle is not in its manifest: %s", run.run_id, exc)

    # ------------------------------------------------------------ bundles

    def bundle_ready(self, run: LiveRun, then: Callable[[], None]) -> bool:
        """Whether the bundle a run's worker needs is there; if not, install it and call ``then`` after."""
        bundle = self._bundle_of(run)
        launcher = self.launchers.get(run.config.worker)
        own = isinstance(launcher, InterpreterChooser) and not launcher.uses_bundle(run.config)
        if bundle is None or own or self.bundles.installed(bundle):
            return True
        self._install_bundle(bundle, then)
        return False

    def _bundle_of(self, run: LiveRun) -> str | None:
        """The bundle a run's worker needs installed, or None when it runs in gym_gui's environment."""
        bundle = self.catalog.plugin(run.config.worker).bundle
        return bundle.name if bundle is not None else None

    def _install_bundle(self, name: str, then: Callable[[], None]) -> None:
        """Create a worker bundle on first use, telling every run that waits for it how it goes."""
        if name in self._installing:
            return
        self._installing.add(name)

        def waiting() -> list[LiveRun]:
            return [
                run
                for run in self.runs.all()
                if not run.launching
                and not run.finalized
                and run.spec.launch is Launch.DAEMON
                and self._bundle_of(run) == name
            ]

        def progress(update: BundleProgress) -> None:
            level = "ERROR" if update.phase == "failed" else "INFO"
            for run in waiting():
                # Viewers read the fields (step, total, phase, message) from the event's data.
                message = f"worker bundle {name}: {update.text()}"
                self.runs.event(run, level, message, kind="bundle", data=update.data())

        def install() -> None:
            try:
                self.bundles.install(name, progress=progress)
            except GymGuiError as exc:
                log.error("bundle %s: %s", name, exc)
                progress(BundleProgress(name, 0, 0, "failed", str(exc)))
                with self.runs.lock:
                    for run in waiting():
                        if self.runs.registry.get(run.run_id).state is RunState.QUEUED:
                            self.runs.transition(
                                run, RunState.FAILED, f"worker bundle {name} could not be installed: {exc}"
                            )
                            self.runs.remove(run.run_id)
            finally:
                self._installing.discard(name)
            then()

        log.info("installing worker bundle %s on first use", name)
        threading.Thread(target=install, name=f"bundle-{name}", daemon=True).start()
