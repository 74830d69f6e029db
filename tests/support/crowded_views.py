"""Hyperplane views crowded with attributes and edits, from real AugCLIP fits of made-up embeddings (no model)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from augclip_demo.attributes.base import Attributes
from augclip_demo.explain.hyperplane import DecisionLine2D, UmapView, collect_points, exact_view, fit_groups
from augclip_demo.metrics.augclip import augclip_from_unit

SOURCE_WORDS = ["orange petals", "round flower head", "dark green background", "green stem", "soft daylight",
                "a single dahlia", "pointed petals", "yellow centre", "blurred leaves", "close-up shot",
                "dew drops", "warm colours", "centred subject", "shallow depth of field", "matte texture",
                "symmetric bloom", "layered petals", "natural light", "outdoor garden", "sharp focus"]
TARGET_WORDS = ["pink petals", "pink dahlia", "pastel pink bloom", "magenta tips", "rose tinted centre",
                "pink flower head", "light pink edges", "soft pink glow", "pink and white gradient",
                "cool pink tones", "bright pink colour", "pink blossom", "pink hue", "pinkish shade"]
EDIT_NAMES = [f"tedbench_output_image_{tag}_seed0.png" for tag in ("ours", "sdedit", "p2p", "null_text",
                                                                   "instructpix2pix", "masactrl")]


def _unit(rows: np.ndarray) -> np.ndarray:
    return rows / np.linalg.norm(rows, axis=-1, keepdims=True)


def crowded_report(n_source: int = 20, n_target: int = 14, n_edits: int = 6, dim: int = 48, seed: int = 0,
                   include_images: bool = True) -> SimpleNamespace:
    """A stand-in for a Report with ``arrays``: what the hyperplane views read, nothing else."""
    rng = np.random.default_rng(seed)
    base = rng.normal(size=dim)
    shift = rng.normal(size=dim)
    src_attr = _unit(base + 0.5 * rng.normal(size=(n_source, dim)))
    tgt_attr = _unit(base + shift + 0.5 * rng.normal(size=(n_target, dim)))
    source = _unit(base + 0.3 * rng.normal(size=dim))
    edits = _unit(base + rng.uniform(0.2, 1.0, size=(n_edits, 1)) * shift + 0.3 * rng.normal(size=(n_edits, dim)))
    fits = [augclip_from_unit(source, edit, src_attr, tgt_attr, weighting=True, include_images=include_images,
                              classifier="svm", C=1.0) for edit in edits]
    arrays = SimpleNamespace(
        augclip=fits, source=SimpleNamespace(name="source: tedbench_input_image.png"),
        edits=[SimpleNamespace(name=name) for name in EDIT_NAMES[:n_edits]], source_embedding=source,
        edit_embeddings=edits, source_attr_embeddings=src_attr, target_attr_embeddings=tgt_attr)
    attributes = Attributes(SOURCE_WORDS[:n_source], TARGET_WORDS[:n_target])
    return SimpleNamespace(arrays=arrays, attributes=attributes, untrained=True)


def crowded_exact_view(**kwargs):
    return exact_view(crowded_report(**kwargs))


def crowded_umap_view(seed: int = 0, **kwargs) -> UmapView:
    """A UMAP view whose coordinates are a made-up 2-D layout (clusters, as UMAP makes them): no numba needed."""
    report = crowded_report(seed=seed, **kwargs)
    groups = fit_groups(report.arrays.augclip)
    points = collect_points(report, groups)
    rng = np.random.default_rng(seed + 1)
    centres = {"source_attribute": (-3.0, 0.0), "target_attribute": (3.0, 0.5), "source_image": (-1.0, 0.2),
               "edit": (1.0, 0.0), "ideal": (0.2, 0.1)}
    coords = np.array([np.add(centres[k], rng.normal(scale=0.6, size=2)) for k in points.kinds])
    lines = [DecisionLine2D(edits=list(g.edits), w=np.array([1.0, 0.1 * i]), b=-0.1 * i, accuracy=0.9)
             for i, g in enumerate(groups)]
    return UmapView(points=points, coords=coords, lines=lines, n_neighbors=15, min_dist=0.1, seed=0,
                    classifier="svm", caption="UMAP view (made-up layout for a layout test)", seconds=0.0,
                    untrained=True)
