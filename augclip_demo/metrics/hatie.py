"""HATIE's five criteria for one edit, as pure math over precomputed measures (no models here).

HATIE (paper 003) judges an edit on Object Fidelity (OF), Background Fidelity (BF), Object
Consistency (OC), Background Consistency (BC) and Image Quality (IQ, over a set of edits: see
:func:`image_quality`). Which criteria apply, and how their component measures are weighted,
depends on the edit type (App. C.1). The weights are those of the authors' published evaluation
code (``/work/shared/hatie-notes.md``); where that code and the paper disagree, :class:`HatieOptions`
names both and docs/method-notes.md says which is the default and why.

Everything here takes numbers the model layer computed (:mod:`augclip_demo.hatie` runs CLIP,
DINOv2, LPIPS, the detector, the segmenter and the optional VQA client) plus boolean masks, and
returns :class:`CriterionScore` objects whose ``components`` keep every measure and weight, so a
view can show how a criterion came about. Image preparation that needs no model (masking, square
crops, grey / downscaled / edge versions) lives in :mod:`.hatie_images`.

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

# ---------------------------------------------------------------------------------------------- vocabulary
EDIT_TYPES: tuple[str, ...] = ("add", "remove", "replace", "resize", "attribute", "background", "style")
CRITERIA: tuple[str, ...] = ("object_fidelity", "background_fidelity", "object_consistency",
                             "background_consistency")
CRITERION_LABELS: dict[str, str] = {
    "object_fidelity": "Object Fidelity", "background_fidelity": "Background Fidelity",
    "object_consistency": "Object Consistency", "background_consistency": "Background Consistency",
    "image_quality": "Image Quality",
}
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
#: The four comparisons of the style / attribute rules: the images as they are, their edge maps,
#: a grey version and a downscaled version (the two "degraded" ones of App. C.1.5).
COMPARISONS: tuple[str, ...] = ("plain", "edges", "gray", "small")
NEEDS_A_SET = "needs a set: Image Quality is the FID between a set of sources and their edits (batch runs)"

# ---------------------------------------------------------------------------------------------- weights
#: Published weights (hatie-notes.md, "Weights"). Triples are (LPIPS, DINO, L2), the paper's order of
#: the three consistency measures (Eq. 3-4); quadruples add CLIP first where the code uses it.
APPEARANCE_WEIGHTS = {"clip": 0.23, "lpips": 0.01, "dino": 0.11, "l2": 0.65}
BACKGROUND_WEIGHTS = {"clip": 0.22, "lpips": 0.17, "dino": 0.25, "l2": 0.36}
BC_POWER = 6.0
STYLE_OUTER = {"plain": 0.01, "edges": 0.49, "gray": 0.01, "small": 0.49}
STYLE_INNER = {"plain": (0.48, 0.12, 0.40), "edges": (0.01, 0.02, 0.97), "gray": (0.49, 0.01, 0.50),
               "small": (0.03, 0.96, 0.01)}
ATTRIBUTE_OUTER = {"plain": 0.84, "edges": 0.01, "gray": 0.02, "small": 0.13}
ATTRIBUTE_INNER = {"plain": (0.08, 0.57, 0.35), "edges": (0.01, 0.03, 0.96), "gray": (0.93, 0.05, 0.02),
                   "small": (0.01, 0.01, 0.98)}
#: Object Consistency: (appearance, position, size) per edit type.
OC_MIX = {"resize": (0.9, 0.1, 0.0), "background": (0.6, 0.12, 0.28), "replace": (0.0, 1.0, 0.0),
          "attribute": (0.70, 0.23, 0.07)}
#: Object Fidelity: detection evidence (CLIP on the crop vs the name, detector confidence, VQA).
OF_PRESENCE = {"replace": (0.01, 0.92, 0.07), "remove": (0.01, 0.92, 0.07), "add": (0.01, 0.92, 0.07),
               "attribute": (0.36, 0.57, 0.07)}
ADD_MIX = {"presence": 0.03, "relation_clip": 0.71, "relation_vqa": 0.26}
BF_CLIP = {"background": 0.87, "style": 0.58}
SQUASH_LOW, SQUASH_HIGH = 0.54, 0.66
RESIZE_ENLARGE, RESIZE_SHRINK = 1.6, 0.6
FID_SCALE = 25.0
#: The smallest object the HATIE dataset keeps: a box of 0.5 % of the image (App. A).
MIN_AREA_FRACTION = 0.005

#: Total weights (hatie-notes "Total"): OF, BF, OC, BC inside, and the share of IQ.
PUBLISHED_TOTAL = {"object_fidelity": 0.2, "background_fidelity": 0.4, "object_consistency": 0.1,
                   "background_consistency": 0.3}
#: The per-edit-type totals of the published code, which swap the two fidelity weights.
SWAPPED_TOTAL = {"object_fidelity": 0.4, "background_fidelity": 0.2, "object_consistency": 0.1,
                 "background_consistency": 0.3}
IQ_SHARE = 0.2
TOTAL_WEIGHT_SETS: dict[str, dict[str, float]] = {"published": PUBLISHED_TOTAL, "per-type-code": SWAPPED_TOTAL}


@dataclass(frozen=True)
class HatieOptions:
    """The named choices where the paper, the published code and our setting differ (method notes).

    * ``vqa``: VQA answers are part of the measures; when False the VQA terms are left out and
      the remaining weights of that combination are divided by their sum (still convex).
    * ``bc_clip``: Background Consistency includes the CLIP image similarity of the published
      code (True, default) or only the paper's LPIPS / DINO / L2 (renormalised).
    * ``bc_power``: the exponent of the object-edit Background Consistency (code: 6).
    * ``bf_squash``: Background Fidelity passes through the code's squashing function.
    * ``relation_prompt``: the text of the add-relation check, ``"anchor"`` ("cup on table",
      what the paper means) or ``"repeat"`` (the code's "cup on cup").
    * ``total``: a name in :data:`TOTAL_WEIGHT_SETS` or a calibrated set (see
      :mod:`.hatie_calibration`).
    """

    vqa: bool = False
    bc_clip: bool = True
    bc_power: float = BC_POWER
    bf_squash: bool = True
    relation_prompt: str = "anchor"
    total: str = "published"
    min_area_fraction: float = MIN_AREA_FRACTION
    max_mse: float = 1.0

    def __post_init__(self) -> None:
        if self.relation_prompt not in ("anchor", "repeat"):
            raise ValueError(f"relation_prompt must be 'anchor' or 'repeat', got {self.relation_prompt!r}")
        if not (self.bc_power > 0 and math.isfinite(self.bc_power)):
            raise ValueError(f"bc_power must be a positive number, got {self.bc_power!r}")
        if not 0 < self.min_area_fraction <= 1:
            raise ValueError(f"min_area_fraction must be in (0, 1], got {self.min_area_fraction!r}")
        if not self.max_mse > 0:
            raise ValueError(f"max_mse must be positive, got {self.max_mse!r}")

    def to_dict(self) -> dict[str, Any]:
        return {"vqa": self.vqa, "bc_clip": self.bc_clip, "bc_power": self.bc_power, "bf_squash": self.bf_squash,
                "relation_prompt": self.relation_prompt, "total": self.total,
                "min_area_fraction": self.min_area_fraction, "max_mse": self.max_mse}

    def with_(self, **changes: Any) -> HatieOptions:
        return replace(self, **changes)


# ---------------------------------------------------------------------------------------------- normalisation
def cosine_to_unit(cos: float) -> float:
    """A cosine similarity in [-1, 1] as (1 + cos) / 2 in [0, 1]."""
    return (1.0 + float(cos)) / 2.0


def lpips_to_similarity(distance: float) -> float:
    """An LPIPS distance as 1 - d, clipped to [0, 1] (LPIPS can pass 1 on very different images)."""
    return float(min(1.0, max(0.0, 1.0 - float(distance))))


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


def centre_of_mass(mask: np.ndarray) -> tuple[float, float]:
    """(row, column) of the mask's centre of mass; raises on an empty mask."""
    rows, cols = np.nonzero(np.asarray(mask, dtype=bool))
    if rows.size == 0:
        raise ValueError("the mask is empty: it has no centre of mass")
    return float(rows.mean()), float(cols.mean())


def largest_shift(shape: tuple[int, int], min_area_fraction: float = MIN_AREA_FRACTION) -> float:
    """The largest centre shift over sqrt(area) the dataset filter allows: the image diagonal over the
    side of the smallest object kept (App. A: 0.5 % of the image); 20 for any square image."""
    h, w = shape
    return math.hypot(h, w) / math.sqrt(min_area_fraction * h * w)


def position_consistency(source_mask: np.ndarray, edit_mask: np.ndarray,
                         min_area_fraction: float = MIN_AREA_FRACTION) -> tuple[float, float]:
    """(score, relative shift): the shift of the centre of mass over sqrt(source area), mapped
    linearly from 1 (no shift) to 0 (the largest shift, :func:`largest_shift`) (App. C.2)."""
    (r0, c0), (r1, c1) = centre_of_mass(source_mask), centre_of_mass(edit_mask)
    shift = math.hypot(r1 - r0, c1 - c0) / math.sqrt(mask_area(source_mask))
    return max(0.0, 1.0 - shift / largest_shift(np.shape(source_mask), min_area_fraction)), shift


def size_ratio(source_area: float, edit_area: float) -> float:
    """sqrt(edit area / source area): the relative change of the object's linear size."""
    if source_area <= 0:
        raise ValueError("the source object has no area")
    return math.sqrt(edit_area / source_area)


def size_consistency(source_area: float, edit_area: float, image_area: float) -> tuple[float, float]:
    """(score, ratio): 1 for an unchanged size, falling linearly to 0 at ratio 0 and at the largest
    possible ratio, sqrt(image area / source area) (the object filling the image) (App. C.2)."""
    ratio = size_ratio(source_area, edit_area)
    if ratio <= 1.0:
        return ratio, ratio
    top = math.sqrt(image_area / source_area)
    if top <= 1.0:
        return 0.0, ratio
    return max(0.0, 1.0 - (ratio - 1.0) / (top - 1.0)), ratio


def size_fidelity(source_area: float, edit_area: float, direction: str, *, enlarge: float = RESIZE_ENLARGE,
                  shrink: float = RESIZE_SHRINK) -> tuple[float, float]:
    """(score, ratio) of a resize: full marks past the threshold (1.6 larger, 0.6 smaller), zero for
    no change or a change the wrong way, linear between (App. C.2, Fig. II(a))."""
    ratio = size_ratio(source_area, edit_area)
    if direction == "larger":
        return min(1.0, max(0.0, (ratio - 1.0) / (enlarge - 1.0))), ratio
    if direction == "smaller":
        return min(1.0, max(0.0, (1.0 - ratio) / (1.0 - shrink))), ratio
    raise ValueError(f"a resize must be 'larger' or 'smaller', got {direction!r}")


def squash(x: float, low: float = SQUASH_LOW, high: float = SQUASH_HIGH) -> float:
    """0 below ``low``, 1 above ``high``, the smooth cubic 3t^2 - 2t^3 between (t = (x - low) / (high - low))."""
    t = min(1.0, max(0.0, (float(x) - low) / (high - low)))
    return t * t * (3.0 - 2.0 * t)


def image_quality(fid: float, scale: float = FID_SCALE) -> float:
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
    return frechet_distance(a.mean(0), np.cov(a, rowvar=False), b.mean(0), np.cov(b, rowvar=False))


# ---------------------------------------------------------------------------------------------- results
@dataclass
class Component:
    """One measure inside a criterion: its value, its weight there, and where it came from."""

    name: str
    value: float | None
    weight: float
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "value": self.value, "weight": self.weight, "note": self.note}


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
    components = [Component(name, value, w / total, note) for name, value, w in present]
    return float(sum(c.value * c.weight for c in components)), components  # type: ignore[operator]


@dataclass(frozen=True)
class ObjectEvidence:
    """What the models say about one object in the edited image (Object Fidelity's detection part)."""

    found: bool
    confidence: float = 0.0  # detector score (0 when not found)
    clip: float | None = None  # (1 + cos) / 2 of the object's square crop vs its name
    vqa: float | None = None  # P(yes) of "is there a ... ?", when VQA is on


def _presence(kind: str, evidence: ObjectEvidence, options: HatieOptions) -> tuple[float, list[Component]]:
    w_clip, w_det, w_vqa = OF_PRESENCE[kind]
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
            return CriterionScore(key, 0.0, [Component("size_fidelity", 0.0, 1.0, "object not found in the edit")],
                                  notes=["the object was not found in the edit: Object Fidelity is 0 (App. C.1.4)"])
        score, ratio = size_fidelity(source_area, edit_area, direction or "")
        return CriterionScore(key, score, [Component("size_fidelity", score, 1.0, f"size ratio {ratio:.3f}"),
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
        value, outer = weighted([("presence", presence, ADD_MIX["presence"]),
                                 ("relation_clip", relation_clip, ADD_MIX["relation_clip"]),
                                 ("relation_vqa", relation_vqa if options.vqa else None, ADD_MIX["relation_vqa"])])
        inner = [Component(f"presence.{c.name}", c.value, c.weight) for c in parts]
        return CriterionScore(key, value, outer + inner)
    return CriterionScore(key, None, reason=f"Object Fidelity is not part of a {edit_type} edit")


def background_fidelity(edit_type: str, clip: float | None, vqa: float | None,
                        options: HatieOptions) -> CriterionScore:
    """Background Fidelity of a background or style change: CLIP of the background (style: the whole
    image) vs the wanted background / style, with VQA, through :func:`squash` (published code)."""
    key = "background_fidelity"
    if edit_type not in BF_CLIP:
        return CriterionScore(key, None, reason=f"Background Fidelity is not part of a {edit_type} edit")
    w = BF_CLIP[edit_type]
    try:
        raw, parts = weighted([("clip_background", clip, w), ("vqa_background", vqa if options.vqa else None, 1 - w)])
    except ValueError:
        return CriterionScore(key, None, reason="no CLIP similarity of the background")
    if not options.bf_squash:
        return CriterionScore(key, raw, parts)
    value = squash(raw)
    return CriterionScore(key, value, parts + [Component("before_squash", raw, 0.0, "squashed: 0.54 -> 0, 0.66 -> 1")])


def appearance(similarities: Similarities) -> tuple[float, list[Component]]:
    """The four-measure object appearance (CLIP / LPIPS / DINO / L2: 0.23 / 0.01 / 0.11 / 0.65)."""
    s = similarities
    return weighted([("clip", s.clip, APPEARANCE_WEIGHTS["clip"]), ("lpips", s.lpips, APPEARANCE_WEIGHTS["lpips"]),
                     ("dino", s.dino, APPEARANCE_WEIGHTS["dino"]), ("l2", s.l2, APPEARANCE_WEIGHTS["l2"])])


def comparisons_score(by_comparison: Mapping[str, Similarities], outer: Mapping[str, float],
                      inner: Mapping[str, tuple[float, float, float]]) -> tuple[float, list[Component]]:
    """sum over comparisons of outer weight x (inner weights . (LPIPS, DINO, L2)) (Eq. 10-16)."""
    components: list[Component] = []
    parts = []
    for name in COMPARISONS:
        s = by_comparison.get(name)
        if s is None:
            continue
        value, inner_parts = weighted(list(zip(("lpips", "dino", "l2"), (s.lpips, s.dino, s.l2), inner[name])))
        parts.append((name, value, outer[name]))
        components += [Component(f"{name}.{c.name}", c.value, c.weight) for c in inner_parts]
    value, outer_parts = weighted(parts)
    return value, outer_parts + components


def object_consistency(edit_type: str, *, source_mask: np.ndarray | None, edit_mask: np.ndarray | None,
                       appearance_by_comparison: Mapping[str, Similarities] | None,
                       options: HatieOptions, prefix: str = "") -> CriterionScore:
    """Object Consistency of one object: appearance, position and size, mixed per edit type (Eq. 3, 9-12)."""
    key = "object_consistency"
    if edit_type not in OC_MIX:
        return CriterionScore(key, None, reason=f"Object Consistency is not part of a {edit_type} edit")
    if source_mask is None or not mask_area(source_mask):
        return CriterionScore(key, None, reason="the object was not found in the source image")
    if edit_mask is None or not mask_area(edit_mask):
        return CriterionScore(key, 0.0, notes=["the object was not found in the edit: Object Consistency is 0"])
    position, shift = position_consistency(source_mask, edit_mask, options.min_area_fraction)
    size, ratio = size_consistency(mask_area(source_mask), mask_area(edit_mask), float(np.size(source_mask)))
    w_app, w_pos, w_size = OC_MIX[edit_type]
    look: float | None = None
    look_parts: list[Component] = []
    if w_app > 0:
        comparisons = dict(appearance_by_comparison or {})
        if edit_type == "attribute":
            look, look_parts = comparisons_score(comparisons, ATTRIBUTE_OUTER, ATTRIBUTE_INNER)
        else:
            look, look_parts = appearance(comparisons.get("plain", Similarities()))
    value, parts = weighted([("appearance", look, w_app), ("position", position, w_pos), ("size", size, w_size)])
    extra = [Component("centre_shift", shift, 0.0, "centre-of-mass shift / sqrt(source area)"),
             Component("size_ratio", ratio, 0.0, "sqrt(edit area / source area)")]
    if w_size == 0:
        extra.append(Component("size", size, 0.0, "not weighted for this edit type"))
    return CriterionScore(key, value, [Component(prefix + c.name, c.value, c.weight, c.note)
                                       for c in parts + [Component(f"appearance.{p.name}", p.value, p.weight)
                                                         for p in look_parts] + extra])


def mean_object_consistency(scores: Sequence[CriterionScore]) -> CriterionScore:
    """Background change: the mean Object Consistency over the foreground objects (Eq. 13)."""
    values = [s.value for s in scores if s.value is not None]
    if not values:
        return CriterionScore("object_consistency", None, reason="no foreground object found in the source image")
    components = [Component(c.name, c.value, c.weight / len(values), c.note)
                  for s in scores if s.value is not None for c in s.components]
    return CriterionScore("object_consistency", float(np.mean(values)), components,
                          notes=[f"mean over {len(values)} foreground object(s)"])


def background_consistency(edit_type: str, by_comparison: Mapping[str, Similarities],
                           options: HatieOptions) -> CriterionScore:
    """Background Consistency: the four similarities of the masked backgrounds, weighted and raised to
    the power 6 (object edits); the four comparisons of the whole images (style change)."""
    key = "background_consistency"
    if "background_consistency" not in TYPE_CRITERIA.get(edit_type, ()):
        return CriterionScore(key, None, reason=f"Background Consistency is not part of a {edit_type} edit")
    if edit_type == "style":
        value, parts = comparisons_score(by_comparison, STYLE_OUTER, STYLE_INNER)
        return CriterionScore(key, value, parts)
    s = by_comparison.get("plain", Similarities())
    w = BACKGROUND_WEIGHTS
    base, parts = weighted([("clip", s.clip if options.bc_clip else None, w["clip"]), ("lpips", s.lpips, w["lpips"]),
                            ("dino", s.dino, w["dino"]), ("l2", s.l2, w["l2"])])
    value = base ** options.bc_power
    return CriterionScore(key, value, parts + [Component("before_power", base, 0.0, f"raised to {options.bc_power:g}")])


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


def edit_total(criteria: Mapping[str, float | None], weights: Mapping[str, float]) -> float | None:
    """One edit's total over the criteria it has (weights renormalised over them); no IQ (a set measure)."""
    present = [(criteria[k], weights[k]) for k in CRITERIA if criteria.get(k) is not None and weights[k] > 0]
    total = sum(w for _, w in present)
    if not present or total <= 0:
        return None
    return float(sum(v * w for v, w in present) / total)  # type: ignore[operator]


def set_total(means: Mapping[str, float | None], weights: Mapping[str, float], iq: float | None,
              iq_share: float = IQ_SHARE) -> float | None:
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
