"""A W&B server on the loopback interface, speaking the part of W&B's protocol the real ``wandb``
client (0.31, its ``wandb-core`` service) uses for one run.

What a run sends, as that client sends it:

- ``POST /graphql`` — ``Viewer`` (the key's user and default entity; also the login check),
  ``UpsertBucket`` (creates the run, then updates its config), ``ServerFeaturesQuery``,
  ``OrganizationCoreWeaveOrganizationID``, ``CreateRunFiles`` (where to upload the run's files).
  Every GraphQL request carries HTTP basic auth ``api:<key>``; a wrong key gets 401.
- ``POST /files/<entity>/<project>/<run>/file_stream`` — history rows (``wandb-history.jsonl``),
  system metrics, the summary, console output, and at the end ``complete``/``exitcode``.
- ``PUT`` to the upload URLs ``CreateRunFiles`` handed out (here ``/storage/…``).
- ``POST /sdk/otel/v1/metrics`` — the Python SDK's own telemetry, accepted and ignored.

Everything received is kept for the test to assert on. ``fail`` makes an operation answer with an
HTTP status (401 or 500) instead, as a server that refuses the key or breaks would.
"""

from __future__ import annotations

import base64
import gzip
import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import urlsplit

from tests.loopback import LoopbackServer

ENTITY = "gg-team"
USERNAME = "gg-user"


@dataclass
class StreamedRun:
    """What the file stream brought for one run."""

    history: list[dict[str, Any]] = field(default_factory=list)
    summary: dict[str, Any] = field(default_factory=dict)
    output: list[str] = field(default_factory=list)
    complete: bool = False
    exitcode: int | None = None


class FakeWandb(LoopbackServer):
    """W&B's server side for one test: ``with FakeWandb(key) as server: ...`` serves on ``server.url``."""

    def __init__(self, api_key: str, fail: dict[str, int] | None = None) -> None:
        self.api_key = api_key
        self.fail = dict(fail or {})  # operation name (e.g. "Viewer", "UpsertBucket") -> HTTP status
        self.operations: list[str] = []  # every GraphQL operation asked for, in order
        self.refused: list[tuple[str, int]] = []  # (operation or path, status) answered with an error
        self.unknown: list[str] = []  # operations this server does not know
        self.upserts: list[dict[str, Any]] = []  # UpsertBucket variables
        self.streams: dict[tuple[str, str, str], StreamedRun] = {}  # (entity, project, run) ->
        self.uploads: dict[str, bytes] = {}  # "<entity>/<project>/<run>/<file>" -> content
        self.telemetry_posts = 0
        self._lock = threading.Lock()
        super().__init__(_handler(self), "fake-wandb")

    def stream(self, project: str, run: str, entity: str = ENTITY) -> StreamedRun:
        with self._lock:
            return self.streams.setdefault((entity, project, run), StreamedRun())

    def run_url(self, project: str, run: str, entity: str = ENTITY) -> str:
        # W&B's app URL for a server that is not api.wandb.ai is the server's own address.
        return f"{self.url}/{entity}/{project}/runs/{run}"

    # ------------------------------------------------------------ answers

    def authorized(self, header: str | None) -> bool:
        if not header or not header.startswith("Basic "):
            return False
        try:
            user, _, key = base64.b64decode(header[6:]).decode().partition(":")
        except ValueError:
            return False
        return user == "api" and key == self.api_key

    def graphql(self, request: dict[str, Any]) -> dict[str, Any]:
        name = str(request.get("operationName") or "")
        variables = request.get("variables") or {}
        if name == "Viewer":
            return {
                "viewer": {
                    "id": "VXNlcjox",
                    "entity": ENTITY,
                    "username": USERNAME,
                    "email": f"{USERNAME}@example.invalid",
                    "flags": "{}",
                    "teams": {"edges": [{"node": {"name": ENTITY}}]},
                }
            }
        if name == "UpsertBucket":
            with self._lock:
                self.upserts.append(variables)
            run, project = variables.get("name"), variables.get("project") or "uncategorized"
            return {
                "upsertBucket": {
                    "bucket": {
                        "id": base64.b64encode(f"Run:{project}:{run}".encode()).decode(),
                        "name": run,
                        "displayName": variables.get("displayName") or run,
                        "description": variables.get("description"),
                        "config": variables.get("config") or "{}",
                        "sweepName": None,
                        "project": {
                            "id": base64.b64encode(f"Project:{project}".encode()).decode(),
                            "name": project,
                            "entity": {"id": "RW50aXR5OjE=", "name": variables.get("entity") or ENTITY},
                        },
                        "historyLineCount": 0,
                    },
                    "inserted": True,
                }
            }
        if name == "ServerFeaturesQuery":
            return {"serverInfo": {"features": []}}
        if name == "OrganizationCoreWeaveOrganizationID":
            return {"entity": {"organization": None}}
        if name == "CreateRunFiles":
            entity = variables.get("entity") or ENTITY
            where = f"{entity}/{variables['project']}/{variables['run']}"
            return {
                "createRunFiles": {
                    "runID": variables["run"],
                    "uploadHeaders": [],
                    "files": [
                        {"name": name, "uploadUrl": f"{self.url}/storage/{where}/{name}"}
                        for name in variables.get("files") or []
                    ],
                }
            }
        with self._lock:
            self.unknown.append(name)
        raise LookupError(f"the fake W&B server does not answer {name or 'anonymous'} operations")

    def file_stream(self, entity: str, project: str, run: str, body: dict[str, Any]) -> None:
        streamed = self.stream(project, run, entity)
        with self._lock:
            for name, chunk in (body.get("files") or {}).items():
                lines = [line for line in chunk.get("content") or [] if line]
                if name == "wandb-history.jsonl":
                    streamed.history.extend(json.loads(line) for line in lines)
                elif name == "wandb-summary.json" and lines:
                    streamed.summary = json.loads(lines[-1])
                elif name == "output.log":
                    streamed.output.extend(lines)
            if body.get("complete"):
                streamed.complete = True
                streamed.exitcode = body.get("exitcode")


def _handler(server: FakeWandb) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass  # the test asserts on what was received, not on an access log

        def _body(self) -> bytes:
            if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                data = b""
                while True:
                    size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                    if size == 0:
                        self.rfile.readline()
                        break
                    data += self.rfile.read(size)
                    self.rfile.readline()
            else:
                data = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if self.headers.get("Content-Encoding", "").lower() == "gzip":
                data = gzip.decompress(data)
            return data

        def _answer(self, status: int, payload: object) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self) -> None:
            body = self._body()
            path = urlsplit(self.path).path
            if path.startswith("/sdk/otel/"):
                with server._lock:
                    server.telemetry_posts += 1
                self._answer(200, {})
                return
            request = json.loads(body) if path == "/graphql" else {}
            name = str(request.get("operationName") or "") if path == "/graphql" else path
            if not server.authorized(self.headers.get("Authorization")):
                with server._lock:
                    server.refused.append((name, 401))
                self._answer(401, {"errors": [{"message": "invalid API key"}]})
                return
            if path == "/graphql":
                with server._lock:
                    server.operations.append(name)
                    status = server.fail.get(name)
                    if status is not None:
                        server.refused.append((name, status))
                if status is not None:
                    self._answer(status, {"errors": [{"message": f"the server refused {name} ({status})"}]})
                    return
                try:
                    self._answer(200, {"data": server.graphql(request)})
                except LookupError as exc:
                    self._answer(200, {"errors": [{"message": str(exc)}], "data": None})
                return
            parts = path.strip("/").split("/")
            if len(parts) == 5 and parts[0] == "files" and parts[4] == "file_stream":
                server.file_stream(parts[1], parts[2], parts[3], json.loads(body))
                self._answer(200, {"exitcode": None, "limits": {}})
                return
            self._answer(404, {"errors": [{"message": f"no such endpoint: POST {path}"}]})

        def do_PUT(self) -> None:
            body = self._body()
            path = urlsplit(self.path).path
            if path.startswith("/storage/"):
                with server._lock:
                    server.uploads[path[len("/storage/") :]] = body
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            self._answer(404, {"errors": [{"message": f"no such endpoint: PUT {path}"}]})

    return Handler
