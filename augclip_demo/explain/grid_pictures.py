"""The comparison grid with pictures: relevancy maps and BPM regions per edit, beside the numbers.

    from augclip_demo.explain import comparison_grid
    grid = comparison_grid(report, explanations)      # explanations: explain_report(...) or None
    grid.save("comparison.html")                      # one self-contained file

The grid itself (numbers, ranks, verdicts, HTML) lives in the report layer
(:mod:`augclip_demo.report.comparison`); this module only draws the pictures it is given: each map
over its edit (jet for [0, 1] relevance, red/blue for the signed CLIPdir difference) and BPM's
region pictures when BPM ran (``report.arrays.bpm``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from matplotlib import colormaps
from PIL import Image

from ..report.comparison import THUMBNAIL_SIDE, ComparisonGrid, Tile
from ..report.comparison import comparison_grid as numbers_grid

if TYPE_CHECKING:  # pragma: no cover
    from ..report import Report
    from .explanations import ReportExplanations


def _thumbnail(image: Image.Image, side: int = THUMBNAIL_SIDE) -> Image.Image:
    picture = image.convert("RGB")
    scale = side / max(picture.size)
    if scale < 1:
        picture = picture.resize((max(1, round(picture.width * scale)), max(1, round(picture.height * scale))),
                                 Image.Resampling.LANCZOS)
    return picture


def map_overlay(image: Image.Image, values: np.ndarray, cmap: str, vmin: float, vmax: float,
                opacity: float = 0.5) -> Image.Image:
    """``values`` (the image's height x width) coloured with ``cmap`` over ``image``; NaN (where the
    model saw nothing) leaves the image as it is."""
    base = np.asarray(image.convert("RGB"), dtype=np.float64) / 255.0
    values = np.asarray(values, dtype=np.float64)
    seen = np.isfinite(values)
    scaled = np.clip((np.where(seen, values, vmin) - vmin) / (vmax - vmin), 0.0, 1.0)
    colours = colormaps[cmap](scaled)[..., :3]
    mixed = np.where(seen[..., None], (1 - opacity) * base + opacity * colours, base)
    return Image.fromarray(np.clip(np.rint(mixed * 255), 0, 255).astype(np.uint8), "RGB")


def relevancy_tiles(image: Image.Image, explanation) -> list[Tile]:
    """The edit's AugCLIP maps (toward the ideal edit, along v), CLIP-T and signed CLIPdir maps, as computed (those
    that were)."""
    picture = _thumbnail(image)
    size = picture.size
    tiles = []
    for rel, title, similarity in ((explanation.augclip, "AugCLIP map (toward the ideal edit)", "E(I_src)+v"),
                                   (explanation.augclip_v, "AugCLIP map (along the modification v)", "v"),
                                   (explanation.clip_t, "CLIP-T map (toward the target text)", "E(T_trg)")):
        if rel is not None:
            tiles.append(Tile(title, map_overlay(picture, rel.image_map(size), "jet", 0.0, 1.0),
                              f"cs(E(I_edit), {similarity}) = {rel.score:+.3f}"))
    if explanation.clip_dir is not None:
        tiles.append(Tile("CLIPdir map, edit minus source",
                          map_overlay(picture, explanation.clip_dir.image_difference(size), "RdBu_r", -1.0, 1.0,
                                      opacity=0.6),
                          "red: more of the text direction in the edit, blue: in the source"))
    return tiles


def bpm_tiles(result) -> list[Tile]:
    """BPM's regions of one edit: M_origin / B_origin on the source, M_edit / B_edit on the edit, kept pixels."""
    from .regions import bpm_region_images

    try:
        images = bpm_region_images(result)
    except ValueError:
        return []
    return [Tile("BPM: source, M_origin / B_origin", _thumbnail(Image.fromarray(images["source"]))),
            Tile("BPM: edit, M_edit / B_edit", _thumbnail(Image.fromarray(images["edit"]))),
            Tile("BPM: preserved region", _thumbnail(Image.fromarray(images["preserved"])),
                 f"BPM = {result.bpm:.4f}" if result.bpm is not None else "")]


def hatie_tiles(result) -> list[Tile]:
    """HATIE's breakdown of one edit: each criterion split into its measures' shares, with their weights."""
    from .hatie_panel import figure_image, share_figure, share_lines

    if result.scores is None:
        return []
    return [Tile("HATIE: each criterion's parts (share, weight)", _thumbnail(figure_image(share_figure(result, "HATIE"))),
                 "; ".join(share_lines(result)))]


def comparison_grid(report: Report, explanations: ReportExplanations | None = None) -> ComparisonGrid:
    """The grid of ``report`` with each edit's relevancy maps (from ``explanations``) and BPM regions."""
    arrays = getattr(report, "arrays", None)
    tiles: dict[int, list[Tile]] = {}
    if explanations is not None and arrays is not None:
        for edit in explanations.edits:
            tiles.setdefault(edit.index, []).extend(relevancy_tiles(arrays.edits[edit.index].image, edit))
    for i, result in enumerate(getattr(arrays, "bpm", None) or []):
        tiles.setdefault(i, []).extend(bpm_tiles(result))
    for i, result in enumerate(getattr(arrays, "hatie", None) or []):
        tiles.setdefault(i, []).extend(hatie_tiles(result))
    grid = numbers_grid(report, tiles)
    if explanations is None:
        grid.notes.append("relevancy maps not included: the report was exported without explanations")
    return grid


__all__ = ["bpm_tiles", "comparison_grid", "hatie_tiles", "map_overlay", "relevancy_tiles"]
