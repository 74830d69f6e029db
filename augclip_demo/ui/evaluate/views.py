"""Turning a :class:`Report` into what the page shows: the score table, the verdict, downloads."""

from __future__ import annotations

import html
import json
import math
import zipfile
from pathlib import Path
from typing import Any

import pandas as pd

from ...judge.judge import JUDGE_METRICS
from ...metrics.suite import METRICS, metric_keys
from ...papers import BPM, RELEVANCY
from ...report import UNTRAINED_WARNING, Report, edit_names, edit_tag
from ..common import empty_table, text_safe

RELEVANCY_HELP = (
    f"Pick an edit above. Where each metric looks (the gradient relevancy of {RELEVANCY.short} on CLIP's vision "
    "transformer). "
    "**AugCLIP maps**: regions of the edit that make it resemble the estimated ideal edit E(I_src)+v (left), and "
    "regions that carry v, the modification from the source to that ideal (right). "
    "**CLIPdir map** (AugCLIP paper, App. D.5): R(I_edit; dT) - R(I_src; dT), red where the edit carries more of the text "
    "direction than the source, blue where less, beside its two components. **CLIP-T map**: regions that match "
    "the target text. Click a map to enlarge it."
)
HYPERPLANE_HELP = (
    "**Exact view** (no manifold learning): x = signed distance g(x)/|w| to the AugCLIP hyperplane, which is the "
    "vertical line x = 0; y = first principal component after removing the w direction. The source sits left, "
    "the ideal edit on the line, each edit where it lands. **UMAP view**: an illustrative 2-D projection of the "
    "attributes, images and ideal point (App. A.3, Fig. 8); its captions say how the line is drawn. With the "
    "images in the fit, every edit has its own hyperplane: the exact view shows the fit of the edit picked above. "
    "Hover a point for its text or file name, its weight alpha (Eq. 6) and its signed distance; click a legend "
    "entry to hide or show a set (double-click: only that one); drag to zoom, double-click to reset. The static "
    "figures (every panel) are in figures.zip."
)
COMPARISON_HELP = (
    "Every edit side by side: the image, every metric (rank among the edits in brackets, the best in green), a "
    "verdict line, the relevancy maps and, when BPM ran, its regions. Press *Show / refresh the comparison* "
    "(opening this tab does it too) after an evaluation; *Download the HTML report* saves it as one file with "
    "the images inside, to attach to a review."
)
RANKINGS_HELP = (
    "Eq. 11 / 12 (App. A.4, Fig. 9-10): how much the ideal edit E(I_src)+v moves toward each attribute. Source "
    "attributes with large changes are the ones the edit should change; small ones should be kept. Target "
    "attributes with large gains are what the edit needs most. The alpha weights (Eq. 6) show how much each "
    "attribute counted in the hyperplane fit."
)
BPM_HELP = (
    f"BPM (region-aware; {BPM.short}): parses the instruction into o1 (object to edit), o2 (object after the edit), "
    "size and position states, finds the regions with GroundingDINO + SAM, then judges size and position "
    "(S_region) and the edit inside / preservation outside the regions (S_semantic). BPM = 0.7 S_semantic + 0.3 "
    "S_region, in [0, 2]. Turn it on under *Advanced options* and type an editing instruction: its parse is "
    "shown below before BPM runs (a refused or low-confidence parse waits for you); correct any field, or for a "
    "description-style target fill o1 / o2, and press *Run BPM with these fields*."
)

# Column types of the score table (#, edit, then at most every primary and reference metric): numbers sort as
# numbers, and the edit's cell is HTML so that hovering it shows the full file name.
SCORE_DATATYPES = ["str", "html"] + ["number"] * (len(metric_keys(primary=True)) + len(metric_keys(reference=True)))
SCORE_LABEL = "Scores (one row per edit; best per column highlighted; click a header to sort, hover a name for its file)"
_BEST_STYLE = "background-color: #bfe8c3; font-weight: 700"


def column_label(key: str) -> str:
    info = METRICS.get(key)
    if info is None:
        return key
    return info.label + ("" if info.higher_is_better else " (lower is better)")


def _table_metrics(report: Report) -> list[str]:
    """The table's columns: the report's shown metrics (:meth:`Report.metric_keys`: the primary ones, and each
    reference one some edit has a value for), in the metric table's order."""
    return [key for key in report.metric_keys() if key in METRICS]


def _judge_help() -> str:
    """What the judge table's columns are, from their metric rows."""
    rows = "; ".join(f"{METRICS[key].label}: {METRICS[key].description}" for key in metric_keys(basis="judge"))
    return (f"{rows}. Hover a score for the judge's rationale; +/- is the standard deviation over the judge's "
            "samples.")


# What the empty tables say (:func:`..common.empty_table`).
EMPTY_SCORES = ("No scores yet: add a source image, the target text and the edited images, then press Evaluate "
                "(or click an example above).")
EMPTY_BPM = ("BPM has not run: tick BPM under Advanced options, type an editing instruction, then press Evaluate "
             "(or fill o1 / o2 below and press Run BPM with these fields).")


def _name_cell(full: str, label: str) -> str:
    """The edit's label as an HTML cell whose hover (title) shows the full file name."""
    return f'<span title="{html.escape(full)}">{html.escape(label)}</span>'


def score_frame(report: Report, *, plain: bool = False) -> pd.DataFrame:
    """One row per edit (E1..En and the short name; the full name on hover); numbers as floats (NaN when
    unavailable). ``plain``: for API clients, the full file name as plain text, no HTML."""
    keys = _table_metrics(report)
    names = report.edit_names()
    rows = []
    for edit in report.edits:
        name = names[edit.index]
        row: dict[str, Any] = {"#": name.tag,
                               "edit": name.full if plain else _name_cell(name.full, name.short or name.full)}
        for key in keys:
            value = edit.metrics.get(key)
            row[column_label(key)] = float("nan") if value is None else float(value)
        rows.append(row)
    return pd.DataFrame(rows)


def score_table(report: Report, *, plain: bool = False) -> Any:
    """The score table as a pandas Styler: 4 decimals, 'n/a' for unavailable, best per column highlighted.
    ``plain`` (the HTTP API): the values themselves, full file names, None where unavailable, no HTML."""
    frame = score_frame(report, plain=plain)
    keys = [k for k in _table_metrics(report) if column_label(k) in frame.columns]
    styles = pd.DataFrame("", index=frame.index, columns=frame.columns)
    if len(report.edits) > 1:
        for key in keys:
            best = report.best(key)
            if best is not None:
                styles.loc[best, column_label(key)] = _BEST_STYLE
    return frame.style.format(precision=4, na_rep="n/a").apply(lambda _: styles, axis=None)


def verdict_text(report: Report) -> str:
    """The verdict and its notes as plain text lines, for API clients (the page renders :func:`verdict_markdown`)."""
    lines = [report.verdict()]
    shown = set(_table_metrics(report)) | set(metric_keys(primary=True))
    lines += [f"n/a: {r}" for r in sorted({r for e in report.edits for k, r in e.unavailable.items() if k in shown})]
    prov = report.attributes.provenance
    lines.append(f"Attributes: {len(report.attributes.source)} source, {len(report.attributes.target)} target, from "
                 f"{prov.provider}{' (' + prov.model + ')' if prov.model else ''} - {prov.fidelity}.")
    lines += [f"note: {n}" for n in dict.fromkeys(report.notes + report.fit_notes())]
    lines += [f"note: {edit_tag(e.index)}: {n}" for e in report.edits for n in e.notes]
    return "\n".join([*lines, timing_line(report)])


def verdict_markdown(report: Report) -> str:
    lines = [f"### {html.escape(report.verdict().replace(' [' + UNTRAINED_WARNING + ']', ''))}"]
    if report.untrained:
        lines.append(f"**&#9888; {UNTRAINED_WARNING}.**")
    shown = set(_table_metrics(report)) | set(metric_keys(primary=True))
    reasons = sorted({r for e in report.edits for k, r in e.unavailable.items() if k in shown})
    lines.extend(emphasis(f"n/a: {r}") for r in reasons)
    prov = report.attributes.provenance
    lines.append(
        f"Attributes: {len(report.attributes.source)} source, {len(report.attributes.target)} target, from "
        f"**{html.escape(prov.provider)}**{' (' + html.escape(prov.model) + ')' if prov.model else ''}"
        f" - {html.escape(prov.fidelity)}. Highlighted: the best edit under each metric."
    )
    notes = list(dict.fromkeys(report.notes + report.fit_notes())) +\
        [f"{edit_tag(e.index)}: {n}" for e in report.edits for n in e.notes]
    lines.extend(emphasis(f"note: {n}") for n in notes)
    lines.append(f"<small>{html.escape(timing_line(report))}</small>")
    return "\n\n".join(lines)


def emphasis(text: str, tag: str = "i") -> str:
    """``text`` in italics (or ``tag``) as HTML: markdown's ``*...*`` shows its asterisks when the text spans
    lines or starts / ends with a space or a symbol (the reasons and notes do)."""
    return f"<{tag}>{html.escape(text.strip()).replace(chr(10), '<br>')}</{tag}>"


def timing_line(report: Report) -> str:
    """``model load 0.01 s, attributes 41.20 s, ...``; attributes that were given (typed, loaded or kept
    from an earlier extraction) have no ``attributes`` timing, and the line says so instead of showing
    a time for work that did not happen (a fast extraction still shows its time, even 0.00 s)."""
    parts = []
    for key, value in report.timings.items():
        if not isinstance(value, (int, float)) or not math.isfinite(value):
            continue
        parts.append(f"{key.replace('_', ' ')} {value:.2f} s")
        if key == "model_load" and "attributes" not in report.timings:
            parts.append("attributes given (not extracted)")
    return "time: " + ", ".join(parts)


def public_report(report: Report) -> dict[str, Any]:
    """``report.to_dict()`` as a web client may see it: every absolute server path cut to its file name.

    An operator's weights file (``AUGCLIP_CLIP_CHECKPOINT``) or a local model folder is part of the
    model record and of its label; the page's report and the downloads must not reveal the folders.
    """
    data = report.to_dict()
    # Known server paths first, whole (a folder name with spaces defeats the pattern in scrub_paths).
    known = [str(data.get("model", {}).get("checkpoint") or "")]
    from ..guard import scrub_paths_in

    return scrub_paths_in(data, [path for path in known if path.startswith("/")])


def write_downloads(report: Report, folder: Path, figures: dict[str, Any] | None = None, *,
                    archive: bool = True) -> list[str]:
    """report.json and report.csv in ``folder``, plus figures.zip when ``archive`` (returns the paths).

    figures.zip holds every figure as PNG plus the two reports and the attributes. A click in the
    page runs several stages (scores, explanations, BPM); each stage refreshes the two small
    reports, and the zip is written once, by the last step (``archive=True``). Until then no zip is
    listed, and an older one is removed so it cannot be taken for the new results.
    """
    folder.mkdir(parents=True, exist_ok=True)
    json_path = folder / "report.json"
    csv_path = folder / "report.csv"
    from ..guard import scrub_paths, scrub_paths_in

    json_path.write_text(json.dumps(public_report(report), indent=2, ensure_ascii=False, allow_nan=False) + "\n",
                         encoding="utf-8")
    csv_path.write_text(scrub_paths(report.to_csv()), encoding="utf-8")
    zip_path = folder / "figures.zip"
    if not archive:
        zip_path.unlink(missing_ok=True)
        return [str(json_path), str(csv_path)]
    with zipfile.ZipFile(zip_path, "w", compression=zipfile.ZIP_DEFLATED) as bundle:
        bundle.write(json_path, "report.json")
        bundle.write(csv_path, "report.csv")
        bundle.writestr("attributes.json", json.dumps(scrub_paths_in(report.attributes.to_dict()), indent=2,
                                                      ensure_ascii=False) + "\n")
        for name, figure in (figures or {}).items():
            png = folder / f"{name}.png"
            if isinstance(figure, (str, Path)):
                png = Path(figure)
            else:
                figure.savefig(png, dpi=110, bbox_inches="tight")
            bundle.write(png, f"figures/{png.name}")
    return [str(json_path), str(csv_path), str(zip_path)]


def _plot_value(spec: dict[str, Any] | None) -> Any:
    """A Plotly figure specification as ``gr.Plot`` takes it (Gradio's own plotly.js draws it in the page)."""
    if spec is None:
        return None
    from gradio.components.plot import PlotData

    return PlotData(type="plotly", plot=json.dumps(spec, allow_nan=False))


def exact_plot(explained: Any, edit: int | None) -> Any:
    """The interactive exact view of the picked edit's fit (None before the explanations)."""
    from ...explain.interactive import exact_view_spec

    if explained is None or getattr(explained, "exact", None) is None:
        return None
    return _plot_value(exact_view_spec(explained.exact, edit))


def umap_plot(explained: Any) -> Any:
    from ...explain.interactive import umap_view_spec

    if explained is None or getattr(explained, "umap", None) is None:
        return None
    return _plot_value(umap_view_spec(explained.umap, explained.exact))


def edit_items(files: list[str] | None) -> list[tuple[str, str]]:
    """Gallery items for the uploaded edits, captioned E1..En and the short name (the file list beside
    it shows the full names)."""
    files = files or []
    return [(path, _breakable(name.label)) for path, name in zip(files, edit_names([Path(p).name for p in files]))]


def _breakable(caption: str) -> str:
    """A narrow caption may wrap after ``_`` / ``-`` / ``.`` (a zero-width space), not inside a word."""
    for mark in "_-.":
        caption = caption.replace(mark, mark + "\u200b")
    return caption


PER_EDIT_FIGURES = ("relevancy_augclip", "relevancy_clip_t", "relevancy_clip_dir", "source_changes",
                    "target_changes", "alpha")
#: Drawn for the first result (the tab the page opens on); the ranking charts follow.
RELEVANCY_FIGURES = PER_EDIT_FIGURES[:3]
RANKING_FIGURES = PER_EDIT_FIGURES[3:]


def edit_choices(report: Report) -> list[str]:
    """``E1 ours``, ``E2 base``, ...: the same labels as the table, the gallery and the figures."""
    return [name.label for name in report.edit_names()]


def picked_index(pick: str | None) -> int | None:
    """The 0-based edit index of a choice made by :func:`edit_choices`."""
    if not pick:
        return None
    head = pick.split(" ", 1)[0]
    return int(head[1:]) - 1 if head[:1] == "E" and head[1:].isdigit() else None


def bpm_panels(results: list[Any], report: Report) -> list[tuple[str, Any]]:
    from ...explain.regions import bpm_panel

    return [(name.label, bpm_panel(result)) for name, result in zip(report.edit_names(), results)]


def bpm_items(panels: list[tuple[str, Any]]) -> list[tuple[Any, str]]:
    items = []
    for label, panel in panels:
        items += [(panel.source, f"{label}: source, M_origin / B_origin"),
                  (panel.edit, f"{label}: edit, M_edit / B_edit"),
                  (panel.preserved, f"{label}: preserved region (hatched: excluded)")]
    return items


def bpm_components_frame(panels: list[tuple[str, Any]]) -> pd.DataFrame:
    """Rows: BPM's components; columns: one per edit, then what the component is."""
    if not panels:
        return empty_table(EMPTY_BPM)
    first = panels[0][1].rows
    data: dict[str, list[Any]] = {"component": [row[0] for row in first]}
    for label, panel in panels:
        data[label] = [_number_text(row[1]) for row in panel.rows]
    data[f"what it is ({panels[0][0].split(' ', 1)[0]})"] = [row[2] for row in first]
    return pd.DataFrame(data)


def _number_text(value: Any) -> Any:
    """Scores with four decimals, counts (S_size, S_position, S_region) as integers, text as it is."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return value
    if isinstance(value, int):
        return str(value)
    return f"{value:.4f}" if math.isfinite(value) else "n/a"


def parse_markdown(outcome: Any) -> str:
    """The parse shown above the BPM fields: what was understood, how sure, what to check; or why
    there is no parse and how to fill the fields by hand. The same text is the /bpm_parse answer: Markdown
    emphasis only, no HTML tags, arrows as typed."""
    if outcome.parsed is None:
        return f"**No parse.** {text_safe(outcome.refusal or '')}"
    parsed = outcome.parsed
    label = {"high": "high", "medium": "medium: check the notes", "low": "low: check every field",
             "given": "given by hand"}[parsed.confidence]
    head = f"**Parse** ({text_safe(parsed.parser)}, confidence {label}): {text_safe(parsed.describe())}"
    items = [f"- {text_safe(note)}" for note in parsed.notes if note != outcome.notice]
    items += [f"- also asked, not scored by BPM: {text_safe(change)}" for change in parsed.other_changes]
    blocks = [head]
    if outcome.notice:
        blocks.append(f"**\u26a0 {text_safe(outcome.notice.strip())}**")
    if items:
        blocks.append("\n".join(items))
    blocks.append("Correct any field below and press *Run BPM with these fields*.")
    return "\n\n".join(blocks)


def bpm_caption(panels: list[tuple[str, Any]], *, pick: int | None = None, plain: bool = False) -> str:
    """BPM's verdict and notes above its panels, headed by the edit it is about: ``pick`` (0-based, the edit
    picked under *Explanations for edit*), else the first (``plain``: the /bpm endpoint's text, no HTML tags
    or entities)."""
    if not panels:
        return BPM_HELP
    label, panel = panels[pick if pick is not None and 0 <= pick < len(panels) else 0]
    headline = f"{label}: {panel.caption.strip()}"
    untrained = panel.untrained and UNTRAINED_WARNING not in panel.caption
    notes = sorted({note for _, p in panels for note in p.notes})
    if plain:
        return "\n".join([headline, *([f"{UNTRAINED_WARNING}."] if untrained else []),
                          *(f"note: {note}" for note in notes)])
    lines = [BPM_HELP, emphasis(headline, "b")]
    if len(panels) > 1:
        lines.append(emphasis("Pick another edit under Explanations for edit to see its BPM here; the table "
                              "below has every edit's components."))
    if untrained:
        lines.append(f"**&#9888; {UNTRAINED_WARNING}.**")
    lines.extend(emphasis(f"note: {note}") for note in notes)
    return "\n\n".join(lines)


def judge_html(report: Report) -> str:
    """The judge's scores per edit as a small HTML table; each cell's rationale shows on hover (title)."""
    rows = [edit for edit in report.edits if edit.judge]
    if not rows:
        return ""
    cells, keys = [], metric_keys(basis="judge")  # the judge's rows of the metric table, one column each
    names = report.edit_names()
    for edit in rows:
        name = names[edit.index]
        tds = [f"<td>{name.tag}</td><td>{_name_cell(name.full, name.short or name.full)}</td>"]
        for key in keys:
            score = edit.judge.get(JUDGE_METRICS[key]) or {}
            if score.get("mean") is None:
                tds.append(f'<td title="{html.escape(score.get("reason") or "no value", quote=True)}">n/a</td>')
                continue
            spread = f" &plusmn; {score['std']:.2f}" if score.get("std") is not None else ""
            why = " | ".join(score.get("rationales") or []) or METRICS[key].description  # overall: none of its own
            tds.append(f'<td title="{html.escape(why, quote=True)}">{score["mean"]:.2f}{spread}</td>')
        cells.append("<tr>" + "".join(tds) + "</tr>")
    settings = rows[0].judge.get("settings") or {}
    caption = (f"judge {settings.get('model')}, prompt {settings.get('prompt_version')}, temperature "
               f"{settings.get('temperature')}, {settings.get('samples')} sample(s)")
    return (f'<div id="aug-judge-table"><small>{html.escape(_judge_help())}</small><table>'
            "<tr><th>#</th><th>edit</th>" + "".join(f"<th>{html.escape(METRICS[key].label)}</th>" for key in keys)
            + "</tr>" + "".join(cells)
            + f"</table><small>{html.escape(caption)}</small></div>")

