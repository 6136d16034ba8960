"""The fixed entry point of a worker started on another machine (a Ray job).

The job's entrypoint is always ``python -m gym_gui_sdk.launcher``: nothing of the run is in it.
The launcher claims its run's command from the daemon over gRPC with a one-time claim token
(spent on first use), starts the worker from that argument list in its own session, copies the
worker's stdout and stderr both to the run's log files (when the run directory is reachable:
a shared home) and to its own (the job's logs), passes SIGTERM on to the worker's process
group, and exits with the worker's exit code (128 + N when signal N ended it).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import threading
from typing import IO

import grpc

from gym_gui_sdk import ENV_DAEMON_ADDRESS, ENV_LAUNCH_CLAIM, ENV_RUN_ID, ENV_TLS_CA
from gym_gui_sdk import trainer_pb2 as pb
from gym_gui_sdk import trainer_pb2_grpc as pb_grpc
from gym_gui_sdk.channel import WorkerError, open_channel

# Variables the node itself sets for the job that the worker keeps: Ray sizes OMP_NUM_THREADS to
# the job's CPUs and CUDA_VISIBLE_DEVICES to its GPUs.
NODE_ENV = ("OMP_NUM_THREADS", "CUDA_VISIBLE_DEVICES")


def claim(address: str, run_id: str, claim_token: str, tls_ca: str | None) -> pb.ClaimLaunchResponse:
    """The run's command, claimed once from the daemon at ``address``.

    Raises:
        WorkerError: the daemon is unreachable or refuses the claim.
    """
    channel = open_channel(address, tls_ca)
    try:
        stub = pb_grpc.WorkerServiceStub(channel)
        return stub.ClaimLaunch(
            pb.ClaimLaunchRequest(run_id=run_id),
            metadata=(("authorization", f"Bearer {claim_token}"),),
            timeout=30,
        )
    except grpc.RpcError as exc:
        details = exc.details() if hasattr(exc, "details") else str(exc)
        raise WorkerError(
            f"daemon at {address} refused the launch claim of run {run_id}: {details}"
        ) from None
    finally:
        channel.close()


def _copy(source: IO[bytes], sinks: list[IO[bytes]]) -> None:
    for chunk in iter(lambda: source.read1(65536), b""):  # type: ignore[attr-defined]
        for sink in sinks:
            with contextlib.suppress(OSError, ValueError):
                sink.write(chunk)
                sink.flush()


def _log_file(path: str) -> IO[bytes] | None:
    # The run's directory is only there on a node that shares the daemon's home.
    if not path or not os.path.isdir(os.path.dirname(path)):
        return None
    try:
        return open(path, "ab")
    except OSError:
        return None


def run(launch: pb.ClaimLaunchResponse) -> int:
    """Start the worker ``launch`` describes and wait for it; its exit code (128 + N: signal N)."""
    env = dict(launch.env)
    env.update({key: os.environ[key] for key in NODE_ENV if key in os.environ})
    outputs = [(launch.stdout_path, sys.stdout.buffer), (launch.stderr_path, sys.stderr.buffer)]
    files = [_log_file(path) for path, _own in outputs]
    worker = subprocess.Popen(
        list(launch.argv),
        cwd=launch.cwd if os.path.isdir(launch.cwd) else None,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
        close_fds=True,
    )

    def forward(signum: int, _frame: object) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(worker.pid, signum)

    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)
    copies = []
    for pipe, (_path, own), file in zip((worker.stdout, worker.stderr), outputs, files, strict=True):
        assert pipe is not None
        sinks = [own] if file is None else [file, own]
        copy = threading.Thread(target=_copy, args=(pipe, sinks), daemon=True)
        copy.start()
        copies.append(copy)
    code = worker.wait()
    for copy in copies:
        copy.join(timeout=10)
    for file in files:
        if file is not None:
            file.close()
    return 128 - code if code < 0 else code


def main() -> int:
    claim_token = os.environ.pop(ENV_LAUNCH_CLAIM, "")
    address = os.environ.get(ENV_DAEMON_ADDRESS, "")
    run_id = os.environ.get(ENV_RUN_ID, "")
    if not (claim_token and address and run_id):
        print(
            f"gym_gui launcher: {ENV_DAEMON_ADDRESS}, {ENV_RUN_ID} and {ENV_LAUNCH_CLAIM} must be set",
            file=sys.stderr,
        )
        return 2
    try:
        launch = claim(address, run_id, claim_token, os.environ.get(ENV_TLS_CA) or None)
    except WorkerError as exc:
        print(f"gym_gui launcher: {exc}", file=sys.stderr)
        return 2
    if not shutil.which(launch.argv[0]) and not os.path.exists(launch.argv[0]):
        print(
            f"gym_gui launcher: {launch.argv[0]} is not on this node (install the bundle at the same path)",
            file=sys.stderr,
        )
        return 2
    return run(launch)


if __name__ == "__main__":
    sys.exit(main())
