"""The interactive hyperplane views: what a hover shows is the number computed independently here."""

from __future__ import annotations

import json

import numpy as np
import pytest

from augclip_demo.explain.interactive import exact_view_spec, umap_view_spec
from augclip_demo.metrics.augclip import attribute_weights
from tests.support.crowded_views import crowded_report, crowded_umap_view


def _hovered(spec: dict) -> dict[str, tuple[float, float, list[str]]]:
    """label -> (x, y, customdata) over every trace."""
    out = {}
    for trace in spec["data"]:
        for x, y, custom in zip(trace["x"], trace["y"], trace.get("customdata", [])):
            out[custom[0]] = (x, y, custom)
    return out


@pytest.mark.parametrize("include_images", [True, False])
def test_exact_view_hover_gives_alpha_and_signed_distance(include_images):
    from augclip_demo.explain.hyperplane import exact_view

    report = crowded_report(n_source=5, n_target=4, n_edits=3, include_images=include_images)
    arrays = report.arrays
    view = exact_view(report)
    edit = 1 if include_images else 0
    spec = exact_view_spec(view, edit)
    json.dumps(spec, allow_nan=False)  # what gr.Plot sends must be plain JSON
    shown = _hovered(spec)
    fit = arrays.augclip[edit]
    w, b = fit.w, fit.b
    # alpha (Eq. 6) from the sets as App. B builds them, computed here
    src_set = np.vstack([arrays.source_embedding, arrays.source_attr_embeddings]) if include_images \
        else arrays.source_attr_embeddings
    tgt_set = np.vstack([arrays.edit_embeddings[edit], arrays.target_attr_embeddings]) if include_images \
        else arrays.target_attr_embeddings
    alpha_src, alpha_tgt = attribute_weights(src_set, tgt_set)
    offset = 1 if include_images else 0
    for j, text in enumerate(report.attributes.source):
        x, _, custom = shown[f"S{j + 1}"]
        vector = arrays.source_attr_embeddings[j]
        assert x == pytest.approx((vector @ w + b) / np.linalg.norm(w), abs=1e-9)
        assert custom[1] == text
        assert custom[2] == f"alpha (Eq. 6) {alpha_src[offset + j]:+.3f}"
        assert custom[3] == f"signed distance g(x)/|w| {x:+.4f}"
    for j in range(len(report.attributes.target)):
        assert shown[f"T{j + 1}"][2][2] == f"alpha (Eq. 6) {alpha_tgt[offset + j]:+.3f}"
    source_alpha = shown["source"][2][2]
    assert source_alpha == (f"alpha (Eq. 6) {alpha_src[0]:+.3f}" if include_images else "not a sample of this fit")
    # the edits: full file name on hover, short distinct names in the legend, one trace each (toggles alone)
    names = [t["name"] for t in spec["data"]]
    assert {"E1 ours", "E2 sdedit", "E3 p2p"} <= set(names)
    assert shown["E2"][2][1] == "tedbench_output_image_sdedit_seed0.png"
    if include_images:  # the other edits are not samples of this fit
        assert shown["E1"][2][2] == "not a sample of this fit"
        assert "fit of E2 sdedit" in spec["layout"]["title"]["text"]
    assert spec["layout"]["title"]["text"].startswith("UNTRAINED")


def test_umap_view_hover_lists_every_fit():
    view = crowded_umap_view(n_source=4, n_target=3, n_edits=2)
    from augclip_demo.explain.hyperplane import exact_view

    report = crowded_report(n_source=4, n_target=3, n_edits=2)
    exact = exact_view(report)
    spec = umap_view_spec(view, exact)
    json.dumps(spec, allow_nan=False)
    shown = _hovered(spec)
    arrays = report.arrays
    vector = arrays.source_attr_embeddings[0]
    expected = ", ".join(f"E{i + 1} {(vector @ fit.w + fit.b) / np.linalg.norm(fit.w):+.4f}"
                         for i, fit in enumerate(arrays.augclip))
    assert shown["S1"][2][3] == f"g(x)/|w|: {expected}"
    assert shown["S1"][0] == pytest.approx(view.coords[0, 0])
    drawn = [t for t in spec["data"] if t["mode"] == "lines" and t["x"] != [None]]
    assert len(drawn) == len(view.lines)


def test_umap_view_legend_says_what_a_dashed_line_is():
    """Each edit's own fit draws a dashed line in its colour, without a legend entry of its own: one key
    entry (no points) names them; with one shared fit the solid line has its own entry and no key."""
    view = crowded_umap_view(n_source=4, n_target=3, n_edits=2)
    assert len(view.lines) == 2
    spec = umap_view_spec(view)
    dashed = [t for t in spec["data"] if t["mode"] == "lines" and t["line"]["dash"] == "dash"]
    keys = [t for t in dashed if t.get("showlegend", True)]
    assert len(keys) == 1 and keys[0]["x"] == [None] and "dashed" in keys[0]["name"]
    assert len(dashed) == len(view.lines) + 1  # every fit's line, and the key
    shared = crowded_umap_view(n_source=4, n_target=3, n_edits=2)
    shared.lines = shared.lines[:1]
    assert not [t for t in umap_view_spec(shared)["data"] if t.get("x") == [None]]
