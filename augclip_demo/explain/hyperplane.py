"""Hyperplane views: where the source, the edits and the ideal edit sit relative to AugCLIP's hyperplane.

Two views of the same points (source attributes S, target attributes T, the source image, every
edited image and the ideal edit E(I_src) + v):

* **exact** (:func:`exact_view`): a linear projection that needs no manifold learning.
  x = g(x) / |w|, the signed distance to the d-dimensional hyperplane (> 0 on the target side);
  y = the first principal component of the points after the w direction is removed. The hyperplane
  is the vertical line x = 0; v is parallel to w, so the ideal point sits on the line at the source
  image's height and the arrow source -> ideal is horizontal with length |v|.
* **UMAP** (:func:`umap_view`): umap-learn's 2-D embedding of the same points (cosine metric, fixed
  random_state), with the decision line of a 2-D linear classifier refitted on the *projected*
  fit samples (same classifier, C and sample weights as the AugCLIP fit). Illustrative only: UMAP
  is non-linear, so distances and the line are not the d-dimensional ones.

Several edits: with ``include_images=True`` (App. B, the default) every edit has its own fit (the
edit is a target sample), hence its own hyperplane and ideal point. The exact view then has one
panel per edit, each drawn in that edit's own hyperplane with all edits placed in it (the panel's
edit highlighted); edits whose fits are identical (``include_images=False``) share one panel. The
UMAP view is one plot with all points: every distinct fit contributes its ideal point and its 2-D
line, drawn in the colour of its edit.
"""

from __future__ import annotations

import inspect
import threading
import time
import warnings
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import InputError
from ..metrics.augclip import AugCLIPResult, fit_hyperplane

if TYPE_CHECKING:  # pragma: no cover

    from ..report import Report

KINDS = ("source_attribute", "target_attribute", "source_image", "edit", "ideal")

_EXACT_CAPTION = (
    "Exact view (no approximation): x = g(x)/|w|, the signed distance to the AugCLIP hyperplane in the full "
    "CLIP space (> 0: target side); y = first principal component of these points after removing the w "
    "direction. The hyperplane is the line x = 0."
)
# What the ideal edit E(I_src) + v is, by the sign of c and the projection variant (Eq. 8 / App. B).
_IDEAL_ON_PLANE = (
    " The source image starts on the source side (c > 0), so the ideal edit E(I_src)+v (not renormalised) lies "
    "on the line, level with the source image, since v is parallel to w."
)
_IDEAL_IS_SOURCE = (
    " The source image already lies on the target side (c <= 0): no move is needed to reach it, so v = 0 and "
    "the ideal edit is the source image itself (Eq. 8)."
)
_IDEAL_PLAIN_BACK = (
    " The source image already lies on the target side (c < 0); the unclamped projection of App. B (v = c w) "
    "moves it back onto the line, away from the target side."
)
_EXACT_PER_EDIT = (
    " Each edit has its own fit (the edited image is one of the target samples, App. B), so each panel uses "
    "that edit's hyperplane and ideal point; the other edits are placed in it for comparison (faded)."
)
_EXACT_SHARED = " All edits share one fit (attributes only), so one hyperplane and one ideal point."
_EXACT_ONE_EDIT = " One edit, one fit: the source and the edited image are samples of it besides the attributes (App. B)."


def _ideal_sentence(res: AugCLIPResult) -> str:
    """Where the ideal edit of this fit is, in words that match its c and projection variant."""
    if res.c > 0:
        return _IDEAL_ON_PLANE
    if getattr(res, "projection", "clamped") == "plain" and res.c < 0:
        return _IDEAL_PLAIN_BACK
    return _IDEAL_IS_SOURCE


def exact_caption(shown: list[FitGroup], n_fits: int, include_images: bool) -> str:
    """The exact view's caption for the panels shown, matching the options of their fits."""
    sentences = {_ideal_sentence(group.result) for group in shown}
    if len(sentences) == 1:
        ideal = sentences.pop()
    else:  # edits differ: say it per edit
        ideal = "".join(f" Edit {', '.join(str(i + 1) for i in group.edits)}:{_ideal_sentence(group.result)}"
                        for group in shown)
    if n_fits > 1:
        fits = _EXACT_PER_EDIT
    elif include_images:
        fits = _EXACT_ONE_EDIT
    else:
        fits = _EXACT_SHARED
    return _EXACT_CAPTION + ideal + fits
_UMAP_CAPTION = (
    "UMAP view (illustrative): a non-linear 2-D embedding of the same points (cosine metric, random_state={seed}, "
    "n_neighbors={k}). Lines: a 2-D {classifier} refitted on the projected fit samples with the AugCLIP sample "
    "weights{lines}; they only approximate the real hyperplane. Use the exact view for distances."
)


@dataclass
class PointSet:
    """The points both views place: ``vectors`` are unit rows except the ideal points (E(I_src) + v)."""

    kinds: list[str]
    labels: list[str]  # short ids: S1, T1, source, E1, ideal 1
    texts: list[str]  # the attribute text or the image name
    edits: list[int | None]  # the edit an edit / ideal point belongs to (ideal: first edit of its fit)
    vectors: np.ndarray

    def __len__(self) -> int:
        return len(self.kinds)

    def indices(self, kind: str) -> np.ndarray:
        return np.array([i for i, k in enumerate(self.kinds) if k == kind], dtype=int)

    def subset(self, keep: list[int]) -> PointSet:
        return PointSet([self.kinds[i] for i in keep], [self.labels[i] for i in keep], [self.texts[i] for i in keep],
                        [self.edits[i] for i in keep], self.vectors[keep])

    def to_dict(self) -> list[dict[str, Any]]:
        return [{"kind": k, "label": label, "text": t, "edit": e}
                for k, label, t, e in zip(self.kinds, self.labels, self.texts, self.edits)]


@dataclass
class FitGroup:
    """Edits whose AugCLIP fits are identical (same w and b), with that fit."""

    edits: list[int]
    result: AugCLIPResult

    @property
    def label(self) -> str:
        return "edit " + ", ".join(str(i + 1) for i in self.edits)


def fit_groups(results: list[AugCLIPResult]) -> list[FitGroup]:
    groups: list[FitGroup] = []
    for i, res in enumerate(results):
        for group in groups:
            ref = group.result
            if ref.w.shape == res.w.shape and np.array_equal(ref.w, res.w) and ref.b == res.b:
                group.edits.append(i)
                break
        else:
            groups.append(FitGroup([i], res))
    return groups


def collect_points(report: Report, groups: list[FitGroup] | None = None) -> PointSet:
    """S, T, the source image, every edit and one ideal point per distinct fit, from ``report.arrays``."""
    arrays = _arrays(report)
    groups = groups if groups is not None else fit_groups(arrays.augclip)
    kinds: list[str] = []
    labels: list[str] = []
    texts: list[str] = []
    edits: list[int | None] = []
    rows: list[np.ndarray] = []

    def add(kind: str, label: str, text: str, edit: int | None, vector: np.ndarray, unit: bool = True) -> None:
        vec = np.asarray(vector, dtype=np.float64)
        kinds.append(kind)
        labels.append(label)
        texts.append(text)
        edits.append(edit)
        rows.append(vec / np.linalg.norm(vec) if unit else vec)

    for i, (text, vec) in enumerate(zip(report.attributes.source, arrays.source_attr_embeddings)):
        add("source_attribute", f"S{i + 1}", text, None, vec)
    for i, (text, vec) in enumerate(zip(report.attributes.target, arrays.target_attr_embeddings)):
        add("target_attribute", f"T{i + 1}", text, None, vec)
    add("source_image", "source", arrays.source.name, None, arrays.source_embedding)
    for i, (item, vec) in enumerate(zip(arrays.edits, arrays.edit_embeddings)):
        add("edit", f"E{i + 1}", item.name, i, vec)
    for group in groups:
        label = "ideal" if len(groups) == 1 else "ideal " + ",".join(str(i + 1) for i in group.edits)
        add("ideal", label, "E(I_src) + v (" + group.label + ")", group.edits[0], group.result.ideal, unit=False)
    return PointSet(kinds, labels, texts, edits, np.vstack(rows))


# ---------------------------------------------------------------------------------------- exact view
@dataclass
class ExactPanel:
    """One hyperplane (one fit) with every point's exact coordinates."""

    edits: list[int]  # the edits whose fit this panel shows
    points: PointSet
    x: np.ndarray  # g(x) / |w|
    y: np.ndarray  # first principal component after removing the w direction
    y_explained: float  # share of the off-w variance along y
    c: float
    w_norm: float
    b: float
    v_norm: float
    scores: dict[int, float]  # AugCLIP score of each edit in ``edits``
    alpha: np.ndarray | None = None  # Eq. 6 weight of each point in this fit (NaN: not a fit sample)

    def coordinates(self) -> list[dict[str, Any]]:
        alpha = self.alpha if self.alpha is not None else np.full(len(self.x), np.nan)
        return [dict(p, x=float(x), y=float(y), alpha=float(a))
                for p, x, y, a in zip(self.points.to_dict(), self.x, self.y, alpha)]

    def to_dict(self) -> dict[str, Any]:
        return {"edits": [i + 1 for i in self.edits], "c": self.c, "w_norm": self.w_norm, "b": self.b,
                "v_norm": self.v_norm, "y_explained": self.y_explained,
                "augclip": {str(i + 1): s for i, s in self.scores.items()}, "points": self.coordinates()}


@dataclass
class ExactView:
    panels: list[ExactPanel]
    caption: str
    untrained: bool = False

    @property
    def shared_fit(self) -> bool:
        return len(self.panels) == 1

    def to_dict(self) -> dict[str, Any]:
        return {"caption": self.caption, "shared_fit": self.shared_fit, "panels": [p.to_dict() for p in self.panels]}


def exact_coordinates(vectors: np.ndarray, w: np.ndarray, b: float) -> tuple[np.ndarray, np.ndarray, float]:
    """``(x, y, y_explained)`` for ``vectors`` (as given: unit embeddings, ideal points unnormalised).

    x = (w.p + b) / |w|. y = projection on the first principal component of the points with their
    w component removed (centred), its sign fixed so the largest loading is positive.
    """
    points = np.asarray(vectors, dtype=np.float64)
    w = np.asarray(w, dtype=np.float64)
    w_norm = float(np.linalg.norm(w))
    if not np.isfinite(w_norm) or w_norm == 0:
        raise InputError("the hyperplane normal w is zero; there is no decision axis to draw")
    unit_w = w / w_norm
    x = (points @ w + b) / w_norm
    residual = points - np.outer(points @ unit_w, unit_w)
    centered = residual - residual.mean(axis=0)
    if len(points) < 2 or not np.any(centered):
        return x, np.zeros(len(points)), 0.0
    _, singular, vt = np.linalg.svd(centered, full_matrices=False)
    axis = vt[0]
    axis = axis if axis[np.argmax(np.abs(axis))] >= 0 else -axis
    total = float(np.sum(singular ** 2))
    explained = float(singular[0] ** 2 / total) if total > 0 else 0.0
    return x, centered @ axis, explained


def exact_view(report: Report, edits: list[int] | None = None) -> ExactView:
    """The exact view of ``report``: one panel per distinct fit (or only the fits of ``edits``, 0-based)."""
    arrays = _arrays(report)
    all_groups = fit_groups(arrays.augclip)
    groups = all_groups
    if edits is not None:
        wanted = set(_check_edits(edits, len(arrays.edits)))
        groups = [g for g in groups if wanted & set(g.edits)]
    points = collect_points(report, groups=all_groups)
    ideal_rows = points.indices("ideal")
    panels = []
    for group in groups:
        own_ideal = [i for i in ideal_rows if points.edits[i] == group.edits[0]]
        keep = [i for i in range(len(points)) if points.kinds[i] != "ideal"] + own_ideal
        sub = points.subset(keep)
        if len(own_ideal) == 1:
            sub.labels[-1] = "ideal"
        res = group.result
        x, y, explained = exact_coordinates(sub.vectors, res.w, res.b)
        panels.append(ExactPanel(
            edits=list(group.edits), points=sub, x=x, y=y, y_explained=explained, c=res.c, w_norm=res.w_norm,
            b=res.b, v_norm=float(np.linalg.norm(res.v)),
            scores={i: float(arrays.augclip[i].score) for i in group.edits},
            alpha=point_alpha(sub, group),
        ))
    caption = exact_caption(groups, len(all_groups), bool(all_groups[0].result.include_images))
    return ExactView(panels=panels, caption=caption, untrained=bool(report.untrained))


def point_alpha(points: PointSet, group: FitGroup) -> np.ndarray:
    """The alpha (Eq. 6) each point has in ``group``'s fit, NaN for points that are not fit samples.

    The fit's samples are the source set ([source image], S...) then the target set ([edit], T...),
    the images only with ``include_images`` (App. B).
    """
    res = group.result
    images = 1 if res.include_images else 0
    alpha = np.full(len(points), np.nan)
    counts = {"source_attribute": 0, "target_attribute": 0}
    for i, kind in enumerate(points.kinds):
        if kind == "source_attribute":
            alpha[i] = res.alpha[images + counts[kind]]
            counts[kind] += 1
        elif kind == "target_attribute":
            alpha[i] = res.alpha[res.n_source + images + counts[kind]]
            counts[kind] += 1
        elif images and kind == "source_image":
            alpha[i] = res.alpha[0]
        elif images and kind == "edit" and points.edits[i] in group.edits:
            alpha[i] = res.alpha[res.n_source]
    return alpha


# ---------------------------------------------------------------------------------------- UMAP view
@dataclass
class DecisionLine2D:
    """A linear classifier refitted in the 2-D UMAP plane: w.p + b = 0."""

    edits: list[int]
    w: np.ndarray
    b: float
    accuracy: float  # on the projected fit samples

    def to_dict(self) -> dict[str, Any]:
        return {"edits": [i + 1 for i in self.edits], "w": self.w.tolist(), "b": self.b, "accuracy": self.accuracy}


@dataclass
class UmapView:
    points: PointSet
    coords: np.ndarray  # (n, 2)
    lines: list[DecisionLine2D]
    n_neighbors: int
    min_dist: float
    seed: int
    classifier: str
    caption: str
    seconds: float
    untrained: bool = False
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "caption": self.caption, "n_neighbors": self.n_neighbors, "min_dist": self.min_dist, "seed": self.seed,
            "metric": "cosine", "seconds": self.seconds, "lines": [line.to_dict() for line in self.lines],
            "points": [dict(p, x=float(c[0]), y=float(c[1])) for p, c in zip(self.points.to_dict(), self.coords)],
            "notes": list(self.notes),
        }


_UMAP_LOCK = threading.Lock()


def umap_coordinates(vectors: np.ndarray, *, n_neighbors: int | None = None, min_dist: float | None = None,
                     seed: int = 0) -> np.ndarray:
    """UMAP of ``vectors`` (rows normalised, cosine metric) to 2-D, deterministic for a fixed ``seed``.

    ``n_neighbors`` (default: :func:`umap_view`'s) is capped at n - 1 so small sets work (UMAP needs
    n_neighbors < n); at least 4 points are needed for a 2-D embedding.
    """
    n_neighbors = UMAP_DEFAULTS["n_neighbors"] if n_neighbors is None else n_neighbors
    min_dist = UMAP_DEFAULTS["min_dist"] if min_dist is None else min_dist
    points = np.asarray(vectors, dtype=np.float64)
    if points.ndim != 2 or len(points) < 4:
        raise InputError(f"UMAP needs at least 4 points, got {len(points)}")
    norms = np.linalg.norm(points, axis=1, keepdims=True)
    if not np.all(np.isfinite(points)) or np.any(norms == 0):
        raise InputError("UMAP input contains a zero or non-finite vector")
    data = (points / norms).astype(np.float32)
    k = int(max(2, min(int(n_neighbors), len(points) - 1)))
    import umap

    # n_jobs=1: a fixed random_state makes umap single-threaded anyway (and warn otherwise).
    reducer = umap.UMAP(n_neighbors=k, n_components=2, min_dist=min_dist, metric="cosine", random_state=seed,
                        n_jobs=1, init="spectral")
    with warnings.catch_warnings():
        # umap warns about tiny graphs (spectral fallback) and about its own defaults; the caption says what we did
        warnings.filterwarnings("ignore", module=r"umap(\.|$)")
        warnings.filterwarnings("ignore", category=UserWarning, message=r".*(n_jobs|spectral|graph is not fully).*")
        with _UMAP_LOCK:
            coords = reducer.fit_transform(data)
    return np.asarray(coords, dtype=np.float64)


def warm_up_umap(n_points: int = 8, dim: int = 16) -> float:
    """Import umap-learn and run one tiny fit so numba compiles its kernels now; returns the seconds taken.

    The first UMAP fit in a process compiles numba kernels (tens of seconds on a small CPU; the
    parallel ones are not cached on disk). The app calls this in a background thread at start-up;
    later fits of a few dozen points take milliseconds.
    """
    start = time.perf_counter()
    rng = np.random.default_rng(0)
    umap_coordinates(rng.normal(size=(n_points, dim)), n_neighbors=5)
    return time.perf_counter() - start




#: The 2-D line is illustrative: libsvm at the metric's 1e-12 tolerance can cycle for tens of seconds on
#: overlapping 2-D points (measured: 38 s per fit), so the view fits at this tolerance and iteration cap.
_LINE_2D_TOL = 1e-6
_LINE_2D_MAX_ITER = 100_000


def fit_line_2d(coords: np.ndarray, labels: np.ndarray, sample_weight: np.ndarray, *, classifier: str | None = None,
                C: float | None = None) -> tuple[np.ndarray, float, float]:
    """The fit's decision line in the 2-D view, as ``(w, b, accuracy)`` in the view's coordinates
    (``classifier`` and ``C`` default to AugCLIP's).

    The points are centred and divided by their RMS radius before the fit (one scale for both axes,
    so angles and the line's direction are those of the rescaled picture), fitted with
    :data:`_LINE_2D_TOL` / :data:`_LINE_2D_MAX_ITER`, and the line is mapped back:
    w.x' + b with x' = (x - m) / s is (w / s).x + (b - w.m / s).
    """
    points = np.asarray(coords, dtype=np.float64)
    centre = points.mean(axis=0)
    scale = float(np.sqrt(np.mean(np.sum((points - centre) ** 2, axis=1))))
    scale = scale if np.isfinite(scale) and scale > 1e-12 else 1.0
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r".*(max_iter|terminated early).*")
        w, b, _ = fit_hyperplane((points - centre) / scale, labels, sample_weight, classifier=classifier, C=C,
                                 tol=_LINE_2D_TOL, max_iter=_LINE_2D_MAX_ITER)
    w_view = w / scale
    b_view = float(b - float(np.dot(w, centre)) / scale)
    accuracy = float(np.mean(np.sign(points @ w_view + b_view) == labels))
    return w_view, b_view, accuracy


def umap_view(report: Report, *, n_neighbors: int = 15, min_dist: float = 0.1, seed: int = 0) -> UmapView:
    """UMAP of S, T, the source, every edit and each fit's ideal point, with each fit's 2-D decision line."""
    arrays = _arrays(report)
    groups = fit_groups(arrays.augclip)
    points = collect_points(report, groups)
    start = time.perf_counter()
    coords = umap_coordinates(points.vectors, n_neighbors=n_neighbors, min_dist=min_dist, seed=seed)
    seconds = time.perf_counter() - start
    lines: list[DecisionLine2D] = []
    notes: list[str] = []
    for group in groups:
        rows, labels = _fit_sample_rows(points, group)
        res = group.result
        try:
            w2, b2, accuracy = fit_line_2d(coords[rows], labels, res.sample_weight, classifier=res.classifier, C=res.C)
        except ValueError as exc:
            notes.append(f"no 2-D line for {group.label}: {exc}")
            continue
        if not np.all(np.isfinite(w2)) or np.linalg.norm(w2) == 0:
            notes.append(f"no 2-D line for {group.label}: the projected samples give no direction")
            continue
        lines.append(DecisionLine2D(edits=list(group.edits), w=w2, b=float(b2), accuracy=accuracy))
    k = int(max(2, min(int(n_neighbors), len(points) - 1)))
    classifier = {"svm": "linear SVM", "logistic": "logistic regression", "lda": "LDA (unweighted)"}.get(
        groups[0].result.classifier, groups[0].result.classifier)
    per_fit = " (one per fit, in the colour of its edit)" if len(groups) > 1 else ""
    caption = _UMAP_CAPTION.format(seed=seed, k=k, classifier=classifier, lines=per_fit)
    return UmapView(points=points, coords=coords, lines=lines, n_neighbors=k, min_dist=min_dist, seed=seed,
                    classifier=groups[0].result.classifier, caption=caption, seconds=seconds,
                    untrained=bool(report.untrained), notes=notes)


#: The UMAP view's defaults, read from :func:`umap_view`'s signature (their one place): the explanation
#: options and the raw coordinates read them here.
UMAP_DEFAULTS: dict[str, Any] = {name: parameter.default
                                 for name, parameter in inspect.signature(umap_view).parameters.items()
                                 if parameter.default is not inspect.Parameter.empty}


def _fit_sample_rows(points: PointSet, group: FitGroup) -> tuple[list[int], np.ndarray]:
    """Rows of the fit samples in AugCLIP's fit order: source set ([source image], S...), target set."""
    res = group.result
    src_attr = list(points.indices("source_attribute"))
    tgt_attr = list(points.indices("target_attribute"))
    if res.include_images:
        source_row = int(points.indices("source_image")[0])
        edit_row = next(i for i in points.indices("edit") if points.edits[i] == group.edits[0])
        source_set, target_set = [source_row] + src_attr, [int(edit_row)] + tgt_attr
    else:
        source_set, target_set = src_attr, tgt_attr
    labels = np.concatenate([-np.ones(len(source_set), dtype=int), np.ones(len(target_set), dtype=int)])
    return source_set + target_set, labels


# ---------------------------------------------------------------------------------------- helpers
def _arrays(report: Report) -> Any:
    arrays = getattr(report, "arrays", None)
    if arrays is None or not getattr(arrays, "augclip", None):
        raise InputError("this report has no in-memory embeddings (loaded from JSON?); the hyperplane views need "
                         "the report returned by Evaluator.evaluate")
    return arrays


def _check_edits(edits: list[int], count: int) -> list[int]:
    for i in edits:
        if not isinstance(i, (int, np.integer)) or not 0 <= int(i) < count:
            raise InputError(f"edit index {i!r} is out of range: the report has {count} edit(s) (0-based indices)")
    return [int(i) for i in edits]
