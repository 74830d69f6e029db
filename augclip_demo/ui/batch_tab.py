"""The Batch tab: a manifest plus a zip of its images in; per-edit scores, the protocol table and downloads out.

The work is :func:`augclip_demo.batch.upload.run_uploaded_batch` (safe extraction with size, file-count
and uncompressed-size limits; the same runner and protocol code as the CLI); this module is the page
around it and the ``/batch`` API endpoint.
"""

from __future__ import annotations

import csv
import dataclasses
import functools
import hashlib
import html
import shutil
import tempfile
import threading
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gradio as gr

from ..batch.options import batch_metric_keys
from ..batch.upload import BatchUploadResult, run_uploaded_batch
from ..batch.ziputil import ZipLimits
from ..config import Settings
from ..metrics.suite import METRICS, metric_keys
from ..report import UNTRAINED_WARNING
from . import first_contact
from .examples import EXAMPLES_DIR
from .guard import CancelWatch, scrub_paths, user_facing
from .session import offered_clip_model
from .status import model_status
from .storage import WorkFolders
from .views import empty_table

#: One batch per server: Gradio's concurrency limit frees its slot when a request is cancelled, while the
#: cancelled run is still stopping in its thread; this lock holds until it has.
BATCH_LOCK = threading.Lock()
LOCK_WAIT_S = 15.0
MAX_SHOWN_ROWS = 500  # per-edit rows shown on the page; the downloads hold all of them
SHOWN_COLUMNS = ("id", "edit", "name", "role", "status")


def batch_help(settings: Settings) -> str:
    return f"""
**Score a whole benchmark.** Upload a **manifest** (JSONL, one item per line: `id`, `source`, `target_text`,
optional `source_text`, `edits` with `path` / `name` / `role` (gt, ep, em, candidate), optional `human`
judgments and `attributes`; docs/batch.md, *Manifests*, has the format) and a **zip of the images** it
names; paths in the manifest are relative to the zip's root (or to its single top-level folder).
Items with `human.preferred` give s2AFC, triplets with gt / ep / em roles give AccBoth, per-edit
`human.scores` give correlations. The zip may be at most {settings.upload_max_zip_mb} MB, hold at most
{settings.upload_max_files} files and expand to at most {settings.upload_max_unzipped_mb} MB; paths with
`..`, absolute paths and links are refused. The same run from a shell:
`python -m augclip_demo batch MANIFEST --out RESULTS.jsonl`, then `python -m augclip_demo protocol RESULTS.jsonl`.
"""


def example_batch_files() -> tuple[str, str]:
    """The shipped examples as an upload would bring them: their manifest and a zip of their folders."""
    files = _example_batch_files()
    if not all(Path(file).is_file() for file in files):  # swept away as an old temporary folder: make again
        _example_batch_files.cache_clear()
        files = _example_batch_files()
    return files


@functools.cache
def _example_batch_files() -> tuple[str, str]:
    folder = Path(tempfile.mkdtemp(prefix="augclip-batch-example-"))
    manifest = folder / "examples.jsonl"
    shutil.copyfile(EXAMPLES_DIR / "manifest.jsonl", manifest)
    images = folder / "examples.zip"
    with zipfile.ZipFile(images, "w", compression=zipfile.ZIP_STORED) as archive:  # PNGs are compressed already
        for file in sorted(EXAMPLES_DIR.glob("*/*")):
            archive.write(file, file.relative_to(EXAMPLES_DIR).as_posix())
    return str(manifest), str(images)


def metric_choices(settings: Settings | None = None) -> list[tuple[str, str]]:
    """Every metric a batch run computes (BPM included: it runs on items with an instruction or a parse); the
    MLLM judge's rows only when ``settings`` name a configured judge endpoint (the operator's, never the client's)."""
    from ..llm.client import endpoint_status

    judge = settings is not None and endpoint_status(settings.judge_base_url).configured
    return [(METRICS[key].label if key in METRICS else key, key) for key in batch_metric_keys()
            if judge or METRICS[key].basis != "judge"]


def summary_markdown(result: BatchUploadResult) -> str:
    """What ran and what failed, for people (the server's temporary paths are left out)."""
    summary = result.summary
    lines = []
    if result.untrained:
        lines.append(f'<div class="aug-untrained">{html.escape(UNTRAINED_WARNING)} ({html.escape(summary.model)})</div>\n')
    lines.append(f"**{summary.n_ok} item(s) scored, {summary.n_failed} failed** (of {summary.n_items}) in "
                 f"{summary.seconds:.1f} s ({summary.items_per_second:.2f} items/s) with `{summary.model}`.")
    if summary.n_skipped:
        lines.append(f"Resumed: {summary.n_skipped} item(s) scored by an earlier, cancelled run of this upload were kept.")
    hidden = str(result.work_dir)
    for item_id, error in summary.failures[:10]:
        lines.append(f"- failed `{html.escape(str(item_id))}`: {html.escape(scrub_paths(error.replace(hidden, '…')))}")
    if summary.n_failed > 10:
        lines.append(f"- … {summary.n_failed - 10} more failure(s): see the results CSV (`error` column)")
    if summary.invalid:
        lines.append(f"\n**{len(summary.invalid)} invalid manifest line problem(s) skipped:**")
        lines.extend(f"- {html.escape(scrub_paths(problem))}" for problem in summary.invalid[:20])
        if len(summary.invalid) > 20:
            lines.append(f"- … and {len(summary.invalid) - 20} more")
    if not result.protocol_rows or len(result.protocol_headers) <= 1:
        lines.append("\nNo protocol figures: the manifest has no human judgments (`human.preferred` or "
                     "`human.scores`) and no gt / ep / em triplets. The per-edit scores are below and in the downloads.")
    return "\n".join(lines)


def per_edit_rows(result: BatchUploadResult, metrics: list[str]) -> tuple[list[str], list[list[Any]], int]:
    """The first rows of the results CSV (identity columns, then the metrics), and the total row count."""
    headers = [*SHOWN_COLUMNS, *(METRICS[k].label if k in METRICS else k for k in metrics), "error"]
    rows, total = [], 0
    with open(result.results_csv, newline="", encoding="utf-8") as handle:
        for record in csv.DictReader(handle):
            total += 1
            if len(rows) < MAX_SHOWN_ROWS:
                values = [_number(record.get(k, "")) for k in metrics]
                rows.append([record.get(k, "") for k in SHOWN_COLUMNS] + values + [scrub_paths(record.get("error", ""))])
    return headers, rows, total


def public_copies(result: BatchUploadResult) -> list[str]:
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


def upload_key(*files: str) -> str:
    """A digest of the uploaded files' bytes (which run a later upload of the same files resumes)."""
    digest = hashlib.sha256()
    for file in files:
        with open(file, "rb") as handle:
            while chunk := handle.read(1 << 20):
                digest.update(chunk)
        digest.update(b"\0")
    return digest.hexdigest()


def _number(text: str) -> float:
    """A metric cell of the results CSV as a number (NaN when empty: a failed item or an unavailable metric)."""
    try:
        return float(text)
    except ValueError:
        return float("nan")


def per_edit_table(headers: list[str], rows: list[list[Any]], metrics: list[str]) -> Any:
    """The per-edit rows with every score shown with four decimals (and sorted as numbers), blank when missing."""
    import pandas as pd

    frame = pd.DataFrame(rows, columns=headers)
    labels = [METRICS[k].label if k in METRICS else k for k in metrics]
    return frame.style.format("{:.4f}", subset=labels, na_rep="")


EMPTY_PROTOCOL = ("No protocol figures yet: choose a manifest and its image zip (or press Load the shipped examples), "
                  "then Run batch.")
EMPTY_SCORES = "No per-edit scores yet: they appear here when a batch has run."
NO_PROTOCOL = ("No protocol figures for this manifest: they need human judgments (human.preferred or human.scores) "
               "or gt / ep / em triplets (augclip-demo triplets adds them).")


def batch_settings(settings: Settings, clip_spec: str | None, clip_choices: list[str]) -> Settings:
    """The settings a batch runs with: the page's, with the chosen (offered) CLIP model; in the untrained demo
    every model random, as on the Evaluate tab."""
    return first_contact.demo_settings(settings.replace(clip_model=offered_clip_model(clip_spec, clip_choices)))


def build_batch_tab(settings: Settings, *, provider_choices: list[tuple[str, str]], default_provider: str,
                    clip_choices: list[str], folders: WorkFolders | None = None,
                    after_run: Callable[[], None] | None = None) -> None:
    """Lay out the tab and wire it; call inside ``gr.Blocks`` / ``gr.Tabs``."""
    with gr.Tab("Batch", id="batch"):
        gr.Markdown(batch_help(settings))
        with gr.Row(equal_height=False):
            manifest = gr.File(label="Manifest (.jsonl)", file_types=[".jsonl", ".json", ".txt"], height=120,
                               elem_id="aug-batch-manifest")
            images = gr.File(label="Images (.zip)", file_types=[".zip"], height=120, elem_id="aug-batch-zip")
            with gr.Column(min_width=300):
                metrics = gr.CheckboxGroup(metric_choices(settings), value=metric_keys(computable=True, primary=True), label="Metrics",
                                           elem_id="aug-batch-metrics")
                provider = gr.Dropdown(provider_choices, value=default_provider, label="Attribute provider",
                                       info="for items without attributes in the manifest")
                clip_model = gr.Dropdown(clip_choices, value=settings.clip_model, label="CLIP model (spec)")
                skip_invalid = gr.Checkbox(False, label="Skip invalid manifest lines (else every problem is listed "
                                                        "and nothing runs)")
        with gr.Row():
            run_btn = gr.Button("Run batch", variant="primary", elem_id="aug-batch-run", scale=3)
            example_btn = gr.Button("Load the shipped examples (a manifest of 4 triplets and its zip)", scale=2,
                                    elem_id="aug-batch-example")
        # Beside Run: the models the chosen CLIP model and metrics need and lack (not one of first_contact's
        # page notes: those follow the Evaluate tab's CLIP model, this one the tab's own).
        needs = gr.HTML("", elem_id="aug-batch-needs", padding=False, visible=False)
        summary = gr.Markdown(elem_id="aug-batch-summary")
        protocol = gr.Dataframe(empty_table(EMPTY_PROTOCOL),
                                label="Protocols (metric x figure; 95% bootstrap CI in brackets)", interactive=False,
                                wrap=True, elem_id="aug-batch-protocol")
        scores = gr.Dataframe(empty_table(EMPTY_SCORES),
                              label=f"Per-edit scores (first {MAX_SHOWN_ROWS} rows; all in the downloads; click a "
                                    "header to sort)", interactive=False, max_height=420, elem_id="aug-batch-scores")
        files = gr.File(label="Downloads: results (JSONL, CSV), protocols (JSON, CSV)", file_count="multiple",
                        interactive=False, elem_id="aug-batch-files")

        resumable: dict[tuple, Path] = {}  # a cancelled run's folder, by session, upload and choices

        @user_facing
        def run(manifest_file, images_zip, metric_keys, provider_name, clip_spec, skip, request: gr.Request,
                progress=gr.Progress()):
            if not manifest_file:
                raise gr.Error("Upload a manifest first (.jsonl, one JSON object per line).")
            if not images_zip:
                raise gr.Error("Upload a zip with the images the manifest names.")
            if not metric_keys:
                raise gr.Error("Choose at least one metric.")
            run_settings = batch_settings(settings, clip_spec, clip_choices)
            metric_keys = list(dict.fromkeys(metric_keys))
            limits = ZipLimits.from_settings(settings)
            if folders is not None:  # the zip may expand only into the room left under the disk cap
                folders.check_room("The batch")
                if folders.room() < limits.max_total_bytes:
                    limits = dataclasses.replace(limits, max_total_bytes=folders.room(),
                                                 total_limit="the room left under the app's disk cap, AUGCLIP_APP_DISK_MB")
            session = getattr(request, "session_hash", None)
            # The same upload with the same choices in the same session resumes a cancelled run's folder.
            key = (session, upload_key(manifest_file, images_zip), tuple(metric_keys), provider_name,
                   run_settings.clip_model, bool(skip))
            work_dir = resumable.get(key)
            if work_dir is None or not work_dir.is_dir():
                work_dir = Path(tempfile.mkdtemp(prefix="augclip-batch-", dir=folders.root if folders else None))
                resumable[key] = work_dir
                if folders is not None:  # deleted with the session (and by age / total size)
                    folders.adopt(session, work_dir)
            if not BATCH_LOCK.acquire(timeout=LOCK_WAIT_S):
                raise gr.Error("Another batch is still running (or stopping) on this server; one runs at a time. "
                               "Try again in a minute.")
            try:
                with CancelWatch() as watch:
                    result = run_uploaded_batch(manifest_file, images_zip, work_dir=work_dir, settings=run_settings,
                                                metrics=metric_keys, provider=provider_name, skip_invalid=bool(skip),
                                                progress=lambda fraction, message: progress(fraction, desc=message),
                                                cancel=watch.event, limits=limits)
            finally:
                BATCH_LOCK.release()
            resumable.pop(key, None)  # finished: a new run of it starts afresh
            if after_run is not None:
                after_run()
            headers, rows, total = per_edit_rows(result, list(metric_keys))
            text = summary_markdown(result)
            if total > len(rows):
                text += f"\n\nShowing {len(rows)} of {total} per-edit rows."
            protocol_table = ({"headers": result.protocol_headers, "data": result.protocol_rows}
                              if result.protocol_rows else empty_table(NO_PROTOCOL))
            return text, protocol_table, per_edit_table(headers, rows, list(metric_keys)), public_copies(result)

        def draw_needs(clip_spec, chosen):
            try:
                text = first_contact.batch_note(batch_settings(settings, clip_spec, clip_choices), chosen, model_status)
            except Exception:  # noqa: BLE001 - a model the page does not offer: Run says so itself
                text = ""
            return gr.update(value=text, visible=bool(text))  # an empty note takes no room

        # No triggers: on page load and on every change of the two inputs.
        gr.on(None, draw_needs, [clip_model, metrics], needs, api_name=False, show_progress="hidden")
        example_btn.click(lambda: example_batch_files(), None, [manifest, images], api_name=False)
        # One batch at a time: a batch fills the CPU / GPU by itself.
        run_btn.click(run, [manifest, images, metrics, provider, clip_model, skip_invalid],
                      [summary, protocol, scores, files], api_name="batch", concurrency_limit=1,
                      concurrency_id="batch")

