"""A small model hub on 127.0.0.1 that speaks enough of the Hugging Face Hub protocol for huggingface_hub.

Point ``HF_ENDPOINT`` at :attr:`HubServer.url` and ``hf_hub_download`` / ``from_pretrained`` /
open_clip fetch the repositories the test wrote, through their normal code. What it serves:

* ``HEAD|GET /{org}/{name}/resolve/{revision}/{file}``: the file, with ``X-Repo-Commit``, ``ETag``
  (sha256 for weight files, as LFS files carry; a git-style sha1 otherwise), ``Content-Length``
  and ``Range`` support; errors carry ``X-Error-Code`` (``RepoNotFound``, ``EntryNotFound``,
  ``GatedRepo``) the way the Hub does, so the client raises its specific exceptions.
* ``GET /api/models/{org}/{name}[/revision/{revision}]``: model info (``sha``, ``siblings``).
* ``GET /api/models/{org}/{name}/tree/{revision}``: the file list.
* ``GET /files/{name}``: plain URL downloads (SAM checkpoints, old open_clip URLs).

Faults for error tests: :meth:`refuse` answers one file (or a whole repo) with a status;
:meth:`gate` makes a repo gated; every request is recorded in :attr:`requests`.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

_LFS_SUFFIXES = (".safetensors", ".bin", ".pth", ".pt", ".npz")


@dataclass
class _Repo:
    files: dict[str, bytes]
    commit: str = ""
    gated: bool = False
    refused: dict[str, int] = field(default_factory=dict)  # filename ("*" = all) -> status


def _etag(name: str, data: bytes) -> str:
    if name.endswith(_LFS_SUFFIXES):
        return hashlib.sha256(data).hexdigest()
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


class HubServer:
    """Start with ``with HubServer() as hub:`` (or :meth:`start` / :meth:`stop`)."""

    def __init__(self) -> None:
        self.repos: dict[str, _Repo] = {}
        self.files: dict[str, bytes] = {}  # /files/NAME
        self.file_faults: dict[str, int] = {}
        self.requests: list[tuple[str, str]] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------ content
    def add_repo(self, repo_id: str, files: dict[str, bytes | str | Path]) -> str:
        """Publish ``files`` (name -> bytes, text or a local file) as ``repo_id``; returns the commit hash."""
        data = {}
        for name, value in files.items():
            if isinstance(value, Path):
                data[name] = value.read_bytes()
            elif isinstance(value, str):
                data[name] = value.encode("utf-8")
            else:
                data[name] = bytes(value)
        digest = hashlib.sha1()
        for name in sorted(data):
            digest.update(name.encode() + b"\0" + hashlib.sha256(data[name]).digest())
        repo = _Repo(data, digest.hexdigest())
        with self._lock:
            self.repos[repo_id] = repo
        return repo.commit

    def add_folder(self, repo_id: str, folder: Path) -> str:
        return self.add_repo(repo_id, {p.relative_to(folder).as_posix(): p for p in sorted(folder.rglob("*"))
                                       if p.is_file()})

    def add_file(self, name: str, data: bytes | Path) -> str:
        """Serve ``data`` at ``/files/NAME``; returns its URL."""
        self.files[name] = data.read_bytes() if isinstance(data, Path) else data
        return f"{self.url}/files/{name}"

    def refuse(self, repo_id: str, filename: str = "*", status: int = 403) -> None:
        self.repos[repo_id].refused[filename] = status

    def gate(self, repo_id: str) -> None:
        self.repos[repo_id].gated = True

    def clear_faults(self) -> None:
        for repo in self.repos.values():
            repo.refused.clear()
            repo.gated = False
        self.file_faults.clear()

    # ------------------------------------------------------------------ lifecycle
    @property
    def url(self) -> str:
        assert self._server is not None, "start the server first"
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> HubServer:
        server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        server.daemon_threads = True
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, name="hub-server", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> HubServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def count(self, method: str | None = None) -> int:
        with self._lock:
            return sum(1 for m, _ in self.requests if method is None or m == method)


_RESOLVE = re.compile(r"^/(?P<repo>[^/]+/[^/]+)/resolve/(?P<rev>[^/]+)/(?P<file>.+)$")
_API = re.compile(r"^/api/models/(?P<repo>[^/]+/[^/]+)(?:/(?P<kind>revision|tree)/(?P<rev>[^/?]+)(?P<rest>/.*)?)?$")


def _handler_for(hub: HubServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: object) -> None:  # keep pytest output clean
            pass

        def do_HEAD(self) -> None:
            self._serve(head=True)

        def do_GET(self) -> None:
            self._serve(head=False)

        # -------------------------------------------------------------- helpers
        def _send(self, status: int, body: bytes = b"", headers: dict[str, str] | None = None, head: bool = False,
                  content_type: str = "application/octet-stream") -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if not head and body:
                self.wfile.write(body)

        def _error(self, status: int, code: str | None, message: str, head: bool, commit: str | None = None) -> None:
            headers = {"X-Error-Message": message}
            if code:
                headers["X-Error-Code"] = code
            if commit:
                headers["X-Repo-Commit"] = commit
            body = json.dumps({"error": message}).encode()
            self._send(status, body, headers, head, "application/json")

        def _serve(self, head: bool) -> None:
            path = self.path.split("?", 1)[0]
            with hub._lock:
                hub.requests.append((self.command, path))
            if path.startswith("/files/"):
                name = path[len("/files/"):]
                if name in hub.file_faults:
                    return self._error(hub.file_faults[name], None, "refused by the test", head)
                if name not in hub.files:
                    return self._error(404, None, "no such file", head)
                return self._send_bytes(hub.files[name], {}, head)
            if (match := _API.match(path)) is not None:
                return self._api(match, head)
            if (match := _RESOLVE.match(path)) is not None:
                return self._resolve(match, head)
            self._error(404, None, f"unknown route {path}", head)

        def _repo_or_error(self, repo_id: str, head: bool) -> _Repo | None:
            repo = hub.repos.get(repo_id)
            if repo is None:
                self._error(401, "RepoNotFound", "Repository not found", head)
                return None
            if repo.gated:
                self._error(403, "GatedRepo", "Access to model is restricted. You must have access to it and be "
                            "authenticated to access it. Please log in.", head)
                return None
            return repo

        def _resolve(self, match: re.Match[str], head: bool) -> None:
            repo = self._repo_or_error(match["repo"], head)
            if repo is None:
                return
            if match["rev"] not in ("main", repo.commit):
                return self._error(404, "RevisionNotFound", "Invalid rev id", head)
            name = match["file"]
            status = repo.refused.get(name) or repo.refused.get("*")
            if status:
                return self._error(status, None, "refused by the test", head, repo.commit)
            if name not in repo.files:
                return self._error(404, "EntryNotFound", "Entry not found", head, repo.commit)
            data = repo.files[name]
            etag = _etag(name, data)
            headers = {"X-Repo-Commit": repo.commit, "ETag": f'"{etag}"', "Accept-Ranges": "bytes"}
            if name.endswith(_LFS_SUFFIXES):
                headers["X-Linked-Etag"] = f'"{etag}"'
                headers["X-Linked-Size"] = str(len(data))
            self._send_bytes(data, headers, head)

        def _send_bytes(self, data: bytes, headers: dict[str, str], head: bool) -> None:
            wanted = self.headers.get("Range")
            if wanted and (m := re.match(r"bytes=(\d+)-(\d*)$", wanted)) and not head:
                start = int(m[1])
                end = int(m[2]) if m[2] else len(data) - 1
                if start >= len(data):
                    return self._send(416, b"", {"Content-Range": f"bytes */{len(data)}"}, head)
                part = data[start:end + 1]
                return self._send(206, part, {**headers, "Content-Range": f"bytes {start}-{end}/{len(data)}"}, head)
            self._send(200, data, headers, head)

        def _api(self, match: re.Match[str], head: bool) -> None:
            repo = self._repo_or_error(match["repo"], head)
            if repo is None:
                return
            if match["kind"] == "tree":
                body = [{"type": "file", "path": name, "size": len(data), "oid": _etag(name, data)}
                        for name, data in sorted(repo.files.items())]
            else:
                body = {"id": match["repo"], "modelId": match["repo"], "sha": repo.commit, "private": False,
                        "gated": False, "siblings": [{"rfilename": name} for name in sorted(repo.files)]}
            self._send(200, json.dumps(body).encode(), {"X-Repo-Commit": repo.commit}, head, "application/json")

    return Handler
