"""A real HTTP server on 127.0.0.1 that speaks the OpenAI chat-completions format (standard library only).

Tests script its answers (status, body, headers, delay) and read back every request it received.

    with ChatServer() as server:
        server.add_reply("['a red ball']")            # 200 with this assistant text
        server.add_error(429, headers={"retry-after-ms": "10"})
        client = OpenAICompatibleClient(base_url=server.url, model="m", ...)
        server.requests[0].body["messages"]
"""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Recorded:
    """One request as the server saw it."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any

    @property
    def messages(self) -> list[dict]:
        return self.body.get("messages", []) if isinstance(self.body, dict) else []

    def texts(self) -> list[str]:
        """Every text part of every message, in order."""
        out = []
        for message in self.messages:
            content = message.get("content")
            if isinstance(content, str):
                out.append(content)
            elif isinstance(content, list):
                out.extend(part.get("text", "") for part in content if part.get("type") == "text")
        return out

    def image_urls(self) -> list[str]:
        urls = []
        for message in self.messages:
            content = message.get("content")
            if isinstance(content, list):
                urls.extend(part["image_url"]["url"] for part in content if part.get("type") == "image_url")
        return urls


@dataclass
class Scripted:
    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0


def completion(text: str | None, model: str = "served-model", finish_reason: str = "stop",
               refusal: str | None = None) -> dict:
    """A chat-completion JSON body with one choice whose message content is ``text`` (and, when
    given, the ``refusal`` field OpenAI sets when the model declines)."""
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if refusal is not None:
        message["refusal"] = refusal
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": 1700000000,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


class ChatServer:
    """Scripted answers are served in order; when none is left, ``responder(request)`` answers
    (a function returning the assistant text, or a :class:`Scripted` answer such as a refusal), else
    HTTP 500 "no scripted answer"."""

    def __init__(self, responder: Callable[[Recorded], str | Scripted] | None = None):
        self.requests: list[Recorded] = []
        self.responder = responder
        self._script: deque[Scripted] = deque()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw) if raw else None
                except json.JSONDecodeError:
                    body = raw.decode("utf-8", "replace")
                record = Recorded("POST", self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                with server._lock:
                    server.requests.append(record)
                    scripted = server._script.popleft() if server._script else None
                if scripted is None:
                    if server.responder is not None:
                        model = body.get("model", "served-model") if isinstance(body, dict) else "served-model"
                        answer = server.responder(record)
                        scripted = (answer if isinstance(answer, Scripted)
                                    else Scripted(200, completion(answer, model=model)))
                    else:
                        scripted = Scripted(500, {"error": {"message": "no scripted answer"}})
                if scripted.delay and server._stop.wait(scripted.delay):
                    return
                payload = scripted.body if isinstance(scripted.body, (bytes, str)) else json.dumps(scripted.body)
                data = payload.encode() if isinstance(payload, str) else payload
                try:
                    self.send_response(scripted.status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    for key, value in scripted.headers.items():
                        self.send_header(key, value)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout test)
                    pass

            def log_message(self, *args: object) -> None:  # keep test output clean
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_port}/v1"

    def add(self, status: int = 200, body: Any = None, headers: dict[str, str] | None = None,
            delay: float = 0.0) -> ChatServer:
        with self._lock:
            self._script.append(Scripted(status, body, dict(headers or {}), delay))
        return self

    def add_reply(self, text: str | None, delay: float = 0.0, model: str = "served-model") -> ChatServer:
        return self.add(200, completion(text, model=model), delay=delay)

    def add_refusal(self, refusal: str = "I can't help with that.") -> ChatServer:
        """The model declines: no content, the message's ``refusal`` field set (as OpenAI answers)."""
        return self.add(200, completion(None, refusal=refusal))

    def add_filtered(self, text: str | None = None) -> ChatServer:
        """The server's content filter stopped the answer: ``finish_reason="content_filter"``."""
        return self.add(200, completion(text, finish_reason="content_filter"))

    def add_error(self, status: int, message: str = "error", headers: dict[str, str] | None = None) -> ChatServer:
        return self.add(status, {"error": {"message": message, "type": "test", "code": None}}, headers)

    def start(self) -> ChatServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> ChatServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
