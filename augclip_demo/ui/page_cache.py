"""The page itself, answered from memory: :class:`PageCache`, an ASGI middleware in front of Gradio's routes.

Gradio renders the page on every load: a deep copy of the page's configuration, the root URL written into
every component, the API description and the template, in a worker thread that needs the interpreter lock
while scoring runs in others. Under twenty clients that made loads wait seconds (docs/security.md, the soak).

What Gradio renders depends only on the address the page is reached at (the root URL goes into it) and on
the page's configuration, which is fixed once the app is built. So the first load at an address is rendered
by Gradio and kept; later loads at that address get the same bytes from the event loop, without a thread.
Only a plain ``GET`` / ``HEAD`` of the page's own path with no query string is kept (a deep link or a page
name in the query is rendered each time), only a complete ``200`` answer, and at most :data:`ADDRESSES`
addresses (the ``Host`` header is the client's to choose, so the memory is bounded, least recently used
first). An app with a login is never cached (its page depends on the user).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..lru import LRUCache
from .asgi import ASGIApp, Message, Receive, Scope, Send

#: Addresses whose page is kept (each about the page's size, a few hundred kB).
ADDRESSES = 16

#: The request headers Gradio reads to write the page's root URL (``gradio.route_utils.get_request_origin``).
_ADDRESS_HEADERS = (b"host", b"x-forwarded-host", b"x-forwarded-proto", b"x-gradio-server")

@dataclass(frozen=True)
class _Page:
    headers: tuple[tuple[bytes, bytes], ...]
    body: bytes


class PageCache:
    """ASGI middleware: loads of the page after the first at the same address answered from memory."""

    def __init__(self, app: ASGIApp, capacity: int = ADDRESSES):
        self.app = app
        self.pages: LRUCache[_Page] = LRUCache(capacity)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        key = _key(scope)
        if key is None:
            await self.app(scope, receive, send)
            return
        page = self.pages.get(key)
        if page is not None:
            await send({"type": "http.response.start", "status": 200, "headers": list(page.headers)})
            await send({"type": "http.response.body", "body": b"" if scope["method"] == "HEAD" else page.body})
            return
        sent: list[Message] = []

        async def kept(message: Message) -> None:
            sent.append(message)
            await send(message)

        await self.app(scope, receive, kept)
        if scope["method"] == "GET" and _complete_ok(sent):
            start, body = sent[0], sent[1]
            self.pages.put(key, _Page(tuple((bytes(n), bytes(v)) for n, v in start.get("headers", ())),
                                      bytes(body.get("body", b""))))


def _key(scope: Scope) -> tuple[Any, ...] | None:
    """What the page depends on, for a request of the page itself; None for any other request."""
    if scope.get("type") != "http" or scope.get("method") not in ("GET", "HEAD") or scope.get("query_string"):
        return None
    root = str(scope.get("root_path") or "")
    if scope.get("path") not in (root + "/", root or "/"):
        return None
    if _app_has_login(scope):
        return None
    headers = dict(scope.get("headers", ()))
    return (scope.get("scheme"), root, tuple(headers.get(name, b"") for name in _ADDRESS_HEADERS))


def _app_has_login(scope: Scope) -> bool:
    app = scope.get("app")
    return getattr(app, "auth", None) is not None or getattr(app, "auth_dependency", None) is not None


def _complete_ok(sent: list[Message]) -> bool:
    """One start with 200 and one final body, no cookie set: a whole page that is the same for everyone (a
    streamed or failed answer is not kept)."""
    return (len(sent) == 2 and sent[0].get("type") == "http.response.start" and sent[0].get("status") == 200
            and sent[1].get("type") == "http.response.body" and not sent[1].get("more_body", False)
            and not any(bytes(name).lower() == b"set-cookie" for name, _ in sent[0].get("headers", ())))
