"""What the Explore tab shows of a store and a slice: the summary of an opened file, the leaderboard, agreement
and disagreement tables, the items grid, an item, the HTML report. Values in, page values out (the queries and
statistics are :mod:`augclip_demo.explore`'s); the handlers (:mod:`.handlers`) put them on the page."""

from __future__ import annotations

import html
import json
from typing import Any

from ...errors import InputError
from ...explore import (
    HUMAN,
    ResultsStore,
    Slice,
    agreement,
    disagreements,
    grid_page,
    human_sets,
    item_record,
    leaderboard,
)
from ...explore.agreement_matrix import PAGE_AGREEMENT_ITEMS, PAGE_SETS_WORK, SetsAgreement
from ...explore.report_html import SliceReport, report_html
from ...explore.store import metric_label
from ...report import UNTRAINED_WARNING
from ..common import empty_table
from ..guard import scrub_paths_in

DISAGREEMENT_SORT = "disagreement"  # the grid in the Disagreements tab's order (its A and B, strongest first)
CHOOSE_RANKINGS = "Choose A and B: two metrics, or a metric and the humans."


def frame(headers: list[str], rows: list[list[Any]], empty: str) -> Any:
    """A dataframe's value, or a one-cell table saying ``empty`` when there are no rows."""
    return {"headers": headers, "data": rows} if rows else empty_table(empty)


#: How a web user opens results with their images (the CLI's --manifest is said in the tab's help).
_WITH_IMAGES = ("To see the images: upload a zip of the results with their manifest and images, or open a run of "
               "the Batch tab with its button there.")


def open_summary(store: ResultsStore) -> str:
    """What was opened, for people: runs, their differences, unreadable lines, the untrained label."""
    lines = []
    if store.untrained:
        lines.append(f'<div class="aug-untrained">{html.escape(UNTRAINED_WARNING)}</div>\n')
    names = html.escape(", ".join(f.results.name for f in store.files))
    lines.append(f"**{store.n_records} records, {store.n_edits} edits** from {names}; metrics: "
                 + html.escape(", ".join(metric_label(k) for k in store.metrics)) + ".")
    lines.extend(f"- {html.escape(run.label())}" for run in store.runs)
    differences = store.run_differences()
    if differences:
        lines.append("\n**These runs used different settings; their numbers are kept apart** (leaderboard rows per "
                     "run; agreement and disagreements need one run in the slice): "
                     + html.escape("; ".join(differences)))
    for opened in store.files:
        if opened.unreadable_lines:
            lines.append(f"\nnote: {opened.unreadable_lines} line(s) of {html.escape(opened.results.name)} could not "
                         "be read (a torn last line of an interrupted run, or damage) and are left out.")
        if opened.manifest is None:
            lines.append(f"\nnote: no manifest given for {html.escape(opened.results.name)}: no thumbnails, no edit "
                         f"types. {_WITH_IMAGES}")
    return "\n".join(lines)


def board_frame(store: ResultsStore, active: Slice) -> tuple[Any, str]:
    """The slice's leaderboard and its notes."""
    board = leaderboard(store, active)
    headers, rows = board.table()
    return frame(headers, rows, "No scored edits in this slice."), "\n".join(f"note: {n}" for n in board.notes)


def agreement_frames(store: ResultsStore, active: Slice) -> tuple[Any, Any, str]:
    """The slice's metric-metric matrix, its agreement with the humans, and the notes (within the page's bound)."""
    try:
        agreed = agreement(store, active, max_items=PAGE_AGREEMENT_ITEMS)
    except InputError as exc:  # several runs in the slice (said, not pooled), or a slice over the page's bound
        message = str(exc)
        return empty_table(message), empty_table(message), ""
    human_headers, human_rows = agreed.human_table()
    has_human = any(cell != "n/a" for row in human_rows for cell in row[1:])
    notes = [f"{agreed.n_items} items; intervals from {agreed.n_boot} bootstrap resamples (seed 0).", *agreed.notes]
    return (frame(*agreed.matrix(), "No metric values in this slice."),
            frame(human_headers, human_rows if has_human else [], "No human judgments in this slice."),
            "\n\n".join(notes))


def _page_human_sets(store: ResultsStore, active: Slice) -> SetsAgreement:
    """The slice's per-set agreement with the human votes and ratings (``augclip-demo agreement``'s table and
    default settings) within the page's bounds; a slice the page cannot compute raises the reason."""
    return human_sets(store, active, max_items=PAGE_AGREEMENT_ITEMS, max_work=PAGE_SETS_WORK)


def human_set_views(store: ResultsStore, active: Slice) -> tuple[Any, str, Any]:
    """The slice's per-set agreement table, its notes (settings, each set's human data and paired test), and its
    exact figures as ``augclip-demo agreement --json`` writes them (None when there is nothing to show)."""
    try:
        found = _page_human_sets(store, active)
    except InputError as exc:  # several runs in the slice, or over the page's bound: said
        return empty_table(str(exc)), "", None
    headers, rows = found.table()
    notes = "\n\n".join(html.escape(line) for line in found.lines())
    exact = found.report.to_dict() if found.report is not None else None
    return frame(headers, rows, "No human judgments in this slice."), notes, exact


def found_frame(store: ResultsStore, active: Slice, a: str | None, b: str | None) -> tuple[Any, list[int]]:
    """The slice's items where ``a`` and ``b`` pick different winners, and those items (the rows' order)."""
    if not a or not b or a == b:
        return empty_table(CHOOSE_RANKINGS), []
    try:
        found = disagreements(store, active, a, b)
    except InputError as exc:
        return empty_table(str(exc)), []
    rows = [[d.id, d.dataset, d.winner_a, d.winner_b, round(d.strength, 3)] for d in found]
    label = {HUMAN: "humans"}
    headers = ["id", "dataset", f"{label.get(a, metric_label(a))} picks", f"{label.get(b, metric_label(b))} picks",
               "strength (SD)"]
    return frame(headers, rows, "No disagreements in this slice."), [d.item for d in found]


def grid_views(store: ResultsStore, active: Slice, sort: str, descending: bool, page: Any,
               ranking: list[int] | None = None) -> tuple[Any, Any, list, str]:
    """A page of the slice's edits: thumbnails with captions, the rows, the rows' items and a caption
    (``sort`` :data:`DISAGREEMENT_SORT`: in ``ranking``'s order)."""
    from ...explore.items import image_path, thumbnail

    number = int(page or 1) - 1
    by_strength = sort == DISAGREEMENT_SORT
    grid = grid_page(store, active, sort="id" if by_strength else sort or "id", descending=bool(descending),
                     page=number, ranking=(ranking or []) if by_strength else None)
    shown = sort if sort in store.metrics else (store.metrics[0] if store.metrics else None)
    pictures, rows = [], []
    for row in grid.rows:
        value = row.values.get(shown) if shown else None
        caption = f"{row.id} · {row.model}" + (f" · {metric_label(shown)} {value:.4f}" if value is not None else "")
        picture = thumbnail(image_path(store, row.file_no, row.path))
        if picture is not None:
            pictures.append((picture, caption))
        rows.append([row.id, row.dataset, row.model + (" [untrained]" if row.untrained else ""), row.role,
                     *("" if row.values[k] is None else round(row.values[k], 4) for k in store.metrics)])
    headers = ["id", "dataset", "model", "role", *(metric_label(k) for k in store.metrics)]
    caption = f"page {grid.page + 1} of {grid.pages} ({grid.total} edits in the slice)"
    return pictures, frame(headers, rows, "No edits in this slice."), [r.item for r in grid.rows], caption


def inspect_views(store: ResultsStore, item: int) -> tuple[str, list, Any, dict[str, Any]]:
    """One item: its description, its pictures, its scores as recorded, its record (texts without server paths)."""
    from ...explore.items import thumbnail

    view = item_record(store, item)
    record = view.record
    pictures = []
    for label, relative in [("source", record.get("source"))] + [
            (f"[{e.get('index')}] {e.get('name', '')} ({e.get('role', '')})", e.get("path"))
            for e in record.get("edits") or []]:
        picture = thumbnail(view.image(relative), 320)
        if picture is not None:
            pictures.append((picture, label))
    headers, rows = view.score_rows(store.metrics)
    human = record.get("human")
    text = (f"### {html.escape(str(record.get('id')))} ({html.escape(str(record.get('dataset')))})\n"
            f"target: {html.escape(str(record.get('target_text') or ''))}  \n"
            f"human judgment: {html.escape(json.dumps(human))}  \n{html.escape(view.run_label)}")
    if not pictures:
        text += f"\n\nNo images: the results were opened without their manifest and images. {_WITH_IMAGES}"
    # The record as stored, numbers exact; its texts (error messages, absolute image paths) lose server folders.
    return text, pictures, frame(headers, rows, "This item has no edits."), scrub_paths_in(record)


def _slice_report(store: ResultsStore, active: Slice, a: str | None, b: str | None) -> SliceReport:
    """What the report shows of a slice: its leaderboard, agreement (within the page's bound) and the
    disagreements of ``a`` and ``b``."""
    try:
        agreed = agreement(store, active, max_items=PAGE_AGREEMENT_ITEMS)
    except InputError as exc:
        agreed, reason = None, str(exc)
    else:
        reason = ""
    try:
        found = disagreements(store, active, a, b) if a and b and a != b else []
    except InputError:  # several runs in the slice: the report says so in the agreement section
        found = []
    try:
        sets = _page_human_sets(store, active)
    except InputError:  # the same reasons as the agreement's, said there (or the bound on the sets' work)
        sets = None
    return SliceReport(active, leaderboard(store, active), agreed, found, left_out=reason, sets=sets)


def report_page(store: ResultsStore, active: Slice, compared: Slice | None, a: str | None, b: str | None) -> str:
    """The shareable HTML report of ``active`` and, after it, of the ``compared`` slice when there is one."""
    sections = [_slice_report(store, active, a, b)]
    if compared is not None:
        sections.append(_slice_report(store, compared, a, b))
    return report_html(store, sections, a or "", b or "")
