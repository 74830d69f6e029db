"""Plain-text rendering of a report (the CLI's table)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..report import EditName, Report


def format_report(report: Report, include_variants: bool = False) -> str:
    """A fixed-width table, one row per edit, ``*`` marking the best edit under each metric."""
    from ..metrics.suite import METRICS
    from ..report import UNTRAINED_WARNING

    keys = report.metric_keys(include_variants=include_variants)
    best = {key: report.best(key) for key in keys}
    names = report.edit_names()
    header = ["#", "edit"] + [METRICS[k].label + ("" if METRICS[k].higher_is_better else " (low)")
                             if k in METRICS else k for k in keys]
    rows = []
    for edit in report.edits:
        row = [names[edit.index].tag, names[edit.index].short]
        for key in keys:
            value = edit.metrics.get(key)
            cell = "n/a" if value is None else f"{value:.4f}"
            row.append(cell + ("*" if best[key] == edit.index and len(report.edits) > 1 else " "))
        rows.append(row)
    lines = []
    if report.untrained:
        lines.append(f"!! {UNTRAINED_WARNING.upper()} !!")
    lines.append(f"model: {report.model.get('label', report.model.get('spec'))} on {report.model.get('device_name', '')}")
    lines.append(f"target: {report.target_text}" + (f" | source text: {report.source_text}" if report.source_text else ""))
    prov = report.attributes.provenance
    lines.append(f"attributes: {len(report.attributes.source)} source, {len(report.attributes.target)} target "
                 f"(provider {prov.provider}{', ' + prov.model if prov.model else ''}; {prov.fidelity})")
    lines.append("")
    lines.extend(edit_table(header, rows, names))
    lines.append("")
    if len(report.edits) > 1:
        lines.append("* best under that metric (L2: lowest)")
    lines.append(report.verdict())
    reasons = sorted({reason for e in report.edits for k, reason in e.unavailable.items() if k in keys})
    lines.extend(f"n/a: {reason}" for reason in reasons)
    notes = list(dict.fromkeys(report.notes + report.fit_notes())) +\
        [f"{names[e.index].tag}: {n}" for e in report.edits for n in e.notes]
    lines.extend(f"note: {n}" for n in notes)
    return "\n".join(lines)


def edit_table(header: list[str], rows: list[list[str]], names: list[EditName]) -> list[str]:
    """The lines of a fixed-width table of edits (header, rule, one row per edit) and its files' legend."""
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    return ["  ".join(h.ljust(w) for h, w in zip(header, widths)), "  ".join("-" * w for w in widths),
            *("  ".join(c.ljust(w) for c, w in zip(row, widths)) for row in rows), *_files_legend(names)]


def _files_legend(names: list[EditName]) -> list[str]:
    """``E1 = tedbench_out_1_ours.png``: the full file names behind the short ones (the JSON and CSV
    exports carry them too)."""
    if all(name.short == name.full for name in names):
        return []
    return ["files: " + ", ".join(f"{name.tag} = {name.full}" for name in names)] if len(names) <= 2 else\
        ["files:", *(f"  {name.tag} = {name.full}" for name in names)]
