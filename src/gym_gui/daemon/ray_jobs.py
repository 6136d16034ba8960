"""The Ray executor: a run's worker as a Ray job (Ray Jobs, over HTTP to the head's dashboard).

Ray is imported here only, on first use: the app works without the ``ray`` extra. The job's
entrypoint is always the same fixed argument list, ``<python> -m gym_gui_sdk.launcher``, joined
with :func:`shlex.join`; its runtime environment holds only what is not secret (the daemon's
address and CA certificate, the run id, a one-time claim token). The launcher claims the run's
argv, cwd and environment from the daemon over gRPC (``ClaimLaunch``), so no secret of a run
ever reaches Ray's job records, dashboard or logs.
"""

from __future__ import annotations

import logging
import re
import shlex
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gym_gui_sdk import ENV_DAEMON_ADDRESS, ENV_LAUNCH_CLAIM, ENV_RUN_ID, ENV_TLS_CA

from gym_gui.core.errors import ConfigError
from gym_gui.core.states import RunState
from gym_gui.daemon.executors import LaunchSpec

if TYPE_CHECKING:
    from ray.job_submission import JobSubmissionClient

log = logging.getLogger(__name__)

LAUNCHER_MODULE = "gym_gui_sdk.launcher"
# How often a job's status is asked, and how long a head may not answer before its run is LOST.
POLL_SECONDS = 1.0
UNREACHABLE_GRACE_SECONDS = 60.0
_EXIT_CODE = re.compile(r"exit code (-?\d+)")


def entrypoint(python: str) -> str:
    """The job's entrypoint: the fixed launcher under ``python``, quoted (never pasted unquoted)."""
    return shlex.join([python, "-m", LAUNCHER_MODULE])


@dataclass(frozen=True)
class JobView:
    """What a job's poll saw: its status (a ``ray.job_submission.JobStatus`` value) and message."""

    status: str
    message: str = ""
    exit_code: int | None = None


class RayJob:
    """A run's Ray job, as the supervisor sees a worker process.

    Its status is asked on a thread of its own every :data:`POLL_SECONDS` (the supervisor's loop
    never waits on the cluster); :meth:`poll` and :meth:`outcome` read the last answer.
    """

    def __init__(self, client: JobSubmissionClient, address: str, job_id: str, grace: float) -> None:
        self.client = client
        self.address = address
        self.job_id = job_id
        self.grace = grace
        self._lock = threading.Lock()
        self._view: JobView | None = None
        self._lost = ""
        self._stopping = False
        self._done = threading.Event()
        threading.Thread(target=self._watch, name=f"ray-{job_id}", daemon=True).start()

    def __repr__(self) -> str:
        return f"Ray job {self.job_id} at {self.address}"

    @property
    def pid(self) -> int | None:
        return None

    @property
    def handle(self) -> dict[str, str]:
        return {"kind": "ray", "ray_address": self.address, "job_id": self.job_id}

    def _watch(self) -> None:
        unreachable_since: float | None = None
        while not self._done.wait(POLL_SECONDS):
            try:
                info = self.client.get_job_info(self.job_id)
            except Exception as exc:  # the client raises RuntimeError/ConnectionError and kin
                text = str(exc)
                if "404" in text or "does not exist" in text:
                    self._end(lost=f"the Ray cluster at {self.address} no longer knows job {self.job_id}")
                    return
                now = time.monotonic()
                unreachable_since = unreachable_since or now
                if now - unreachable_since > self.grace:
                    self._end(
                        lost=f"the Ray head at {self.address} did not answer for {self.grace:.0f}s: {text[:300]}"
                    )
                    return
                continue
            unreachable_since = None
            status = str(getattr(info.status, "value", info.status))
            code = getattr(info, "driver_exit_code", None)
            message = info.message or ""
            if code is None and status == "FAILED":
                found = _EXIT_CODE.search(message)
                code = int(found.group(1)) if found else None
            with self._lock:
                self._view = JobView(status, message, code)
            if status in ("SUCCEEDED", "FAILED", "STOPPED"):
                self._done.set()

    def _end(self, lost: str) -> None:
        with self._lock:
            self._lost = lost
        self._done.set()

    def poll(self) -> int | None:
        """The launcher's exit code once the job ended (128 + N back to -N: killed by signal N)."""
        with self._lock:
            view, lost = self._view, self._lost
        if lost:
            return 1
        if view is None or view.status not in ("SUCCEEDED", "FAILED", "STOPPED"):
            return None
        if view.status == "SUCCEEDED":
            return 0
        code = view.exit_code
        if code is None:
            return -15 if view.status == "STOPPED" else 1
        return 128 - code if code > 128 else code

    def outcome(self) -> tuple[RunState, str] | None:
        """An end no exit code tells: the job lost, failed by Ray itself, or stopped outside gym_gui."""
        with self._lock:
            view, lost, stopping = self._view, self._lost, self._stopping
        if lost:
            return RunState.LOST, lost
        if view is None:
            return None
        if view.status == "STOPPED" and not stopping:
            return RunState.CANCELLED, f"Ray job {self.job_id} was stopped on the cluster, not by gym_gui"
        if view.status == "FAILED" and view.exit_code is None:
            return RunState.FAILED, f"Ray job {self.job_id} failed: {view.message[:500]}"
        return None

    def _stop(self) -> None:
        with self._lock:
            self._stopping = True
        # stop_job asks the job's supervisor to SIGTERM the launcher, which passes it on.
        threading.Thread(target=self._stop_job, name=f"ray-stop-{self.job_id}", daemon=True).start()

    def _stop_job(self) -> None:
        try:
            self.client.stop_job(self.job_id)
        except Exception as exc:
            log.warning("Ray job %s: stop failed: %s", self.job_id, exc)

    def terminate(self) -> None:
        self._stop()

    def kill(self) -> None:
        self._stop()


def connect(address: str, timeout: float = 10.0) -> JobSubmissionClient:
    """A client of the Ray head's job API at ``address`` (its dashboard).

    Raises:
        ConfigError: the ``ray`` extra is not installed, or the head does not answer, naming the address.
    """
    try:
        from ray.job_submission import JobSubmissionClient
    except ImportError:
        raise ConfigError(
            "the Ray executor needs the ray extra: pip install 'gym-gui[ray]' (make install does)"
        ) from None
    try:
        return JobSubmissionClient(address)
    except Exception as exc:
        raise ConfigError(f"cannot reach the Ray head at {address}: {str(exc)[:300]}") from None


class RayExecutor:
    """Starts workers as Ray jobs on the cluster whose head's dashboard is at ``address``."""

    remote = True

    def __init__(self, address: str, tls_ca_pem: str | None = None) -> None:
        self.address = address
        self.tls_ca_pem = tls_ca_pem
        self.client = connect(address)
        self.grace = UNREACHABLE_GRACE_SECONDS

    def launch(self, spec: LaunchSpec) -> RayJob:
        """Submit the launcher for ``spec`` (its claim token set): the run's command stays with the daemon."""
        env_vars = {
            ENV_DAEMON_ADDRESS: spec.env[ENV_DAEMON_ADDRESS],
            ENV_RUN_ID: spec.run_id,
            ENV_LAUNCH_CLAIM: spec.claim,
            "PYTHONUNBUFFERED": "1",
        }
        if self.tls_ca_pem:
            env_vars[ENV_TLS_CA] = self.tls_ca_pem
        resources: dict[str, Any] = {"entrypoint_num_cpus": spec.cpus}
        if spec.gpus:
            resources["entrypoint_num_gpus"] = spec.gpus
        try:
            job_id = self.client.submit_job(
                entrypoint=entrypoint(spec.argv[0]),
                runtime_env={"env_vars": env_vars},
                metadata={"gym_gui_run": spec.run_id},
                **resources,
            )
        except Exception as exc:
            raise OSError(f"the Ray head at {self.address} refused the job: {str(exc)[:300]}") from None
        log.info("run %s: submitted Ray job %s to %s", spec.run_id, job_id, self.address)
        return RayJob(self.client, self.address, job_id, self.grace)

    def adopt(self, job_id: str) -> RayJob:
        """The job an earlier daemon submitted, watched again."""
        return RayJob(self.client, self.address, job_id, self.grace)
