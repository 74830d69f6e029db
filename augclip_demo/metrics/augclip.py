"""AugCLIP (Sec. 4 of the paper, Eq. 3-12, App. B): model-free, numpy + scikit-learn.

Given CLIP embeddings of the source image, an edited image, and the source / target attributes,
AugCLIP estimates the embedding of the ideal edit as the smallest move of the source image that a
weighted linear classifier assigns to the target side, and scores the edit by its cosine
similarity to that ideal point::

    alpha(x) = Importance(x) + Collision(x)                                    (Eq. 4-6)
    g(x) = w.x + b  fitted on source (-1) vs target (+1) with sample weights    (Eq. 7)
    c = -(w.E(I_src) + b) / |w|^2,   v = max(c, 0) w                           (Eq. 8-10)
    AugCLIP = cs(E(I_edit), E(I_src) + v)                                      (Eq. 3)
    delta_i = cs(E(I_src) + v, a_i) - cs(E(I_src), a_i)                        (Eq. 11-12)

Choices where the paper leaves room (each a named option; see the method notes in the docs):

* ``include_images`` (default ``True``): App. B fits on ``[src_img, src_desc]`` vs
  ``[tgt_img, tgt_desc]``, i.e. the source image joins the source set and the *edited* image joins
  the target set; ``False`` is Eq. 7 as printed (attributes only).
* Collision (Eq. 5) is the text's "averaged" cosine over the opposite set, i.e. the mean; the printed
  sum would make the weights scale with the size of the opposite set.
* ``weight_scaling`` (default ``"raw"``): App. B line 16 hands alpha itself to
  ``fit(..., sample_weight=...)``. alpha can be zero or negative, which libsvm does not accept, so
  every weight is floored at ``WEIGHT_FLOOR`` (1e-3) and otherwise used as is. ``"mean"`` rescales
  the floored weights to mean 1, which keeps the effective C of an unweighted fit (our earlier
  default; it moves scores because the same C then regularises differently).
* ``projection`` (default ``"clamped"``): Eq. 8 asks for the minimum-norm v such that
  g(E(I_src) + v) >= 0, i.e. ``v = max(c, 0) w``; when the source already lies on the target side
  (c < 0) that v is 0. ``"plain"`` is App. B lines 23-25, ``v = c w`` without the clamp, which moves
  such a source back onto the plane, away from the target side.
* Solver tolerance: libsvm's default stopping tolerance (1e-3) leaves solver noise of ~1e-4 in w
  that depends on the order of the samples; :data:`SOLVER_TOL` (1e-12) brings it below 1e-12 at
  no measurable cost per fit (a few dozen samples).
* Every embedding is scaled to length 1 first: the paper's similarities are all cosines, and CLIP's
  raw feature lengths (which differ between images and texts) would otherwise steer the fit.
  The ideal point E(I_src) + v is kept as computed (the cosine ignores its length).
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from ..choices import CLASSIFIERS, PROJECTIONS, WEIGHT_SCALINGS
from .vectors import as_matrix, as_vector, cosine, normalize

Classifier = Literal["svm", "logistic", "lda"]
Projection = Literal["clamped", "plain"]
#: Smallest sample weight handed to the solver: libsvm needs positive weights, alpha may be <= 0.
WEIGHT_FLOOR = 1e-3
#: Stopping tolerance of the svm / logistic solvers, tight enough that scores reproduce to 1e-9.
SOLVER_TOL = 1e-12
#: Iteration cap of the svm / logistic fits: a fit of a few dozen samples converges in a few hundred
#: iterations (measured: 109 to 506 for 9 to 65 samples a side), but a huge C can make libsvm run for
#: hours; past the cap the fit is refused with a message instead of returning an unconverged plane.
MAX_FIT_ITERATIONS = 100_000


@dataclass
class AugCLIPResult:
    """Everything AugCLIP computes for one (source, edit) pair; fit samples are source set first."""

    score: float
    v: np.ndarray
    w: np.ndarray
    b: float
    c: float
    ideal: np.ndarray
    alpha: np.ndarray
    sample_weight: np.ndarray
    source_deltas: np.ndarray
    target_deltas: np.ndarray
    n_source: int  # size of the source set in the fit (attributes + source image if included)
    n_target: int
    include_images: bool
    classifier: str
    C: float
    weighting: bool
    fit_accuracy: float = field(default=float("nan"))
    weight_scaling: str = "raw"
    projection: str = "clamped"

    @property
    def w_norm(self) -> float:
        return float(np.linalg.norm(self.w))

    def signed_distance(self, x: np.ndarray) -> float:
        """g(x)/|w| for a (normalised) embedding x: > 0 on the target side."""
        return float((np.dot(self.w, normalize(np.asarray(x, dtype=np.float64))) + self.b) / self.w_norm)

    @property
    def source_alpha(self) -> np.ndarray:
        """Alpha of the source-set samples (the source image first when it is in the fit)."""
        return self.alpha[: self.n_source]

    @property
    def target_alpha(self) -> np.ndarray:
        return self.alpha[self.n_source :]


def attribute_weights(src_set: np.ndarray, tgt_set: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Eq. 4-6 for every member of both sets: ``(alpha_src, alpha_tgt)``.

    Importance(x) = sum of cs(x, y) over the *other* members y of x's own set (Eq. 4);
    Collision(x) = minus the mean of cs(x, z) over the opposite set (Eq. 5, "averaged");
    alpha = Importance + Collision (Eq. 6).
    """
    src = normalize(as_matrix(src_set, "source set"))
    tgt = normalize(as_matrix(tgt_set, "target set", dim=src.shape[1]))
    return attribute_weights_from_unit(src, tgt)


def attribute_weights_from_unit(src: np.ndarray, tgt: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`attribute_weights` of unit rows (no checks)."""
    src_self = src @ src.T
    tgt_self = tgt @ tgt.T
    cross = src @ tgt.T
    importance_src = src_self.sum(axis=1) - np.diag(src_self)
    importance_tgt = tgt_self.sum(axis=1) - np.diag(tgt_self)
    collision_src = -cross.mean(axis=1)
    collision_tgt = -cross.mean(axis=0)
    return importance_src + collision_src, importance_tgt + collision_tgt


def sample_weights_from_alpha(alpha: np.ndarray, weighting: bool = True, scaling: str = "raw") -> np.ndarray:
    """Classifier sample weights from alpha (Eq. 6).

    ``weighting=False`` gives every sample weight 1. Otherwise alpha is floored at
    :data:`WEIGHT_FLOOR` (libsvm rejects weights <= 0) and, with ``scaling="raw"`` (App. B line 16),
    used as is; ``scaling="mean"`` rescales the floored weights to mean 1.
    """
    if scaling not in WEIGHT_SCALINGS:
        raise ValueError(f"unknown weight scaling {scaling!r}; choose one of {', '.join(WEIGHT_SCALINGS)}")
    alpha = np.asarray(alpha, dtype=np.float64)
    if not weighting:
        return np.ones_like(alpha)
    floored = np.maximum(alpha, WEIGHT_FLOOR)
    return floored / floored.mean() if scaling == "mean" else floored


def fit_hyperplane(
    X: np.ndarray, y: np.ndarray, sample_weight: np.ndarray, classifier: str | None = None, C: float | None = None,
    tol: float = SOLVER_TOL, max_iter: int = -1,
) -> tuple[np.ndarray, float, float]:
    """Fit g(x) = w.x + b separating y=-1 (source) from y=+1 (target); returns (w, b, train accuracy).

    * ``svm``: ``SVC(kernel="linear", C=C)`` with sample weights (the paper's choice, Eq. 7; the
      soft-margin objective of App. A.3);
    * ``logistic``: weighted logistic loss plus scikit-learn's L2 term ``|w|^2 / (2C)``. App. A.3
      prints the logistic objective without a penalty, but it also states that the source and
      target sets are linearly separable, and on separable data that objective has no minimiser
      (the loss keeps falling as |w| grows), so the plane would depend on where the solver gives
      up. The L2 term, with the same C as the SVM, makes the fit well defined;
    * ``lda``: ``LinearDiscriminantAnalysis()`` (the Fisher criterion of App. A.3). scikit-learn's
      LDA accepts no sample weights, so the alpha weighting cannot be applied to this variant; the
      paper does not say whether its LDA was weighted.

    svm and logistic stop at ``tol`` (default :data:`SOLVER_TOL`), so the plane does not depend on
    the sample order. ``classifier`` and ``C`` default to :func:`augclip_score`'s. ``max_iter`` bounds
    the solver's iterations (-1: :data:`MAX_FIT_ITERATIONS`, and a fit that reaches it is refused); the illustrative 2-D view of the explanations loosens both (see its
    docstring) and takes what the solver gives.
    """
    classifier = AUGCLIP_DEFAULTS["classifier"] if classifier is None else classifier
    C = AUGCLIP_DEFAULTS["C"] if C is None else C
    labels = set(np.unique(y).tolist())
    if labels != {-1, 1}:
        raise ValueError("the fit needs both a source (-1) and a target (+1) sample; got labels " + str(sorted(labels)))
    if classifier in ("svm", "logistic"):
        import warnings

        from sklearn.exceptions import ConvergenceWarning

        cap = MAX_FIT_ITERATIONS if max_iter < 0 else max_iter
        if classifier == "svm":
            from sklearn.svm import SVC

            model = SVC(kernel="linear", C=C, tol=tol, max_iter=cap)
        else:
            from sklearn.linear_model import LogisticRegression

            model = LogisticRegression(C=C, tol=tol, max_iter=min(cap, 10_000))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            model.fit(X, y, sample_weight=sample_weight)
        if max_iter < 0 and int(np.max(model.n_iter_)) >= model.max_iter:
            raise ValueError(f"the {classifier} fit did not converge within {model.max_iter} iterations with "
                             f"C = {C:g}; use a smaller C (1 is the paper's)")
    elif classifier == "lda":
        from sklearn.discriminant_analysis import LinearDiscriminantAnalysis

        model = LinearDiscriminantAnalysis()
        model.fit(X, y)
    else:
        raise ValueError(f"unknown classifier {classifier!r}; choose one of {', '.join(CLASSIFIERS)}")
    w = np.asarray(model.coef_, dtype=np.float64)[0]
    b = float(np.asarray(model.intercept_, dtype=np.float64)[0])
    accuracy = float(np.mean(np.sign(X @ w + b) == y))
    return w, b, accuracy


def augclip_score(
    src_image: np.ndarray,
    edit_image: np.ndarray,
    src_attrs: np.ndarray,
    tgt_attrs: np.ndarray,
    weighting: bool = True,
    include_images: bool = True,
    classifier: str = "svm",
    C: float = 1.0,
    weight_scaling: str = "raw",
    projection: str = "clamped",
) -> AugCLIPResult:
    """AugCLIP score of one edited image (see the module docstring for the equations and choices).

    Args:
        src_image: ``(d,)`` CLIP embedding of the source image.
        edit_image: ``(d,)`` CLIP embedding of the edited image.
        src_attrs: ``(n_s, d)`` embeddings of the source attributes (D_S).
        tgt_attrs: ``(n_t, d)`` embeddings of the target attributes (D_T).
        weighting: weight samples by alpha (Eq. 6) or give every sample weight 1.
        include_images: add the source / edited image to the source / target fit sets (App. B).
        classifier: ``svm`` (paper), ``logistic`` or ``lda`` (App. A.3).
        C: regularisation of svm / logistic.
        weight_scaling: ``raw`` (App. B: alpha as is, floored) or ``mean`` (rescaled to mean 1).
        projection: ``clamped`` (Eq. 8: v = max(c, 0) w) or ``plain`` (App. B: v = c w).

    Raises:
        ValueError: naming the input, for an empty attribute set, NaN/inf, a zero vector,
            mismatched dimensions, a fit without both classes, or a degenerate (w = 0) fit.
    """
    if classifier not in CLASSIFIERS:
        raise ValueError(f"unknown classifier {classifier!r}; choose one of {', '.join(CLASSIFIERS)}")
    if not np.isfinite(C) or C <= 0:
        raise ValueError(f"C must be a positive number, got {C}")
    if weight_scaling not in WEIGHT_SCALINGS:
        raise ValueError(f"unknown weight scaling {weight_scaling!r}; choose one of {', '.join(WEIGHT_SCALINGS)}")
    if projection not in PROJECTIONS:
        raise ValueError(f"unknown projection {projection!r}; choose one of {', '.join(PROJECTIONS)}")
    src = normalize(as_vector(src_image, "src_image"))
    dim = src.shape[0]
    edit = normalize(as_vector(edit_image, "edit_image", dim))
    src_attr = normalize(as_matrix(src_attrs, "src_attrs (source attributes)", dim))
    tgt_attr = normalize(as_matrix(tgt_attrs, "tgt_attrs (target attributes)", dim))
    return augclip_from_unit(src, edit, src_attr, tgt_attr, weighting=weighting, include_images=include_images,
                             classifier=classifier, C=C, weight_scaling=weight_scaling, projection=projection)


#: Each AugCLIP option's default, read from :func:`augclip_score`'s signature, its one place: the pipeline's
#: options, the Python API, the command line, the app and the explanations read them here.
AUGCLIP_DEFAULTS: dict[str, Any] = {name: parameter.default
                                    for name, parameter in inspect.signature(augclip_score).parameters.items()
                                    if parameter.default is not inspect.Parameter.empty}


def augclip_from_unit(
    src: np.ndarray,
    edit: np.ndarray,
    src_attr: np.ndarray,
    tgt_attr: np.ndarray,
    *,
    weighting: bool,
    include_images: bool,
    classifier: str,
    C: float,
    weight_scaling: str = "raw",
    projection: str = "clamped",
) -> AugCLIPResult:
    """:func:`augclip_score` of unit float64 vectors and rows, options already checked (no input checks)."""
    if include_images:
        src_set = np.vstack([src[None, :], src_attr])
        tgt_set = np.vstack([edit[None, :], tgt_attr])
    else:
        src_set, tgt_set = src_attr, tgt_attr
    if len(src_set) == 0 or len(tgt_set) == 0:
        raise ValueError("the fit needs at least one source and one target sample")

    # attribute_weights checks and normalises its (unit) rows again, so the weights are bit-identical
    # to those of every earlier version (SOLVER_TOL makes the fit insensitive to last bits anyway)
    alpha_src, alpha_tgt = attribute_weights(src_set, tgt_set)
    alpha = np.concatenate([alpha_src, alpha_tgt])
    weights = sample_weights_from_alpha(alpha, weighting, weight_scaling)
    X = np.vstack([src_set, tgt_set])
    y = np.concatenate([-np.ones(len(src_set), dtype=int), np.ones(len(tgt_set), dtype=int)])
    w, b, accuracy = fit_hyperplane(X, y, weights, classifier=classifier, C=C)

    w_sq = float(np.dot(w, w))
    if not np.isfinite(w_sq) or w_sq < 1e-24:
        raise ValueError(
            "the classifier found no separating direction (w = 0): the source and target sets are "
            "indistinguishable; use more specific, distinct source and target attributes"
        )
    c = -(float(np.dot(w, src)) + b) / w_sq
    v = (max(c, 0.0) if projection == "clamped" else c) * w
    ideal = src + v
    score = cosine(edit, ideal)

    ideal_unit = normalize(ideal)

    def deltas(attrs: np.ndarray) -> np.ndarray:
        return attrs @ ideal_unit - attrs @ src

    return AugCLIPResult(
        score=score,
        v=v,
        w=w,
        b=b,
        c=c,
        ideal=ideal,
        alpha=alpha,
        sample_weight=weights,
        source_deltas=deltas(src_attr),
        target_deltas=deltas(tgt_attr),
        n_source=len(src_set),
        n_target=len(tgt_set),
        include_images=include_images,
        classifier=classifier,
        C=float(C),
        weighting=weighting,
        fit_accuracy=accuracy,
        weight_scaling=weight_scaling,
        projection=projection,
    )
