"""Pictures of BPM's regions for the app's BPM panel and for reports.

* the source image with M_origin (filled) and B_origin (box), plus the reference / anchor box;
* the edited image (in the source's frame) with M_edit and B_edit;
* the preserved region: the pixels S_preserve compares, the rest dimmed and hatched;
* the component scores as table rows and as a bar chart.

Every picture of a result computed with random weights carries an "UNTRAINED" banner, and the
chart's title says so. Functions return RGB ``uint8`` arrays (what ``gr.Image`` shows) or a
matplotlib ``Figure`` (built without pyplot, so it is safe in a server thread).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from ..bpm import BPMResult
from ..report import UNTRAINED_WARNING

_ORIGIN_COLOR = (220, 50, 47)  # M_origin / B_origin
_EDIT_COLOR = (38, 139, 210)  # M_edit / B_edit
_REFERENCE_COLOR = (133, 153, 0)  # the reference object / position anchor
_BANNER = "UNTRAINED (random weights): not meaningful"


def _font(size: int) -> ImageFont.ImageFont | ImageFont.FreeTypeFont:
    try:
        return ImageFont.load_default(size=size)
    except TypeError:  # Pillow without FreeType: the fixed bitmap font
        return ImageFont.load_default()


def _line_width(image: Image.Image) -> int:
    return max(1, round(max(image.size) / 200))


def _dashed_rectangle(draw: ImageDraw.ImageDraw, box: np.ndarray, color: tuple[int, int, int], width: int) -> None:
    x0, y0, x1, y1 = (float(v) for v in box)
    dash = max(4, 3 * width)
    for a, b, horizontal, fixed in ((x0, x1, True, y0), (x0, x1, True, y1), (y0, y1, False, x0), (y0, y1, False, x1)):
        pos = a
        while pos < b:
            end = min(pos + dash, b)
            draw.line([(pos, fixed), (end, fixed)] if horizontal else [(fixed, pos), (fixed, end)], fill=color,
                      width=width)
            pos += 2 * dash


def _overlay_region(image: Image.Image, mask: np.ndarray | None = None, box: np.ndarray | None = None,
                   color: tuple[int, int, int] = _ORIGIN_COLOR, label: str | None = None, opacity: float = 0.45,
                   dashed: bool = False) -> Image.Image:
    """``image`` with ``mask`` tinted in ``colour``, ``box`` outlined (dashed if asked) and ``label`` at its corner."""
    base = image.convert("RGB")
    if mask is not None:
        mask = np.asarray(mask, dtype=bool)
        if mask.shape != (base.size[1], base.size[0]):
            raise ValueError(f"mask shape {mask.shape} does not match the image {base.size[1]}x{base.size[0]}")
        pixels = np.asarray(base, dtype=np.float64)
        tint = np.asarray(color, dtype=np.float64)
        pixels[mask] = (1 - opacity) * pixels[mask] + opacity * tint
        base = Image.fromarray(np.clip(np.rint(pixels), 0, 255).astype(np.uint8), "RGB")
    if box is not None:
        draw = ImageDraw.Draw(base)
        width = _line_width(base)
        if dashed:
            _dashed_rectangle(draw, np.asarray(box), color, width)
        else:
            draw.rectangle([float(v) for v in box], outline=color, width=width)
        if label:
            font = _font(max(10, round(max(base.size) / 40)))
            x, y = float(box[0]) + width, float(box[1]) + width
            left, top, right, bottom = draw.textbbox((x, y), label, font=font)
            draw.rectangle([left - 1, top - 1, right + 1, bottom + 1], fill=color)
            draw.text((x, y), label, fill=(255, 255, 255), font=font)
    return base


def preserved_view(source: Image.Image, keep: np.ndarray, dim: float = 0.35) -> Image.Image:
    """The source with the excluded pixels (M_origin U M_edit) dimmed and hatched; ``keep`` True = compared."""
    base = np.asarray(source.convert("RGB"), dtype=np.float64)
    keep = np.asarray(keep, dtype=bool)
    if keep.shape != base.shape[:2]:
        raise ValueError(f"preserved-region mask shape {keep.shape} does not match the image {base.shape[:2]}")
    out = base.copy()
    excluded = ~keep
    grey = base.mean(axis=2, keepdims=True)
    out[excluded] = (dim * grey + (1 - dim) * 40.0)[excluded].repeat(3, axis=-1)
    yy, xx = np.mgrid[0:base.shape[0], 0:base.shape[1]]
    spacing = max(6, round(max(base.shape[:2]) / 40))
    hatch = ((xx + yy) % spacing == 0) & excluded
    out[hatch] = (200.0, 200.0, 200.0)
    return Image.fromarray(np.clip(np.rint(out), 0, 255).astype(np.uint8), "RGB")


def _with_banner(image: Image.Image, text: str = _BANNER, color: tuple[int, int, int] = (180, 30, 30)) -> Image.Image:
    """``image`` with a strip on top carrying ``text`` (the untrained label)."""
    font = _font(max(10, round(image.size[0] / 28)))
    probe = ImageDraw.Draw(image)
    left, top, right, bottom = probe.textbbox((0, 0), text, font=font)
    height = bottom - top + 6
    out = Image.new("RGB", (image.size[0], image.size[1] + height), color)
    out.paste(image.convert("RGB"), (0, height))
    ImageDraw.Draw(out).text((3, 3 - top), text, fill=(255, 255, 255), font=font)
    return out


def bpm_region_images(result: BPMResult) -> dict[str, np.ndarray]:
    """``source`` (M_origin / B_origin, reference dashed), ``edit`` (M_edit / B_edit), ``preserved``: RGB uint8."""
    if result.source_image is None or result.edit_image is None:
        raise ValueError("this BPMResult carries no images (it was rebuilt from JSON?); run bpm_score again")
    parse = result.parsed
    origin_label = f"o1: {parse.o1}" if parse.o1 else "origin = edit region (add)"
    edit_label = f"o2: {parse.o2}" if parse.o2 else "edit = origin region (remove)"
    if not result.origin.found and parse.o1:
        origin_label += " (not found)"
    if not result.edit.found and parse.o2:
        edit_label += " (not found)"
    source = _overlay_region(result.source_image, result.origin.mask, result.origin.box, _ORIGIN_COLOR, origin_label)
    if result.reference is not None and result.reference.box is not None:
        source = _overlay_region(source, None, result.reference.box, _REFERENCE_COLOR, f"reference: {parse.reference}",
                                dashed=True)
    elif result.anchor.provenance.startswith("the image frame"):
        source = _overlay_region(source, None, result.anchor.box, _REFERENCE_COLOR, "anchor: image frame", dashed=True)
    edit = _overlay_region(result.edit_image, result.edit.mask, result.edit.box, _EDIT_COLOR, edit_label)
    preserved = preserved_view(result.source_image, result.preserved_mask)
    images = {"source": source, "edit": edit, "preserved": preserved}
    if result.untrained:
        images = {name: _with_banner(image) for name, image in images.items()}
    return {name: np.asarray(image, dtype=np.uint8) for name, image in images.items()}


def bpm_component_rows(result: BPMResult) -> list[list[Any]]:
    """``[name, value, what it is]`` rows: every component, BPM and the paper's raw overall sum."""
    c = result.components
    alpha = c.alpha
    return [
        ["S_modify", round(c.s_modify, 4), "directional CLIP similarity of the crops vs CLIP_T(o2) - CLIP_T(o1), in [-1, 1]"],
        ["S_modify (0-1)", round(c.s_modify_norm, 4), "(S_modify + 1) / 2"],
        ["S_preserve", round(c.s_preserve, 4), f"1 - pixel RMSE outside M_origin U M_edit ({result.preservation.reason})"],
        ["S_semantic", round(c.s_semantic, 4), "S_modify (0-1) + S_preserve, in [0, 2]"],
        ["S_size", c.s_size, result.size.reason],
        ["S_position", c.s_position, result.position.reason],
        ["S_region", c.s_region, "S_size + S_position, in {0, 1, 2}"],
        ["BPM", round(c.bpm, 4), f"{alpha:g} S_semantic + {1 - alpha:g} S_region, in [0, 2]"],
        ["overall (raw)", round(c.overall_raw, 4), "S_modify + S_preserve + S_region, as the paper's Fig. 4 prints it"],
    ]


def bpm_component_figure(result: BPMResult) -> Any:
    """A bar chart of the four components (each on its own 0-1 scale) with BPM in the title."""
    from matplotlib.figure import Figure

    c = result.components
    names = ["S_modify\n(0-1)", "S_preserve", "S_size", "S_position"]
    values = [c.s_modify_norm, c.s_preserve, float(c.s_size), float(c.s_position)]
    colors = ["#268bd2", "#2aa198", "#b58900", "#cb4b16"]
    figure = Figure(figsize=(5.0, 3.0), dpi=100, layout="constrained")
    axes = figure.add_subplot()
    bars = axes.bar(names, values, color=colors)
    for bar, value in zip(bars, values):
        axes.text(bar.get_x() + bar.get_width() / 2, value + 0.02, f"{value:.3f}", ha="center", va="bottom", fontsize=8)
    axes.set_ylim(0, 1.15)
    axes.set_ylabel("score")
    title = f"BPM {c.bpm:.3f} = {c.alpha:g} x S_semantic {c.s_semantic:.3f} + {1 - c.alpha:g} x S_region {c.s_region}"
    if result.untrained:
        title = f"[{UNTRAINED_WARNING}]\n" + title
        axes.title.set_color("#b22222")
    axes.set_title(title, fontsize=8)
    return figure


@dataclass
class BPMPanel:
    """Everything the app's BPM panel shows for one edit."""

    source: np.ndarray
    edit: np.ndarray
    preserved: np.ndarray
    rows: list[list[Any]]
    parse: dict[str, str]
    caption: str
    untrained: bool
    notes: list[str] = field(default_factory=list)


def bpm_panel(result: BPMResult) -> BPMPanel:
    """The three pictures, the component rows, the four editable parse fields and a caption."""
    images = bpm_region_images(result)
    parse = result.parsed
    fields = {"o1": parse.o1 or "None", "o2": parse.o2 or "None", "size_state": parse.size_state,
              "position_state": parse.position_state, "reference": parse.reference or ""}
    caption = (f"BPM {result.bpm:.4f} ({parse.parser} parse: {parse.describe()}); red: M_origin / B_origin, blue: "
               "M_edit / B_edit, green dashed: position anchor; hatched: excluded from S_preserve; regions: "
               f"{result.region_source} (origin: {result.origin.provenance}; edit: {result.edit.provenance})")
    if result.untrained:
        caption = f"{UNTRAINED_WARNING}. " + caption
    return BPMPanel(source=images["source"], edit=images["edit"], preserved=images["preserved"],
                    rows=bpm_component_rows(result), parse=fields, caption=caption, untrained=result.untrained,
                    notes=list(result.notes))
