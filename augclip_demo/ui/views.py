"""Turning a :class:`Report` into what the page shows: the score table, the verdict, downloads."""

from __future__ import annotations

import html
import math
import zipfile
from pathlib import Path
from typing import Any

import pandas as pd

from ..metrics.registry import METRICS
from ..report import UNTRAINED_WARNING, Report

TABLE_METRICS = ["augclip", "clip_dir", "clip_i", "clip_t", "l2", "bpm"]
BEST_STYLE = "background-color: #bfe8c3; font-weight: 700"


def column_label(key: str) -> str:
    info = METRICS.get(key)
    if info is None:
        return key
    return info.label + ("" if info.higher_is_better else " (lower is better)")


def score_frame(report: Report) -> pd.DataFrame:
    """One row per edit; numbers as floats (NaN when unavailable)."""
    keys = [k for k in TABLE_METRICS if any(k in e.metrics for e in report.edits)]
    rows = []
    for edit in report.edits:
        row: dict[str, Any] = {"#": edit.index + 1, "edit": edit.name}
        for key in keys:
            value = edit.metrics.get(key)
            row[column_label(key)] = float("nan") if value is None else float(value)
        rows.append(row)
    return pd.DataFrame(rows)


def score_table(report: Report) -> Any:
    """The score table as a pandas Styler: 4 decimals, 'n/a' for unavailable, best per column highlighted."""
    frame = score_frame(report)
    keys = [k for k in TABLE_METRICS if column_label(k) in frame.columns]
    styles = pd.DataFrame("", index=frame.index, columns=frame.columns)
    if len(report.edits) > 1:
        for key in keys:
            best = report.best(key)
            if best is not None:
                styles.loc[best, column_label(key)] = BEST_STYLE
    return frame.style.format(precision=4, na_rep="n/a").apply(lambda _: styles, axis=None)


def verdict_markdown(report: Report) -> str:
    lines = [f"### {html.escape(report.verdict().replace(' [' + UNTRAINED_WARNING + ']', ''))}"]
    if report.untrained:
        lines.append(f"**&#9888; {UNTRAINED_WARNING}.**")
    reasons = sorted({r for e in report.edits for k, r in e.unavailable.items() if k in TABLE_METRICS})
    lines.extend(f"*n/a: {html.escape(r)}*" for r in reasons)
    prov = report.attributes.provenance
    lines.append(
        f"Attributes: {len(report.attributes.source)} source, {len(report.attributes.target)} target, from "
        f"**{html.escape(prov.provider)}**{' (' + html.escape(prov.model) + ')' if prov.model else ''}"
        f" - {html.escape(prov.fidelity)}. Highlighted: the best edit under each metric."
    )
    notes = report.notes + [f"edit {e.index + 1}: {n}" for e in report.edits for n in e.notes]
    lines.extend(f"*note: {html.escape(n)}*" for n in notes)
    timing = report.timings
    lines.append(
        "<small>"
        + ", ".join(f"{k.replace('_', ' ')} {v:.2f}s" for k, v in timing.items() if isinstance(v, float) and math.isfinite(v))
        + "</small>"
    )
    return "\n\n".join(lines)


def write_downloads(report: Report, folder: Path, figures: dict[str, Any] | None = None) -> list[str]:
    """report.json, report.csv and figures.zip (every figure as PNG plus the two reports) in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    json_path = folder / "report.json"
    csv_path = folder / "report.csv"
    json_path.write_text(report.to_json() + "\n", encoding="utf-8")
    csv_path.write_text(report.to_csv(), encoding="utf-8")
    zip_path = folder / "figures.zip"
    with zipfile.ZipFile(zip_path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.write(json_path, "report.json")
        archive.write(csv_path, "report.csv")
        archive.writestr("attributes.json", report.attributes.to_json() + "\n")
        for name, figure in (figures or {}).items():
            png = folder / f"{name}.png"
            if isinstance(figure, (str, Path)):
                png = Path(figure)
            else:
                figure.savefig(png, dpi=110, bbox_inches="tight")
            archive.write(png, f"figures/{png.name}")
    return [str(json_path), str(csv_path), str(zip_path)]
