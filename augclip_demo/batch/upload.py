"""One call for the app's Batch tab: uploaded manifest + zip of images -> results and protocol table.

    result = run_uploaded_batch("manifest.jsonl", "images.zip", settings=settings,
                                progress=lambda fraction, message: ...)
    result.files()            # results JSONL + CSV, protocol JSON + CSV (paths to offer for download)
    result.protocol_headers, result.protocol_rows   # the protocol table (metric rows x dataset figures)
    result.summary_text       # what ran, what failed

The zip is extracted with :func:`~augclip_demo.batch.ziputil.safe_extract` (size, file-count and
uncompressed-size limits from the settings; ``..``, absolute paths and links refused). The manifest's
paths are relative to the zip's root, or to its single top-level folder when the zip wraps one.
"""

from __future__ import annotations

import codecs
import json
import re
import shutil
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..config import Settings
from ..errors import BatchCancelled, InputError, ManifestError
from ..inference.clip_encoder import ClipEncoder
from ..io import MAX_JSON_DEPTH, json_depth
from ..pipeline import AugCLIPOptions
from .manifest import is_absolute_like
from .protocol_tables import ProtocolReport, compute_protocols
from .results import export_csv
from .runner import BatchOptions, BatchSummary, run_batch
from .ziputil import ZipLimits, safe_extract

ProgressFn = Callable[[float, str], None]
_MAX_MANIFEST_BYTES = 256 * 1024 * 1024
_UPLOADED_MANIFEST = "_uploaded_manifest.jsonl"


@dataclass
class BatchUploadResult:
    results_jsonl: Path
    results_csv: Path
    protocol_json: Path
    protocol_csv: Path
    protocol_headers: list[str]
    protocol_rows: list[list[str]]
    summary: BatchSummary
    summary_text: str
    work_dir: Path
    untrained: bool
    protocol: ProtocolReport

    def files(self) -> list[str]:
        return [str(p) for p in (self.results_jsonl, self.results_csv, self.protocol_json, self.protocol_csv)]


def _first_paths(manifest: Path, limit: int = 50) -> list[str]:
    paths = []
    with open(manifest, encoding="utf-8-sig", errors="replace") as handle:
        for line in handle:
            if len(paths) >= limit:
                break
            if json_depth(line) > MAX_JSON_DEPTH:
                continue  # the manifest check reports it
            try:
                data = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(data, dict) and isinstance(data.get("source"), str):
                paths.append(data["source"])
    return paths


_TEXT_FIELDS = ("id", "source", "target_text", "source_text", "instruction", "output_caption", "dataset",
               "ground_truth", "edit_mask", "edit_type")


def check_manifest_bounds(manifest: Path, shown_name: str, settings: Settings, root: Path | None = None) -> None:
    """Refuse an uploaded manifest over the operator's bounds before anything is scored, naming the line and
    field: items (``max_batch_items``), edits per item (``max_batch_edits``), text lengths
    (``max_text_chars``), attributes per list and their length (``max_attributes``, ``max_attribute_chars``;
    inline lists, and files in the zip under ``root``). Lines that are not JSON objects are left to the
    manifest check, which words their problem."""
    items = 0
    with open(manifest, encoding="utf-8-sig", errors="replace") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            items += 1
            if items > settings.max_batch_items:
                raise InputError(f"manifest {shown_name}: more than {settings.max_batch_items} items; the limit is "
                                 f"{settings.max_batch_items} per upload (AUGCLIP_MAX_BATCH_ITEMS): split it")
            if json_depth(line) > MAX_JSON_DEPTH:
                continue
            try:
                data = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(data, dict):
                _check_item_bounds(data, f"manifest {shown_name}, line {number}", settings, root)


def _check_item_bounds(data: dict, where: str, settings: Settings, root: Path | None) -> None:
    for key in _TEXT_FIELDS:
        value = data.get(key)
        if isinstance(value, str) and len(value) > settings.max_text_chars:
            raise InputError(f"{where}: {key} has {len(value)} characters; the limit is {settings.max_text_chars} "
                             "(AUGCLIP_MAX_TEXT_CHARS)")
    edits = data.get("edits")
    if isinstance(edits, list) and len(edits) > settings.max_batch_edits:
        raise InputError(f"{where}: {len(edits)} edits in one item; the limit is {settings.max_batch_edits} "
                         "(AUGCLIP_MAX_BATCH_EDITS): split the item")
    attributes = data.get("attributes")
    if isinstance(attributes, str) and root is not None:
        attributes = _attribute_file(root, attributes, where, settings)
    if isinstance(attributes, dict):
        for side in ("source", "target"):  # inline lists, or an attributes file's source_attributes / ...
            values = attributes.get(side, attributes.get(f"{side}_attributes"))
            if not isinstance(values, list):
                continue
            if len(values) > settings.max_attributes:
                raise InputError(f"{where}: attributes.{side} has {len(values)} attributes; the limit is "
                                 f"{settings.max_attributes} (AUGCLIP_MAX_ATTRIBUTES)")
            longest = max((len(v) for v in values if isinstance(v, str)), default=0)
            if longest > settings.max_attribute_chars:
                raise InputError(f"{where}: attributes.{side} has an attribute of {longest} characters; the limit "
                                 f"is {settings.max_attribute_chars} (AUGCLIP_MAX_ATTRIBUTE_CHARS)")


def _attribute_file(root: Path, name: str, where: str, settings: Settings) -> dict | None:
    """An attributes file of the zip, read when it is small enough to hold bounded lists (else refused)."""
    if is_absolute_like(name) or ".." in Path(name).parts:
        return None  # the manifest check refuses the path
    path = root / name
    if not path.is_file():
        return None
    most = 4 * settings.max_attributes * (settings.max_attribute_chars + 8) + 65536  # JSON escapes, provenance
    if path.stat().st_size > most:
        raise InputError(f"{where}: attributes file {Path(name).name!r} is {path.stat().st_size} bytes, more than "
                         f"bounded attribute lists can take ({most} bytes; AUGCLIP_MAX_ATTRIBUTES)")
    text = path.read_text(encoding="utf-8", errors="replace")
    if json_depth(text) > MAX_JSON_DEPTH:
        return None
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        return None
    return data if isinstance(data, dict) else None


def _check_utf8(manifest: Path, shown_name: str) -> None:
    """Refuse a manifest that is not UTF-8, naming the uploaded file (not the server's copy of it)."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    offset = 0
    with open(manifest, "rb") as handle:
        while True:
            chunk = handle.read(1 << 20)
            try:
                decoder.decode(chunk, final=not chunk)
            except UnicodeDecodeError as exc:
                raise InputError(f"manifest {shown_name}: not UTF-8 text (byte {offset + max(exc.start, 0)} cannot be "
                                 "decoded); save it as UTF-8 JSON lines") from None
            if not chunk:
                return
            offset += len(chunk)


def _choose_root(extracted: Path, manifest: Path) -> Path:
    """The zip's root, or its single top-level folder when that is where the manifest's paths resolve."""
    candidates = [extracted]
    entries = [p for p in extracted.iterdir() if p.name not in ("__MACOSX",)]
    if len(entries) == 1 and entries[0].is_dir():
        candidates.append(entries[0])
    paths = [p for p in _first_paths(manifest) if not is_absolute_like(p) and ".." not in Path(p).parts]

    def hits(root: Path) -> int:
        return sum((root / p).is_file() for p in paths)

    return max(candidates, key=hits)


def unpack_beside_manifest(manifest_file: str | Path, images_zip: str | Path, folder: str | Path,
                           limits: ZipLimits) -> Path:
    """The zip of a manifest's images extracted into ``folder`` (the same checks and root as a run), and a copy
    of the manifest at that root, where its relative paths resolve; returns the copy (what the Explore views take
    to find an item's images)."""
    manifest_file, folder = Path(manifest_file), Path(folder)
    extracted = folder / "data"
    safe_extract(images_zip, extracted, limits)
    copy = _choose_root(extracted, manifest_file) / manifest_file.name
    if copy.exists():  # the zip holds a file of that name: the manifest goes beside it under its own name
        copy = copy.with_name(_UPLOADED_MANIFEST)
    shutil.copyfile(manifest_file, copy)
    return copy


def run_uploaded_batch(manifest_file: str | Path, images_zip: str | Path, *, work_dir: str | Path | None = None,
                       settings: Settings | None = None, encoder: ClipEncoder | None = None,
                       metrics: list[str] | str | None = None, augclip: AugCLIPOptions | None = None,
                       provider: str | None = None, limits: ZipLimits | None = None,
                       progress: ProgressFn | None = None, n_boot: int = 1000, seed: int = 0,
                       skip_invalid: bool = False, keep_images: bool = False,
                       cancel: threading.Event | None = None, keep_stopped: bool = False) -> BatchUploadResult:
    """Extract, validate, run the batch, compute the protocols; every file lands in ``work_dir``.

    ``skip_invalid`` scores the valid items of a manifest with bad lines (they are listed in the
    summary) instead of refusing it. The extracted images are deleted afterwards unless
    ``keep_images``: the results keep their paths as written in the manifest, and a server should not
    keep gigabytes of uploads per run. Setting ``cancel`` stops the extraction or the run
    (:class:`~augclip_demo.errors.BatchCancelled`); the scored items stay in ``work_dir``'s results file,
    and the same call with the same ``work_dir`` resumes after them. With ``keep_stopped`` a run stopped
    after it began scoring returns those kept items instead (their CSV and protocols; ``summary.interrupted``).
    """
    settings = settings or Settings()
    report = progress or (lambda fraction, message: None)
    manifest_file = Path(manifest_file)
    if not manifest_file.is_file():
        raise InputError("upload a manifest (.jsonl, one JSON object per line)")
    if manifest_file.stat().st_size > _MAX_MANIFEST_BYTES:
        raise InputError(f"the manifest is over {_MAX_MANIFEST_BYTES // (1024 * 1024)} MB")
    if not images_zip or not Path(images_zip).is_file():
        raise InputError("upload a zip of the images the manifest refers to")
    _check_utf8(manifest_file, manifest_file.name)
    check_manifest_bounds(manifest_file, manifest_file.name, settings)
    if metrics is not None and not isinstance(metrics, str):
        metrics = list(dict.fromkeys(metrics))  # checked against the metric table by BatchOptions
    work = Path(work_dir) if work_dir else Path(tempfile.mkdtemp(prefix="augclip-batch-"))
    work.mkdir(parents=True, exist_ok=True)
    extracted = work / "data"
    options = BatchOptions(metrics=metrics, augclip=augclip or AugCLIPOptions(), provider=provider,
                           skip_invalid=skip_invalid)
    dataset = re.sub(r"[^A-Za-z0-9._-]+", "_", manifest_file.stem).strip("._") or "batch"
    results = work / f"{dataset}-results.jsonl"
    csv_path = work / f"{dataset}-results.csv"
    try:
        report(0.0, "extracting the zip")
        safe_extract(images_zip, extracted, limits or ZipLimits.from_settings(settings), cancel=cancel)
        root = _choose_root(extracted, manifest_file)
        check_manifest_bounds(manifest_file, manifest_file.name, settings, root)  # the zip's attribute files
        manifest = root / _UPLOADED_MANIFEST
        shutil.copyfile(manifest_file, manifest)
        report(0.05, "checking the manifest")

        def batch_progress(fraction: float, message: str) -> None:
            report(0.05 + 0.85 * fraction, message)

        # Items without a dataset field are grouped under the uploaded file's name, not the copy's.
        try:
            summary = run_batch(manifest, results, options=options, settings=settings, encoder=encoder,
                                csv=csv_path, progress=batch_progress, dataset=dataset, cancel=cancel)
        except BatchCancelled as exc:
            if not keep_stopped or exc.summary is None or exc.summary.n_run + exc.summary.n_skipped == 0:
                raise
            summary = exc.summary  # stopped: what it kept is the result
            summary.csv = str(export_csv(results, csv_path))
    except BaseException as exc:
        if not work_dir:  # a refused or failed upload leaves nothing behind in the temp folder
            shutil.rmtree(work, ignore_errors=True)
        if isinstance(exc, ManifestError):  # name the file the user uploaded, not our copy of it
            raise ManifestError(manifest_file.name, exc.problems) from None
        raise
    finally:
        if not keep_images:
            shutil.rmtree(extracted, ignore_errors=True)
    summary.manifest = manifest_file.name
    report(0.9, "computing the protocols")
    protocol = compute_protocols([results], n_boot=n_boot, seed=seed)
    protocol_json, protocol_csv = work / f"{dataset}-protocol.json", work / f"{dataset}-protocol.csv"
    protocol.save(protocol_json, protocol_csv)
    headers, rows = protocol.wide_table()
    report(1.0, f"{'stopped' if summary.interrupted else 'done'}: {summary.n_ok} scored, {summary.n_failed} failed")
    return BatchUploadResult(
        results_jsonl=results, results_csv=csv_path, protocol_json=protocol_json, protocol_csv=protocol_csv,
        protocol_headers=headers, protocol_rows=rows, summary=summary,
        summary_text=summary.format(), work_dir=work, untrained=summary.untrained, protocol=protocol,
    )

