"""Rating studies in the app: the rater page (plain routes on the app's FastAPI server) and the operator's tab.

Rater routes (every one needs the rater's token in ``Authorization: Bearer``; answers are bounded to
``MAX_ANSWER_BYTES``):

* ``GET /study/rate`` (+ ``rate.js``, ``rate.css``): the page; the link is ``/study/rate#t=TOKEN``.
* ``GET /study/api/task``: the study's wording, the rater's progress and next task (resumes by itself).
* ``POST /study/api/answer``: ``{"position": N, "answers": {"overall": "left"|"right"|"tie" or 1-5, ...},
  "elapsed_ms": N}``; refused when it is not the rater's task, answered already, or the study is closed.
* ``GET /study/api/image/{position}/{slot}``: a picture of the rater's current task (or the one just answered).

Every API request is first counted against its rater's token and its client's address
(:mod:`augclip_demo.study.limits`, in the event loop, before any thread or database work); over the rate it
is answered 429 with ``Retry-After``. Requests with a token that is not a rater's are counted per address
as well, and an address over that bound is answered 429 until its bucket refills.

The operator's tab works only when ``AUGCLIP_STUDY_OPERATOR_TOKEN`` is set and the token is typed in;
without it, studies are created, closed and exported from the CLI (``python -m augclip_demo study``).
Wrong tokens are counted per address (no pause in a worker thread); exports are written into the session's
work folder (:class:`~augclip_demo.ui.storage.WorkFolders`: the disk cap and the sweeps cover them).
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import math
import threading
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
from ..study.limits import OperatorLimits, RaterLimits
from ..study.report import format_report, report_tables
from .guard import scrub_paths
from .storage import WorkFolders
from .study_page import PAGE_CSS, PAGE_HTML, PAGE_JS

MAX_ANSWER_BYTES = 4096
MAX_TOKEN_CHARS = 100
PAGE_HEADERS = {
    "Cache-Control": "no-store", "Referrer-Policy": "no-referrer", "X-Content-Type-Options": "nosniff",
    "Content-Security-Policy": ("default-src 'none'; script-src 'self'; style-src 'self'; img-src blob:; "
                                "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"),
}


def _error(message: str, status: int, retry_after: float | None = None) -> JSONResponse:
    headers = dict(PAGE_HEADERS)
    if retry_after is not None:
        headers["Retry-After"] = str(max(1, math.ceil(retry_after)))  # as the message says
    return JSONResponse({"error": scrub_paths(message)}, status_code=status, headers=headers)


def client_address(peer: str | None, forwarded: str | None) -> str:
    """The address a request's limits are counted against: the peer's, or, when the peer is a proxy on this
    machine or a private network, the last ``X-Forwarded-For`` entry (the one the nearest proxy added: a
    client can prepend entries, never append after its proxy's)."""
    address = peer or "unknown"
    try:
        trusted = ipaddress.ip_address(address).is_private  # loopback and private ranges both count
    except ValueError:
        trusted = False
    if trusted and forwarded:
        last = forwarded.split(",")[-1].strip()
        if last:
            return last[:64]
    return address


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


def study_routes(settings: Settings, limits: RaterLimits | None = None) -> list[Any]:
    """The rater page's routes, for ``FastAPI(routes=...)`` (see ``launch_kwargs``)."""
    db = settings.study_db_path
    router = APIRouter()
    limits = limits or RaterLimits()

    def admitted(request: Request) -> tuple[str, str] | Response:
        """(address, token), or the refusal: no token (401), over a rate (429). Runs in the event loop."""
        address = client_address(request.client.host if request.client else None,
                                 request.headers.get("x-forwarded-for"))
        try:
            token = _token(request)
        except store.StudyError as exc:
            limits.bad_token(address)
            return _error(str(exc), exc.status)
        refusal = limits.admit(address, token)
        if refusal is not None:
            return _error(refusal.message, 429, retry_after=refusal.wait_s)
        return address, token

    async def guarded(address: str, call: Any, *args: Any) -> Any:
        result = await _guarded(call, *args)
        if isinstance(result, Response) and result.status_code == 403:  # a token that is not a rater's
            limits.bad_token(address)
        return result

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
        checked = admitted(request)
        if isinstance(checked, Response):
            return checked
        address, token = checked
        view = await guarded(address, store.rater_view, db, token)
        if isinstance(view, Response):
            return view
        return JSONResponse(vars(view), headers=PAGE_HEADERS)

    @router.post("/study/api/answer", include_in_schema=False)
    async def answer(request: Request) -> Response:
        checked = admitted(request)
        if isinstance(checked, Response):
            return checked
        address, token = checked
        try:
            body = await _bounded_json(request)
        except store.StudyError as exc:
            return _error(str(exc), exc.status)
        if not isinstance(body, dict) or set(body) - {"position", "answers", "elapsed_ms"}:
            return _error("send {position, answers, elapsed_ms} only", 400)
        result = await guarded(address, store.submit_answer, db, token, body.get("position"), body.get("answers"),
                               body.get("elapsed_ms"))
        if isinstance(result, Response):
            return result
        return JSONResponse({"done": result[0], "total": result[1]}, headers=PAGE_HEADERS)

    @router.get("/study/api/image/{position}/{slot}", include_in_schema=False)
    async def image(request: Request, position: int, slot: str) -> Response:
        checked = admitted(request)
        if isinstance(checked, Response):
            return checked
        address, token = checked
        if not 0 <= position < 10 * store.MAX_UNITS or len(slot) > 10:
            return _error("no such image in your tasks", 404)
        found = await guarded(address, store.task_image, db, token, position, slot)
        if isinstance(found, Response):
            return found
        data = await _guarded(store.shown_picture, *found)
        if isinstance(data, Response):
            return data
        return Response(data, media_type="image/jpeg", headers={**PAGE_HEADERS, "Cache-Control": "private, max-age=3600"})

    return list(router.routes)


# ---------------------------------------------------------------------------------------------- operator tab
NOT_OPERATOR = "The operator token is not right (or AUGCLIP_STUDY_OPERATOR_TOKEN is not set)."


class Operator:
    """The operator token's check for the tab's actions and the Explore tab's "study from this slice".

    A wrong token is counted against the client's address (:class:`~augclip_demo.study.limits.OperatorLimits`);
    an address that used up its tries is refused at once, without comparing anything, until its bucket refills.
    Nothing sleeps, so a burst of wrong tokens holds no worker thread."""

    def __init__(self, limits: OperatorLimits | None = None):
        self.limits = limits or OperatorLimits()
        self._lock = threading.Lock()  # the look at the bucket and the count of a miss are one step

    def check(self, given: str | None, request: Any = None) -> None:
        """Return when ``given`` is the operator token; else raise :class:`StudyError` (403, or 429 when the
        client's address has sent too many wrong ones)."""
        address = _request_address(request)
        expected = study_operator_token()
        with self._lock:  # microseconds: a compare of two short strings
            refusal = self.limits.blocked(address)
            if refusal is None and (expected is None or not given
                                    or not hmac.compare_digest(str(given).encode(), expected.encode())):
                self.limits.missed(address)
                raise store.StudyError(NOT_OPERATOR, 403)
        if refusal is not None:
            raise store.StudyError(refusal.message[0].upper() + refusal.message[1:] + ".", 429)


def _request_address(request: Any) -> str:
    """The client's address of a Gradio request (``gr.Request``), as the rater routes count it."""
    inner = getattr(request, "request", request)
    client = getattr(inner, "client", None) or getattr(request, "client", None)
    headers = getattr(inner, "headers", None) or getattr(request, "headers", None) or {}
    return client_address(getattr(client, "host", None), headers.get("x-forwarded-for"))


#: the app's operator check (one per process: the tab and the Explore control share its counts)
OPERATOR = Operator()


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


def operator_status(settings: Settings, name: str, results: str | None) -> str:
    """The tab's report (Markdown): progress, rater agreement and, with a results file, the metrics'."""
    data = store.load_study(settings.study_db_path, name.strip())
    report = study_agreement(data, [results] if results else [])
    head = _cell(format_report(report).split("\n\n")[0]).replace("\n", "\n\n")
    notes = "".join(f"\n- {_cell(note)}" for note in report.notes)
    return f"{head}\n\n{_tables_markdown(report_tables(report))}" + (f"\n\n**Notes**{notes}" if notes else "")


def operator_add_raters(settings: Settings, name: str, count: float | None, base_url: str) -> str:
    raters = store.add_raters(settings.study_db_path, name.strip(), count=int(count or 0))
    lines = ["Each link is shown once; send each rater their own.", ""]
    lines += [f"- {r.label}: `{base_url}study/rate#t={r.token}`" for r in raters]
    return "\n".join(lines)


def operator_export(settings: Settings, name: str, folder: Path) -> list[str]:
    """The judgments as CSV and as manifest lines, written into ``folder`` (a session's work folder)."""
    data = store.load_study(settings.study_db_path, name.strip())
    csv_path = folder / f"{data.study.name}-judgments.csv"
    csv_path.write_text(export_csv(data), encoding="utf-8")
    manifest = folder / f"{data.study.name}-overall.jsonl"
    manifest.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in export_lines(data)),
                        encoding="utf-8")
    return [str(csv_path), str(manifest)]


def _message(exc: AugclipError) -> str:
    """An error as the tab shows it: its text, with every server folder cut (paths in a manifest's message)."""
    return scrub_paths(str(exc))


def build_study_tab(settings: Settings, *, folders: WorkFolders | None = None,
                    operator: Operator = OPERATOR) -> None:
    """The Study tab's contents (call inside ``gr.Tab``); exports go into ``folders`` (the app's work folders)."""
    folders = folders or WorkFolders()
    gr.Markdown("Rating studies: people judge edits on their own page (`/study/rate#t=...`); this tab shows how "
                "they agree with each other and with the metrics. Create studies with `python -m augclip_demo study "
                "create` (or from a slice in the Explore tab); the operator token (`AUGCLIP_STUDY_OPERATOR_TOKEN`) "
                "unlocks the actions below. See docs/study.md.")
    with gr.Row():
        token = gr.Textbox(label="Operator token", type="password", max_length=200, elem_id="study-operator-token")
        name = gr.Textbox(label="Study", max_length=store.MAX_NAME, elem_id="study-name")
        results = gr.File(label="Results of `batch` on the study's manifest (optional)", file_types=[".jsonl"],
                          type="filepath", elem_id="study-results")
    with gr.Row():
        refresh = gr.Button("Show agreement", variant="primary", elem_id="study-show")
        count = gr.Number(label="Raters to add", value=1, minimum=1, maximum=store.MAX_RATERS_PER_CALL, precision=0)
        add = gr.Button("Add raters", elem_id="study-add")
        close = gr.Button("Close study", variant="stop", elem_id="study-close")
        export = gr.Button("Export", elem_id="study-export")
        live = gr.Checkbox(label="Refresh every 30 s", value=False, elem_id="study-live")
    out = gr.Markdown(elem_id="study-report")
    timer = gr.Timer(30.0, active=False)
    files = gr.Files(label="Exports")

    def show(token_value: str, study: str, results_file: str | None, request: gr.Request) -> str:
        try:
            operator.check(token_value, request)
            return operator_status(settings, study, results_file)
        except AugclipError as exc:
            return _message(exc)

    def close_it(token_value: str, study: str, request: gr.Request) -> str:
        try:
            operator.check(token_value, request)
            closed = store.close_study(settings.study_db_path, study.strip())
        except AugclipError as exc:
            return _message(exc)
        return f"Study {closed.name} is closed (since {closed.closed_at}); raters' pages now say so."

    def add_them(token_value: str, study: str, n: float | None, request: gr.Request) -> str:
        base = str(getattr(request, "request", request).base_url) if request is not None else "/"
        try:
            operator.check(token_value, request)
            return operator_add_raters(settings, study, n, base)
        except AugclipError as exc:
            return _message(exc)

    def export_them(token_value: str, study: str, request: gr.Request) -> tuple[list[str], str]:
        try:
            operator.check(token_value, request)
            folders.check_room("The export")
            folder = folders.new(getattr(request, "session_hash", None))
            paths = operator_export(settings, study, folder)
        except AugclipError as exc:
            return [], _message(exc)
        return paths, ("Exported: the judgments (CSV) and the manifest lines (paths relative to the study's "
                       "manifest folder).")

    refresh.click(show, [token, name, results], out, api_visibility="private")
    live.change(lambda on: gr.Timer(active=bool(on)), live, timer, api_visibility="private")  # follow the answers
    timer.tick(show, [token, name, results], out, api_visibility="private")
    add.click(add_them, [token, name, count], out, api_visibility="private")
    close.click(close_it, [token, name], out, api_visibility="private")
    export.click(export_them, [token, name], [files, out], api_visibility="private")


# ---------------------------------------------------------------------------------------------- from Explore
def slice_study_control(settings: Settings, state: gr.State, shelf: Any, operator: Operator = OPERATOR) -> None:
    """The Explore tab's "Make a study from this slice" (call inside the tab): the operator token, a name and
    the design; the study is made over the active slice's edits (``state``: the tab's state, holding the open
    file's key and the active slice; ``shelf``: the tab's :class:`~augclip_demo.explore.shelf.Shelf`)."""
    from ..explore import slice_from_json
    from ..study.questions import KINDS, QUESTION_IDS
    from ..study.slices import create_study_from_slice

    with gr.Accordion("Make a study from this slice (operator only)", open=False):
        gr.Markdown("People then judge the slice's edits on the rater page: pairs of edits of one source (2AFC) or "
                    "1-5 ratings. Add raters in the Study tab. See docs/study.md.")
        with gr.Row():
            token = gr.Textbox(label="Operator token", type="password", max_length=200,
                               elem_id="aug-explore-study-token")
            name = gr.Textbox(label="Study name", max_length=store.MAX_NAME, elem_id="aug-explore-study-name")
            kind = gr.Radio(list(KINDS), value="2afc", label="Kind", elem_id="aug-explore-study-kind")
            questions = gr.CheckboxGroup(list(QUESTION_IDS), value=["overall"], label="Questions ('overall' is "
                                         "always asked)", elem_id="aug-explore-study-questions")
        with gr.Row():
            per_unit = gr.Number(3, label="Judgments per unit", minimum=1, maximum=1000, precision=0)
            per_rater = gr.Number(0, label="Units per rater (0: all)", minimum=0, maximum=store.MAX_UNITS,
                                  precision=0)  # the page sends 0 for an empty field
            repeats = gr.Number(2, label="Attention checks per rater", minimum=0, maximum=1000, precision=0)
            make = gr.Button("Make a study from this slice", elem_id="aug-explore-study-make")
        said = gr.Markdown(elem_id="aug-explore-study-info")

    def made(token_value: str, study: str, kind_value: str, asked: list[str] | None, n_unit: float | None,
             n_rater: float | None, n_repeats: float | None, current: dict[str, Any] | None,
             request: gr.Request) -> str:
        try:
            operator.check(token_value, request)
            if not current or not current.get("key"):
                raise store.StudyError("open a results file first (with its manifest: a study shows its pictures)")
            active = slice_from_json(current.get("active") or "{}")
            created, selection = create_study_from_slice(
                settings.study_db_path, study, shelf.store(current["key"]), active, kind=kind_value,
                questions=list(asked or ["overall"]), per_unit=int(n_unit or 3),
                per_rater=int(n_rater) if n_rater else None,
                repeats=int(2 if n_repeats is None else n_repeats))
            data = store.load_study(settings.study_db_path, created.name)
        except AugclipError as exc:
            return _message(exc)
        needed = -(-len(data.units) * created.per_unit // created.per_rater)
        return (f"Study **{_cell(created.name)}**: {len(data.units)} units ({created.kind}) from "
                f"{_cell(selection.description)} ({selection.n_edits} edits of {len(selection.only)} items); "
                f"{created.per_rater} per rater, so {needed} raters give each unit {created.per_unit} judgments. "
                "Add raters in the Study tab.")

    make.click(made, [token, name, kind, questions, per_unit, per_rater, repeats, state], said, api_visibility="private")
