"""The item grid (pages of edits, sorted by any metric) and one item as its record holds it.

The grid is one SQL query per page (``ORDER BY`` the chosen metric, ``LIMIT`` / ``OFFSET``), so a sort or a
page costs the same on 100 or 100,000 items. :func:`item_record` returns the item's record exactly as the
results file holds it (parsed from the record's own JSON), so the numbers the inspection view shows are
the run's, never recomputed; thumbnails are read from the manifest's folder, refusing any path that
leaves it.
"""

from __future__ import annotations

import base64
import io
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import InputError
from .slices import Slice
from .store import ResultsStore, metric_column

PAGE_SIZE = 24
_MAX_PAGE = 100_000
_SORT_FIELDS = ("id", "model", "dataset", "role")


@dataclass
class GridRow:
    item: int
    file_no: int
    id: str
    dataset: str
    model: str
    role: str
    edit: int
    source: str | None
    path: str | None
    values: dict[str, float | None]
    untrained: bool


@dataclass
class GridPage:
    rows: list[GridRow]
    total: int
    page: int
    pages: int


def _order(store: ResultsStore, sort: str, descending: bool) -> str:
    direction = "DESC" if descending else "ASC"
    if sort in store.metrics:
        return f"{metric_column(sort)} {direction} NULLS LAST, item, edit"
    if sort in _SORT_FIELDS:
        return f"{sort} {direction}, item, edit"
    raise InputError(f"cannot sort by {sort!r}: choose a metric ({', '.join(store.metrics)}) or one of "
                     f"{', '.join(_SORT_FIELDS)}")


def grid_page(store: ResultsStore, active: Slice, *, sort: str = "id", descending: bool = False, page: int = 0,
              page_size: int = PAGE_SIZE, ranking: Sequence[int] | None = None) -> GridPage:
    """One page of the slice's edits in the chosen order (pages count from 0). With ``ranking`` (item numbers,
    e.g. the disagreements strongest first) only those items' edits, in that order (``sort`` is ignored)."""
    where, params = active.where(store)
    source, order = store.table, _order(store, sort, descending) if ranking is None else "position, edit"
    if ranking is not None:
        source = f"{store.table} JOIN (SELECT unnest(?) AS ranked, generate_subscripts(?, 1) AS position) ON item = ranked"
        params = [list(map(int, ranking)), list(map(int, ranking)), *params]
    page = max(0, min(int(page), _MAX_PAGE))
    page_size = max(1, min(int(page_size), 200))
    total = store.query(f"SELECT count(*) FROM {source} WHERE {where}", params)[0][0]
    pages = max(1, -(-total // page_size))
    page = min(page, pages - 1)
    columns = ", ".join(metric_column(k) for k in store.metrics)
    rows = store.query(f"SELECT item, file_no, id, dataset, model, role, edit, source, path, untrained"
                       f"{', ' + columns if columns else ''} FROM {source} WHERE {where} "
                       f"ORDER BY {order} LIMIT ? OFFSET ?",
                       [*params, page_size, page * page_size])
    out = [GridRow(int(r[0]), int(r[1]), str(r[2]), str(r[3] or ""), str(r[4]), str(r[5]), int(r[6]), r[7], r[8],
                   dict(zip(store.metrics, r[10:])), bool(r[9])) for r in rows]
    return GridPage(out, int(total), page, pages)


@dataclass
class ItemView:
    """One item for the inspection view: its record as stored, and where its images are (when known)."""

    record: dict[str, Any]
    run_label: str
    store: ResultsStore
    file_no: int

    def score_rows(self, metrics: list[str]) -> tuple[list[str], list[list[Any]]]:
        """One row per edit: index, name, role, then each metric's stored value (exact, ``repr`` of the float)."""
        headers = ["edit", "name", "role", *metrics]
        rows = []
        for edit in self.record.get("edits", []):
            values = edit.get("metrics") or {}
            rows.append([edit.get("index"), edit.get("name", ""), edit.get("role", ""),
                         *(exact(values.get(k)) for k in metrics)])
        return headers, rows

    def image(self, relative: str | None) -> Path | None:
        """An image of the item inside the manifest's folder, or None (no manifest, missing, or outside)."""
        return image_path(self.store, self.file_no, relative)


def exact(value: Any) -> str:
    """A stored number as text that reads back to the same float (``repr``); n/a for a missing one."""
    if value is None:
        return "n/a"
    return repr(float(value)) if isinstance(value, (int, float)) and not isinstance(value, bool) else str(value)


def item_record(store: ResultsStore, item: int) -> ItemView:
    """Item ``item`` (the edits table's number) with its stored record."""
    found = store.query(f"SELECT DISTINCT file_no, run FROM {store.table} WHERE item = ?", [int(item)])
    if not found:
        raise InputError(f"no item number {item} in the opened results")
    file_no, run = found[0]
    columns = ", ".join(f"CAST({c} AS VARCHAR)" for c in ("id", "dataset", "status", "error", "source", "target_text",
                                                          "source_text", "instruction", "edits", "human",
                                                          "attributes", "meta", "run"))
    row = store.query(f"SELECT {columns} FROM records WHERE rowid = ?", [int(item)])[0]
    names = ("id", "dataset", "status", "error", "source", "target_text", "source_text", "instruction")
    record: dict[str, Any] = dict(zip(names, row[:8]))
    for name, text in zip(("edits", "human", "attributes", "meta", "run"), row[8:]):
        record[name] = json.loads(text) if text is not None else None
    return ItemView(record, store.runs[run - 1].label(), store, int(file_no))


def image_path(store: ResultsStore, file_no: int, relative: str | None) -> Path | None:
    """An image named by a record of file ``file_no``, inside that file's manifest folder (None: no manifest,
    missing, or a path that leaves the folder)."""
    opened = store.files[file_no]
    if opened.manifest is None or not relative:
        return None
    from ..batch.manifest import manifest_root, resolve_inside  # on use: it brings the attribute providers

    try:
        path = resolve_inside(manifest_root(opened.manifest), relative, "image")
    except InputError:
        return None
    return path if path.is_file() else None


def thumbnail(path: Path | None, side: int = 160) -> Any:
    """A small RGB copy of an image (PIL), or None when it cannot be read."""
    if path is None:
        return None
    from PIL import Image

    try:
        with Image.open(path) as image:
            image.draft("RGB", (side, side))
            small = image.convert("RGB")
            small.thumbnail((side, side))
            return small
    except (OSError, ValueError, Image.DecompressionBombError):
        return None


def thumbnail_data_uri(path: Path | None, side: int = 160) -> str | None:
    """A small JPEG of an image as a data: URI (for the grid and the self-contained report)."""
    small = thumbnail(path, side)
    if small is None:
        return None
    buffer = io.BytesIO()
    small.save(buffer, format="JPEG", quality=80)
    return "data:image/jpeg;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


@dataclass
class EvaluateInputs:
    """What the Evaluate tab needs to explain an item with the run's recorded settings."""

    source: Path
    edits: list[Path]
    edit_names: list[str]
    target_text: str
    source_text: str
    instruction: str
    source_attributes: list[str]
    target_attributes: list[str]
    model: str | None
    options: dict[str, Any]  # the run's AugCLIP options (classifier, C, weighting, include_images, ...)
    bpm: dict[str, Any] | None = None  # the run's BPM settings as recorded (models, parser, options), None: no BPM
    judge: dict[str, Any] | None = None  # the run's judge settings as recorded (model, prompt, samples), None: none

    @property
    def bpm_parser(self) -> str | None:
        return str(self.bpm["parser"]) if self.bpm and self.bpm.get("parser") else None

    def settings_note(self) -> str:
        """The run's BPM and judge settings in words (what the Evaluate tab should be run with to reproduce the
        record's BPM and judge values)."""
        parts = []
        if self.bpm is not None:
            options = self.bpm.get("options") or {}
            parts.append(f"BPM with detector {self.bpm.get('detector')}, segmenter {self.bpm.get('segmenter')}, "
                         f"parser {self.bpm.get('parser')}" + (f", options {json.dumps(options, sort_keys=True)}"
                                                                if options else ""))
        if self.judge is not None:
            parts.append(f"judge {self.judge.get('model')} (prompt {self.judge.get('prompt_version')}, temperature "
                         f"{self.judge.get('temperature')}, {self.judge.get('samples')} sample(s))")
        return "; ".join(parts) or "no BPM, no judge"


def evaluate_inputs(view: ItemView) -> EvaluateInputs:
    """The item's images (inside the manifest's folder), texts, attributes and the run's model and options."""
    record = view.record
    source = view.image(record.get("source"))
    if source is None:
        raise InputError("this item's images are not available here (the results were opened without their "
                         "manifest and images, or the files moved): open the results with them to explain an item "
                         "(in the app: upload a zip of the results, manifest and images, or open a Batch run with "
                         "its button; from a shell: --manifest)")
    edits, names = [], []
    for edit in record.get("edits") or []:
        path = view.image(edit.get("path"))
        if path is None:
            raise InputError(f"edit {edit.get('index')} ({edit.get('name')}) of this item: its image is not available")
        edits.append(path)
        names.append(str(edit.get("name", "")))
    attributes = record.get("attributes") or {}
    run = record.get("run") or {}
    return EvaluateInputs(source, edits, names, str(record.get("target_text") or ""),
                          str(record.get("source_text") or ""), str(record.get("instruction") or ""),
                          [str(a) for a in attributes.get("source_attributes") or []],
                          [str(a) for a in attributes.get("target_attributes") or []],
                          run.get("model"), dict(run.get("options") or {}),
                          dict(run["bpm"]) if isinstance(run.get("bpm"), dict) else None,
                          dict(run["judge"]) if isinstance(run.get("judge"), dict) else None)
