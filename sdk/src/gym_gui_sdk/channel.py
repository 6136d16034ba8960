"""The channel to the daemon: message limits, channel and server options, plaintext or TLS.

Light on purpose (gRPC only): the courier process imports it, and its start-up is the time a worker's
first messages wait in its pipe.
"""

from __future__ import annotations

import grpc

# The largest message the daemon takes from a worker or client: a batch past it fails the run (gRPC
# refuses it). With the daemon's bound on what a run may have queued, it bounds what one run's
# stream holds in the daemon's memory.
MAX_MESSAGE_BYTES = 8 * 1024 * 1024
# The largest message the daemon sends (a long list of runs, a viewer's batches).
MAX_REPLY_BYTES = 64 * 1024 * 1024


class WorkerError(RuntimeError):
    """The worker cannot go on talking to the daemon (rejected, disconnected or misconfigured)."""


def channel_options() -> list[tuple[str, int]]:
    """A worker's or client's channel to the daemon: sends what the daemon takes, takes what it sends."""
    return [
        ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
        ("grpc.max_receive_message_length", MAX_REPLY_BYTES),
    ]


def open_channel(address: str, tls_ca: str | None = None) -> grpc.Channel:
    """A channel to the daemon at ``address``: plaintext, or TLS trusting only ``tls_ca``.

    ``tls_ca`` is the daemon's CA certificate, as a file's path or as the PEM text itself (a worker
    on another machine is handed the text).

    Raises:
        WorkerError: the CA certificate cannot be read.
    """
    if not tls_ca:
        return grpc.insecure_channel(address, options=channel_options())
    if tls_ca.lstrip().startswith("-----BEGIN"):
        pem = tls_ca.encode()
    else:
        try:
            with open(tls_ca, "rb") as f:
                pem = f.read()
        except OSError as exc:
            raise WorkerError(f"cannot read the daemon's CA certificate {tls_ca}: {exc.strerror}") from None
    credentials = grpc.ssl_channel_credentials(root_certificates=pem)
    return grpc.secure_channel(address, credentials, options=channel_options())


def server_options() -> list[tuple[str, int]]:
    """The daemon's server: the other side of :func:`channel_options`.

    Without bandwidth probing a stream's window stays small until the daemon reads its next message
    (then it opens to that message's size): a stream the daemon holds back (its storage, or every
    run's together, is behind) no longer has messages piled up in the transport. Sixteen runs
    flooding at once left 260–360 MB held by the daemon after they ended with probing, 85–110 MB
    without.
    """
    return [
        ("grpc.max_send_message_length", MAX_REPLY_BYTES),
        ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
        ("grpc.http2.bdp_probe", 0),
    ]


def rpc_status(exc: grpc.RpcError) -> tuple[grpc.StatusCode, str]:
    """The status code and details of a failed call (UNKNOWN and the text of an error that has none)."""
    code = exc.code() if hasattr(exc, "code") else None
    details = exc.details() if hasattr(exc, "details") else None
    return code or grpc.StatusCode.UNKNOWN, details or str(exc)
