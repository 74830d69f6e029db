"""The page answered from memory (:mod:`augclip_demo.ui.page_cache`), called as uvicorn calls an app, in front of
an app that renders the address it was reached at and counts its renders. The real page behind it is checked
in tests/security/test_round_three.py (two addresses, each its own root)."""

from __future__ import annotations

import asyncio

from augclip_demo.ui.page_cache import ADDRESSES, PageCache


class _Renderer:
    """A page like Gradio's: its body names the Host it was reached at; ``status`` and ``chunks`` as asked."""

    def __init__(self, status: int = 200, chunks: int = 1, cookie: bool = False):
        self.renders, self.status, self.chunks, self.cookie = 0, status, chunks, cookie
        self.auth = None

    async def __call__(self, scope, receive, send) -> None:
        self.renders += 1
        host = dict(scope["headers"]).get(b"host", b"?")
        body = b"<html>root http://" + host + b"/ render " + str(self.renders).encode() + b"</html>"
        headers = [(b"content-type", b"text/html"), (b"content-length", str(len(body)).encode())]
        if self.cookie:
            headers.append((b"set-cookie", b"session=1"))
        await send({"type": "http.response.start", "status": self.status, "headers": headers})
        for i in range(self.chunks):
            await send({"type": "http.response.body", "body": body if i == 0 else b"",
                        "more_body": i < self.chunks - 1})


def _load(cache: PageCache, inner: _Renderer, path: str = "/", host: bytes = b"a.example:7860",
          method: str = "GET", query: bytes = b"", extra: tuple = ()) -> tuple[int, dict, bytes]:
    scope = {"type": "http", "method": method, "path": path, "root_path": "", "query_string": query,
             "scheme": "http", "headers": [(b"host", host), *extra], "app": inner}
    sent: list[dict] = []

    async def receive() -> dict:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict) -> None:
        sent.append(message)

    asyncio.run(cache(scope, receive, send))
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return sent[0]["status"], dict(sent[0]["headers"]), body


def test_later_loads_at_one_address_are_answered_without_rendering():
    inner = _Renderer()
    cache = PageCache(inner)
    first = _load(cache, inner)
    assert _load(cache, inner) == first and inner.renders == 1
    status, headers, body = _load(cache, inner, method="HEAD")  # HEAD: the same headers, no body
    assert (status, headers, body, inner.renders) == (200, first[1], b"", 1)


def test_each_address_gets_its_own_page():
    inner = _Renderer()
    cache = PageCache(inner)
    a = _load(cache, inner, host=b"a.example:7860")[2]
    b = _load(cache, inner, host=b"b.example")[2]
    proxied = _load(cache, inner, host=b"a.example:7860", extra=((b"x-forwarded-proto", b"https"),))[2]
    assert b"a.example" in a and b"b.example" in b and inner.renders == 3
    assert _load(cache, inner, host=b"b.example")[2] == b and _load(cache, inner, host=b"a.example:7860")[2] == a
    assert proxied != a and inner.renders == 3


def test_other_requests_are_rendered_every_time():
    inner = _Renderer()
    cache = PageCache(inner)
    for path, query, method in [("/", b"deep_link=abc", "GET"), ("/config", b"", "GET"), ("/", b"", "POST")]:
        _load(cache, inner, path=path, query=query, method=method)
        _load(cache, inner, path=path, query=query, method=method)
    assert inner.renders == 6
    _load(cache, inner, method="HEAD")  # a HEAD alone keeps nothing: the next GET renders
    _load(cache, inner)
    assert inner.renders == 8


def test_failed_streamed_cookie_setting_and_login_pages_are_not_kept():
    for inner in (_Renderer(status=500), _Renderer(chunks=2), _Renderer(cookie=True)):
        cache = PageCache(inner)
        _load(cache, inner)
        _load(cache, inner)
        assert inner.renders == 2
    inner = _Renderer()
    inner.auth = {"user": "secret"}  # an app with a login: its page depends on the user
    cache = PageCache(inner)
    _load(cache, inner)
    _load(cache, inner)
    assert inner.renders == 2


def test_the_addresses_kept_are_bounded_least_recently_used_first():
    inner = _Renderer()
    cache = PageCache(inner)
    for i in range(ADDRESSES + 1):
        _load(cache, inner, host=f"host-{i}".encode())
    assert len(cache.pages) == ADDRESSES and inner.renders == ADDRESSES + 1
    _load(cache, inner, host=b"host-0")  # the oldest went: rendered again
    _load(cache, inner, host=f"host-{ADDRESSES}".encode())  # the newest stayed
    assert inner.renders == ADDRESSES + 2
