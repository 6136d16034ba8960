"""Token checks on every call: the daemon token for the control plane, a run's token for the worker plane."""

from __future__ import annotations

import secrets
from collections.abc import Callable
from typing import Any

import grpc

_WORKER_SERVICE = "/gym_gui.v1.WorkerService/"


def _token(metadata: tuple[tuple[str, str | bytes], ...] | None) -> str:
    for key, value in metadata or ():
        if key == "authorization":
            text = value.decode() if isinstance(value, bytes) else value
            return text.removeprefix("Bearer ").strip()
    return ""


def _deny(handler: grpc.RpcMethodHandler, message: str) -> grpc.RpcMethodHandler:
    def abort(_request: Any, context: grpc.ServicerContext) -> Any:
        context.abort(grpc.StatusCode.UNAUTHENTICATED, message)

    if handler.request_streaming and handler.response_streaming:
        return grpc.stream_stream_rpc_method_handler(abort)
    if handler.request_streaming:
        return grpc.stream_unary_rpc_method_handler(abort)
    if handler.response_streaming:
        return grpc.unary_stream_rpc_method_handler(abort)
    return grpc.unary_unary_rpc_method_handler(abort)


class TokenInterceptor(grpc.ServerInterceptor):
    """Rejects every call that does not carry a token the daemon knows (UNAUTHENTICATED).

    Control-plane calls need the daemon token from daemon.json. Worker-plane calls need the
    daemon token or a live run's token (the handlers then check it belongs to that run).
    """

    def __init__(self, daemon_token: str, is_worker_token: Callable[[str], bool]) -> None:
        self._daemon_token = daemon_token
        self._is_worker_token = is_worker_token

    def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], grpc.RpcMethodHandler | None],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler | None:
        handler = continuation(handler_call_details)
        if handler is None:
            return None
        token = _token(handler_call_details.invocation_metadata)
        if token and secrets.compare_digest(token, self._daemon_token):
            return handler
        method = handler_call_details.method
        if token and method.startswith(_WORKER_SERVICE) and self._is_worker_token(token):
            return handler
        return _deny(handler, "missing or invalid token" if token else "missing token")
