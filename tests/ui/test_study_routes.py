"""Each rater-page route called directly, as FastAPI calls it: a real Starlette request (headers, client address,
body), a real SQLite study in a tmp folder, and the answers checked against the database (sqlite3) and the
pictures on disk. Over HTTP the same routes are tested in tests/study/test_server.py."""

from __future__ import annotations

import asyncio
import inspect
import io
import json
import sqlite3

import pytest
from PIL import Image
from starlette.requests import Request

from augclip_demo.config import Settings
from augclip_demo.study import limits, store
from augclip_demo.study.limits import RaterLimits
from augclip_demo.ui.study import routes as routes
from augclip_demo.ui.study.page import PAGE_CSS, PAGE_HTML, PAGE_JS
from tests.study.helpers import write_study_manifest


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture()
def study(tmp_path):
    manifest = write_study_manifest(tmp_path / "data", n_items=2)
    db = tmp_path / "s.sqlite3"
    store.create_study(db, "s", manifest, repeats=0)
    ann, = store.add_raters(db, "s", labels=["ann"])
    return {"db": db, "manifest": manifest, "ann": ann}


@pytest.fixture()
def ctx(study) -> routes.RaterContext:
    return routes.RaterContext(study["db"], RaterLimits(Clock()))


def request(token: str | None = None, *, body: bytes | None = None, host: str = "198.51.100.4",
            path: str = "/study/api/task", headers: dict[str, str] | None = None) -> Request:
    """A request as the server receives it: the rater's token in Authorization, a body sent in two chunks."""
    sent = dict(headers or {})
    if token is not None:
        sent["authorization"] = f"Bearer {token}"
    chunks = [body[: len(body) // 2], body[len(body) // 2:]] if body is not None else [b""]

    async def receive():
        chunk = chunks.pop(0) if chunks else b""
        return {"type": "http.request", "body": chunk, "more_body": bool(chunks)}

    scope = {"type": "http", "method": "POST" if body is not None else "GET", "path": path, "scheme": "http",
             "headers": [(k.lower().encode(), v.encode()) for k, v in sent.items()], "client": (host, 40000),
             "server": ("127.0.0.1", 7860), "query_string": b"", "root_path": ""}
    return Request(scope, receive)


def run(coroutine):
    return asyncio.run(coroutine)


def payload(response) -> dict:
    return json.loads(response.body)


def judgments(db) -> list[tuple]:
    with sqlite3.connect(db) as conn:
        return conn.execute("SELECT question, answer, elapsed_ms FROM judgments ORDER BY id").fetchall()


def test_the_page_and_its_files_are_served_with_the_pages_headers():
    for route, text, kind in ((routes.rate_page, PAGE_HTML, "text/html"), (routes.rate_script, PAGE_JS,
                              "text/javascript"), (routes.rate_style, PAGE_CSS, "text/css")):
        response = route()
        assert response.body == text.encode() and response.media_type.startswith(kind)
        assert response.headers["content-security-policy"] == routes.PAGE_HEADERS["Content-Security-Policy"]
        assert response.headers["cache-control"] == "no-store"


def test_next_task_shows_the_raters_progress_and_refuses_bad_links(ctx, study):
    ann = study["ann"]
    response = run(routes.next_task(ctx, request(ann.token)))
    view = payload(response)
    with sqlite3.connect(study["db"]) as conn:
        tasks = conn.execute("SELECT COUNT(*) FROM tasks").fetchone()[0]
    assert response.status_code == 200 and (view["done"], view["total"]) == (0, tasks) and tasks == 3 * 2
    assert view["task"]["position"] == 0 and set(view["task"]) == {"position", "text", "slots"}
    assert response.headers["cache-control"] == "no-store"
    missing = run(routes.next_task(ctx, request(None)))
    assert missing.status_code == 401 and "personal rating link" in payload(missing)["error"]
    assert run(routes.next_task(ctx, request("x" * (routes.MAX_TOKEN_CHARS + 1)))).status_code == 401
    stranger = run(routes.next_task(ctx, request("y" * 32)))
    assert stranger.status_code == 403
    # both the missing link and the stranger's token were counted against the address
    assert ctx.limits.bad_tokens.wait("198.51.100.4") == 0  # within the burst
    for _ in range(limits.BAD_TOKEN_ADDRESS.burst):
        run(routes.next_task(ctx, request(None)))
    refused = run(routes.next_task(ctx, request(ann.token)))
    assert refused.status_code == 429 and int(refused.headers["retry-after"]) >= 1
    assert run(routes.next_task(ctx, request(ann.token, host="198.51.100.5"))).status_code == 200  # another address


def test_post_answer_records_the_answer_and_refuses_what_it_must(ctx, study):
    ann = study["ann"]
    position = payload(run(routes.next_task(ctx, request(ann.token))))["task"]["position"]
    good = json.dumps({"position": position, "answers": {"overall": "left"}, "elapsed_ms": 1234}).encode()
    response = run(routes.post_answer(ctx, request(ann.token, body=good)))
    assert response.status_code == 200 and payload(response) == {"done": 1, "total": 6}
    with sqlite3.connect(study["db"]) as conn:
        swapped, = conn.execute("SELECT swapped FROM tasks WHERE position = ?", (position,)).fetchone()
    stored = [("overall", "b" if swapped else "a", 1234)]  # the left picture was edit a unless the task swapped them
    assert judgments(study["db"]) == stored
    again = run(routes.post_answer(ctx, request(ann.token, body=good)))
    assert again.status_code == 409 and "answered this task already" in payload(again)["error"]
    big = b"{" + b" " * routes.MAX_ANSWER_BYTES + b"}"
    assert run(routes.post_answer(ctx, request(ann.token, body=big))).status_code == 413  # streamed past the bound
    declared = request(ann.token, body=good, headers={"content-length": str(routes.MAX_ANSWER_BYTES + 1)})
    assert run(routes.post_answer(ctx, declared)).status_code == 413  # refused on its declared length
    nested = run(routes.post_answer(ctx, request(ann.token, body=b"[" * 2000 + b"]" * 2000)))
    assert nested.status_code == 400 and "not valid JSON" in payload(nested)["error"]
    extra = json.dumps({"position": 1, "answers": {"overall": "left"}, "more": 1}).encode()
    assert payload(run(routes.post_answer(ctx, request(ann.token, body=extra)))) == {
        "error": "send {position, answers, elapsed_ms} only"}
    wrong = json.dumps({"position": 1, "answers": {"overall": "sideways"}}).encode()
    assert run(routes.post_answer(ctx, request(ann.token, body=wrong))).status_code == 400
    assert judgments(study["db"]) == stored  # no refused answer was kept


def test_task_picture_sends_the_current_tasks_pictures_only(ctx, study):
    ann = study["ann"]
    task = payload(run(routes.next_task(ctx, request(ann.token))))["task"]
    response = run(routes.task_picture(ctx, request(ann.token), task["position"], "source"))
    assert response.status_code == 200 and response.media_type == "image/jpeg"
    shown = Image.open(io.BytesIO(response.body))
    with sqlite3.connect(study["db"]) as conn:
        source, = conn.execute("SELECT i.source_path FROM items i JOIN units u ON u.item_id = i.item_id "
                               "JOIN tasks t ON t.unit_id = u.id WHERE t.position = ?", (task["position"],)).fetchone()
    assert shown.format == "JPEG" and shown.size == Image.open(source).size  # small pictures keep their size
    assert run(routes.task_picture(ctx, request(ann.token), task["position"], "edit")).status_code == 404  # 2AFC
    assert run(routes.task_picture(ctx, request(ann.token), task["position"] + 2, "left")).status_code == 404
    assert run(routes.task_picture(ctx, request(ann.token), -1, "left")).status_code == 404
    assert run(routes.task_picture(ctx, request(ann.token), 0, "x" * 11)).status_code == 404
    assert run(routes.task_picture(ctx, request(None), task["position"], "left")).status_code == 401


def test_the_routes_are_bound_to_their_context_as_fastapi_takes_them(study):
    settings = Settings.from_env(study_db=study["db"])
    made = routes.study_routes(settings)
    assert [(r.path, sorted(r.methods)) for r in made] == [
        ("/study/rate", ["GET"]), ("/study/rate.js", ["GET"]), ("/study/rate.css", ["GET"]),
        ("/study/api/task", ["GET"]), ("/study/api/answer", ["POST"]), ("/study/api/image/{position}/{slot}", ["GET"])]
    image = made[-1]
    assert inspect.iscoroutinefunction(image.endpoint)  # awaited in the event loop, where the limits count
    assert list(inspect.signature(image.endpoint).parameters) == ["request", "position", "slot"]
    assert [(p.name, p.field_info.annotation) for p in image.dependant.path_params] == [("position", int),
                                                                                        ("slot", str)]
    assert image.dependant.request_param_name == "request"
    assert not any(r.include_in_schema for r in made)
