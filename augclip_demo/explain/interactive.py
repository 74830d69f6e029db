"""Interactive hyperplane views: Plotly figure specifications (plain dicts) built from computed geometry.

The app shows these with ``gr.Plot`` (Gradio bundles plotly.js, so the page fetches nothing from
outside); hovering a point names it (attribute text or image name), gives its weight alpha (Eq. 6)
in the fit and its signed distance g(x)/|w| to the hyperplane; clicking a legend entry hides or
shows a set; dragging zooms. The specs are JSON-ready dicts (no plotly package needed on the
server) and reuse the coordinates :func:`~.hyperplane.exact_view` and :func:`~.hyperplane.umap_view`
computed, so building one costs microseconds, not a second render.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..report import edit_tag, short_edit_names
from .figures import EDIT_COLORS, IDEAL_COLOR, SOURCE_COLOR, SOURCE_IMAGE_COLOR, TARGET_COLOR, edit_color
from .hyperplane import ExactPanel, ExactView, PointSet, UmapView, point_alpha

_UNTRAINED_PREFIX = "UNTRAINED (random weights), not meaningful: "
_SETS = (  # kind, legend name, marker symbol, size, colour
    ("source_attribute", "source attributes (S)", "circle", 9, SOURCE_COLOR),
    ("target_attribute", "target attributes (T)", "square", 9, TARGET_COLOR),
    ("source_image", "source image", "star", 18, SOURCE_IMAGE_COLOR),
    ("ideal", "ideal edit E(I_src)+v", "x", 14, IDEAL_COLOR),
)
_RANK = {kind: 100 * (i + 1) for i, (kind, *_rest) in enumerate(_SETS)}  # legend order: sets, then edits
_HOVER = "<b>%{customdata[0]}</b>  %{customdata[1]}<br>%{customdata[2]}<br>%{customdata[3]}<extra></extra>"


def _number(value: float, digits: int = 4) -> str:
    return "n/a" if value is None or not math.isfinite(value) else f"{value:+.{digits}f}"


def _edit_names(points: PointSet) -> dict[int, str]:
    """Edit index -> the short, distinct display name (the full name is in the hover text)."""
    rows = [i for i, k in enumerate(points.kinds) if k == "edit"]
    names = short_edit_names([points.texts[i] for i in rows])
    return {points.edits[i] or 0: name for i, name in zip(rows, names)}


def _traces(points: PointSet, xy: np.ndarray, alpha_text: list[str], distance_text: list[str],
            faded: set[int] | None = None) -> list[dict[str, Any]]:
    """One trace per set (S, T, source image, ideal points) and one per edit, so each toggles alone;
    the source image and the ideal points come last, so they are drawn over edits that land on them."""
    traces = []
    custom = [[label, text, a, d] for label, text, a, d in zip(points.labels, points.texts, alpha_text, distance_text)]

    def add_sets(sets: Sequence[tuple[str, str, str, int, str]]) -> None:
        for kind, name, symbol, size, color in sets:
            rows = [i for i, k in enumerate(points.kinds) if k == kind]
            if rows:
                traces.append({
                    "type": "scatter", "mode": "markers", "name": name, "legendgroup": kind,
                    "legendrank": _RANK[kind], "x": [float(xy[i, 0]) for i in rows],
                    "y": [float(xy[i, 1]) for i in rows], "customdata": [custom[i] for i in rows],
                    "hovertemplate": _HOVER, "marker": {"symbol": symbol, "size": size, "color": color,
                                                       "line": {"width": 0.6, "color": "white"}},
                })

    add_sets(_SETS[:2])
    names = _edit_names(points)
    for i, kind in enumerate(points.kinds):
        if kind != "edit":
            continue
        edit = points.edits[i] or 0
        dim = faded is not None and edit in faded
        traces.append({
            "type": "scatter", "mode": "markers", "name": f"{points.labels[i]} {names[edit]}",
            "legendgroup": f"edit{edit}", "legendrank": 1000 + edit, "x": [float(xy[i, 0])], "y": [float(xy[i, 1])],
            "customdata": [custom[i]], "hovertemplate": _HOVER,
            "marker": {"symbol": "diamond", "size": 14, "color": edit_color(edit), "opacity": 0.4 if dim else 1.0,
                       "line": {"width": 1, "color": "black"}},
        })
    add_sets(_SETS[2:])  # drawn last: on top of the edits
    return traces


def _layout(title: str, x_title: str, y_title: str, untrained: bool) -> dict[str, Any]:
    return {
        "title": {"text": (_UNTRAINED_PREFIX if untrained else "") + title, "font": {"size": 15},
                  "x": 0.01, "xanchor": "left"},
        "xaxis": {"title": {"text": x_title}, "zeroline": False, "automargin": True},
        "yaxis": {"title": {"text": y_title}, "zeroline": False, "automargin": True},
        "legend": {"title": {"text": "click to hide / show"}, "itemclick": "toggle", "itemdoubleclick": "toggleothers"},
        "hovermode": "closest", "dragmode": "zoom", "height": 540, "template": "plotly_white",
        "margin": {"l": 70, "r": 20, "t": 60, "b": 60}, "font": {"size": 12},
    }


def exact_panel_spec(view: ExactView, panel: ExactPanel) -> dict[str, Any]:
    """One panel of the exact view: x = g(x)/|w| (the hyperplane is x = 0), y = first PC orthogonal to w."""
    points = panel.points
    alpha = panel.alpha if panel.alpha is not None else np.full(len(points), np.nan)
    alpha_text = [f"alpha (Eq. 6) {_number(a, 3)}" if math.isfinite(a) else "not a sample of this fit"
                  for a in alpha]
    distance_text = [f"signed distance g(x)/|w| {_number(x)}" for x in panel.x]
    xy = np.column_stack([panel.x, panel.y])
    faded = None if view.shared_fit else {e for e in points.edits if e is not None and e not in panel.edits}
    names = _edit_names(points)
    if view.shared_fit:
        scores = ", ".join(f"{edit_tag(i)} {s:.3f}" for i, s in panel.scores.items())
        title = f"Exact view, shared fit: AugCLIP {scores}"
    else:
        edit = panel.edits[0]
        title = f"Exact view, fit of {edit_tag(edit)} {names.get(edit, '')}: AugCLIP {panel.scores[edit]:.3f}"
    layout = _layout(title, "g(x) / |w|: signed distance to the hyperplane (> 0: target side)",
                     f"1st PC orthogonal to w ({panel.y_explained:.0%} of that variance)", view.untrained)
    layout["shapes"] = [
        {"type": "rect", "xref": "x", "yref": "paper", "x0": -1e3, "x1": 0, "y0": 0, "y1": 1, "layer": "below",
         "fillcolor": SOURCE_COLOR, "opacity": 0.07, "line": {"width": 0}},
        {"type": "rect", "xref": "x", "yref": "paper", "x0": 0, "x1": 1e3, "y0": 0, "y1": 1, "layer": "below",
         "fillcolor": TARGET_COLOR, "opacity": 0.07, "line": {"width": 0}},
        {"type": "line", "xref": "x", "yref": "paper", "x0": 0, "x1": 0, "y0": 0, "y1": 1,
         "line": {"color": "black", "width": 2}},
    ]
    span = max(1e-6, float(np.ptp(np.append(panel.x, 0.0))))
    layout["xaxis"]["range"] = [min(float(panel.x.min()), 0.0) - 0.08 * span, max(float(panel.x.max()), 0.0) + 0.08 * span]
    span_y = max(1e-6, float(np.ptp(panel.y)))
    layout["yaxis"]["range"] = [float(panel.y.min()) - 0.08 * span_y, float(panel.y.max()) + 0.08 * span_y]
    return {"data": _traces(points, xy, alpha_text, distance_text, faded), "layout": layout,
            "config": {"displaylogo": False, "scrollZoom": True}}


def exact_view_spec(view: ExactView, edit: int | None = None) -> dict[str, Any]:
    """The exact view's panel for ``edit`` (0-based; its own fit), or the first / shared one."""
    panel = view.panels[0]
    if edit is not None:
        panel = next((p for p in view.panels if edit in p.edits), panel)
    return exact_panel_spec(view, panel)


#: The legend's entry for the dashed lines of :func:`umap_view_spec` (no points: a key, not data).
_DASHED_LINE_KEY: dict[str, Any] = {
    "type": "scatter", "mode": "lines", "x": [None], "y": [None], "hoverinfo": "skip", "legendrank": 2000,
    "name": "dashed: an edit's 2-D line (its fit), in its colour", "line": {"color": "grey", "dash": "dash", "width": 1.5}}


def umap_view_spec(view: UmapView, exact: ExactView | None = None) -> dict[str, Any]:
    """The UMAP view with every fit's 2-D line; hover gives alpha and g(x)/|w| in each fit (from ``exact``)."""
    points = view.points
    per_fit_alpha, per_fit_distance = _per_fit_numbers(points, exact)
    traces = _traces(points, view.coords, per_fit_alpha, per_fit_distance)
    xy = view.coords
    pad = 0.08 * np.maximum(np.ptp(xy, axis=0), 1e-6)
    lo, hi = xy.min(axis=0) - pad, xy.max(axis=0) + pad
    for line in view.lines:
        segment = _segment(line.w, line.b, (lo[0], hi[0]), (lo[1], hi[1]))
        if segment is None:
            continue
        shared = len(view.lines) == 1
        label = "2-D line" if shared else f"2-D line, fit of {edit_tag(line.edits[0])}"
        # One line per fit: each joins its edit's legend entry (a click on E3 hides E3 and its line), so
        # eight edits do not add eight "2-D line" entries; its name and accuracy show on hover.
        grouping = ({"legendrank": 2000} if shared else
                    {"legendgroup": f"edit{line.edits[0]}", "showlegend": False})
        traces.append({"type": "scatter", "mode": "lines", "name": f"{label} (acc. {line.accuracy:.0%})",
                       "x": [segment[0][0], segment[1][0]], "y": [segment[0][1], segment[1][1]], **grouping,
                       "hoverinfo": "name", "line": {"color": "black" if len(view.lines) == 1
                                                     else EDIT_COLORS[line.edits[0] % len(EDIT_COLORS)],
                                                     "dash": "solid" if len(view.lines) == 1 else "dash",
                                                     "width": 1.5}})
    if len(view.lines) > 1:  # the per-fit lines have no entry of their own: one entry says what a dashed line is
        traces.append(dict(_DASHED_LINE_KEY))
    layout = _layout("UMAP view (illustrative: neighbourhoods, not distances)", "UMAP 1", "UMAP 2", view.untrained)
    layout["xaxis"]["range"] = [float(lo[0]), float(hi[0])]
    layout["yaxis"]["range"] = [float(lo[1]), float(hi[1])]
    return {"data": traces, "layout": layout, "config": {"displaylogo": False, "scrollZoom": True}}


def _per_fit_numbers(points: PointSet, exact: ExactView | None) -> tuple[list[str], list[str]]:
    """Per point: alpha and g(x)/|w| in every fit ("E1 +0.12, E2 +0.10"), from the exact view's panels.

    Non-ideal points are in the same order in the UMAP view and in every panel (collect_points);
    an ideal point belongs to one fit only.
    """
    n = len(points)
    if exact is None:
        return ["alpha: see the exact view"] * n, ["g(x)/|w|: see the exact view"] * n
    alphas: list[list[str]] = [[] for _ in range(n)]
    distances: list[list[str]] = [[] for _ in range(n)]
    shared = exact.shared_fit
    for panel in exact.panels:
        tag = "" if shared else f"{edit_tag(panel.edits[0])} "
        alpha = panel.alpha if panel.alpha is not None else np.full(len(panel.points), np.nan)
        base = [i for i, k in enumerate(panel.points.kinds) if k != "ideal"]
        for row, j in enumerate(base):
            if math.isfinite(alpha[j]):
                alphas[row].append(f"{tag}{alpha[j]:+.3f}")
            distances[row].append(f"{tag}{panel.x[j]:+.4f}")
        own = [j for j, k in enumerate(panel.points.kinds) if k == "ideal"]
        ideal_rows = [i for i, (k, e) in enumerate(zip(points.kinds, points.edits))
                      if k == "ideal" and e == panel.edits[0]]
        for j, i in zip(own, ideal_rows):
            distances[i].append(f"{tag}{panel.x[j]:+.4f}")
    alpha_text = ["alpha (Eq. 6): " + (", ".join(a) if a else "not a fit sample") for a in alphas]
    distance_text = ["g(x)/|w|: " + ", ".join(d) for d in distances]
    return alpha_text, distance_text


def _segment(w: np.ndarray, b: float, xlim: Sequence[float], ylim: Sequence[float]) -> list[tuple[float, float]] | None:
    (x0, x1), (y0, y1) = xlim, ylim
    found = []
    if abs(w[1]) > 1e-12:
        found += [(float(x), float(-(w[0] * x + b) / w[1])) for x in (x0, x1) if y0 <= -(w[0] * x + b) / w[1] <= y1]
    if abs(w[0]) > 1e-12:
        found += [(float(-(w[1] * y + b) / w[0]), float(y)) for y in (y0, y1) if x0 <= -(w[1] * y + b) / w[0] <= x1]
    if len(found) < 2:
        return None
    found.sort()
    return [found[0], found[-1]]


__all__ = ["exact_panel_spec", "exact_view_spec", "point_alpha", "umap_view_spec"]
