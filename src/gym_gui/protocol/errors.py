"""How gym_gui errors cross the wire: one status code per error kind, and back."""

from __future__ import annotations

import grpc

from gym_gui.core import errors

_CODES: tuple[tuple[type[errors.GymGuiError], grpc.StatusCode], ...] = (
    (errors.DiskFull, grpc.StatusCode.RESOURCE_EXHAUSTED),
    (errors.ConfigError, grpc.StatusCode.INVALID_ARGUMENT),
    (errors.InvalidRunId, grpc.StatusCode.INVALID_ARGUMENT),
    (errors.UnknownEnv, grpc.StatusCode.INVALID_ARGUMENT),
    (errors.RunNotFound, grpc.StatusCode.NOT_FOUND),
    (errors.SweepNotFound, grpc.StatusCode.NOT_FOUND),
    (errors.RunBusy, grpc.StatusCode.FAILED_PRECONDITION),
    (errors.IllegalTransition, grpc.StatusCode.FAILED_PRECONDITION),
)


class DaemonError(errors.GymGuiError):
    """The daemon answered with an error, or could not be reached."""

    def __init__(self, message: str, code: grpc.StatusCode | None = None) -> None:
        super().__init__(message)
        self.code = code


def status_code_for(exc: errors.GymGuiError) -> grpc.StatusCode:
    for kind, code in _CODES:
        if isinstance(exc, kind):
            return code
    return grpc.StatusCode.FAILED_PRECONDITION


def error_from_rpc(exc: grpc.RpcError) -> errors.GymGuiError:
    """The gym_gui error a failed call stands for, with the daemon's own message."""
    code = exc.code() if hasattr(exc, "code") else None
    details = (exc.details() if hasattr(exc, "details") else None) or str(exc)
    if code == grpc.StatusCode.NOT_FOUND:
        return errors.RunNotFound(details)
    if code == grpc.StatusCode.INVALID_ARGUMENT:
        return errors.ConfigError(details)
    if code == grpc.StatusCode.FAILED_PRECONDITION:
        return errors.RunBusy(details)
    if code == grpc.StatusCode.RESOURCE_EXHAUSTED and details.startswith("disk full:"):
        # gRPC says RESOURCE_EXHAUSTED of its own too (a message over the size limit).
        return errors.DiskFull(details)
    if code == grpc.StatusCode.UNAVAILABLE:
        return DaemonError(f"the gym_gui daemon is not reachable: {details}", code)
    if code == grpc.StatusCode.UNAUTHENTICATED:
        return DaemonError(f"the daemon refused the call: {details}", code)
    return DaemonError(f"daemon error ({code.name if code else 'unknown'}): {details}", code)
