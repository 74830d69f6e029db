"""The static hyperplane figures keep every text readable: no two text boxes overlap, none leaves the figure.

The views are crowded on purpose (20 source and 14 target attributes, several edits with long,
similar file names), with real AugCLIP fits of made-up embeddings; the boxes are measured with
matplotlib's own ``get_window_extent`` after the figure is laid out as it is saved.
"""

from __future__ import annotations

import pytest

from augclip_demo.explain.figures import exact_view_figure, umap_view_figure
from tests.support.crowded_views import crowded_exact_view, crowded_umap_view
from tests.support.figure_text import outside_figure, overlapping_pairs, text_boxes


def _image_labels(view_points) -> set[str]:
    return {label for kind, label in zip(view_points.kinds, view_points.labels)
            if kind in ("source_image", "edit", "ideal")}


@pytest.mark.slow
def test_the_exact_view_with_many_attributes_has_no_overlapping_text():
    view = crowded_exact_view(n_edits=4)
    fig = exact_view_figure(view)
    boxes = text_boxes(fig)
    assert overlapping_pairs(boxes) == []
    assert outside_figure(fig, boxes) == []
    drawn = [box.text for box in boxes]
    for panel in view.panels:  # every image keeps its label in every panel (only attributes may give way)
        for label in _image_labels(panel.points):
            assert drawn.count(label) >= 1, label
    # most attribute labels still find a place
    attribute_labels = [t for t in drawn if t[:1] in "ST" and t[1:].isdigit()]
    assert len(attribute_labels) >= 0.6 * 4 * 34 + 34  # in the panels (most of 4 x 34) and the key


@pytest.mark.slow
def test_the_umap_view_with_many_attributes_and_six_fits_has_no_overlapping_text():
    view = crowded_umap_view(n_edits=6)
    fig = umap_view_figure(view)
    boxes = text_boxes(fig)
    assert overlapping_pairs(boxes) == []
    assert outside_figure(fig, boxes) == []
    drawn = {box.text for box in boxes}
    assert _image_labels(view.points) <= drawn


def test_the_measure_sees_an_overlap():
    """The check itself: two texts drawn on the same spot are reported."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(3, 2))
    ax = fig.subplots()
    ax.text(0.5, 0.5, "first label")
    ax.text(0.52, 0.51, "second label")
    assert overlapping_pairs(text_boxes(fig)) == [("first label", "second label")]
