"""The ASGI types of the app's own middlewares (:class:`.storage.UploadGate`, :class:`.page_cache.PageCache`):
a request's scope, its receive and send channels, and the app a middleware wraps. Starlette has the same
types, but only FastAPI is a declared dependency."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]
