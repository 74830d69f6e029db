"""The comparison grid of one source: every edit side by side, and its self-contained HTML export.

One column per edit: the edited image, every metric of the report (from the metric table, best per
row marked, with its rank), a verdict line, then whatever pictures the layers above supply (the
explain layer adds relevancy maps and BPM masks, :func:`augclip_demo.explain.comparison_grid`).
:meth:`ComparisonGrid.to_html` writes one HTML file with every image inside it as a ``data:`` URI,
no script, no stylesheet or font from elsewhere: it opens offline and can be attached to a review.
"""

from __future__ import annotations

import base64
import html
import io
import math
from dataclasses import dataclass, field
from pathlib import Path

from PIL import Image

from ..errors import InputError
from ..metrics.suite import METRICS, best_index
from . import UNTRAINED_WARNING, Report, edit_names

THUMBNAIL_SIDE = 320  # longest side of every picture in the grid, in pixels
_VERDICT_KEYS = ("augclip", "clip_dir", "bpm")  # the judges named in the verdict line (Report.verdict's)


@dataclass
class Tile:
    """One picture of a column: a title above it, an optional caption below."""

    title: str
    image: Image.Image
    caption: str = ""


@dataclass
class MetricCell:
    key: str
    label: str
    value: float | None
    rank: int | None  # 1 = best among the edits
    best: bool
    reason: str = ""  # why the value is missing

    @property
    def shown(self) -> str:
        return "n/a" if self.value is None else f"{self.value:.4f}"


@dataclass
class EditColumn:
    index: int
    name: str  # the full file name
    short: str  # the distinguishing part (E1 <short>)
    image: Image.Image | None
    metrics: list[MetricCell]
    verdict: str
    tiles: list[Tile] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def label(self) -> str:
        return f"E{self.index + 1} {self.short}" if self.short else f"E{self.index + 1}"


@dataclass
class ComparisonGrid:
    source_name: str
    source_image: Image.Image | None
    target_text: str
    source_text: str | None
    verdict: str
    untrained: bool
    model: str
    columns: list[EditColumn]
    notes: list[str] = field(default_factory=list)

    def to_html(self) -> str:
        return grid_html(self)

    def save(self, path: str | Path) -> Path:
        path = Path(path)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(self.to_html(), encoding="utf-8")
        except OSError as exc:
            raise InputError(f"cannot write the HTML report {path}: {exc.strerror or exc}") from None
        return path


def _rank(values: list[float | None], key: str, i: int) -> int | None:
    """1-based rank of edit ``i`` under metric ``key`` (ties share the better rank)."""
    value = values[i]
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    higher = METRICS[key].higher_is_better if key in METRICS else True
    better = [v for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))
              and (v > value if higher else v < value)]
    return len(better) + 1


def _verdict_line(report: Report, labels: list[str]) -> str:
    parts = []
    for key in _VERDICT_KEYS:
        values = report.metric_values(key)
        best = best_index(values, key)
        if key in METRICS and best is not None:
            parts.append(f"{METRICS[key].label} prefers {labels[best]}")
    if not parts:
        return "no metric could rank the edits"
    return ("one edit scored: " if len(report.edits) == 1 else "") + "; ".join(parts)


def _edit_verdict(cells: list[MetricCell], count: int) -> str:
    if count < 2:
        return "the only edit"
    judged = [c for c in cells if c.key in _VERDICT_KEYS and c.rank is not None]
    best = [c.label for c in judged if c.rank == 1]
    if best:
        return "best under " + ", ".join(best)
    if judged:
        return "ranks: " + ", ".join(f"{c.label} {c.rank}/{count}" for c in judged)
    return "no judging metric available"


def comparison_grid(report: Report, tiles: dict[int, list[Tile]] | None = None) -> ComparisonGrid:
    """The grid of ``report``: images from its in-memory arrays (none after a JSON round trip), every
    metric the report has (primary ones, table order), and ``tiles`` per 0-based edit index."""
    arrays = getattr(report, "arrays", None)
    keys = report.metric_keys()
    names = edit_names([edit.name for edit in report.edits])
    shorts = [name.short for name in names]
    labels = [name.label for name in names]
    count = len(report.edits)
    columns = []
    for i, edit in enumerate(report.edits):
        cells = []
        for key in keys:
            values = report.metric_values(key)
            rank = _rank(values, key, i)
            cells.append(MetricCell(key, METRICS[key].label if key in METRICS else key, edit.metrics.get(key), rank,
                                    best=count > 1 and best_index(values, key) == i,
                                    reason=edit.unavailable.get(key, "")))
        image = arrays.edits[i].image if arrays is not None and i < len(getattr(arrays, "edits", [])) else None
        columns.append(EditColumn(index=i, name=edit.name, short=shorts[i], image=image, metrics=cells,
                                  verdict=_edit_verdict(cells, count), tiles=list((tiles or {}).get(i, [])),
                                  notes=list(edit.notes)))
    source = arrays.source.image if arrays is not None and getattr(arrays, "source", None) is not None else None
    return ComparisonGrid(source_name=report.source_name, source_image=source, target_text=report.target_text,
                          source_text=report.source_text, verdict=_verdict_line(report, labels),
                          untrained=bool(report.untrained), model=str(report.model.get("spec", "")),
                          columns=columns, notes=list(report.notes))


# ---------------------------------------------------------------------------------------- HTML
PAGE_CSS = 'body {font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 16px; color: #1b1b1b;}'  # the standalone file only
CSS = """
.aug-comparison h1 {font-size: 1.25rem; margin: 0 0 6px 0;}
.aug-comparison .meta {color: #444; font-size: 0.9rem; margin-bottom: 8px;}
.aug-comparison .verdict {font-size: 1.05rem; font-weight: 600; margin: 8px 0 12px 0;}
.aug-comparison .untrained {background: #b71c1c; color: white; font-weight: 700; padding: 6px 10px; border-radius: 4px;}
.aug-comparison .grid {display: flex; gap: 14px; overflow-x: auto; align-items: flex-start; padding-bottom: 8px;}
.aug-comparison .col {flex: 1 0 196px; max-width: 300px; border: 1px solid #d6d6d6; border-radius: 6px; padding: 8px; background: #fafafa;}
.aug-comparison .col.source {background: #eef3fa;}
.aug-comparison .col h2 {font-size: 1rem; margin: 0 0 4px 0; overflow-wrap: anywhere;}
.aug-comparison .full {color: #555; font-size: 0.78rem; overflow-wrap: anywhere; margin-bottom: 6px;}
.aug-comparison .col img {width: 100%; height: auto; display: block; border-radius: 3px;}
.aug-comparison table {border-collapse: collapse !important; width: 100%; margin: 6px 0 !important;
  font-size: 0.84rem !important; border: none !important; display: table !important;}
.aug-comparison td {padding: 2px 4px !important; border: none !important; border-bottom: 1px solid #e4e4e4 !important;
  line-height: 1.3 !important;}
.aug-comparison td.v {text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap;}
.aug-comparison tr.best td {background: #bfe8c3; font-weight: 700;}
.aug-comparison .edit-verdict {font-weight: 600; font-size: 0.88rem; margin: 4px 0 8px 0;}
.aug-comparison .tile {margin-top: 8px;}
.aug-comparison .tile .t {font-size: 0.8rem; font-weight: 600; margin-bottom: 2px;}
.aug-comparison .tile .c {font-size: 0.75rem; color: #555;}
.aug-comparison .notes {font-size: 0.78rem; color: #5a3600;}
"""


def data_uri(image: Image.Image, max_side: int = THUMBNAIL_SIDE) -> str:
    """``image`` shrunk to ``max_side`` as a PNG data URI (the file needs nothing beside it)."""
    picture = image.convert("RGB")
    scale = max_side / max(picture.size)
    if scale < 1:
        picture = picture.resize((max(1, round(picture.width * scale)), max(1, round(picture.height * scale))),
                                 Image.Resampling.LANCZOS)
    buffer = io.BytesIO()
    picture.save(buffer, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def _img(image: Image.Image, alt: str) -> str:
    return f'<img src="{data_uri(image)}" alt="{html.escape(alt)}">'


def _column(column: EditColumn) -> str:
    e = html.escape
    parts = [f'<div class="col" id="edit-{column.index + 1}"><h2 title="{e(column.name)}">{e(column.label)}</h2>',
             f'<div class="full">{e(column.name)}</div>']
    if column.image is not None:
        parts.append(_img(column.image, column.label))
    rows = []
    for cell in column.metrics:
        rank = f" ({cell.rank})" if cell.rank is not None else ""
        lower = cell.key in METRICS and not METRICS[cell.key].higher_is_better
        direction = ' <span title="lower is better">&darr;</span>' if lower else ""
        tip = f' title="{e(cell.reason)}"' if cell.reason else ""
        rows.append(f'<tr class="{"best" if cell.best else ""}"><td>{e(cell.label)}{direction}</td>'
                    f'<td class="v"{tip}>{e(cell.shown)}{e(rank)}</td></tr>')
    parts.append(f'<table>{"".join(rows)}</table>')
    parts.append(f'<div class="edit-verdict">{e(column.verdict)}</div>')
    for tile in column.tiles:
        caption = f'<div class="c">{e(tile.caption)}</div>' if tile.caption else ""
        parts.append(f'<div class="tile"><div class="t">{e(tile.title)}</div>{_img(tile.image, tile.title)}'
                     f"{caption}</div>")
    if column.notes:
        parts.append('<div class="notes">' + "<br>".join(e(n) for n in column.notes) + "</div>")
    parts.append("</div>")
    return "".join(parts)


def grid_html(grid: ComparisonGrid, *, standalone: bool = True) -> str:
    """The grid as HTML: a whole document (``standalone``) or a fragment for a page that has its own."""
    e = html.escape
    source_name = grid.source_name.removeprefix("source: ")  # the app's name for the source image
    head = [f"<h1>Comparison of {len(grid.columns)} edit(s) of {e(source_name)}</h1>"]
    if grid.untrained:
        head.append(f'<div class="untrained">&#9888; {e(UNTRAINED_WARNING)}</div>')
    meta = f"target text: <b>{e(grid.target_text)}</b>"
    if grid.source_text:
        meta += f" &middot; source text: {e(grid.source_text)}"
    if grid.model:
        meta += f" &middot; model: {e(grid.model)}"
    head.append(f'<div class="meta">{meta}</div>')
    head.append(f'<div class="verdict">Verdict: {e(grid.verdict)}</div>')
    head.append('<div class="meta">Each column: the edit, every metric (rank among the edits in brackets; '
                "green: the best edit under that metric; &darr;: lower is better), a verdict line, then the "
                "relevancy maps, BPM regions and HATIE's breakdown (each criterion's measures with their share and "
                "weight) where they were computed.</div>")
    source = ['<div class="col source"><h2>source</h2>', f'<div class="full">{e(source_name)}</div>']
    if grid.source_image is not None:
        source.append(_img(grid.source_image, "source image"))
    source.append("</div>")
    body = "".join(head) + '<div class="grid">' + "".join(source) + "".join(_column(c) for c in grid.columns) + "</div>"
    if grid.notes:
        body += '<div class="notes">' + "<br>".join(e(n) for n in grid.notes) + "</div>"
    body = f'<div class="aug-comparison">{body}</div>'
    if not standalone:
        return f"<style>{CSS}</style>{body}"
    title = e(f"AugCLIP comparison: {source_name}")
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{title}</title>'
            f'<meta name="viewport" content="width=device-width, initial-scale=1"><style>{PAGE_CSS}{CSS}</style></head>'
            f"<body>{body}</body></html>\n")


__all__ = ["ComparisonGrid", "EditColumn", "MetricCell", "Tile", "comparison_grid", "data_uri", "grid_html"]
