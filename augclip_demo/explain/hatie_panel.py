"""HATIE's panel for one edit: the five criteria as bars, their components as rows (each with its weight in
the criterion and its share of it), a chart of those shares, and the masks used.

Image Quality has no per-edit value (it is the FID of a set), so its bar is left empty and labelled
"needs a set". Figures are built without pyplot (safe in a server thread).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from PIL import Image

from ..hatie import HatieResult
from ..hatie.criteria import CRITERIA, CRITERION_LABELS, component_shares, criterion_shares
from ..report import UNTRAINED_WARNING

_BAR_KEYS = (*CRITERIA, "image_quality")
_MASK_COLOURS = [(230, 60, 60), (40, 120, 230), (40, 170, 80), (230, 160, 30), (150, 60, 200)]


def criterion_bars(result: HatieResult) -> list[tuple[str, float | None, str]]:
    """(label, value or None, why) per criterion, Image Quality last."""
    rows = []
    for key in _BAR_KEYS:
        label = CRITERION_LABELS[key]
        if key == "image_quality":
            rows.append((label, None, "needs a set"))
            continue
        score = result.scores.criteria.get(key) if result.scores is not None else None
        if score is None:
            rows.append((label, None, "not scored for this edit type" if result.scores is not None
                         else (result.reason or "not scored")))
        else:
            rows.append((label, score.value, score.reason or ""))
    return rows


def hatie_figure(result: HatieResult, label: str | None = None) -> Any:
    """A horizontal bar chart of the criteria and the edit's total (matplotlib Figure).

    ``label`` names the edit in the title (the app passes ``E1 short-name``; default: the file name).
    """
    from matplotlib.figure import Figure

    bars = criterion_bars(result)
    total = result.scores.total if result.scores is not None else None
    labels = [b[0] for b in bars] + ["Total (this edit)"]
    values = [b[1] for b in bars] + [total]
    fig = Figure(figsize=(6.4, 3.0), dpi=100)
    ax = fig.add_subplot(1, 1, 1)
    y = np.arange(len(labels))[::-1]
    for yi, label, value, why in zip(y, labels, values, [b[2] for b in bars] + [""]):
        if value is None:
            ax.barh(yi, 1.0, color="none", edgecolor="#bbbbbb", hatch="//")
            ax.text(0.02, yi, why or "-", va="center", fontsize=8, color="#555555")
        else:
            ax.barh(yi, value, color="#c05621" if label.startswith("Total") else "#2b6cb0")
            ax.text(min(value, 0.86) + 0.01, yi, f"{value:.3f}", va="center", fontsize=8)
    ax.set_yticks(y, labels, fontsize=8)
    ax.set_xlim(0, 1)
    kind = result.edit_type.edit_type or "not a HATIE type"
    title = f"{label or result.edit_name}: HATIE ({kind}, {result.edit_type.confidence})"
    if result.untrained:
        title += " - untrained"
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    return fig


def component_rows(result: HatieResult) -> list[dict[str, Any]]:
    """One row per component of every criterion: criterion, component, value, its weight in its own
    combination, its weight in the criterion (``weight in criterion``) and its share of the criterion's
    weighted sum; the criterion rows give the criterion's weight in the edit's total and its share of it."""
    rows = []
    if result.scores is None:
        return [{"criterion": "-", "component": "-", "value": None, "weight": None, "weight in criterion": None,
                 "share": None, "note": result.reason or "not scored"}]
    totals = {s.name: s for s in criterion_shares(result.scores)}
    for key, score in result.scores.criteria.items():
        top = totals.get(key)
        rows.append({"criterion": CRITERION_LABELS[key], "component": "(criterion, in the total)", "value": score.value,
                     "weight": result.scores.weights.get(key), "weight in criterion": top.weight if top else None,
                     "share": top.share if top else None, "note": "; ".join(score.notes) or (score.reason or "")})
        shares = {s.name: s for s in component_shares(score)}
        for c in score.components:
            share = shares.get(c.name)
            rows.append({"criterion": CRITERION_LABELS[key], "component": c.name, "value": c.value, "weight": c.weight,
                         "weight in criterion": c.effective, "share": share.share if share else None, "note": c.note})
    if result.untrained:
        rows.append({"criterion": "-", "component": "-", "value": None, "weight": None, "weight in criterion": None,
                     "share": None, "note": UNTRAINED_WARNING})
    return rows


def figure_image(fig: Any) -> Image.Image:
    """A matplotlib figure as an RGB picture."""
    import io

    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    buffer.seek(0)
    return Image.open(buffer).convert("RGB")


_SHARE_COLOURS = ["#2b6cb0", "#c05621", "#2f855a", "#b7791f", "#6b46c1", "#c53030", "#319795", "#718096"]


def share_lines(result: HatieResult, top: int = 4) -> list[str]:
    """One line per criterion: its value, then its largest parts as ``name share% (w weight)``."""
    if result.scores is None:
        return []
    lines = []
    for key, score in result.scores.criteria.items():
        if score.value is None:
            continue
        parts = sorted(component_shares(score), key=lambda s: -(s.share or 0.0))[:top]
        text = ", ".join(f"{s.name} {100 * s.share:.0f}% (w {s.weight:.3g})" for s in parts if s.share is not None)
        lines.append(f"{CRITERION_LABELS[key]} {score.value:.3f}: {text}")
    return lines


def share_figure(result: HatieResult, label: str | None = None) -> Any:
    """Each criterion as a 100 % bar split into its measures' shares (value x weight), largest labelled."""
    from matplotlib.figure import Figure

    criteria = [(k, s) for k, s in (result.scores.criteria.items() if result.scores is not None else [])
                if s.value is not None]
    fig = Figure(figsize=(6.4, 0.6 + 0.55 * max(1, len(criteria))), dpi=100)
    ax = fig.add_subplot(1, 1, 1)
    for row, (_key, score) in enumerate(criteria):
        left = 0.0
        for i, part in enumerate(sorted(component_shares(score), key=lambda s: -(s.share or 0.0))):
            width = max(0.0, part.share or 0.0)
            ax.barh(row, width, left=left, color=_SHARE_COLOURS[i % len(_SHARE_COLOURS)], edgecolor="white")
            if width >= 0.2:  # room for a label; the table gives every part
                name = part.name.removeprefix("appearance.")
                ax.text(left + 0.01, row, f"{name} {100 * width:.0f}%", va="center", fontsize=7, color="white",
                        clip_on=True)
            left += width
    ax.set_yticks(range(len(criteria)), [f"{CRITERION_LABELS[k]} {s.value:.3f}" for k, s in criteria], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlim(0, 1)
    ax.set_xlabel("share of the criterion (value x weight)", fontsize=8)
    title = f"{label or result.edit_name}: what each criterion is made of"
    ax.set_title(title + (" - untrained" if result.untrained else ""), fontsize=9)
    fig.tight_layout()
    return fig


def mask_views(result: HatieResult, label: str | None = None) -> list[tuple[Image.Image, str]]:
    """(image with one mask tinted, caption) for every mask the criteria used (512 x 512 frame)."""
    out = []
    for i, (name, mask) in enumerate(result.masks.items()):
        base = result.source_image if "source" in name else result.edit_image
        if base is None:
            continue
        pixels = np.asarray(base.convert("RGB"), dtype=np.float64)
        m = np.asarray(mask, dtype=bool)
        if m.shape != pixels.shape[:2]:
            continue
        colour = np.asarray(_MASK_COLOURS[i % len(_MASK_COLOURS)], dtype=np.float64)
        pixels[m] = 0.45 * pixels[m] + 0.55 * colour
        out.append((Image.fromarray(pixels.round().astype(np.uint8)), f"{label or result.edit_name}: {name}"))
    return out
