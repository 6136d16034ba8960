"""A loopback HTTP server in a thread of its own: the ground the fakes of services a user brings (the
Hugging Face Hub, W&B, a chat model's endpoint) stand on, so that the real clients talk HTTP to them."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Self


class LoopbackServer:
    """Serves ``handler`` on 127.0.0.1 at a free port between ``with`` and its end."""

    def __init__(self, handler: type[BaseHTTPRequestHandler], name: str) -> None:
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, name=name, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(10)
