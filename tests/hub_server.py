"""A Hugging Face Hub on the loopback interface, speaking the part of the Hub's HTTP API that the real
``huggingface_hub`` client (2.4) uses to create a model repo, commit files to it and read them back.

What the client sends, as ``HfApi(endpoint=server.url)`` (or ``HF_ENDPOINT``) sends it:

- ``POST /api/repos/create`` — ``{"name", "organization", "type", "visibility"}``; 409 with the repo's
  ``url`` when it exists (the client's ``exist_ok`` reads that).
- ``DELETE /api/repos/delete`` — the same body; 404 ``RepoNotFound`` when there is none.
- ``POST /api/validate-yaml`` — a README's metadata header, checked before anything is uploaded.
- ``POST /api/{type}s/{repo}/preupload/{revision}`` — each file's path, size and sample; answered with
  its upload mode. Every file is ``regular`` here (its bytes travel base64 inside the commit), so the
  LFS and Xet transfer paths are not served.
- ``POST /api/{type}s/{repo}/commit/{revision}`` — NDJSON: a ``header`` line (summary, description,
  parent commit), then ``file`` lines (path, base64 content) and ``deletedFile`` lines. A commit is
  applied whole or not at all, as the Hub's are.
- ``GET /api/{type}s?author=ORG&search=TEXT`` — the repos of an organisation whose name holds the text
  (Minari's remote lists a namespace's datasets so), in one page.
- ``GET /api/{type}s/{repo}`` and ``…/revision/{revision}`` — repo info with its files (``siblings``).
- ``GET /api/{type}s/{repo}/tree/{revision}[/{path}]`` — the files (``recursive``), in one page.
- ``HEAD``/``GET /{repo}/resolve/{revision}/{file}`` (``/datasets/{repo}/…`` for datasets) — a file's
  metadata (``X-Repo-Commit``, ``ETag``) and bytes.

Every request's ``Authorization: Bearer <token>`` is checked: a wrong token gets 401, writes without
one get 401, a private repo is invisible (404) without the right one. Everything received is kept for
the test to assert on. ``fail`` makes an operation ("create", "preupload", "commit", "resolve", …)
answer with an HTTP status instead, as a server that breaks would, changing nothing.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import yaml

from tests.loopback import LoopbackServer

USERNAME = "gg-user"

_REPO = r"(?P<repo>[^/]+/[^/]+)"
_ROUTES: tuple[tuple[str, str, re.Pattern[str]], ...] = tuple(
    (method, name, re.compile(pattern))
    for method, name, pattern in (
        ("GET", "whoami", r"/api/whoami-v2"),
        ("GET", "list", r"/api/(?P<type>model|dataset)s"),
        ("POST", "create", r"/api/repos/create"),
        ("DELETE", "delete", r"/api/repos/delete"),
        ("POST", "validate-yaml", r"/api/validate-yaml"),
        ("POST", "preupload", rf"/api/(?P<type>model|dataset)s/{_REPO}/preupload/(?P<rev>[^/]+)"),
        ("POST", "commit", rf"/api/(?P<type>model|dataset)s/{_REPO}/commit/(?P<rev>[^/]+)"),
        ("GET", "tree", rf"/api/(?P<type>model|dataset)s/{_REPO}/tree/(?P<rev>[^/]+)(?:/(?P<path>.*))?"),
        ("GET", "info", rf"/api/(?P<type>model|dataset)s/{_REPO}(?:/revision/(?P<rev>[^/]+))?"),
        ("GET", "resolve", rf"/(?:(?P<type>dataset)s/)?{_REPO}/resolve/(?P<rev>[^/]+)/(?P<path>.+)"),
        ("HEAD", "resolve", rf"/(?:(?P<type>dataset)s/)?{_REPO}/resolve/(?P<rev>[^/]+)/(?P<path>.+)"),
    )
)


def git_blob_oid(content: bytes) -> str:
    """The git object id of a file's bytes, as the Hub reports a regular file's ``oid``."""
    return hashlib.sha1(b"blob %d\0" % len(content) + content).hexdigest()


@dataclass
class Commit:
    oid: str
    summary: str
    description: str
    files: dict[str, bytes]  # the whole tree after this commit


@dataclass
class HubRepo:
    repo_id: str
    repo_type: str
    private: bool
    commits: list[Commit] = field(default_factory=list)

    @property
    def files(self) -> dict[str, bytes]:
        return self.commits[-1].files if self.commits else {}

    @property
    def head(self) -> str:
        return self.commits[-1].oid if self.commits else "0" * 40


class FakeHub(LoopbackServer):
    """The Hub's server side for one test: ``with FakeHub(token) as hub: ...`` serves on ``hub.url``."""

    def __init__(self, token: str, fail: dict[str, int] | None = None) -> None:
        self.token = token
        self.fail = dict(fail or {})  # operation name (e.g. "commit") -> HTTP status
        self.repos: dict[tuple[str, str], HubRepo] = {}  # (type, "org/name") ->
        self.operations: list[str] = []  # every operation asked for, in order
        self.refused: list[tuple[str, int]] = []  # (operation, status) answered with an error
        self.unknown: list[str] = []  # "METHOD path" this server does not serve
        self.tokens_seen: set[str] = set()  # the bearer tokens requests carried
        self._lock = threading.Lock()
        super().__init__(_handler(self), "fake-hub")

    def repo(self, repo_id: str, repo_type: str = "model") -> HubRepo | None:
        with self._lock:
            return self.repos.get((repo_type, repo_id))

    # --- operations (called with the request's pieces; each returns status, headers, body) ---------

    def handle(
        self, name: str, match: dict[str, str], query: dict[str, list[str]], body: bytes, token: str | None
    ) -> tuple[int, dict[str, str], bytes]:
        if token is not None and token != self.token:
            return _error(401, "Invalid credentials in Authorization header")
        authorised = token == self.token
        if name == "whoami":
            if not authorised:
                return _error(401, "Invalid credentials in Authorization header")
            return _json(200, {"type": "user", "name": USERNAME, "orgs": [], "auth": {}})
        if name == "validate-yaml":
            return self._validate_yaml(json.loads(body))
        if name in ("create", "delete"):
            if not authorised:
                return _error(401, "You must be authenticated to do this")
            payload = json.loads(body)
            repo_id = f"{payload.get('organization') or USERNAME}/{payload['name']}"
            repo_type = payload.get("type") or "model"
            return (
                self._create(repo_id, repo_type, payload)
                if name == "create"
                else self._delete(repo_id, repo_type)
            )
        repo_type = match.get("type") or "model"
        if name == "list":
            return _json(200, self._list(repo_type, query, authorised))
        with self._lock:
            repo = self.repos.get((repo_type, match["repo"]))
        if repo is None or (repo.private and not authorised):
            return _error(404, "Repository not found", code="RepoNotFound")
        if name in ("preupload", "commit") and not authorised:
            return _error(401, "You must be authenticated to write")
        revision = unquote(match.get("rev") or "main")
        if revision not in ("main", repo.head):
            return _error(404, f"Invalid rev id: {revision}", code="RevisionNotFound")
        if name == "preupload":
            files = json.loads(body)["files"]
            return _json(
                200,
                {
                    "files": [
                        {
                            "path": item["path"],
                            "uploadMode": "regular",
                            "shouldIgnore": False,
                            "oid": git_blob_oid(repo.files[item["path"]])
                            if item["path"] in repo.files
                            else None,
                        }
                        for item in files
                    ]
                },
            )
        if name == "commit":
            return self._commit(repo, body)
        if name == "info":
            return _json(
                200,
                {
                    "id": repo.repo_id,
                    "private": repo.private,
                    "sha": repo.head,
                    "siblings": [{"rfilename": path} for path in sorted(repo.files)],
                },
            )
        if name == "tree":
            prefix = (unquote(match["path"]) + "/") if match.get("path") else ""
            recursive = query.get("recursive", ["False"])[0].lower() == "true"
            return _json(200, _tree(repo.files, prefix, recursive))
        path = unquote(match["path"])
        content = repo.files.get(path)
        if content is None:
            return _error(404, "Entry not found", code="EntryNotFound")
        headers = {
            "X-Repo-Commit": repo.head,
            "ETag": f'"{git_blob_oid(content)}"',
            "Content-Type": "application/octet-stream",
        }
        return 200, headers, content

    def _list(self, repo_type: str, query: dict[str, list[str]], authorised: bool) -> list[dict[str, Any]]:
        """The repos of a type an ``author`` (an organisation) holds whose name holds ``search``, in one page."""
        author = query.get("author", [""])[0]
        search = query.get("search", [""])[0]
        with self._lock:
            repos = [
                repo
                for (kind, repo_id), repo in sorted(self.repos.items())
                if kind == repo_type and (authorised or not repo.private)
            ]
        return [
            {"id": repo.repo_id, "private": repo.private, "sha": repo.head}
            for repo in repos
            if (not author or repo.repo_id.startswith(f"{author}/"))
            and search in repo.repo_id.split("/", 1)[1]
        ]

    def _validate_yaml(self, payload: dict[str, Any]) -> tuple[int, dict[str, str], bytes]:
        content = payload.get("content", "")
        match = re.match(r"^---\n(.*?)\n---\n", content, re.DOTALL)
        if match is None:
            return _json(200, {"errors": [], "warnings": [{"message": "empty or missing yaml metadata"}]})
        try:
            metadata = yaml.safe_load(match.group(1))
        except yaml.YAMLError as exc:
            return _json(400, {"errors": [{"message": f"invalid YAML: {exc}"}], "warnings": []})
        if not isinstance(metadata, dict):
            return _json(400, {"errors": [{"message": "metadata must be a mapping"}], "warnings": []})
        return _json(200, {"errors": [], "warnings": []})

    def _create(
        self, repo_id: str, repo_type: str, payload: dict[str, Any]
    ) -> tuple[int, dict[str, str], bytes]:
        url = f"{self.url}/{'' if repo_type == 'model' else repo_type + 's/'}{repo_id}"
        with self._lock:
            if (repo_type, repo_id) in self.repos:
                return _json(409, {"error": "You already created this model repo", "url": url})
            self.repos[(repo_type, repo_id)] = HubRepo(
                repo_id,
                repo_type,
                private=payload.get("visibility") == "private" or bool(payload.get("private")),
            )
        return _json(200, {"url": url, "name": repo_id})

    def _delete(self, repo_id: str, repo_type: str) -> tuple[int, dict[str, str], bytes]:
        with self._lock:
            if self.repos.pop((repo_type, repo_id), None) is None:
                return _error(404, "Repository not found", code="RepoNotFound")
        return _json(200, {})

    def _commit(self, repo: HubRepo, body: bytes) -> tuple[int, dict[str, str], bytes]:
        lines = [json.loads(line) for line in body.decode().splitlines() if line.strip()]
        if not lines or lines[0].get("key") != "header":
            return _error(400, "a commit starts with its header line")
        header = lines[0]["value"]
        with self._lock:
            parent = header.get("parentCommit")
            if parent and parent != repo.head:
                return _error(412, "A commit has happened since. Please refresh and try again.")
            files = dict(repo.files)
            for line in lines[1:]:
                value = line["value"]
                if line["key"] == "file":
                    if value.get("encoding") != "base64":
                        return _error(400, f"unknown encoding {value.get('encoding')!r}")
                    files[value["path"]] = base64.b64decode(value["content"])
                elif line["key"] == "deletedFile":
                    if value["path"] not in files:
                        return _error(404, "A file with this name doesn't exist", code="EntryNotFound")
                    del files[value["path"]]
                else:
                    return _error(400, f"this server takes no {line['key']!r} lines")
            oid = hashlib.sha1(
                repo.head.encode() + json.dumps(sorted(files)).encode() + str(len(repo.commits)).encode()
            ).hexdigest()
            repo.commits.append(Commit(oid, header.get("summary", ""), header.get("description", ""), files))
        url = f"{self.url}/{'' if repo.repo_type == 'model' else repo.repo_type + 's/'}{repo.repo_id}"
        return _json(200, {"success": True, "commitOid": oid, "commitUrl": f"{url}/commit/{oid}"})


def _tree(files: dict[str, bytes], prefix: str, recursive: bool) -> list[dict[str, Any]]:
    entries: dict[str, dict[str, Any]] = {}
    for path in sorted(files):
        if not path.startswith(prefix):
            continue
        rest = path[len(prefix) :]
        parts = rest.split("/")
        for depth in range(1, len(parts)):
            folder = prefix + "/".join(parts[:depth])
            entries.setdefault(folder, {"type": "directory", "path": folder, "oid": "0" * 40, "size": 0})
            if not recursive:
                break
        if recursive or len(parts) == 1:
            content = files[path]
            entries[path] = {"type": "file", "path": path, "oid": git_blob_oid(content), "size": len(content)}
    return list(entries.values())


def _json(status: int, payload: Any) -> tuple[int, dict[str, str], bytes]:
    return status, {"Content-Type": "application/json"}, json.dumps(payload).encode()


def _error(status: int, message: str, code: str | None = None) -> tuple[int, dict[str, str], bytes]:
    headers = {"Content-Type": "application/json", "X-Error-Message": message}
    if code is not None:
        headers["X-Error-Code"] = code
    return status, headers, json.dumps({"error": message}).encode()


def _handler(hub: FakeHub) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: object) -> None:
            return

        def _serve(self, method: str) -> None:
            parts = urlsplit(self.path)
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            auth = self.headers.get("Authorization") or ""
            token = auth.removeprefix("Bearer ") if auth.startswith("Bearer ") else None
            for route_method, route_name, pattern in _ROUTES:
                match = pattern.fullmatch(parts.path) if route_method == method else None
                if match is not None:
                    name = route_name
                    break
            else:
                with hub._lock:
                    hub.unknown.append(f"{method} {parts.path}")
                self._reply(*_error(404, f"this server does not serve {method} {parts.path}"), method)
                return
            with hub._lock:
                hub.operations.append(name)
                if token is not None:
                    hub.tokens_seen.add(token)
                status = hub.fail.get(name)
                if status is not None:
                    hub.refused.append((name, status))
            if status is not None:
                self._reply(*_error(status, f"{name} failed on the server"), method)
                return
            groups = {key: value for key, value in match.groupdict().items() if value is not None}
            self._reply(*hub.handle(name, groups, parse_qs(parts.query), body, token), method)

        def _reply(self, status: int, headers: dict[str, str], body: bytes, method: str) -> None:
            self.send_response(status)
            for key, value in headers.items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if method != "HEAD":
                self.wfile.write(body)

        def do_GET(self) -> None:
            self._serve("GET")

        def do_HEAD(self) -> None:
            self._serve("HEAD")

        def do_POST(self) -> None:
            self._serve("POST")

        def do_DELETE(self) -> None:
            self._serve("DELETE")

    return Handler
