"""A self-contained HTML report of a run or a slice: leaderboard, agreement, the top disagreements with
thumbnails (embedded as data: URIs, so the one file travels alone, like the comparison grid)."""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass

from ..report import UNTRAINED_WARNING
from .agreement_matrix import Agreement, SetsAgreement
from .disagreements import HUMAN, Disagreement
from .items import item_record, thumbnail_data_uri
from .leaderboard import Leaderboard
from .slices import Slice
from .store import ResultsStore, metric_label

_STYLE = """
body{font-family:system-ui,sans-serif;margin:24px;color:#1f2933}
table{border-collapse:collapse;margin:8px 0 20px}td,th{border:1px solid #cbd2d9;padding:4px 8px;text-align:left;
font-variant-numeric:tabular-nums}th{background:#f0f4f8}.warn{background:#fff3c4;padding:8px;border:1px solid #f0b429}
.note{color:#52606d;font-size:90%}figure{display:inline-block;margin:4px;text-align:center;font-size:85%}
img{display:block;max-width:160px;max-height:160px}
"""


def _table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    head = "".join(f"<th>{html.escape(str(h))}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _picture(uri: str | None, caption: str) -> str:
    image = f'<img src="{uri}" alt="{html.escape(caption)}">' if uri else "<div>(no image)</div>"
    return f"<figure>{image}<figcaption>{html.escape(caption)}</figcaption></figure>"


def _disagreement_block(store: ResultsStore, found: Disagreement, a: str, b: str) -> str:
    view = item_record(store, found.item)
    edits = view.record.get("edits") or []
    pictures = [_picture(thumbnail_data_uri(view.image(view.record.get("source"))), "source")]
    for index, ranking in ((found.edit_a, a), (found.edit_b, b)):
        edit = edits[index] if 0 <= index < len(edits) else {}
        whose = "the humans'" if ranking == HUMAN else f"{metric_label(ranking)}'s"
        pictures.append(_picture(thumbnail_data_uri(view.image(edit.get("path"))),
                                 f"{whose} winner: {edit.get('name', '?')} [{index}]"))
    return (f"<h3>{html.escape(found.id)} ({html.escape(found.dataset)}), strength {found.strength:.2f}</h3>"
            f"<p>{html.escape(view.record.get('target_text') or '')}</p>{''.join(pictures)}")


@dataclass
class SliceReport:
    """What the report shows of one slice (``agreed`` None: agreement left out, ``left_out`` says why)."""

    slice: Slice
    board: Leaderboard
    agreed: Agreement | None
    found: Sequence[Disagreement]
    left_out: str = ""
    sets: SetsAgreement | None = None  # the per-set agreement with human votes (None: left out)


def report_html(store: ResultsStore, sections: Sequence[SliceReport], a: str, b: str, *, top: int = 12) -> str:
    """The report page: the files and runs, then each slice's section (the active slice first, then the
    compared one when the page has one, as the page shows them side by side); ``a`` and ``b``: the
    disagreements' metrics (or :data:`HUMAN`)."""
    active = sections[0].slice
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>AugCLIP Studio results: "
             f"{html.escape(active.name)}</title><style>{_STYLE}</style></head><body>",
             f"<h1>Results: {html.escape(active.name)}</h1>",
             f"<p class='note'>files: {html.escape(', '.join(f.results.name for f in store.files))}; "
             f"{store.n_records} records</p>"]
    if store.untrained:
        parts.append(f"<p class='warn'>{html.escape(UNTRAINED_WARNING)}</p>")
    parts.append("<ul>" + "".join(f"<li>{html.escape(run.label())}</li>" for run in store.runs) + "</ul>")
    differences = store.run_differences()
    if differences:
        parts.append("<p class='warn'>Runs with different settings (kept apart): "
                     + html.escape("; ".join(differences)) + "</p>")
    for number, section in enumerate(sections):
        if len(sections) > 1:
            parts.append(f"<hr><h2>{'Active' if number == 0 else 'Compared'} slice: "
                         f"{html.escape(section.slice.name)}</h2>")
        parts.extend(_slice_section(store, section, a, b, top))
    parts.append("</body></html>")
    return "\n".join(parts)


def _slice_section(store: ResultsStore, section: SliceReport, a: str, b: str, top: int) -> list[str]:
    parts = [f"<p class='note'>slice {html.escape(section.slice.describe())}</p>",
             "<h2>Leaderboard</h2>" + _table(*section.board.table())]
    parts.extend(f"<p class='note'>{html.escape(note)}</p>" for note in section.board.notes)
    agreed = section.agreed
    if agreed is not None:
        parts.append(f"<h2>Agreement ({agreed.n_items} items)</h2><h3>Metric-metric Spearman rho (edits with both "
                     f"values)</h3>" + _table(*agreed.matrix()))
        parts.append(f"<h3>Agreement with human judgments ({agreed.n_boot} bootstrap resamples, 95% intervals)</h3>"
                     + _table(*agreed.human_table()))
        parts.extend(f"<p class='note'>{html.escape(note)}</p>" for note in agreed.notes)
        if section.sets is not None and section.sets.report is not None:
            parts.append("<h3>Which metric agrees with the human votes, per set (as <code>augclip-demo "
                         "agreement</code>)</h3>" + _table(*section.sets.table()))
            parts.extend(f"<p class='note'>{html.escape(line)}</p>" for line in section.sets.lines())
    else:
        parts.append(f"<p class='note'>Agreement left out: {html.escape(section.left_out or 'not computed')}.</p>")
    names = " vs ".join("humans" if k == HUMAN else metric_label(k) for k in (a, b))
    parts.append(f"<h2>Top disagreements: {html.escape(names)} ({len(section.found)} found)</h2>")
    parts.extend(_disagreement_block(store, item, a, b) for item in list(section.found)[:top])
    return parts
