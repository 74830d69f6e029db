"""What the Batch tab's events do: one top-level function per handler.

Each handler takes the tab's :class:`BatchContext` first, then the values of its event's input components,
and returns the updates: a dict keyed by the tab's components. :func:`.wiring.wire` binds the context
(:func:`..binding.bind`) and connects the events. The work is
:func:`augclip_demo.batch.upload.run_uploaded_batch` (safe extraction with size, file-count and
uncompressed-size limits; the same runner and protocol code as the CLI); this module is the page around it.
"""

from __future__ import annotations

import csv
import functools
import hashlib
import json
import shutil
import stat
import tempfile
import threading
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gradio as gr

from ...batch.manifest import load_manifest
from ...batch.upload import BatchUploadResult, run_uploaded_batch, unpack_beside_manifest
from ...batch.ziputil import ZipLimits
from ...config import Settings
from ...errors import InputError, WeightsUnavailableError
from ...metrics.suite import METRICS
from ...report import UNTRAINED_WARNING
from .. import first_contact
from ..common import empty_table, page_settings, text_safe
from ..examples import EXAMPLES_DIR
from ..guard import CancelWatch, scrub_paths, user_facing
from ..status import model_status
from ..storage import BATCH_PREFIX, WorkFolders, upload_zip_limits
from .layout import MAX_SHOWN_ROWS, BatchTab

Updates = dict[Any, Any]

#: One batch per server: Gradio's concurrency limit frees its slot when a request is cancelled, while the
#: cancelled run is still stopping in its thread; this lock holds until it has.
BATCH_LOCK = threading.Lock()
LOCK_WAIT_S = 15.0
#: How long Stop waits for the stopped run's worker to end before it says so: the worker stops scoring within a
#: second or two, then writes the kept items' CSV and protocol tables (their bootstrap takes longer on a busy CPU).
STOP_WAIT_S = 90.0
_MAX_RUNS_KEPT = 256
SHOWN_COLUMNS = ("id", "edit", "name", "role", "status")
_NO_PROTOCOL = ("No protocol figures for this manifest: they need human judgments (human.preferred or human.scores) "
               "or gt / ep / em triplets (augclip-demo triplets adds them).")


@dataclass
class BatchContext:
    """What every Batch handler needs besides its inputs: the page's settings and CLIP offer, where the runs'
    folders go, what to do after a run, and the tab's components (the keys of the updates)."""

    settings: Settings
    clip_choices: list[str]
    tab: BatchTab
    folders: WorkFolders | None = None  # None: runs go to the system's temporary folder, unaccounted
    after_run: Callable[[], None] | None = None  # e.g. keep the app's files within their bounds
    #: each session's latest run (what Stop shows when it has stopped), at most :data:`_MAX_RUNS_KEPT` sessions
    runs: dict[str | None, BatchRun] = field(default_factory=dict)


@dataclass
class BatchRun:
    """One run of the tab, as Stop finds it: its metrics, whether its worker has ended, and what it returned
    (a finished run's results, or a stopped run's kept items; None when it ended without any)."""

    metric_keys: list[str]
    manifest_file: str = ""  # the uploads it ran on (Gradio's copies on the server): Open in Explore reads them
    images_zip: str = ""
    ended: threading.Event = field(default_factory=threading.Event)
    result: BatchUploadResult | None = None
    unpacked: Path | None = None  # its manifest beside its images, once opened in the Explore tab
    cancel: threading.Event | None = None  # set by Stop (besides Gradio's cancel of the event): the run stops


# ---------------------------------------------------------------------------- handlers


@user_facing
def score_upload(ctx: BatchContext, manifest_file, images_zip, metric_keys, provider_name, clip_spec, skip,
                 request: gr.Request = None, progress=gr.Progress()) -> Updates:
    """Run batch (and the ``/batch`` endpoint): score the uploaded manifest's items, one batch per server."""
    if not manifest_file:
        raise gr.Error("Upload a manifest first (.jsonl, one JSON object per line).")
    if not images_zip:
        raise gr.Error("Upload a zip with the images the manifest names.")
    if not metric_keys:
        raise gr.Error("Choose at least one metric.")
    run_settings = page_settings(ctx.settings, ctx.clip_choices, clip_spec)
    metric_keys = list(dict.fromkeys(metric_keys))
    if (status := model_status(run_settings)).state == "error":  # known already: said in the tab, nothing runs
        return _not_run(ctx.tab, first_contact.scores_message(run_settings, status, what="this batch did not run",
                                                              hint=first_contact.BATCH_HINT))
    limits = zip_limits(ctx)
    session = getattr(request, "session_hash", None)
    # The same upload with the same choices resumes an unfinished run's folder: one stopped on this page, or
    # one cut off when the server stopped (the folder is found on disk by this key after a restart).
    key = resume_key(upload_key(manifest_file, images_zip), metric_keys, provider_name, run_settings.clip_model,
                     bool(skip))
    work_dir = resumable_folder(ctx, key, session)
    run = _new_run(ctx, session, BatchRun(metric_keys, str(manifest_file), str(images_zip)))
    try:
        if not BATCH_LOCK.acquire(timeout=LOCK_WAIT_S):
            raise gr.Error("Another batch is still running (or stopping) on this server; one runs at a time. "
                           "Try again in a minute.")
        try:
            with CancelWatch() as watch:
                run.cancel = watch.event
                result = run_uploaded_batch(manifest_file, images_zip, work_dir=work_dir, settings=run_settings,
                                            metrics=metric_keys, provider=provider_name, skip_invalid=bool(skip),
                                            progress=lambda fraction, message: progress(fraction, desc=message),
                                            cancel=watch.event, limits=limits, keep_stopped=True)
        except WeightsUnavailableError as exc:  # found while loading: said in the tab, where the model is chosen
            return _not_run(ctx.tab, f"This batch did not run: {scrub_paths(exc.brief())}"
                                     f"{first_contact.demo_hint(run_settings, first_contact.BATCH_HINT)}.")
        finally:
            BATCH_LOCK.release()
        run.result = result
    finally:
        run.ended.set()
    if not result.summary.interrupted:
        finish_resumable(work_dir)  # finished: a new run of it starts afresh (a stopped one resumes)
    if ctx.after_run is not None:
        ctx.after_run()
    return _batch_updates(ctx.tab, result, metric_keys)


def _new_run(ctx: BatchContext, session: str | None, run: BatchRun) -> BatchRun:
    """The session's run from now on (Stop shows this one's kept items); the oldest sessions' records go."""
    ctx.runs.pop(session, None)
    while len(ctx.runs) >= _MAX_RUNS_KEPT:
        ctx.runs.pop(next(iter(ctx.runs)))
    ctx.runs[session] = run
    return run


@dataclass(frozen=True)
class ExploreHandoff:
    """A run's files for the Explore tab: its results and its manifest beside the extracted images (server paths,
    kept in a server-side ``gr.State``, never sent to the client)."""

    results: Path
    manifest: Path
    name: str  # the uploaded manifest's name, for people


@user_facing
def explore_handoff(ctx: BatchContext, request: gr.Request = None) -> ExploreHandoff:
    """Open in the Explore tab: the session's latest run (finished, or stopped with kept items) with its manifest
    and its images, extracted again from the run's zip (bounded as for the run) into the run's folder, once."""
    run = ctx.runs.get(getattr(request, "session_hash", None))
    if run is None or not run.ended.is_set() or run.result is None:
        raise InputError("run a batch first (or let it end): its results then open in the Explore tab")
    result = run.result
    if run.unpacked is None or not run.unpacked.is_file():
        if not (Path(run.manifest_file).is_file() and Path(run.images_zip).is_file()):
            raise InputError("this run's uploads are no longer on the server (they are kept for a while): upload "
                             "them again and run the batch, then open it")
        folder = result.work_dir / "explore"
        shutil.rmtree(folder, ignore_errors=True)
        run.unpacked = unpack_beside_manifest(run.manifest_file, run.images_zip, folder, zip_limits(ctx))
    return ExploreHandoff(results=result.results_jsonl, manifest=run.unpacked, name=Path(run.manifest_file).name)


_RESUME_TEXT = "Run the same files with the same choices again on this page to go on from there."
_STOPPED_EARLY = "**Stopped before any item was scored.**"
_STOPPED_TABLE = "Nothing scored: the run was stopped before its first item."
_STILL_STOPPING = ("**Stopped.** The run is still finishing the items it had started; they are kept. " + _RESUME_TEXT)


def show_stop(ctx: BatchContext, request: gr.Request = None) -> Updates:
    """Run pressed: the Stop button shows while the run is queued or going (and the session's earlier run is
    no longer the one Stop would show)."""
    ctx.runs.pop(getattr(request, "session_hash", None), None)
    return {ctx.tab.stop_btn: gr.update(visible=True)}


def hide_stop(ctx: BatchContext) -> Updates:
    """The run ended (scored, refused or cancelled): Stop goes."""
    return {ctx.tab.stop_btn: gr.update(visible=False)}


def stop_run(ctx: BatchContext, request: gr.Request = None) -> Updates:
    """Stop pressed: the page cancels the run; this waits for its worker to end (within a second or two, keeping
    what it scored) and shows that run's kept items: the summary, the tables and the downloads of what it
    scored, not an earlier run's. A run that ended just before the click shows its own results."""
    run = ctx.runs.get(getattr(request, "session_hash", None))
    hidden = {ctx.tab.stop_btn: gr.update(visible=False)}
    if run is None:  # still queued: nothing started
        return {**hidden, **_no_results(ctx.tab, _STOPPED_EARLY, _STOPPED_TABLE)}
    if run.cancel is not None:  # stopped here too: whatever order Gradio's cancel of the event comes in
        run.cancel.set()
    if not run.ended.wait(STOP_WAIT_S):
        return {**hidden, **_no_results(ctx.tab, _STILL_STOPPING, _STOPPED_TABLE)}
    if run.result is None:  # stopped during the extraction, or refused
        return {**hidden, **_no_results(ctx.tab, _STOPPED_EARLY, _STOPPED_TABLE)}
    return {**hidden, **_batch_updates(ctx.tab, run.result, run.metric_keys)}


def show_needs(ctx: BatchContext, clip_spec, chosen) -> Updates:
    """The note beside Run: what the chosen CLIP model and metrics need and lack (hidden when nothing)."""
    try:
        text = first_contact.batch_note(page_settings(ctx.settings, ctx.clip_choices, clip_spec), chosen,
                                        model_status)
    except Exception:  # noqa: BLE001 - a model the page does not offer: Run says so itself
        text = ""
    return {ctx.tab.needs: gr.update(value=text, visible=bool(text))}  # an empty note takes no room


def follow_demo(ctx: BatchContext) -> Updates:
    """The page's demo button: the tab's CLIP model becomes the demo's too (its note follows the change)."""
    return {ctx.tab.clip_model: gr.update(value=first_contact.DEMO_CLIP)}


def load_example_files(ctx: BatchContext) -> Updates:
    """Load the shipped examples: their manifest and a zip of their images, as the two uploads."""
    manifest, images = _example_batch_files()
    return {ctx.tab.manifest: manifest, ctx.tab.images: images}


# ---------------------------------------------------------------------------- the run's pieces


def zip_limits(ctx: BatchContext) -> ZipLimits:
    """The settings' limits on the image zip; the zip may expand only into the room left under the disk cap."""
    return upload_zip_limits(ctx.settings, ctx.folders, "The batch")


#: The file in a batch folder that names the request it holds an unfinished run of (see :func:`resume_key`).
RESUME_KEY_FILE = ".resume-key"


def resume_key(upload_digest: str, metric_keys: list[str], provider: str, clip_model: str, skip: bool) -> str:
    """Which run a request is: the uploaded files' bytes and every choice that changes the results. The key
    leaves the session out, so that a page opened after a server restart finds the run it had started."""
    choices = json.dumps([upload_digest, list(metric_keys), provider, clip_model, bool(skip)])
    return hashlib.sha256(choices.encode()).hexdigest()


def resumable_folder(ctx: BatchContext, key: str, session: str | None) -> Path:
    """The run's folder: the folder of an unfinished run of the same ``key`` when one is on disk (stopped on
    the page, or cut off when the server stopped: this or an earlier server process), else a new one. Either
    way ``session`` owns it from now on (its end deletes it; age and the disk cap delete it too)."""
    folders = ctx.folders if ctx.folders is not None else WorkFolders()  # the system's temporary folder, unaccounted
    work_dir = _unfinished_run(folders.ours(), key)
    if work_dir is None:
        work_dir = Path(tempfile.mkdtemp(prefix=BATCH_PREFIX, dir=folders.root))
        (work_dir / RESUME_KEY_FILE).write_text(key)
    folders.adopt(session, work_dir)
    return work_dir


def finish_resumable(work_dir: Path) -> None:
    """A finished run's folder is no longer one to resume (a new run of the same request starts afresh)."""
    (Path(work_dir) / RESUME_KEY_FILE).unlink(missing_ok=True)


def _unfinished_run(candidates: list[Path], key: str) -> Path | None:
    """The newest of the app's folders (:meth:`WorkFolders.ours`) whose key file, a plain file, holds ``key``."""
    found: list[tuple[float, Path]] = []
    for folder in candidates:
        marker = folder / RESUME_KEY_FILE
        try:
            info = marker.lstat()
            if stat.S_ISREG(info.st_mode) and info.st_size == len(key) and marker.read_text() == key:
                found.append((info.st_mtime, folder))
        except (OSError, UnicodeDecodeError):
            continue
    return max(found)[1] if found else None


def upload_key(*files: str) -> str:
    """A digest of the uploaded files' bytes (which run a later upload of the same files resumes)."""
    digest = hashlib.sha256()
    for file in files:
        with open(file, "rb") as handle:
            while chunk := handle.read(1 << 20):
                digest.update(chunk)
        digest.update(b"\0")
    return digest.hexdigest()


def _example_batch_files() -> tuple[str, str]:
    """The shipped examples as an upload would bring them: their manifest and a zip of their folders."""
    files = _written_example_files()
    if not all(Path(file).is_file() for file in files):  # swept away as an old temporary folder: make again
        _written_example_files.cache_clear()
        files = _written_example_files()
    return files


@functools.cache
def _written_example_files() -> tuple[str, str]:
    folder = Path(tempfile.mkdtemp(prefix="augclip-batch-example-"))
    manifest = folder / "examples.jsonl"
    shutil.copyfile(EXAMPLES_DIR / "manifest.jsonl", manifest)
    images = folder / "examples.zip"
    with zipfile.ZipFile(images, "w", compression=zipfile.ZIP_STORED) as archive:  # PNGs are compressed already
        files = {f for item in load_manifest(EXAMPLES_DIR / "manifest.jsonl") for f in item.files()}  # read, no more
        for file in sorted(files):
            archive.write(file, file.relative_to(EXAMPLES_DIR).as_posix())
    return str(manifest), str(images)


# ---------------------------------------------------------------------------- what the page shows of a run


def _batch_updates(tab: BatchTab, result: BatchUploadResult, metric_keys: list[str]) -> Updates:
    """The summary, the protocol table, the first per-edit rows and the downloads of a finished run."""
    headers, rows, total = _per_edit_rows(result, metric_keys)
    text = _summary_markdown(result)
    if total > len(rows):
        text += f"\n\nShowing {len(rows)} of {total} per-edit rows."
    protocol_table = ({"headers": result.protocol_headers, "data": result.protocol_rows}
                      if result.protocol_rows else empty_table(_NO_PROTOCOL))
    return {tab.summary: text, tab.protocol: protocol_table, tab.scores: _per_edit_table(headers, rows, metric_keys),
            tab.files: _public_copies(result)}


_NOT_RUN_TABLE = "Nothing scored: the message above says why and what to do."


def _not_run(tab: BatchTab, message: str | None) -> Updates:
    """A batch that could not start (its models have no weights here): the reason and the fix in the summary's
    place, as a red panel beside the tab's inputs (not a notice over them), and no earlier run's results. The
    panel is a Markdown quote (the stylesheet draws the summary's quotes red), so the ``/batch`` endpoint's
    answer stays Markdown with no HTML."""
    return _no_results(tab, _refused_markdown(message or ""), _NOT_RUN_TABLE)


def _refused_markdown(message: str) -> str:
    """``message`` as the summary's red panel: a Markdown quote, each line quoted."""
    return "\n".join(f"> {line}" for line in text_safe(message).splitlines() or [""])


def _no_results(tab: BatchTab, summary: str, table_text: str) -> Updates:
    """``summary`` and empty tables (``table_text`` in them), no downloads: no earlier run's results stay."""
    return {tab.summary: summary, tab.protocol: empty_table(table_text), tab.scores: empty_table(table_text),
            tab.files: None}


def _summary_markdown(result: BatchUploadResult) -> str:
    """What ran and what failed, for people (the server's temporary paths are left out)."""
    summary = result.summary
    lines = []
    if result.untrained:  # Markdown, no HTML: the summary is also the /batch answer
        lines.append(f"**\u26a0 {text_safe(UNTRAINED_WARNING)} ({text_safe(summary.model)})**\n")
    head = "Stopped: " if summary.interrupted else ""
    lines.append(f"**{head}{summary.n_ok} item(s) scored, {summary.n_failed} failed** (of {summary.n_items}) in "
                 f"{summary.seconds:.1f} s ({summary.items_per_second:.2f} items/s) with `{summary.model}`.")
    if summary.interrupted:
        lines.append(f"These are the items the stopped run kept (the rest were not scored). {_RESUME_TEXT}")
    if summary.n_skipped:
        lines.append(f"Resumed: {summary.n_skipped} item(s) scored by an earlier run of this upload that did not "
                     "finish (stopped, or cut off when the server stopped) were kept.")
    hidden = str(result.work_dir)
    for item_id, error in summary.failures[:10]:
        lines.append(f"- failed `{str(item_id)}`: {text_safe(scrub_paths(error.replace(hidden, '…')))}")
    if summary.n_failed > 10:
        lines.append(f"- … {summary.n_failed - 10} more failure(s): see the results CSV (`error` column)")
    if summary.invalid:
        lines.append(f"\n**{len(summary.invalid)} invalid manifest line problem(s) skipped:**")
        lines.extend(f"- {text_safe(scrub_paths(problem))}" for problem in summary.invalid[:20])
        if len(summary.invalid) > 20:
            lines.append(f"- … and {len(summary.invalid) - 20} more")
    if not result.protocol_rows or len(result.protocol_headers) <= 1:
        lines.append("\nNo protocol figures: the manifest has no human judgments (`human.preferred` or "
                     "`human.scores`) and no gt / ep / em triplets. The per-edit scores are below and in the downloads.")
    return "\n".join(lines)


def _per_edit_rows(result: BatchUploadResult, metrics: list[str]) -> tuple[list[str], list[list[Any]], int]:
    """The first rows of the results CSV (identity columns, then the metrics), and the total row count."""
    headers = [*SHOWN_COLUMNS, *(METRICS[k].label if k in METRICS else k for k in metrics), "why n/a", "error"]
    rows, total = [], 0
    with open(result.results_csv, newline="", encoding="utf-8") as handle:
        for record in csv.DictReader(handle):
            total += 1
            if len(rows) < MAX_SHOWN_ROWS:
                values = [_number(record.get(k, "")) for k in metrics]
                rows.append([record.get(k, "") for k in SHOWN_COLUMNS] + values
                            + [scrub_paths(record.get(k, "")) for k in ("unavailable", "error")])
    return headers, rows, total


def _number(text: str) -> float:
    """A metric cell of the results CSV as a number (NaN when empty: a failed item or an unavailable metric)."""
    try:
        return float(text)
    except ValueError:
        return float("nan")


def _per_edit_table(headers: list[str], rows: list[list[Any]], metrics: list[str]) -> Any:
    """The per-edit rows with every score shown with four decimals (and sorted as numbers), "n/a" when missing
    (as the Evaluate tab says it; the "why n/a" column has the reason, a failed item's is under "error")."""
    import pandas as pd

    frame = pd.DataFrame(rows, columns=headers)
    labels = [METRICS[k].label if k in METRICS else k for k in metrics]
    return frame.style.format("{:.4f}", subset=labels, na_rep="n/a")


def _public_copies(result: BatchUploadResult) -> list[str]:
    """The downloads as a web client gets them: copies of the results and protocol files with every
    absolute path cut to its last component (the protocol names the server's results file, a run's
    signature its model folders). The originals stay as written: a later run of the same upload resumes
    from them."""
    folder = result.work_dir / "downloads"
    folder.mkdir(exist_ok=True)
    copies = []
    for original in map(Path, result.files()):
        copy = folder / original.name
        with open(original, encoding="utf-8") as src, open(copy, "w", encoding="utf-8", newline="") as dst:
            for line in src:
                dst.write(scrub_paths(line))
        copies.append(str(copy))
    return copies
