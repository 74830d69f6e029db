"""Rating studies in the app: the rater page (plain routes on the app's FastAPI server) and the operator's tab.

Rater routes (every one needs the rater's token in ``Authorization: Bearer``; answers are bounded to
``MAX_ANSWER_BYTES``):

* ``GET /study/rate`` (+ ``rate.js``, ``rate.css``): the page; the link is ``/study/rate#t=TOKEN``.
* ``GET /study/api/task``: the study's wording, the rater's progress and next task (resumes by itself).
* ``POST /study/api/answer``: ``{"position": N, "answers": {"overall": "left"|"right"|"tie" or 1-5, ...},
  "elapsed_ms": N}``; refused when it is not the rater's task, answered already, or the study is closed.
* ``GET /study/api/image/{position}/{slot}``: a picture of the rater's current task (or the one just answered).

The operator's tab works only when ``AUGCLIP_STUDY_OPERATOR_TOKEN`` is set and the token is typed in;
without it, studies are created, closed and exported from the CLI (``python -m augclip_demo study``).
"""

from __future__ import annotations

import hmac
import json
import tempfile
import time
from pathlib import Path
from typing import Any

import gradio as gr
from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse, Response

from ..config import Settings, study_operator_token
from ..errors import AugclipError
from ..study import store
from ..study.agreement import study_agreement
from ..study.exchange import export_csv, export_lines
from ..study.report import format_report, report_tables
from .study_page import PAGE_CSS, PAGE_HTML, PAGE_JS

MAX_ANSWER_BYTES = 4096
MAX_TOKEN_CHARS = 100
PAGE_HEADERS = {
    "Cache-Control": "no-store", "Referrer-Policy": "no-referrer", "X-Content-Type-Options": "nosniff",
    "Content-Security-Policy": ("default-src 'none'; script-src 'self'; style-src 'self'; img-src blob:; "
                                "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"),
}


def _error(message: str, status: int) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status, headers=PAGE_HEADERS)


def _token(request: Request) -> str:
    header = request.headers.get("authorization", "")
    scheme, _, value = header.partition(" ")
    if scheme.lower() != "bearer" or not value or len(value) > MAX_TOKEN_CHARS:
        raise store.StudyError("this page needs your personal rating link (it ends in #t=...)", 401)
    return value.strip()


async def _guarded(call: Any, *args: Any) -> Any:
    """Run a store call in a worker thread; a refusal becomes its message, anything else a plain 500."""
    try:
        return await run_in_threadpool(call, *args)
    except store.StudyError as exc:
        return _error(str(exc), exc.status)
    except AugclipError:
        return _error("the study could not answer that; tell the study's organiser", 400)


async def _bounded_json(request: Request) -> Any:
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


def study_routes(settings: Settings) -> list[Any]:
    """The rater page's routes, for ``FastAPI(routes=...)`` (see ``launch_kwargs``)."""
    db = settings.study_db_path
    router = APIRouter()

    @router.get("/study/rate", include_in_schema=False)
    def page() -> Response:
        return Response(PAGE_HTML, media_type="text/html; charset=utf-8", headers=PAGE_HEADERS)

    @router.get("/study/rate.js", include_in_schema=False)
    def script() -> Response:
        return Response(PAGE_JS, media_type="text/javascript; charset=utf-8", headers=PAGE_HEADERS)

    @router.get("/study/rate.css", include_in_schema=False)
    def style() -> Response:
        return Response(PAGE_CSS, media_type="text/css; charset=utf-8", headers=PAGE_HEADERS)

    @router.get("/study/api/task", include_in_schema=False)
    async def task(request: Request) -> Response:
        try:
            token = _token(request)
        except store.StudyError as exc:
            return _error(str(exc), exc.status)
        view = await _guarded(store.rater_view, db, token)
        if isinstance(view, Response):
            return view
        return JSONResponse(vars(view), headers=PAGE_HEADERS)

    @router.post("/study/api/answer", include_in_schema=False)
    async def answer(request: Request) -> Response:
        try:
            token = _token(request)
            body = await _bounded_json(request)
        except store.StudyError as exc:
            return _error(str(exc), exc.status)
        if not isinstance(body, dict) or set(body) - {"position", "answers", "elapsed_ms"}:
            return _error("send {position, answers, elapsed_ms} only", 400)
        result = await _guarded(store.submit_answer, db, token, body.get("position"), body.get("answers"),
                                body.get("elapsed_ms"))
        if isinstance(result, Response):
            return result
        return JSONResponse({"done": result[0], "total": result[1]}, headers=PAGE_HEADERS)

    @router.get("/study/api/image/{position}/{slot}", include_in_schema=False)
    async def image(request: Request, position: int, slot: str) -> Response:
        try:
            token = _token(request)
        except store.StudyError as exc:
            return _error(str(exc), exc.status)
        if not 0 <= position < 10 * store.MAX_UNITS or len(slot) > 10:
            return _error("no such image in your tasks", 404)
        found = await _guarded(store.task_image, db, token, position, slot)
        if isinstance(found, Response):
            return found
        data = await _guarded(store.shown_picture, *found)
        if isinstance(data, Response):
            return data
        return Response(data, media_type="image/jpeg", headers={**PAGE_HEADERS, "Cache-Control": "private, max-age=3600"})

    return list(router.routes)


# ---------------------------------------------------------------------------------------------- operator tab
def operator_allowed(given: str | None) -> bool:
    """Whether ``given`` is the configured operator token (constant-time compare; a short pause on a miss)."""
    expected = study_operator_token()
    if expected is None:
        return False
    ok = bool(given) and hmac.compare_digest(str(given).encode(), expected.encode())
    if not ok:
        time.sleep(0.5)  # slows guessing down; the token's length does the rest
    return ok


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("<", "&lt;")


def _tables_markdown(tables: list[tuple[str, list[str], list[list[str]]]]) -> str:
    cell = _cell
    blocks = []
    for title, headers, rows in tables:
        lines = [f"**{cell(title)}**", "", "| " + " | ".join(cell(h) for h in headers) + " |",
                 "|" + "---|" * len(headers)]
        lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def operator_status(settings: Settings, token: str, name: str, results: str | None) -> str:
    """The tab's report (Markdown): progress, rater agreement and, with a results file, the metrics'."""
    if not operator_allowed(token):
        return "The operator token is not right (or AUGCLIP_STUDY_OPERATOR_TOKEN is not set)."
    data = store.load_study(settings.study_db_path, name.strip())
    report = study_agreement(data, [results] if results else [])
    head = _cell(format_report(report).split("\n\n")[0]).replace("\n", "\n\n")
    notes = "".join(f"\n- {_cell(note)}" for note in report.notes)
    return f"{head}\n\n{_tables_markdown(report_tables(report))}" + (f"\n\n**Notes**{notes}" if notes else "")


def operator_add_raters(settings: Settings, token: str, name: str, count: float | None, base_url: str) -> str:
    if not operator_allowed(token):
        return "The operator token is not right (or AUGCLIP_STUDY_OPERATOR_TOKEN is not set)."
    raters = store.add_raters(settings.study_db_path, name.strip(), count=int(count or 0))
    lines = ["Each link is shown once; send each rater their own.", ""]
    lines += [f"- {r.label}: `{base_url}study/rate#t={r.token}`" for r in raters]
    return "\n".join(lines)


def operator_export(settings: Settings, token: str, name: str) -> list[str]:
    if not operator_allowed(token):
        return []
    data = store.load_study(settings.study_db_path, name.strip())
    folder = Path(tempfile.mkdtemp(prefix="augclip-study-"))
    csv_path = folder / f"{data.study.name}-judgments.csv"
    csv_path.write_text(export_csv(data), encoding="utf-8")
    manifest = folder / f"{data.study.name}-overall.jsonl"
    manifest.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in export_lines(data)),
                        encoding="utf-8")
    return [str(csv_path), str(manifest)]


def build_study_tab(settings: Settings) -> None:
    """The Study tab's contents (call inside ``gr.Tab``)."""
    gr.Markdown("Rating studies: people judge edits on their own page (`/study/rate#t=...`); this tab shows how "
                "they agree with each other and with the metrics. Create studies with `python -m augclip_demo study "
                "create`; the operator token (`AUGCLIP_STUDY_OPERATOR_TOKEN`) unlocks the actions below. See "
                "docs/study.md.")
    with gr.Row():
        token = gr.Textbox(label="Operator token", type="password", max_length=200, elem_id="study-operator-token")
        name = gr.Textbox(label="Study", max_length=store.MAX_NAME, elem_id="study-name")
        results = gr.File(label="Results of `batch` on the study's manifest (optional)", file_types=[".jsonl"],
                          type="filepath", elem_id="study-results")
    with gr.Row():
        refresh = gr.Button("Show agreement", variant="primary")
        count = gr.Number(label="Raters to add", value=1, minimum=1, maximum=store.MAX_RATERS_PER_CALL, precision=0)
        add = gr.Button("Add raters")
        close = gr.Button("Close study", variant="stop")
        export = gr.Button("Export")
        live = gr.Checkbox(label="Refresh every 30 s", value=False, elem_id="study-live")
    out = gr.Markdown(elem_id="study-report")
    timer = gr.Timer(30.0, active=False)
    files = gr.Files(label="Exports")

    def guarded(call: Any) -> Any:
        def run(*args: Any) -> Any:
            try:
                return call(*args)
            except AugclipError as exc:
                return f"{exc}"
        return run

    def close_it(token_value: str, study: str) -> str:
        if not operator_allowed(token_value):
            return "The operator token is not right (or AUGCLIP_STUDY_OPERATOR_TOKEN is not set)."
        closed = store.close_study(settings.study_db_path, study.strip())
        return f"Study {closed.name} is closed (since {closed.closed_at}); raters' pages now say so."

    def add_them(token_value: str, study: str, n: float | None, request: gr.Request) -> str:
        base = str(getattr(request, "request", request).base_url) if request is not None else "/"
        try:
            return operator_add_raters(settings, token_value, study, n, base)
        except AugclipError as exc:
            return f"{exc}"

    def export_them(token_value: str, study: str) -> tuple[list[str], str]:
        try:
            paths = operator_export(settings, token_value, study)
        except AugclipError as exc:
            return [], f"{exc}"
        return paths, ("Exported: the judgments (CSV) and the manifest lines (paths relative to the study's "
                       "manifest folder)." if paths else "The operator token is not right.")

    show = guarded(lambda t, n, r: operator_status(settings, t, n, r))
    refresh.click(show, [token, name, results], out)
    live.change(lambda on: gr.Timer(active=bool(on)), live, timer)  # follow the answers as they arrive
    timer.tick(show, [token, name, results], out)
    add.click(add_them, [token, name, count], out)
    close.click(guarded(close_it), [token, name], out)
    export.click(export_them, [token, name], [files, out])
