"""HATIE's five criteria for one edit, as pure math over precomputed measures (no models here).

HATIE (Ryu et al., CVPR 2025) judges an edit on Object Fidelity (OF), Background Fidelity (BF), Object
Consistency (OC), Background Consistency (BC) and Image Quality (IQ, over a set of edits: see
:func:`image_quality`). Which criteria apply, and how their component measures are weighted,
depends on the edit type (App. C.1). The weights are those of the authors' published evaluation
code (``/work/shared/hatie-notes.md``); where that code and the paper disagree, :class:`HatieOptions`
names both and docs/method-notes.md says which is the default and why.

Everything here takes numbers the model layer computed (:mod:`augclip_demo.hatie` runs CLIP,
DINOv2, LPIPS, the detector, the segmenter and the optional VQA client) plus boolean masks, and
returns :class:`CriterionScore` objects whose ``components`` keep every measure and weight, so a
view can show how a criterion came about. Image preparation that needs no model (masking, square
crops, grey / downscaled / edge versions) lives in :mod:`.images`.

Normalisation to [0, 1] (notes, "Pipeline"): a cosine ``c`` becomes ``(1 + c) / 2``, an LPIPS
distance ``d`` becomes ``1 - d``, a mean squared error becomes ``1 - mse / max_mse``.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from ..choices import EDIT_TYPES

# ---------------------------------------------------------------------------------------------- vocabulary
CRITERIA: tuple[str, ...] = ("object_fidelity", "background_fidelity", "object_consistency",
                             "background_consistency")
CRITERION_LABELS: dict[str, str] = {
    "object_fidelity": "Object Fidelity", "background_fidelity": "Background Fidelity",
    "object_consistency": "Object Consistency", "background_consistency": "Background Consistency",
    "image_quality": "Image Quality",
}
#: Metric key (a HATIE row of the metric table, :data:`augclip_demo.metrics.suite.HATIE_ROWS`) -> criterion;
#: "total" is an edit's weighted total, "image_quality" needs a set.
HATIE_KEYS: dict[str, str] = {"hatie": "total", "hatie_of": "object_fidelity", "hatie_bf": "background_fidelity",
                              "hatie_oc": "object_consistency", "hatie_bc": "background_consistency",
                              "hatie_iq": "image_quality"}
#: The criteria each edit type is judged on (App. C.1.1-C.1.7, Fig. 5).
TYPE_CRITERIA: dict[str, tuple[str, ...]] = {
    "add": ("object_fidelity", "background_consistency"),
    "remove": ("object_fidelity", "background_consistency"),
    "replace": ("object_fidelity", "object_consistency", "background_consistency"),
    "resize": ("object_fidelity", "object_consistency", "background_consistency"),
    "attribute": ("object_fidelity", "object_consistency", "background_consistency"),
    "background": ("background_fidelity", "object_consistency"),
    "style": ("background_fidelity", "background_consistency"),
}
#: The three ways the style and attribute rules compare two images (published code): Canny edge maps,
#: a degradation test on a grey copy halved step by step, and a grey copy downscaled 20 times.
WAYS: tuple[str, ...] = ("edges", "degradation", "downscaled")
#: The four similarity measures of every image comparison, in the published code's order.
MEASURES: tuple[str, ...] = ("clip", "lpips", "dino", "l2")
NEEDS_A_SET = "needs a set: Image Quality is the FID between a set of sources and their edits (batch runs)"

# ---------------------------------------------------------------------------------------------- weights
#: Published weights (hatie-notes.md, "Weights"; the authors' aggregation utilities).
_APPEARANCE_WEIGHTS = {"clip": 0.23, "lpips": 0.01, "dino": 0.11, "l2": 0.65}
_BACKGROUND_WEIGHTS = {"clip": 0.22, "lpips": 0.17, "dino": 0.25, "l2": 0.36}
_BC_POWER = 6.0
#: Style change (Background Consistency) and attribute change (Object Consistency's appearance): per measure,
#: its weight over the three ways (edges, degradation, downscaled) and an outer weight for the measure.
_STYLE_WAY_WEIGHTS = {"clip": (0.48, 0.12, 0.40), "lpips": (0.01, 0.02, 0.97), "dino": (0.49, 0.01, 0.50),
                     "l2": (0.03, 0.96, 0.01)}
_STYLE_MEASURE_WEIGHTS = {"clip": 0.01, "lpips": 0.49, "dino": 0.01, "l2": 0.49}
_ATTRIBUTE_WAY_WEIGHTS = {"clip": (0.08, 0.57, 0.35), "lpips": (0.01, 0.03, 0.96), "dino": (0.93, 0.05, 0.02),
                         "l2": (0.01, 0.01, 0.98)}
_ATTRIBUTE_MEASURE_WEIGHTS = {"clip": 0.84, "lpips": 0.01, "dino": 0.02, "l2": 0.13}
#: Degradation test: a measure scores (STEPS - k) / STEPS at the first halving k whose similarity exceeds the
#: threshold; the downscaled copy is 1 / _DOWNSCALE_LEVEL of the side, at least _MIN_DOWNSCALED pixels.
_DEGRADATION_THRESHOLD = 0.9
_DEGRADATION_STEPS = 10
_DOWNSCALE_LEVEL = 20
_MIN_DOWNSCALED = 4
#: Object Consistency: (appearance, position, size) per edit type.
OC_MIX = {"resize": (0.9, 0.1, 0.0), "background": (0.6, 0.12, 0.28), "replace": (0.0, 1.0, 0.0),
          "attribute": (0.70, 0.23, 0.07)}
#: Object Fidelity: detection evidence (CLIP on the crop vs the name, detector confidence, VQA).
_OF_PRESENCE = {"replace": (0.01, 0.92, 0.07), "remove": (0.01, 0.92, 0.07), "add": (0.01, 0.92, 0.07),
               "attribute": (0.36, 0.57, 0.07)}
_ADD_MIX = {"presence": 0.03, "relation_clip": 0.71, "relation_vqa": 0.26}
_BF_CLIP = {"background": 0.87, "style": 0.58}
#: Background Fidelity's squashing function: slope 0.05 outside [LOW, HIGH], a cubic from 0.027 to 0.983 inside.
_SQUASH_LOW, _SQUASH_HIGH = 0.54, 0.66
_SQUASH_SLOPE = 0.05
_RESIZE_ENLARGE, _RESIZE_SHRINK = 1.6, 0.6
_FID_SCALE = 25.0
#: The dataset filter's smallest object in the published code (0.3 % of the image): it sets the largest
#: position shift, sqrt(2) / sqrt(0.003), and the largest size growth, 1 / 0.003.
_CODE_AREA_FRACTION = 0.003
#: The smallest object the paper's dataset keeps: a box of 0.5 % of the image (App. A); the "paper" geometry.
_MIN_AREA_FRACTION = 0.005

#: Total weights (hatie-notes "Total"): OF, BF, OC, BC inside, and the share of IQ.
PUBLISHED_TOTAL = {"object_fidelity": 0.2, "background_fidelity": 0.4, "object_consistency": 0.1,
                   "background_consistency": 0.3}
#: The per-edit-type totals of the published code, which swap the two fidelity weights.
_SWAPPED_TOTAL = {"object_fidelity": 0.4, "background_fidelity": 0.2, "object_consistency": 0.1,
                 "background_consistency": 0.3}
_IQ_SHARE = 0.2
TOTAL_WEIGHT_SETS: dict[str, dict[str, float]] = {"published": PUBLISHED_TOTAL, "per-type-code": _SWAPPED_TOTAL}
#: The per-edit-type table's weights: the published code's (fidelity weights swapped) or the overall ones.
PER_TYPE_WEIGHTS: dict[str, dict[str, float]] = {"code": _SWAPPED_TOTAL, "overall": PUBLISHED_TOTAL}


@dataclass(frozen=True)
class HatieOptions:
    """The named choices where the paper, the published code and our setting differ (method notes).
    Every default is the published code's; the paper's reading is the other value.

    * ``vqa``: VQA answers are part of the measures; when False the VQA terms are left out and
      the remaining weights of that combination are divided by their sum (still convex).
    * ``bc_clip``: Background Consistency includes the CLIP image similarity of the published
      code (True) or only the paper's LPIPS / DINO / L2 (renormalised).
    * ``bc_power``: the exponent of the object-edit Background Consistency (code: 6).
    * ``bf_squash``: Background Fidelity passes through the code's squashing function.
    * ``relation_prompt``: the text of the add-relation check, ``"repeat"`` (the code's "cup on the
      left side of cup") or ``"anchor"`` ("cup on the left side of table", what the paper means).
    * ``geometry``: ``"code"``: position shift over sqrt(area of the edit's mask), scale
      sqrt(2) / sqrt(0.003), not clamped; size growth against 1 / 0.003. ``"paper"``: shift over
      sqrt(source area), scale diagonal / sqrt(0.005 x image), clamped at 0; growth against
      sqrt(image area / source area) (App. C.2).
    * ``clip``: ``"hatie"`` (CLIP ViT-B/32, the code's model, for every CLIP measure) or ``"run"``
      (the run's CLIP encoder).
    * ``per_type``: weights of the per-edit-type table, ``"code"`` (OF 0.4, BF 0.2) or ``"overall"``.
    * ``total``: a name in :data:`TOTAL_WEIGHT_SETS` or a calibrated set (see
      :mod:`.calibration`).
    """

    vqa: bool = False
    bc_clip: bool = True
    bc_power: float = _BC_POWER
    bf_squash: bool = True
    relation_prompt: str = "repeat"
    geometry: str = "code"
    clip: str = "hatie"
    per_type: str = "code"
    total: str = "published"
    max_mse: float = 1.0

    def __post_init__(self) -> None:
        for name, allowed in (("relation_prompt", ("repeat", "anchor")), ("geometry", ("code", "paper")),
                              ("clip", ("hatie", "run")), ("per_type", tuple(PER_TYPE_WEIGHTS))):
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name} must be one of {', '.join(allowed)}; got {getattr(self, name)!r}")
        if not (self.bc_power > 0 and math.isfinite(self.bc_power)):
            raise ValueError(f"bc_power must be a positive number, got {self.bc_power!r}")
        if not self.max_mse > 0:
            raise ValueError(f"max_mse must be positive, got {self.max_mse!r}")

    def to_dict(self) -> dict[str, Any]:
        return {"vqa": self.vqa, "bc_clip": self.bc_clip, "bc_power": self.bc_power, "bf_squash": self.bf_squash,
                "relation_prompt": self.relation_prompt, "geometry": self.geometry, "clip": self.clip,
                "per_type": self.per_type, "total": self.total, "max_mse": self.max_mse}

    def with_(self, **changes: Any) -> HatieOptions:
        return replace(self, **changes)


# ---------------------------------------------------------------------------------------------- normalisation
def cosine_to_unit(cos: float) -> float:
    """A cosine similarity in [-1, 1] as (1 + cos) / 2 in [0, 1]."""
    return (1.0 + float(cos)) / 2.0


def lpips_to_similarity(distance: float) -> float:
    """An LPIPS distance as 1 - d, not clipped (as the published code: LPIPS can pass 1 on very different
    images, which then score below 0)."""
    return 1.0 - float(distance)


def mse(a: np.ndarray, b: np.ndarray) -> float:
    """Mean squared error of two equal-shape float arrays (pixels in [0, 1])."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.shape != b.shape:
        raise ValueError(f"images differ in shape: {a.shape} vs {b.shape}")
    return float(np.mean((a - b) ** 2))


def l2_similarity(a: np.ndarray, b: np.ndarray, max_mse: float = 1.0) -> float:
    """1 - MSE / max MSE (pixels in [0, 1], whose largest possible MSE is 1)."""
    return float(max(0.0, 1.0 - mse(a, b) / max_mse))


@dataclass(frozen=True)
class Similarities:
    """The four appearance similarities of one comparison, each already in [0, 1] (None: not measured)."""

    clip: float | None = None
    lpips: float | None = None
    dino: float | None = None
    l2: float | None = None

    def to_dict(self) -> dict[str, float | None]:
        return {"clip": self.clip, "lpips": self.lpips, "dino": self.dino, "l2": self.l2}


# ---------------------------------------------------------------------------------------------- geometry
def mask_area(mask: np.ndarray | None) -> int:
    return 0 if mask is None else int(np.count_nonzero(mask))


def _centre_of_mass(mask: np.ndarray) -> tuple[float, float]:
    """(row, column) of the mask's centre of mass; raises on an empty mask."""
    rows, cols = np.nonzero(np.asarray(mask, dtype=bool))
    if rows.size == 0:
        raise ValueError("the mask is empty: it has no centre of mass")
    return float(rows.mean()), float(cols.mean())


def largest_shift(shape: tuple[int, int], geometry: str = "code") -> float:
    """The largest centre shift over sqrt(area) that the dataset filter allows. Code: sqrt(2) / sqrt(0.003)
    (about 25.8, whatever the image). Paper: the image diagonal over the side of the smallest object kept
    (0.5 % of the image, App. A): 20 for a square image."""
    if geometry == "code":
        return math.sqrt(2.0) / math.sqrt(_CODE_AREA_FRACTION)
    h, w = shape
    return math.hypot(h, w) / math.sqrt(_MIN_AREA_FRACTION * h * w)


def position_consistency(source_mask: np.ndarray, edit_mask: np.ndarray,
                         geometry: str = "code") -> tuple[float, float]:
    """(score, relative shift): the centre-of-mass shift over the square root of a mask's area, mapped
    linearly from 1 (no shift) to 0 at :func:`largest_shift`. Code: the area of the edit's mask (the
    mask its position function is given first), not clamped (a shift past the largest goes below 0).
    Paper: the source mask's area, clamped at 0 (App. C.2)."""
    (r0, c0), (r1, c1) = _centre_of_mass(source_mask), _centre_of_mass(edit_mask)
    per = edit_mask if geometry == "code" else source_mask
    shift = math.hypot(r1 - r0, c1 - c0) / math.sqrt(mask_area(per))
    score = 1.0 - shift / largest_shift(np.shape(source_mask), geometry)
    return (score if geometry == "code" else max(0.0, score)), shift


def _size_ratio(source_area: float, edit_area: float) -> float:
    """sqrt(edit area / source area): the relative change of the object's linear size."""
    if source_area <= 0:
        raise ValueError("the source object has no area")
    return math.sqrt(edit_area / source_area)


def size_consistency(source_area: float, edit_area: float, image_area: float,
                     geometry: str = "code") -> tuple[float, float]:
    """(score, ratio): 1 for an unchanged size; the ratio itself when the object shrank; when it grew,
    falling linearly to 0 at the largest ratio: 1 / 0.003 (code) or sqrt(image area / source area),
    the object filling the image (paper, App. C.2)."""
    ratio = _size_ratio(source_area, edit_area)
    if ratio <= 1.0:
        return ratio, ratio
    top = 1.0 / _CODE_AREA_FRACTION if geometry == "code" else math.sqrt(image_area / source_area)
    if top <= 1.0:
        return 0.0, ratio
    score = 1.0 - (ratio - 1.0) / (top - 1.0)
    return (score if geometry == "code" else max(0.0, score)), ratio


def size_fidelity(source_area: float, edit_area: float, direction: str, *, enlarge: float = _RESIZE_ENLARGE,
                  shrink: float = _RESIZE_SHRINK) -> tuple[float, float]:
    """(score, ratio) of a resize: full marks past the threshold (1.6 larger, 0.6 smaller), zero for
    no change or a change the wrong way, linear between (App. C.2, Fig. II(a))."""
    ratio = _size_ratio(source_area, edit_area)
    if direction == "larger":
        return min(1.0, max(0.0, (ratio - 1.0) / (enlarge - 1.0))), ratio
    if direction == "smaller":
        return min(1.0, max(0.0, (1.0 - ratio) / (1.0 - shrink))), ratio
    raise ValueError(f"a resize must be 'larger' or 'smaller', got {direction!r}")


def squash(x: float, low: float = _SQUASH_LOW, high: float = _SQUASH_HIGH, slope: float = _SQUASH_SLOPE) -> float:
    """Background Fidelity's squashing function of the published code: ``slope * x`` below ``low``,
    ``0.983 + slope * (x - high)`` above ``high``, and between them the code's cubic, whose derivative is
    proportional to (x - low)(x - high): it rises from 0.027 at ``low`` to 0.983 at ``high``, flat at both ends."""
    x = float(x)
    if x < low:
        return slope * x
    if x >= high:
        return 0.983 + slope * (x - high)
    # the published polynomial's coefficients (rounded as published: 1/3 as 0.333333)
    inner = 0.3564 * x - 0.6 * x ** 2 + 0.333333 * x ** 3 - 0.0698399
    return -3318.33833 * inner + (slope * low + 1.0 - slope * (1.0 - high)) / 2.0


def degradation_score(similarities: Sequence[float], threshold: float = _DEGRADATION_THRESHOLD,
                      steps: int = _DEGRADATION_STEPS) -> float:
    """The degradation test: ``(steps - k) / steps`` for the first halving ``k`` (0: the images as they
    are) whose similarity exceeds ``threshold``; 0 when none does."""
    for k, value in enumerate(similarities):
        if value is not None and value > threshold:
            return (steps - k) / steps
    return 0.0


def degradation_sizes(side: int = 512, steps: int = _DEGRADATION_STEPS) -> list[int]:
    """The sides of the degradation test's steps: 512, 256, ... while at least 2 px (nine steps from 512)."""
    sizes = []
    for k in range(steps):
        size = int(side / 2 ** k)
        if size < 2:
            break
        sizes.append(size)
    return sizes


def downscaled_size(h: int, w: int, level: int = _DOWNSCALE_LEVEL) -> tuple[int, int]:
    """(height, width) of the downscaled grey copy: 1 / level of each side, at least 4 px."""
    return max(_MIN_DOWNSCALED, int(h / level)), max(_MIN_DOWNSCALED, int(w / level))


def image_quality(fid: float, scale: float = _FID_SCALE) -> float:
    """Eq. 1: 1 - tanh(FID / 25)."""
    if not (math.isfinite(fid) and fid >= 0):
        raise ValueError(f"FID must be a finite number >= 0, got {fid!r}")
    return 1.0 - math.tanh(fid / scale)


def frechet_distance(mu1: np.ndarray, sigma1: np.ndarray, mu2: np.ndarray, sigma2: np.ndarray) -> float:
    """The Frechet distance of two Gaussians: |mu1 - mu2|^2 + tr(S1 + S2 - 2 (S1 S2)^(1/2))."""
    from scipy import linalg

    mu1, mu2 = np.atleast_1d(np.asarray(mu1, np.float64)), np.atleast_1d(np.asarray(mu2, np.float64))
    s1, s2 = np.atleast_2d(np.asarray(sigma1, np.float64)), np.atleast_2d(np.asarray(sigma2, np.float64))
    with warnings.catch_warnings():  # small sets give singular covariances; FID is then only indicative
        warnings.simplefilter("ignore")
        covmean = linalg.sqrtm(s1 @ s2)
    if not np.isfinite(covmean).all():
        offset = np.eye(s1.shape[0]) * 1e-6
        covmean = linalg.sqrtm((s1 + offset) @ (s2 + offset))
    covmean = np.real(covmean)
    diff = mu1 - mu2
    return float(max(0.0, diff @ diff + np.trace(s1) + np.trace(s2) - 2.0 * np.trace(covmean)))


def fid_from_features(source: np.ndarray, edited: np.ndarray) -> float:
    """FID between two sets of feature rows (n, d); each set needs at least two rows."""
    a, b = np.asarray(source, np.float64), np.asarray(edited, np.float64)
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[1]:
        raise ValueError(f"feature sets must be (n, d) with the same d, got {a.shape} and {b.shape}")
    if len(a) < 2 or len(b) < 2:
        raise ValueError("FID needs at least two images per set")
    if min(len(a), len(b)) > a.shape[1]:
        return frechet_distance(a.mean(0), np.cov(a, rowvar=False), b.mean(0), np.cov(b, rowvar=False))
    # fewer images than dimensions: the square roots of the eigenvalues of S1 S2 are the singular values of
    # Xa Xb^T / sqrt((na - 1)(nb - 1)) (centred rows), so tr (S1 S2)^(1/2) is that small matrix's nuclear norm;
    # the same value as the d x d square root, without it
    ca, cb = a - a.mean(0), b - b.mean(0)
    cross = np.linalg.svd(ca @ cb.T, compute_uv=False).sum() / math.sqrt((len(a) - 1) * (len(b) - 1))
    diff = a.mean(0) - b.mean(0)
    traces = (ca * ca).sum() / (len(a) - 1) + (cb * cb).sum() / (len(b) - 1)
    return float(max(0.0, diff @ diff + traces - 2.0 * cross))


# ---------------------------------------------------------------------------------------------- results
@dataclass
class Component:
    """One measure inside a criterion: its value, its weight in its own combination, and ``effective``,
    its weight in the criterion's weighted sum (the product of the weights above it; set on the measures
    that sum to the criterion, None on the intermediate sums), so ``value x effective`` over those is the
    criterion before any power or squashing and each one's share of the criterion can be shown."""

    name: str
    value: float | None
    weight: float
    note: str = ""
    effective: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "value": self.value, "weight": self.weight, "effective": self.effective,
                "note": self.note}


@dataclass
class CriterionScore:
    """One criterion for one edit: the value (None with a reason when it cannot be scored)."""

    key: str
    value: float | None
    components: list[Component] = field(default_factory=list)
    reason: str | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def label(self) -> str:
        return CRITERION_LABELS[self.key]

    def to_dict(self) -> dict[str, Any]:
        return {"value": self.value, "reason": self.reason, "notes": list(self.notes),
                "components": [c.to_dict() for c in self.components]}


def weighted(parts: Sequence[tuple[str, float | None, float]], note: str = "") -> tuple[float, list[Component]]:
    """A convex combination of the present parts: weights of absent (None) parts are left out and the
    rest divided by their sum, so the result stays in [0, 1]. Raises when nothing is present."""
    present = [(name, value, w) for name, value, w in parts if value is not None and w > 0]
    total = sum(w for _, _, w in present)
    if not present or total <= 0:
        raise ValueError("no measure present for this combination")
    components = [Component(name, value, w / total, note, effective=w / total) for name, value, w in present]
    return float(sum(c.value * c.weight for c in components)), components  # type: ignore[operator]


def _restated(parts: Sequence[Component], *, prefix: str = "", factor: float | None = 1.0,
             over: float = 1) -> list[Component]:
    """``parts`` restated inside an outer combination: ``prefix`` before each name, effective weights times
    ``factor`` (None: the parts are intermediate sums of other measures, with no effective weight of their
    own), weights and effective weights divided by ``over`` (one of ``over`` combinations averaged)."""
    return [Component(prefix + c.name, c.value, c.weight / over, c.note,
                      None if factor is None or c.effective is None else c.effective * factor / over) for c in parts]


def nested(outer: Sequence[Component], name: str, inner: Sequence[Component]) -> list[Component]:
    """``outer`` with its component ``name`` marked as an intermediate sum, then ``inner`` (the combination that
    made it) renamed ``name.part``, with effective weights scaled by ``name``'s weight in ``outer``."""
    share = next((c.weight for c in outer if c.name == name), 0.0)
    return ([_restated([c], factor=None)[0] if c.name == name else c for c in outer]
            + _restated(inner, prefix=f"{name}.", factor=share))


@dataclass(frozen=True)
class ObjectEvidence:
    """What the models say about one object in the edited image (Object Fidelity's detection part)."""

    found: bool
    confidence: float = 0.0  # detector score (0 when not found)
    clip: float | None = None  # (1 + cos) / 2 of the object's square crop vs its name
    vqa: float | None = None  # P(yes) of "is there a ... ?", when VQA is on


def _presence(kind: str, evidence: ObjectEvidence, options: HatieOptions) -> tuple[float, list[Component]]:
    w_clip, w_det, w_vqa = _OF_PRESENCE[kind]
    return weighted([("clip_object", evidence.clip, w_clip), ("detector_confidence", evidence.confidence, w_det),
                     ("vqa_object", evidence.vqa if options.vqa else None, w_vqa)])


# ---------------------------------------------------------------------------------------------- criteria
def object_fidelity(edit_type: str, options: HatieOptions, *, target: ObjectEvidence | None = None,
                    relation_clip: float | None = None, relation_vqa: float | None = None,
                    source_area: float | None = None, edit_area: float | None = None,
                    direction: str | None = None) -> CriterionScore:
    """Object Fidelity per App. C.1: presence (replace, attribute), absence (remove), presence and
    relation (add), size (resize)."""
    key = "object_fidelity"
    if edit_type == "resize":
        if not source_area:
            return CriterionScore(key, None, reason="the object was not found in the source image")
        if not edit_area:
            return CriterionScore(key, 0.0, [Component("size_fidelity", 0.0, 1.0, "object not found in the edit", 1.0)],
                                  notes=["the object was not found in the edit: Object Fidelity is 0 (App. C.1.4)"])
        score, ratio = size_fidelity(source_area, edit_area, direction or "")
        return CriterionScore(key, score, [Component("size_fidelity", score, 1.0, f"size ratio {ratio:.3f}", 1.0),
                                           Component("size_ratio", ratio, 0.0)])
    if target is None:
        return CriterionScore(key, None, reason="no object to look for in the edit")
    if edit_type == "remove":
        if not target.found:
            return CriterionScore(key, 1.0, [Component("detector_confidence", 0.0, 0.0, "not detected")],
                                  notes=["the removed object was not detected in the edit: Object Fidelity is 1 "
                                         "(App. C.1.2)"])
        value, parts = _presence("remove", target, options)
        return CriterionScore(key, 1.0 - value, parts, notes=["1 minus the presence score (Eq. 7)"])
    if not target.found:
        return CriterionScore(key, 0.0, [Component("detector_confidence", 0.0, 0.0, "not detected")],
                              notes=["the object was not detected in the edit: Object Fidelity is 0"])
    if edit_type in ("replace", "attribute"):
        value, parts = _presence(edit_type, target, options)
        return CriterionScore(key, value, parts)
    if edit_type == "add":
        presence, parts = _presence("add", target, options)
        value, outer = weighted([("presence", presence, _ADD_MIX["presence"]),
                                 ("relation_clip", relation_clip, _ADD_MIX["relation_clip"]),
                                 ("relation_vqa", relation_vqa if options.vqa else None, _ADD_MIX["relation_vqa"])])
        return CriterionScore(key, value, nested(outer, "presence", parts))
    return CriterionScore(key, None, reason=f"Object Fidelity is not part of a {edit_type} edit")


def background_fidelity(edit_type: str, clip: float | None, vqa: float | None,
                        options: HatieOptions) -> CriterionScore:
    """Background Fidelity of a background or style change: CLIP of the background (style: the whole
    image) vs the wanted background / style, with VQA, through :func:`squash` (published code)."""
    key = "background_fidelity"
    if edit_type not in _BF_CLIP:
        return CriterionScore(key, None, reason=f"Background Fidelity is not part of a {edit_type} edit")
    w = _BF_CLIP[edit_type]
    try:
        raw, parts = weighted([("clip_background", clip, w), ("vqa_background", vqa if options.vqa else None, 1 - w)])
    except ValueError:
        return CriterionScore(key, None, reason="no CLIP similarity of the background")
    if not options.bf_squash:
        return CriterionScore(key, raw, parts)
    value = squash(raw)
    return CriterionScore(key, value, parts + [Component("before_squash", raw, 0.0,
                                                         "squashed: slope 0.05 outside [0.54, 0.66], 0.027 to 0.983 "
                                                         "inside")])


def appearance(similarities: Similarities) -> tuple[float, list[Component]]:
    """The four-measure object appearance (CLIP / LPIPS / DINO / L2: 0.23 / 0.01 / 0.11 / 0.65)."""
    s = similarities
    return weighted([("clip", s.clip, _APPEARANCE_WEIGHTS["clip"]), ("lpips", s.lpips, _APPEARANCE_WEIGHTS["lpips"]),
                     ("dino", s.dino, _APPEARANCE_WEIGHTS["dino"]), ("l2", s.l2, _APPEARANCE_WEIGHTS["l2"])])


def _ways_score(by_way: Mapping[str, Similarities], measure_weights: Mapping[str, float],
               way_weights: Mapping[str, tuple[float, float, float]]) -> tuple[float, list[Component]]:
    """The style / attribute comparison: sum over measures m and ways v of outer[m] x inner[m][v] x the
    similarity of measure m in way v (the degradation way's values are already its test scores).
    Absent values drop out and the rest are renormalised."""
    parts = [(f"{m}.{way}", getattr(by_way.get(way, Similarities()), m), measure_weights[m] * way_weights[m][i])
             for m in MEASURES for i, way in enumerate(WAYS)]
    return weighted(parts)


def object_consistency(edit_type: str, *, source_mask: np.ndarray | None, edit_mask: np.ndarray | None,
                       appearance_by_comparison: Mapping[str, Similarities] | None,
                       options: HatieOptions, prefix: str = "") -> CriterionScore:
    """Object Consistency of one object: appearance, position and size, mixed per edit type (Eq. 3, 9-12).
    ``appearance_by_comparison``: ``{"plain": ...}`` for resize / background, the three ways
    (:data:`WAYS`) for an attribute change."""
    key = "object_consistency"
    if edit_type not in OC_MIX:
        return CriterionScore(key, None, reason=f"Object Consistency is not part of a {edit_type} edit")
    if source_mask is None or not mask_area(source_mask):
        return CriterionScore(key, None, reason="the object was not found in the source image")
    if edit_mask is None or not mask_area(edit_mask):
        return CriterionScore(key, 0.0, notes=["the object was not found in the edit: Object Consistency is 0"])
    position, shift = position_consistency(source_mask, edit_mask, options.geometry)
    size, ratio = size_consistency(mask_area(source_mask), mask_area(edit_mask), float(np.size(source_mask)),
                                   options.geometry)
    w_app, w_pos, w_size = OC_MIX[edit_type]
    look: float | None = None
    look_parts: list[Component] = []
    if w_app > 0:
        comparisons = dict(appearance_by_comparison or {})
        if edit_type == "attribute":
            look, look_parts = _ways_score(comparisons, _ATTRIBUTE_MEASURE_WEIGHTS, _ATTRIBUTE_WAY_WEIGHTS)
        else:
            look, look_parts = appearance(comparisons.get("plain", Similarities()))
    value, parts = weighted([("appearance", look, w_app), ("position", position, w_pos), ("size", size, w_size)])
    extra = [Component("centre_shift", shift, 0.0, "centre-of-mass shift / sqrt(mask area)"),
             Component("size_ratio", ratio, 0.0, "sqrt(edit area / source area)")]
    if w_size == 0:
        extra.append(Component("size", size, 0.0, "not weighted for this edit type"))
    return CriterionScore(key, value, _restated(nested(parts, "appearance", look_parts) + extra, prefix=prefix))


def mean_object_consistency(scores: Sequence[CriterionScore]) -> CriterionScore:
    """Background change: the mean Object Consistency over the foreground objects (Eq. 13)."""
    values = [s.value for s in scores if s.value is not None]
    if not values:
        return CriterionScore("object_consistency", None, reason="no foreground object found in the source image")
    n = len(values)
    components = _restated([c for s in scores if s.value is not None for c in s.components], over=n)
    return CriterionScore("object_consistency", float(np.mean(values)), components,
                          notes=[f"mean over {n} foreground object(s)"])


def background_consistency(edit_type: str, by_comparison: Mapping[str, Similarities],
                           options: HatieOptions) -> CriterionScore:
    """Background Consistency: the four similarities of the masked backgrounds, weighted and raised to
    the power 6 (object edits); the three ways x four measures of the whole images (style change)."""
    key = "background_consistency"
    if "background_consistency" not in TYPE_CRITERIA.get(edit_type, ()):
        return CriterionScore(key, None, reason=f"Background Consistency is not part of a {edit_type} edit")
    if edit_type == "style":
        value, parts = _ways_score(by_comparison, _STYLE_MEASURE_WEIGHTS, _STYLE_WAY_WEIGHTS)
        return CriterionScore(key, value, parts)
    s = by_comparison.get("plain", Similarities())
    w = _BACKGROUND_WEIGHTS
    base, parts = weighted([("clip", s.clip if options.bc_clip else None, w["clip"]), ("lpips", s.lpips, w["lpips"]),
                            ("dino", s.dino, w["dino"]), ("l2", s.l2, w["l2"])])
    value = base ** options.bc_power
    return CriterionScore(key, value, parts + [Component("before_power", base, 0.0, f"raised to {options.bc_power:g}")])


@dataclass(frozen=True)
class Share:
    """One measure's part of a criterion: its effective weight and its share of the criterion's weighted sum."""

    name: str
    value: float | None
    weight: float
    share: float | None


def component_shares(score: CriterionScore) -> list[Share]:
    """The measures that sum to ``score`` (those with an effective weight), each with that weight and its
    share value x weight / sum of value x weight (None when the sum is 0)."""
    leaves = [c for c in score.components if c.effective is not None and c.value is not None]
    total = sum(c.value * c.effective for c in leaves)  # type: ignore[operator]
    return [Share(c.name, c.value, float(c.effective), None if total == 0 else c.value * c.effective / total)  # type: ignore[operator]
            for c in leaves]


def criterion_shares(scores: HatieScores) -> list[Share]:
    """Each criterion's weight in the edit's total (renormalised over the criteria it has) and its share."""
    present = [(k, s.value, scores.weights[k]) for k, s in scores.criteria.items()
               if s.value is not None and scores.weights.get(k, 0) > 0]
    weight = sum(w for _, _, w in present)
    total = sum(v * w for _, v, w in present)  # type: ignore[operator]
    return [Share(k, v, w / weight, None if total == 0 else v * w / total) for k, v, w in present]  # type: ignore[operator]


# ---------------------------------------------------------------------------------------------- totals
def total_weights(name_or_weights: str | Mapping[str, float],
                  calibrated: Mapping[str, Mapping[str, float]] | None = None) -> dict[str, float]:
    """The four criterion weights by name (published, per-type-code, or a calibrated set)."""
    if not isinstance(name_or_weights, str):
        weights = {k: float(name_or_weights[k]) for k in CRITERIA}
    elif name_or_weights in TOTAL_WEIGHT_SETS:
        weights = dict(TOTAL_WEIGHT_SETS[name_or_weights])
    elif calibrated and name_or_weights in calibrated:
        weights = {k: float(calibrated[name_or_weights][k]) for k in CRITERIA}
    else:
        known = list(TOTAL_WEIGHT_SETS) + list(calibrated or {})
        raise ValueError(f"unknown HATIE weight set {name_or_weights!r}; known: {', '.join(known)}")
    if any(w < 0 for w in weights.values()) or not sum(weights.values()) > 0:
        raise ValueError(f"HATIE criterion weights must be >= 0 and not all 0, got {weights}")
    return weights


def _weighted_present(values: Mapping[str, float | None], weights: Mapping[str, float]) -> list[tuple[float, float]]:
    """(value, weight) of each criterion that has a value and a positive weight, in :data:`CRITERIA` order."""
    return [(values[k], weights[k]) for k in CRITERIA if values.get(k) is not None and weights[k] > 0]  # type: ignore[misc]


def edit_total(criteria: Mapping[str, float | None], weights: Mapping[str, float]) -> float | None:
    """One edit's total over the criteria it has (weights renormalised over them); no IQ (a set measure)."""
    present = _weighted_present(criteria, weights)
    total = sum(w for _, w in present)
    if not present or total <= 0:
        return None
    return float(sum(v * w for v, w in present) / total)  # type: ignore[operator]


def per_type_error(se: Mapping[str, float | None], weights: Mapping[str, float]) -> float | None:
    """The published per-type table's error: sqrt(sum (se_c w_c)^2) / sum w_c over the type's criteria."""
    present = _weighted_present(se, weights)
    if not present:
        return None
    return float(math.sqrt(sum((e * w) ** 2 for e, w in present)) / sum(w for _, w in present))  # type: ignore[operator]


def total_error(se: Mapping[str, float | None], weights: Mapping[str, float], iq_se: float | None,
                iq_share: float = _IQ_SHARE) -> float | None:
    """The published model total's error: the criteria's bootstrap errors times their weights in the total,
    added in quadrature, plus Image Quality's error times its share, added as published (not squared)."""
    inner = _weighted_present(se, weights)
    if not inner:
        return None
    total = sum(w for _, w in inner)
    squares = sum((e * w / total * (1.0 - iq_share)) ** 2 for e, w in inner)  # type: ignore[operator]
    return float(math.sqrt(squares + (iq_se * iq_share if iq_se is not None else 0.0)))


def set_total(means: Mapping[str, float | None], weights: Mapping[str, float], iq: float | None,
              iq_share: float = _IQ_SHARE) -> float | None:
    """A model's total (Eq. 5): (1 - iq_share) x the weighted criterion means + iq_share x IQ; without
    IQ (fewer than two edits) the criterion part alone."""
    inner = edit_total(means, weights)
    if inner is None:
        return None
    return inner if iq is None else (1.0 - iq_share) * inner + iq_share * iq


@dataclass
class HatieScores:
    """All criteria of one edit with the total over the applicable ones."""

    edit_type: str
    criteria: dict[str, CriterionScore]
    total: float | None
    weights: dict[str, float]
    options: HatieOptions
    notes: list[str] = field(default_factory=list)

    def value(self, key: str) -> float | None:
        score = self.criteria.get(key)
        return None if score is None else score.value

    def to_dict(self) -> dict[str, Any]:
        return {"edit_type": self.edit_type, "total": self.total, "weights": dict(self.weights),
                "criteria": {k: v.to_dict() for k, v in self.criteria.items()}, "options": self.options.to_dict(),
                "notes": list(self.notes), "image_quality": NEEDS_A_SET}


def combine(edit_type: str, criteria: Mapping[str, CriterionScore], options: HatieOptions,
            calibrated: Mapping[str, Mapping[str, float]] | None = None) -> HatieScores:
    """The applicable criteria of ``edit_type`` and the edit's total under ``options.total``."""
    if edit_type not in EDIT_TYPES:
        raise ValueError(f"unknown HATIE edit type {edit_type!r}; one of {', '.join(EDIT_TYPES)}")
    kept = {k: criteria[k] for k in TYPE_CRITERIA[edit_type] if k in criteria}
    weights = total_weights(options.total, calibrated)
    total = edit_total({k: v.value for k, v in kept.items()}, weights)
    return HatieScores(edit_type, kept, total, weights, options)
