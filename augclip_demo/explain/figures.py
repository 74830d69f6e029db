"""Matplotlib figures for the explanation views (object API only: headless, no pyplot state).

Every figure is a :class:`matplotlib.figure.Figure` built without ``pyplot``, so it renders with the
Agg backend in any thread (CLI, Gradio callbacks, notebooks) and needs no display. Sizes are chosen
for a laptop screen at 100 dpi (about 640-1400 px wide); text is at least 8.5 pt. Results from
random weights carry a red "UNTRAINED" banner across the top of the figure.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from matplotlib import colormaps
from matplotlib.cm import ScalarMappable
from matplotlib.colors import Normalize
from matplotlib.figure import Figure, SubFigure
from matplotlib.lines import Line2D
from matplotlib.patches import Rectangle
from PIL import Image

from ..report import short_edit_names

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes

    from .hyperplane import ExactPanel, ExactView, PointSet, UmapView
    from .rankings import RankingChart
    from .relevancy import ClipDirRelevancy, RelevancyMap

UNTRAINED_BANNER = "UNTRAINED MODEL (random weights): not meaningful"
_DPI = 100
_DISPLAY_MAX_SIDE = 560  # images are shown at most this many pixels on a side...
_DISPLAY_MIN_SIDE = 320  # ...and small ones are enlarged to this, so the maps are smooth on screen
SOURCE_COLOR = "#1f77b4"
TARGET_COLOR = "#ff7f0e"
SOURCE_IMAGE_COLOR = "#08306b"
IDEAL_COLOR = "#111111"
EDIT_COLORS = ("#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#7f7f7f")
_POSITIVE_COLOR = "#e6550d"
_NEGATIVE_COLOR = "#3182bd"
_RELEVANCY_CMAP = "jet"  # Chefer et al.'s visualisation
_SIGNED_CMAP = "RdBu_r"  # diverging: red = more relevance in the edit, blue = more in the source


def edit_color(index: int) -> str:
    return EDIT_COLORS[index % len(EDIT_COLORS)]


def save_figure(fig: Figure, path: str | Path, dpi: int = 110) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    # zlib level 1: a third of the encoding time of the default 6 for ~20 % larger files (figures of an
    # app result are written while the user waits)
    fig.savefig(path, dpi=dpi, facecolor="white", pil_kwargs={"compress_level": 1})
    return path


# ---------------------------------------------------------------------------------------- frame
def _framed(width: float, body_height: float, title: str, caption: str | None, untrained: bool) -> tuple[Figure, SubFigure]:
    """A figure with an optional red UNTRAINED banner, a titled body and a wrapped caption below."""
    chars = max(40, int(width * 72 / (9 * 0.56)))
    caption_lines = textwrap.wrap(caption, chars) if caption else []
    banner_h = 0.36 if untrained else 0.0
    caption_h = 0.2 + 0.165 * len(caption_lines) if caption_lines else 0.0
    fig = Figure(figsize=(width, body_height + banner_h + caption_h), dpi=_DPI, layout="constrained")
    fig.get_layout_engine().set(h_pad=0.02, w_pad=0.02, hspace=0.0, wspace=0.0)
    heights = [h for h in (banner_h, body_height, caption_h) if h > 0]
    subs = fig.subfigures(len(heights), 1, height_ratios=heights) if len(heights) > 1 else [fig.subfigures(1, 1)]
    subs = list(np.atleast_1d(subs))
    body_index = 1 if untrained else 0
    if untrained:
        banner = subs[0]
        banner.set_facecolor("#b71c1c")
        banner.text(0.5, 0.5, UNTRAINED_BANNER, color="white", fontsize=11, fontweight="bold", ha="center", va="center")
    body = subs[body_index]
    # Long file names must not push the title past the figure's edges: wrap it (bold 12 pt ~ 0.6 em per char).
    title_chars = max(30, int(width * 72 / (12 * 0.62)))
    body.suptitle("\n".join(textwrap.wrap(title, title_chars)) or title, fontsize=12, fontweight="bold")
    if caption_lines:
        subs[-1].text(0.012, 0.92, "\n".join(caption_lines), fontsize=9, color="#333333", ha="left", va="top",
                      linespacing=1.25)
    return fig, body


def _display_image(image: Image.Image) -> Image.Image:
    """The image at display resolution (the maps are computed at this resolution, on the same frame)."""
    width, height = image.size
    side = max(width, height)
    if _DISPLAY_MIN_SIDE <= side <= _DISPLAY_MAX_SIDE:
        return image
    scale = (_DISPLAY_MAX_SIDE if side > _DISPLAY_MAX_SIDE else _DISPLAY_MIN_SIDE) / side
    method = Image.Resampling.LANCZOS if scale < 1 else Image.Resampling.BICUBIC
    return image.resize((max(1, round(width * scale)), max(1, round(height * scale))), method)


def _edit_short_names(points: PointSet) -> dict[int, str]:
    """Edit index -> its short name under the one naming rule (report.short_edit_names)."""
    rows = points.indices("edit")
    shorts = short_edit_names([points.texts[i] for i in rows])
    return {int(points.edits[i] or 0): short for i, short in zip(rows, shorts)}


def _short(text: str, limit: int) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


# ---------------------------------------------------------------------------------------- relevancy
def _overlay(ax: Axes, image: Image.Image, values: np.ndarray, *, cmap: str, vmin: float, vmax: float,
             alpha: float, view_box: tuple[float, float, float, float] | None, scale: float) -> None:
    # Blended here, drawn as one picture: what two layered imshow calls show (the map at ``alpha`` over
    # the image, the image alone where the map is NaN), without matplotlib compositing two layers.
    base = np.asarray(image.convert("RGB"), dtype=np.float32) / 255.0
    colors = colormaps[cmap](Normalize(vmin, vmax)(values))[..., :3]
    seen = np.isfinite(values)[..., None]
    ax.imshow(np.where(seen, (1.0 - alpha) * base + alpha * colors, base), interpolation="nearest")
    if view_box is not None:
        left, top, right, bottom = (v * scale for v in view_box)
        ax.add_patch(Rectangle((left - 0.5, top - 0.5), right - left, bottom - top, fill=False, ec="white",
                               lw=1.5, ls="--"))
    ax.set_xticks([])
    ax.set_yticks([])


def _colorbar(sub: SubFigure, ax: Axes, cmap: str, vmin: float, vmax: float, label: str, shrink: float) -> None:
    """A colour bar in full colour (the overlay itself is translucent)."""
    sub.colorbar(ScalarMappable(norm=Normalize(vmin, vmax), cmap=cmap), ax=ax, shrink=shrink, label=label)


def _shown(image: Image.Image) -> tuple[Image.Image, float]:
    """The image at display resolution and its scale from the original."""
    disp = _display_image(image)
    return disp, disp.size[0] / image.size[0]


def _map_panel(body: SubFigure, ax: Axes, shown: tuple[Image.Image, float], rel: RelevancyMap, *, heading: str,
               label: str, shrink: float) -> None:
    """One relevancy map over a :func:`_shown` image, the model's view box dashed, with its colour bar."""
    disp, scale = shown
    box = None if rel.view.covers_whole_image else rel.view.box
    _overlay(ax, disp, rel.image_map(disp.size), cmap=_RELEVANCY_CMAP, vmin=0, vmax=1, alpha=0.5,
             view_box=box, scale=scale)
    ax.set_title(heading, fontsize=10)
    _colorbar(body, ax, _RELEVANCY_CMAP, 0, 1, label, shrink)


def relevancy_figure(image: Image.Image, rel: RelevancyMap, *, title: str, caption: str | None = None,
                     untrained: bool = False, subtitle: str | None = None) -> Figure:
    """The map over the image (same frame as the input) with a colour bar."""
    fig, body = _framed(6.6, 5.4, title, caption, untrained)
    _map_panel(body, body.subplots(), _shown(image), rel,
               heading=subtitle or f"{rel.image_name}   cs = {rel.score:+.3f}",
               label="relevance (normalised to [0, 1])", shrink=0.88)
    return fig


def augclip_figure(image: Image.Image, ideal: RelevancyMap, modification: RelevancyMap, *, title: str,
                   caption: str | None = None, untrained: bool = False) -> Figure:
    """AugCLIP's two maps over the edit: toward the ideal edit (its score) and along the modification v."""
    fig, body = _framed(11.5, 5.2, title, caption, untrained)
    axes = body.subplots(1, 2)
    shown = _shown(image)
    _map_panel(body, axes[0], shown, ideal,
               heading=f"toward the ideal edit E(I_src)+v   AugCLIP = {ideal.score:+.3f}",
               label="relevance [0, 1]", shrink=0.8)
    _map_panel(body, axes[1], shown, modification,
               heading=f"along the modification v   cs(E(I_edit), v) = {modification.score:+.3f}",
               label="relevance [0, 1]", shrink=0.8)
    return fig


def clip_dir_figure(source_image: Image.Image, edit_image: Image.Image, rel: ClipDirRelevancy, *, title: str,
                    caption: str | None = None, untrained: bool = False) -> Figure:
    """R(I_src; dT), R(I_edit; dT) and the signed difference on the edit (diverging colour map)."""
    fig, body = _framed(15.0, 5.0, title, caption, untrained)
    axes = body.subplots(1, 3)
    shown = _shown(edit_image)
    _map_panel(body, axes[0], _shown(source_image), rel.source, heading="R(I_src; dT): the source",
               label="relevance [0, 1]", shrink=0.8)
    _map_panel(body, axes[1], shown, rel.edit, heading="R(I_edit; dT): the edit", label="relevance [0, 1]",
               shrink=0.8)
    edit_disp, edit_scale = shown
    edit_box = None if rel.edit.view.covers_whole_image else rel.edit.view.box
    _overlay(axes[2], edit_disp, rel.image_difference(edit_disp.size), cmap=_SIGNED_CMAP, vmin=-1, vmax=1,
             alpha=0.6, view_box=edit_box, scale=edit_scale)
    axes[2].set_title(f"R(I_edit; dT) - R(I_src; dT)   CLIPdir = {rel.clip_dir:+.3f}", fontsize=10)
    _colorbar(body, axes[2], _SIGNED_CMAP, -1, 1, "edit minus source (red: edit, blue: source)", 0.8)
    return fig


# ---------------------------------------------------------------------------------------- hyperplane views
_KIND_STYLE = {
    "source_attribute": dict(marker="o", s=46, color=SOURCE_COLOR, label="source attribute (S)"),
    "target_attribute": dict(marker="s", s=46, color=TARGET_COLOR, label="target attribute (T)"),
    "source_image": dict(marker="*", s=300, color=SOURCE_IMAGE_COLOR, label="source image"),
    "ideal": dict(marker="X", s=170, color=IDEAL_COLOR, label="ideal edit E(I_src)+v"),
}


@dataclass
class _PointLabel:
    """A label waiting for a place beside its marker (placed once the layout is final)."""

    ax: Axes
    xy: tuple[float, float]  # data coordinates of the marker
    text: str
    marker_pt: float  # the marker's radius in points: the label starts beyond it
    style: dict
    rank: int = 2  # placing order: images (0), the |v| note (1), attributes (2)


@dataclass
class _Labeller:
    """Collects point labels, then places them so that none overlaps another text, a marker or the axes' edge.

    Each label tries positions around its marker (right, above, below, left and the diagonals, at
    growing distances) in priority order (images before attributes); a label with no free position is
    left out and counted, since the key beside the plot lists every attribute anyway.
    """

    labels: list[_PointLabel] = field(default_factory=list)
    omitted: int = 0

    def add(self, ax: Axes, xy: Sequence[float], text: str, marker_pt: float, rank: int = 2, **style) -> None:
        self.labels.append(_PointLabel(ax, (float(xy[0]), float(xy[1])), text, marker_pt, style, rank))

    def place(self, fig: Figure) -> None:
        fig.draw_without_rendering()  # the layout is final from here on (labels stay out of it)
        renderer = fig._get_renderer()
        px_per_pt = fig.dpi / 72.0
        taken: dict[int, list[tuple[float, float, float, float]]] = {}  # per axes: boxes labels must avoid
        markers: dict[int, list[tuple[float, float, float, float]]] = {}
        for label in self.labels:
            if id(label.ax) not in taken:  # the axes' fixed texts (g(x) = 0, side names, |v|), padded a little
                taken[id(label.ax)] = [_grow(_box(t.get_window_extent(renderer)), 2) for t in label.ax.texts
                                       if t.get_visible() and t.get_text().strip()]
            x, y = label.ax.transData.transform(label.xy)
            r = label.marker_pt * px_per_pt * 0.8
            markers.setdefault(id(label.ax), []).append((x - r, y - r, x + r, y + r))
        for label in sorted(self.labels, key=lambda item: item.rank):  # stable: the order added within a rank
            ax = label.ax
            inside = _box(ax.get_window_extent(renderer))
            x, y = ax.transData.transform(label.xy)
            probe = ax.annotate(label.text, label.xy, xytext=(0, 0), textcoords="offset points", **label.style)
            probe.set_in_layout(False)
            extent = probe.get_window_extent(renderer)
            width, height = extent.width + 2, extent.height + 2
            own = (x, y)
            spot = None
            for distance in (2.0, 6.0, 11.0, 17.0, 24.0):
                for dx, dy in _DIRECTIONS:
                    gap = (label.marker_pt + distance) * px_per_pt
                    left = x + dx * gap - (0 if dx > 0 else width if dx < 0 else width / 2)
                    bottom = y + dy * gap - (0 if dy > 0 else height if dy < 0 else height / 2)
                    box = (left, bottom, left + width, bottom + height)
                    if not _within(box, inside) or any(_hits(box, other) for other in taken[id(ax)]):
                        continue
                    if any(_hits(box, m) for m in markers[id(ax)] if not _holds(m, own)):
                        continue
                    spot = (dx, dy, gap, box)
                    break
                if spot is not None:
                    break
            if spot is None:
                probe.remove()
                self.omitted += 1
                continue
            dx, dy, gap, box = spot
            probe.remove()
            far = gap > (label.marker_pt + 8) * px_per_pt  # far from its marker: a thin leader line says whose
            arrow = dict(arrowstyle="-", lw=0.6, color=label.style.get("color", "#444444"), alpha=0.7,
                         shrinkA=1, shrinkB=label.marker_pt * 0.8) if far else None
            placed = ax.annotate(label.text, label.xy, xytext=(dx * gap / px_per_pt, dy * gap / px_per_pt),
                                 textcoords="offset points", ha="left" if dx > 0 else "right" if dx < 0 else "center",
                                 va="bottom" if dy > 0 else "top" if dy < 0 else "center", arrowprops=arrow,
                                 **label.style)
            placed.set_in_layout(False)
            taken[id(ax)].append(box)


_DIRECTIONS = ((1, 0), (0.75, 0.75), (0.75, -0.75), (0, 1), (0, -1), (-1, 0), (-0.75, 0.75), (-0.75, -0.75))


def _box(extent) -> tuple[float, float, float, float]:
    return (extent.x0, extent.y0, extent.x1, extent.y1)


def _grow(box: tuple[float, float, float, float], pad: float) -> tuple[float, float, float, float]:
    return (box[0] - pad, box[1] - pad, box[2] + pad, box[3] + pad)


def _hits(a: tuple[float, float, float, float], b: tuple[float, float, float, float]) -> bool:
    return min(a[2], b[2]) > max(a[0], b[0]) and min(a[3], b[3]) > max(a[1], b[1])


def _within(box: tuple[float, float, float, float], outer: tuple[float, float, float, float]) -> bool:
    return box[0] >= outer[0] + 1 and box[1] >= outer[1] + 1 and box[2] <= outer[2] - 1 and box[3] <= outer[3] - 1


def _holds(box: tuple[float, float, float, float], point: tuple[float, float]) -> bool:
    return box[0] <= point[0] <= box[2] and box[1] <= point[1] <= box[3] and abs(
        (box[0] + box[2]) / 2 - point[0]) < 1e-6 and abs((box[1] + box[3]) / 2 - point[1]) < 1e-6


_MARKER_PT = {"source_attribute": 3.5, "target_attribute": 3.5, "source_image": 9.0, "ideal": 6.5, "edit": 5.5}


def _scatter_points(ax: Axes, points: PointSet, xy: np.ndarray, labeller: _Labeller,
                    highlight: Sequence[int] | None = None) -> None:
    """Markers by kind, edits in their own colours (faded unless highlighted); labels go to ``labeller``
    (images first, then the attributes farthest from the crowd, which have the most room)."""
    image_labels, attribute_labels = [], []
    centre = xy.mean(axis=0)
    spread = np.where(np.ptp(xy, axis=0) > 0, np.ptp(xy, axis=0), 1.0)
    for i, kind in enumerate(points.kinds):
        x, y = xy[i]
        if kind == "edit":
            edit = points.edits[i] or 0
            faded = highlight is not None and edit not in highlight
            ax.scatter([x], [y], marker="D", s=120, color=edit_color(edit), edgecolors="black", linewidths=0.8,
                       alpha=0.35 if faded else 1.0, zorder=5)
            image_labels.append((i, dict(fontsize=10, fontweight="bold", color=edit_color(edit),
                                         alpha=0.5 if faded else 1.0, zorder=6)))
            continue
        style = dict(_KIND_STYLE[kind])
        style.pop("label")
        ax.scatter([x], [y], edgecolors="white" if kind != "ideal" else "none", linewidths=0.6,
                   zorder=4 if kind.endswith("attribute") else 6, **style)
        if kind in ("source_image", "ideal"):
            image_labels.append((i, dict(fontsize=10, fontweight="bold", color=style["color"], zorder=6)))
        else:
            attribute_labels.append((i, dict(fontsize=8.5, color=style["color"], zorder=6)))
    far_first = sorted(attribute_labels, key=lambda item: -float(np.sum(((xy[item[0]] - centre) / spread) ** 2)))
    for i, style in image_labels + far_first:
        labeller.add(ax, xy[i], points.labels[i], _MARKER_PT[points.kinds[i]],
                     rank=0 if points.kinds[i] in ("source_image", "edit", "ideal") else 2, **style)


def _legend_handles(points: PointSet, extra: list[Line2D]) -> list[Line2D]:
    handles = []
    present = set(points.kinds)
    for kind in ("source_attribute", "target_attribute", "source_image", "ideal"):
        if kind in present:
            style = _KIND_STYLE[kind]
            handles.append(Line2D([], [], ls="", marker=style["marker"], color=style["color"],
                                  markersize=13 if kind in ("source_image", "ideal") else 7, label=style["label"]))
    shorts = _edit_short_names(points)
    for i in points.indices("edit"):
        edit = points.edits[i] or 0
        handles.append(Line2D([], [], ls="", marker="D", color=edit_color(edit), markeredgecolor="black",
                              markersize=8, label=f"{points.labels[i]} {shorts[edit]}"))
    return handles + extra


def _key(sub: SubFigure, points: PointSet, handles: list[Line2D], labeller: _Labeller) -> None:
    """The legend, then the attribute texts behind the short labels, in their own column.

    Placed after the point labels (the layout is final then): the list starts below the legend's real
    extent and keeps one full line per attribute, as many as fit; the rest are counted.
    """
    ax = sub.subplots()
    ax.set_axis_off()
    legend = ax.legend(handles=handles, loc="upper left", fontsize=9, frameon=False, borderaxespad=0.0)
    legend.set_in_layout(False)
    labeller.place(sub.figure)
    renderer = sub.figure._get_renderer()
    frame = ax.get_window_extent(renderer)
    if frame.height <= 0:
        return
    legend_bottom = legend.get_window_extent(renderer).y0
    line = 0.2 * sub.figure.dpi / frame.height  # 0.2 inch per line, in axes fraction
    top = (legend_bottom - frame.y0) / frame.height - 0.6 * line
    rows = [(label, text, SOURCE_COLOR) for k, label, text in zip(points.kinds, points.labels, points.texts)
            if k == "source_attribute"]
    rows += [(label, text, TARGET_COLOR) for k, label, text in zip(points.kinds, points.labels, points.texts)
             if k == "target_attribute"]
    notes = []
    if labeller.omitted:
        notes.append(f"{labeller.omitted} crowded point label(s) left out")
    room = max(0, int(top / line) - len(notes))
    shown = rows if len(rows) <= room else rows[: max(0, room - 1)]
    if len(shown) < len(rows):
        notes.insert(0, f"... {len(rows) - len(shown)} more attributes (see the JSON)")
    for j, (label, text, color) in enumerate(shown):
        ax.text(0.0, top - j * line, f"{label}", fontsize=8.5, color=color, fontweight="bold", va="top",
                transform=ax.transAxes)
        ax.text(0.13, top - j * line, _short(text, 40), fontsize=8.5, color="#222222", va="top",
                transform=ax.transAxes)
    for j, note in enumerate(notes):
        ax.text(0.0, top - (len(shown) + j) * line, note, fontsize=8.5, color="#555555", va="top",
                transform=ax.transAxes)
    # Freeze the layout the labels were placed in (saving would otherwise lay the figure out again, and
    # pay for it again).
    sub.figure.set_layout_engine("none")


def _panel_title(panel: ExactPanel, points: PointSet, shared: bool) -> str:
    if shared:
        scores = ", ".join(f"E{i + 1} {s:.3f}" for i, s in panel.scores.items())
        return f"Shared fit   AugCLIP: {scores}"
    (edit,) = panel.edits[:1]
    name = _edit_short_names(points)[edit]
    more = f" (also edits {', '.join(str(i + 1) for i in panel.edits[1:])})" if len(panel.edits) > 1 else ""
    return f"Fit of E{edit + 1} {name}{more}   AugCLIP {panel.scores[edit]:.3f}"


def exact_view_figure(view: ExactView) -> Figure:
    """One panel per fit: x = g(x)/|w| (hyperplane at x = 0), y = first PC orthogonal to w."""
    panels = view.panels
    n = len(panels)
    cols = min(n, 2)
    rows = int(np.ceil(n / cols))
    panel_w, panel_h = 6.2, 4.8
    title = "AugCLIP hyperplane, exact view" + ("" if n == 1 else f" ({n} fits, one per edit)")
    fig, body = _framed(panel_w * cols + 3.6, panel_h * rows, title, view.caption, view.untrained)
    if rows > 1:  # air between one panel's x label and the next row's title
        fig.get_layout_engine().set(hspace=0.05)
    labeller = _Labeller()
    plot_col, key_col = body.subfigures(1, 2, width_ratios=[panel_w * cols, 3.6])
    axes = np.atleast_1d(plot_col.subplots(rows, cols, squeeze=False)).ravel()
    for ax, panel in zip(axes, panels):
        xy = np.column_stack([panel.x, panel.y])
        span_x = max(1e-6, float(np.ptp(panel.x)))
        left = min(float(panel.x.min()), 0.0) - 0.12 * span_x
        right = max(float(panel.x.max()), 0.0) + 0.12 * span_x
        ax.axvspan(left, 0, color=SOURCE_COLOR, alpha=0.07, lw=0)
        ax.axvspan(0, right, color=TARGET_COLOR, alpha=0.07, lw=0)
        ax.axvline(0, color="black", lw=1.6, zorder=2)
        ax.set_xlim(left, right)
        span_y = max(1e-6, float(np.ptp(panel.y)))
        ax.set_ylim(float(panel.y.min()) - 0.1 * span_y, float(panel.y.max()) + 0.14 * span_y)
        ax.text(0.0, 0.985, " g(x) = 0 ", transform=ax.get_xaxis_transform(), ha="center", va="top", fontsize=9,
                bbox=dict(fc="white", ec="black", lw=0.6, pad=1.5), zorder=7)
        ax.text(0.01, 0.015, "source side", transform=ax.transAxes, fontsize=9, color=SOURCE_COLOR, va="bottom")
        ax.text(0.99, 0.015, "target side", transform=ax.transAxes, fontsize=9, color=TARGET_COLOR, va="bottom",
                ha="right")
        src = int(panel.points.indices("source_image")[0])
        ideals = panel.points.indices("ideal")
        if len(ideals) and panel.c > 0:
            ideal = int(ideals[0])
            ax.annotate("", xy=xy[ideal], xytext=xy[src], zorder=3,
                        arrowprops=dict(arrowstyle="-|>", lw=1.6, color="#444444", shrinkA=9, shrinkB=8))
            mid = (xy[src] + xy[ideal]) / 2
            labeller.add(ax, mid, f"v  (|v| = {panel.v_norm:.3f})", 1.0, rank=1, fontsize=9, color="#444444",
                         zorder=7)
        _scatter_points(ax, panel.points, xy, labeller, highlight=panel.edits if not view.shared_fit else None)
        ax.set_title(_panel_title(panel, panel.points, view.shared_fit), fontsize=10)
        ax.set_xlabel("g(x) / |w|   signed distance to the hyperplane", fontsize=9.5)
        ax.set_ylabel(f"1st PC orthogonal to w ({panel.y_explained:.0%} of that variance)", fontsize=9.5)
        ax.tick_params(labelsize=8.5)
        ax.grid(alpha=0.25)
    for ax in axes[n:]:
        ax.set_axis_off()
    extra = [Line2D([], [], color="black", lw=1.6, label="hyperplane g(x) = 0")]
    _key(key_col, panels[0].points, _legend_handles(panels[0].points, extra), labeller)
    return fig


def _line_segment(w: np.ndarray, b: float, xlim: tuple[float, float], ylim: tuple[float, float]) -> np.ndarray | None:
    """End points of w.p + b = 0 inside the box, or None when it misses the box."""
    (x0, x1), (y0, y1) = xlim, ylim
    found = []
    if abs(w[1]) > 1e-12:
        for x in (x0, x1):
            y = -(w[0] * x + b) / w[1]
            if y0 <= y <= y1:
                found.append((x, y))
    if abs(w[0]) > 1e-12:
        for y in (y0, y1):
            x = -(w[1] * y + b) / w[0]
            if x0 <= x <= x1:
                found.append((x, y))
    if len(found) < 2:
        return None
    found.sort()
    return np.array([found[0], found[-1]])


def umap_view_figure(view: UmapView) -> Figure:
    """One plot: all points in UMAP's 2-D embedding with each fit's refitted 2-D decision line."""
    fig, body = _framed(11.0, 6.2, "Attributes, images and the ideal edit: UMAP view (illustrative)", view.caption,
                        view.untrained)
    plot_col, key_col = body.subfigures(1, 2, width_ratios=[7.4, 3.6])
    ax = plot_col.subplots()
    labeller = _Labeller()
    xy = view.coords
    pad_x = 0.12 * max(1e-6, float(np.ptp(xy[:, 0])))
    pad_y = 0.12 * max(1e-6, float(np.ptp(xy[:, 1])))
    xlim = (float(xy[:, 0].min()) - pad_x, float(xy[:, 0].max()) + pad_x)
    ylim = (float(xy[:, 1].min()) - pad_y, float(xy[:, 1].max()) + pad_y)
    extra: list[Line2D] = []
    if len(view.lines) == 1:
        line = view.lines[0]
        gx, gy = np.meshgrid(np.linspace(*xlim, 200), np.linspace(*ylim, 200))
        side = np.sign(line.w[0] * gx + line.w[1] * gy + line.b)
        ax.contourf(gx, gy, side, levels=[-2, 0, 2], colors=[SOURCE_COLOR, TARGET_COLOR], alpha=0.08)
    for line in view.lines:
        seg = _line_segment(line.w, line.b, xlim, ylim)
        color = "black" if len(view.lines) == 1 else edit_color(line.edits[0])
        label = ("2-D decision line" if len(view.lines) == 1
                 else f"2-D line, fit of E{line.edits[0] + 1}") + f" (acc. {line.accuracy:.0%})"
        if seg is not None:
            ax.plot(seg[:, 0], seg[:, 1], color=color, lw=1.6, ls="-" if len(view.lines) == 1 else "--", zorder=2)
        else:
            label += ", outside the plot"
        extra.append(Line2D([], [], color=color, lw=1.6, ls="-" if len(view.lines) == 1 else "--", label=label))
    _scatter_points(ax, view.points, xy, labeller)
    ax.set_xlim(*xlim)
    ax.set_ylim(*ylim)
    ax.set_xlabel("UMAP 1", fontsize=9.5)
    ax.set_ylabel("UMAP 2", fontsize=9.5)
    ax.tick_params(labelsize=8.5)
    ax.grid(alpha=0.25)
    ax.set_title("Axes have no units: UMAP preserves neighbourhoods, not distances", fontsize=9.5)
    _key(key_col, view.points, _legend_handles(view.points, extra), labeller)
    return fig


# ---------------------------------------------------------------------------------------- rankings
def _wrap_label(text: str, width: int = 44, lines: int = 2) -> str:
    wrapped = textwrap.wrap(" ".join(text.split()), width) or [""]
    if len(wrapped) > lines:
        wrapped = wrapped[:lines]
        wrapped[-1] = wrapped[-1][: width - 1] + "…"
    return "\n".join(wrapped)


def _bars(ax: Axes, chart: RankingChart, color_of: callable, value_format: str = "{:+.4f}") -> None:
    labels, values, colors = [], [], []
    split = chart.split_after
    for i, item in enumerate(chart.items):
        labels.append(f"#{item.rank}  {_wrap_label(item.text)}")
        values.append(item.value)
        colors.append(color_of(item))
        if split is not None and i == split:
            labels.append(f"... {chart.omitted} more ...")
            values.append(np.nan)
            colors.append("none")
    positions = np.arange(len(values))
    finite = np.nan_to_num(np.asarray(values, dtype=float))
    ax.barh(positions, finite, color=colors, height=0.66, edgecolor="none")
    ax.set_yticks(positions, labels, fontsize=9)
    ax.invert_yaxis()
    ax.axvline(0, color="black", lw=0.8)
    peak = float(np.max(np.abs(finite))) if len(finite) else 1.0
    peak = peak if peak > 0 else 1.0
    ax.set_xlim(min(0.0, float(np.min(finite))) - 0.28 * peak, max(0.0, float(np.max(finite))) + 0.28 * peak)
    for pos, value in zip(positions, values):
        if np.isfinite(value):
            ax.text(value + (0.02 * peak if value >= 0 else -0.02 * peak), pos, value_format.format(value),
                    va="center", ha="left" if value >= 0 else "right", fontsize=8.5, color="#222222")
    ax.set_xlabel(chart.xlabel, fontsize=9.5)
    ax.tick_params(axis="x", labelsize=8.5)
    ax.grid(axis="x", alpha=0.25)


def ranking_figure(chart: RankingChart) -> Figure:
    """Horizontal bars of Eq. 11 / 12 deltas, most changed on top (orange: toward the attribute, blue: away)."""
    rows = len(chart.items) + (1 if chart.omitted else 0)
    fig, body = _framed(9.0, 1.1 + 0.42 * max(rows, 2), chart.title, chart.caption, chart.untrained)
    ax = body.subplots()
    _bars(ax, chart, lambda item: _POSITIVE_COLOR if item.value >= 0 else _NEGATIVE_COLOR)
    ax.set_title(f"{chart.total} attributes, ranked by |delta|; orange: the ideal edit moves toward it, "
                 "blue: away", fontsize=9.5)
    if chart.items and all(abs(item.value) < 1e-12 for item in chart.items):
        # Not a drawing bug: with v = 0 the ideal edit is the source itself, so no attribute moves.
        ax.text(0.5, 0.5, "every delta is 0: v = 0, the source already lies on the target side of the\n"
                "hyperplane, so the ideal edit is the source itself (Eq. 8)", transform=ax.transAxes,
                ha="center", va="center", fontsize=10, color="#5a3600",
                bbox={"boxstyle": "round", "fc": "#fff1d6", "ec": "#e08a00"})
    return fig


def alpha_figure(source: RankingChart, target: RankingChart) -> Figure:
    """Alpha (Eq. 6) of every fit sample, source set and target set side by side, sorted by value."""
    rows = max(len(source.items) + (1 if source.omitted else 0), len(target.items) + (1 if target.omitted else 0))
    title = "Attribute weights alpha (Eq. 6), " + source.title.split(", ", 1)[-1]
    fig, body = _framed(13.0, 1.2 + 0.42 * max(rows, 2), title, source.caption, source.untrained)
    axes = body.subplots(1, 2)
    for ax, chart, color in ((axes[0], source, SOURCE_COLOR), (axes[1], target, TARGET_COLOR)):
        _bars(ax, chart, lambda item, c=color: "#555555" if item.text.startswith("[") else c, "{:+.3f}")
        ax.set_title(f"{chart.title.split(',')[0]} ({chart.total} samples; grey: image sample)", fontsize=10)
    return fig


