"""The rater page's routes (plain routes on the app's FastAPI server): one top-level function per route.

Every API route needs the rater's token in ``Authorization: Bearer``; answers are bounded to
``MAX_ANSWER_BYTES``:

* ``GET /study/rate`` (+ ``rate.js``, ``rate.css``): the page (:mod:`.page`); the link is
  ``/study/rate#t=TOKEN``.
* ``GET /study/api/task`` (:func:`next_task`): the study's wording, the rater's progress and next task
  (resumes by itself).
* ``POST /study/api/answer`` (:func:`post_answer`): ``{"position": N, "answers": {"overall":
  "left"|"right"|"tie" or 1-5, ...}, "elapsed_ms": N}``; refused when it is not the rater's task, answered
  already, or the study is closed.
* ``GET /study/api/image/{position}/{slot}`` (:func:`task_picture`): a picture of the rater's current task
  (or the one just answered).

Every API request is first counted against its rater's token and its client's address
(:mod:`augclip_demo.study.limits`, in the event loop, before any thread or database work); over the rate it
is answered 429 with ``Retry-After``. Requests with a token that is not a rater's are counted per address
as well, and an address over that bound is answered 429 until its bucket refills.

The API routes take a :class:`RaterContext` first; :func:`study_routes` binds it and makes the routes.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse, Response

from ...config import Settings
from ...errors import AugclipError
from ...study import store
from ...study.limits import RaterLimits
from ..binding import bind
from ..guard import scrub_paths
from .page import PAGE_CSS, PAGE_HTML, PAGE_JS

MAX_ANSWER_BYTES = 4096
MAX_TOKEN_CHARS = 100
PAGE_HEADERS = {
    "Cache-Control": "no-store", "Referrer-Policy": "no-referrer", "X-Content-Type-Options": "nosniff",
    "Content-Security-Policy": ("default-src 'none'; script-src 'self'; style-src 'self'; img-src blob:; "
                                "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"),
}


@dataclass
class RaterContext:
    """What the API routes need besides the request: the study database and the rate limits."""

    db: Path
    limits: RaterLimits = field(default_factory=RaterLimits)


def _error(message: str, status: int, retry_after: float | None = None) -> JSONResponse:
    """A refusal as the page reads it: ``{"error": message}`` (server folders cut), with the page's headers."""
    headers = dict(PAGE_HEADERS)
    if retry_after is not None:
        headers["Retry-After"] = str(max(1, math.ceil(retry_after)))  # as the message says
    return JSONResponse({"error": scrub_paths(message)}, status_code=status, headers=headers)


def client_address(peer: str | None) -> str:
    """The address a request's limits are counted against: the request's client as the server saw it. uvicorn
    (:func:`.app.launch_kwargs` gives it ``AUGCLIP_FORWARDED_ALLOW_IPS``) replaces a peer's address with the
    client its ``X-Forwarded-For`` names only when the peer is one of the operator's proxies; from any other
    peer the header is not read, so a client cannot choose the address it is counted against."""
    return (peer or "unknown")[:64]


def bearer_token(request: Request) -> str:
    """The rater's token from ``Authorization: Bearer``; a missing or oversized one is refused (401)."""
    header = request.headers.get("authorization", "")
    scheme, _, value = header.partition(" ")
    if scheme.lower() != "bearer" or not value or len(value) > MAX_TOKEN_CHARS:
        raise store.StudyError("this page needs your personal rating link (it ends in #t=...)", 401)
    return value.strip()


async def _in_worker(call: Any, *args: Any) -> Any:
    """Run a store call in a worker thread; a refusal becomes its message, anything else a plain 400."""
    try:
        return await run_in_threadpool(call, *args)
    except store.StudyError as exc:
        return _error(str(exc), exc.status)
    except AugclipError:
        return _error("the study could not answer that; tell the study's organiser", 400)


async def _bounded_json(request: Request) -> Any:
    """The request's body as JSON, read at most ``MAX_ANSWER_BYTES`` (declared or streamed: 413 beyond)."""
    declared = request.headers.get("content-length")
    if declared is not None and (not declared.isdigit() or int(declared) > MAX_ANSWER_BYTES):
        raise store.StudyError(f"an answer is at most {MAX_ANSWER_BYTES} bytes", 413)
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_ANSWER_BYTES:
            raise store.StudyError(f"an answer is at most {MAX_ANSWER_BYTES} bytes", 413)
    try:
        return json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):  # RecursionError: "[[[[..." nested deeply
        raise store.StudyError("the answer is not valid JSON") from None


def _admitted(ctx: RaterContext, request: Request) -> tuple[str, str] | Response:
    """(address, token), or the refusal: no token (401), over a rate (429). Runs in the event loop."""
    address = client_address(request.client.host if request.client else None)
    try:
        token = bearer_token(request)
    except store.StudyError as exc:
        ctx.limits.bad_token(address)
        return _error(str(exc), exc.status)
    refusal = ctx.limits.admit(address, token)
    if refusal is not None:
        return _error(refusal.message, 429, retry_after=refusal.wait_s)
    return address, token


async def _rater_call(ctx: RaterContext, address: str, call: Any, *args: Any) -> Any:
    """:func:`_in_worker`, counting a token that is not a rater's (403) against the client's address."""
    result = await _in_worker(call, *args)
    if isinstance(result, Response) and result.status_code == 403:
        ctx.limits.bad_token(address)
    return result


def rate_page() -> Response:
    return Response(PAGE_HTML, media_type="text/html; charset=utf-8", headers=PAGE_HEADERS)


def rate_script() -> Response:
    return Response(PAGE_JS, media_type="text/javascript; charset=utf-8", headers=PAGE_HEADERS)


def rate_style() -> Response:
    return Response(PAGE_CSS, media_type="text/css; charset=utf-8", headers=PAGE_HEADERS)


async def next_task(ctx: RaterContext, request: Request) -> Response:
    """The rater's view: the study's wording, their progress and their next task (no metric, no edit name)."""
    checked = _admitted(ctx, request)
    if isinstance(checked, Response):
        return checked
    address, token = checked
    view = await _rater_call(ctx, address, store.rater_view, ctx.db, token)
    if isinstance(view, Response):
        return view
    return JSONResponse(vars(view), headers=PAGE_HEADERS)


async def post_answer(ctx: RaterContext, request: Request) -> Response:
    """Record the answers to the rater's current task; ``{"done", "total"}`` after it."""
    checked = _admitted(ctx, request)
    if isinstance(checked, Response):
        return checked
    address, token = checked
    try:
        body = await _bounded_json(request)
    except store.StudyError as exc:
        return _error(str(exc), exc.status)
    if not isinstance(body, dict) or set(body) - {"position", "answers", "elapsed_ms"}:
        return _error("send {position, answers, elapsed_ms} only", 400)
    result = await _rater_call(ctx, address, store.submit_answer, ctx.db, token, body.get("position"),
                              body.get("answers"), body.get("elapsed_ms"))
    if isinstance(result, Response):
        return result
    return JSONResponse({"done": result[0], "total": result[1]}, headers=PAGE_HEADERS)


async def task_picture(ctx: RaterContext, request: Request, position: int, slot: str) -> Response:
    """A picture (JPEG) of the rater's current task, or of the one just answered; 404 for any other."""
    checked = _admitted(ctx, request)
    if isinstance(checked, Response):
        return checked
    address, token = checked
    if not 0 <= position < 10 * store.MAX_UNITS or len(slot) > 10:
        return _error("no such image in your tasks", 404)
    found = await _rater_call(ctx, address, store.task_image, ctx.db, token, position, slot)
    if isinstance(found, Response):
        return found
    data = await _in_worker(store.shown_picture, *found)
    if isinstance(data, Response):
        return data
    return Response(data, media_type="image/jpeg", headers={**PAGE_HEADERS, "Cache-Control": "private, max-age=3600"})


def study_routes(settings: Settings, limits: RaterLimits | None = None) -> list[Any]:
    """The rater page's routes, for ``FastAPI(routes=...)`` (see ``launch_kwargs``). A route bound to its
    context (:func:`..binding.bind`) stays a coroutine function, awaited in the event loop where the limits are
    counted; FastAPI resolves its hints from the route's own module (``__wrapped__``)."""
    ctx = RaterContext(settings.study_db_path, limits or RaterLimits())
    router = APIRouter()
    for path, page in (("/study/rate", rate_page), ("/study/rate.js", rate_script), ("/study/rate.css", rate_style)):
        router.add_api_route(path, page, methods=["GET"], include_in_schema=False)
    router.add_api_route("/study/api/task", bind(next_task, ctx), methods=["GET"], include_in_schema=False)
    router.add_api_route("/study/api/answer", bind(post_answer, ctx), methods=["POST"],
                         include_in_schema=False)
    router.add_api_route("/study/api/image/{position}/{slot}", bind(task_picture, ctx), methods=["GET"],
                         include_in_schema=False)
    return list(router.routes)
