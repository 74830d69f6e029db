"""BPM's components and their combination (Sec. 3.3-3.4, Alg. 1-2, App. A.4): numpy on boxes, masks, pixels
and embeddings. The paper calls the two halves its Region-Aware and Semantic-Aware "judges"; here they are
the region rules and the semantic measures, so that "judge" means one thing in this package: the MLLM judge
(:mod:`augclip_demo.judge`).

Region rules, the paper's Region-Aware Judge (each 0 or 1)::

    f_size:      r = area(M_edit) / area(M_origin)
                 larger: r >= size_change_ratio;  smaller: r <= 1 / size_change_ratio;
                 unchanged: 1 / size_unchanged_ratio <= r <= size_unchanged_ratio;  add: 1 (App. A.4)
    f_position:  centres c_a (anchor box) and c_e (edit box), d = c_e - c_a (image y grows downwards)
                 left/right/up/down: (1) d points the asked way, (2) the off-axis part of d is at most
                 direction_ratio x the on-axis part, (3) IoU(anchor, edit) < move_iou_max (saliency);
                 unchanged: IoU > unchanged_iou_min;  remove: 1 (App. A.4)
                 inside: area(edit box within anchor box) / area(edit box) >= inside_min_fraction
                 near:   gap between the boxes <= near_max_gap x their mean diagonal, and IoU < move_iou_max

Semantic measures, the paper's Semantic-Aware Judge::

    S_modify   = cs(CLIP_I(crop(I_edit, B_edit)) - CLIP_I(crop(I_src, B_origin)), CLIP_T(o2) - CLIP_T(o1))
    S_preserve = 1 - RMSE(I_src, I_edit) over the pixels outside M_origin U M_edit (pixels in [0, 1])
    S_semantic = Norm(S_modify) + S_preserve,   S_region = S_size + S_position
    BPM        = alpha S_semantic + (1 - alpha) S_region,  alpha = 0.7 (Table 9)

Norm: the paper min-max normalises S_modify (Alg. 2 line 2), which needs a set of scores. One
pair has none, so a single evaluation maps the cosine with the fixed (S_modify + 1) / 2 and says
so (``s_modify_normalization = "pair"`` in every result); :func:`dataset_min_max` and
:func:`rescore_over_dataset` give the paper's dataset-level version for a batch of scores.
Crops are padded to a square (:func:`pad_to_square`) before CLIP sees them: CLIP's preprocessing
centre-crops to a square and would cut off the ends of a long box.

The paper's "inside" and "near" states come without a rule (Fig. 6 lists them, Sec. 3.3 only
describes the four directions and "unchanged"); the two rules above are ours, each with a named
threshold. Sec. 3.3's "anchor" is the reference object when the instruction names one, else the
edited object's original box (so "move the apple to the right" compares the apple with itself).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
from PIL import Image

from ..choices import DEFAULT_BPM_ALPHA, RegionThresholds
from ..errors import InputError
from ..metrics.pixel import l2_distance
from ..metrics.vectors import cosine, normalize


@dataclass(frozen=True)
class RegionCheck:
    """One region rule's verdict (f_size or f_position): 0 or 1, why, and the numbers it looked at."""

    score: int
    reason: str
    values: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"score": self.score, "reason": self.reason, "values": dict(self.values)}


# ---------------------------------------------------------------------- boxes
def as_box(value: Any, name: str = "box") -> np.ndarray:
    """``value`` as a float ``(4,)`` box ``[x0, y0, x1, y1]`` with x0 <= x1, y0 <= y1, or InputError."""
    box = np.asarray(value, dtype=np.float64).reshape(-1)
    if box.shape != (4,):
        raise InputError(f"{name} must have 4 numbers [x0, y0, x1, y1], got shape {np.shape(value)}")
    if not np.all(np.isfinite(box)):
        raise InputError(f"{name} contains NaN or infinite values: {box.tolist()}")
    if box[2] < box[0] or box[3] < box[1]:
        raise InputError(f"{name} is not [x0, y0, x1, y1] with x0 <= x1 and y0 <= y1: {box.tolist()}")
    return box


def box_area(box: np.ndarray) -> float:
    return float(max(box[2] - box[0], 0.0) * max(box[3] - box[1], 0.0))


def _box_center(box: np.ndarray) -> np.ndarray:
    return np.array([(box[0] + box[2]) / 2.0, (box[1] + box[3]) / 2.0])


def _box_intersection(a: np.ndarray, b: np.ndarray) -> float:
    width = min(a[2], b[2]) - max(a[0], b[0])
    height = min(a[3], b[3]) - max(a[1], b[1])
    return float(max(width, 0.0) * max(height, 0.0))


def box_iou(a: np.ndarray, b: np.ndarray) -> float:
    """Intersection over union; 0 when both boxes are empty."""
    inter = _box_intersection(a, b)
    union = box_area(a) + box_area(b) - inter
    return inter / union if union > 0 else 0.0


def box_gap(a: np.ndarray, b: np.ndarray) -> float:
    """Shortest distance between the two rectangles (0 when they touch or overlap)."""
    dx = max(a[0] - b[2], b[0] - a[2], 0.0)
    dy = max(a[1] - b[3], b[1] - a[3], 0.0)
    return float(math.hypot(dx, dy))


def full_image_box(size: tuple[int, int]) -> np.ndarray:
    """The box of a whole ``(width, height)`` image."""
    return np.array([0.0, 0.0, float(size[0]), float(size[1])])


#: Padding colour for square crops: CLIP's normalisation mean (OpenAI CLIP), i.e. ~0 after normalising.
PAD_COLOR = (122, 116, 104)


def pad_to_square(image: Image.Image, color: tuple[int, int, int] = PAD_COLOR) -> Image.Image:
    """``image`` centred on a square canvas of its longer side, so a centre crop keeps all of it."""
    width, height = image.size
    side = max(width, height)
    if width == height:
        return image
    canvas = Image.new("RGB", (side, side), color)
    canvas.paste(image.convert("RGB"), ((side - width) // 2, (side - height) // 2))
    return canvas


def crop_box(image: Image.Image, box: np.ndarray) -> Image.Image:
    """``C_B`` of Alg. 2: the pixels inside ``box`` (clamped to the image, at least 1 x 1 pixel)."""
    width, height = image.size
    x0 = int(np.clip(math.floor(box[0]), 0, width - 1))
    y0 = int(np.clip(math.floor(box[1]), 0, height - 1))
    x1 = int(np.clip(math.ceil(box[2]), x0 + 1, width))
    y1 = int(np.clip(math.ceil(box[3]), y0 + 1, height))
    return image.crop((x0, y0, x1, y1))


# ---------------------------------------------------------------------- Region-Aware Judge
def f_size(area_origin: float, area_edit: float, size_state: str,
           thresholds: RegionThresholds | None = None, *, is_add: bool = False,
           origin_found: bool = True, edit_found: bool = True) -> RegionCheck:
    """Size alignment (Sec. 3.3, Fig. 3b): mask areas against the size state.

    ``is_add`` scores 1 whatever the masks (App. A.4 corner case 1: there is no original object).
    A region that was not found, or an empty mask, scores 0: the size cannot be verified.
    """
    th = thresholds or RegionThresholds()
    if is_add:
        return RegionCheck(1, "add: no original object, full size score (App. A.4)")
    if not origin_found or not edit_found:
        missing = "o1 in the source image" if not origin_found else "o2 in the edited image"
        return RegionCheck(0, f"{missing} was not found, so the size change cannot be verified")
    if area_origin <= 0 or area_edit <= 0:
        which = "M_origin" if area_origin <= 0 else "M_edit"
        return RegionCheck(0, f"{which} is empty, so the size change cannot be verified",
                         {"area_origin": float(area_origin), "area_edit": float(area_edit)})
    ratio = float(area_edit) / float(area_origin)
    values = {"area_origin": float(area_origin), "area_edit": float(area_edit), "ratio": ratio}
    if size_state == "larger":
        ok = ratio >= th.size_change_ratio
        rule = f"area ratio {ratio:.3f} {'>=' if ok else '<'} {th.size_change_ratio:g} (larger)"
    elif size_state == "smaller":
        limit = 1.0 / th.size_change_ratio
        ok = ratio <= limit
        rule = f"area ratio {ratio:.3f} {'<=' if ok else '>'} {limit:.3f} (smaller)"
    elif size_state == "unchanged":
        low, high = 1.0 / th.size_unchanged_ratio, th.size_unchanged_ratio
        ok = low <= ratio <= high
        rule = f"area ratio {ratio:.3f} {'within' if ok else 'outside'} [{low:.3f}, {high:.3f}] (unchanged)"
    else:
        raise InputError(f"unknown size state {size_state!r}")
    return RegionCheck(int(ok), rule, values)


def f_position(anchor_box: np.ndarray | None, edit_box: np.ndarray | None, position_state: str,
               thresholds: RegionThresholds | None = None, *, is_remove: bool = False,
               anchor_found: bool = True, edit_found: bool = True) -> RegionCheck:
    """Position alignment (Sec. 3.3, Fig. 3a): the edit box against its anchor box.

    ``is_remove`` scores 1 (App. A.4 corner case 2: nothing is left to place). A box that was not
    found scores 0. See the module docstring for each state's rule.
    """
    th = thresholds or RegionThresholds()
    if is_remove:
        return RegionCheck(1, "remove: no edited object, full position score (App. A.4)")
    if not anchor_found or anchor_box is None:
        return RegionCheck(0, "the anchor (reference or original object) was not found, so the position cannot be verified")
    if not edit_found or edit_box is None:
        return RegionCheck(0, "o2 was not found in the edited image, so its position cannot be verified")
    anchor, edit = as_box(anchor_box, "anchor box"), as_box(edit_box, "edit box")
    iou = box_iou(anchor, edit)
    dx, dy = (_box_center(edit) - _box_center(anchor)).tolist()
    values = {"iou": iou, "dx": dx, "dy": dy}
    if position_state == "unchanged":
        ok = iou > th.unchanged_iou_min
        return RegionCheck(int(ok), f"IoU {iou:.3f} {'>' if ok else '<='} {th.unchanged_iou_min:g} (unchanged)", values)
    if position_state in ("left", "right", "up", "down"):
        along = {"left": -dx, "right": dx, "up": -dy, "down": dy}[position_state]
        across = abs(dy) if position_state in ("left", "right") else abs(dx)
        checks = {
            "position": along > 0,
            "direction": across <= th.direction_ratio * along,
            "saliency": iou < th.move_iou_max,
        }
        values.update({"along": along, "across": across})
        failed = [name for name, passed in checks.items() if not passed]
        if not failed:
            reason = (f"centre moved {along:.1f} px {position_state} ({across:.1f} px across), IoU {iou:.3f} < "
                      f"{th.move_iou_max:g}")
        else:
            reason = f"{position_state}: failed {', '.join(failed)} (along {along:.1f} px, across {across:.1f} px, IoU {iou:.3f})"
        return RegionCheck(int(not failed), reason, values)
    if position_state == "inside":
        area = box_area(edit)
        if area <= 0:
            return RegionCheck(0, "the edit box is empty", values)
        fraction = _box_intersection(edit, anchor) / area
        values["inside_fraction"] = fraction
        ok = fraction >= th.inside_min_fraction
        return RegionCheck(int(ok), f"{fraction:.0%} of the edit box lies in the anchor box "
                                  f"({'>=' if ok else '<'} {th.inside_min_fraction:.0%})", values)
    if position_state == "near":
        gap = box_gap(anchor, edit)
        scale = (math.hypot(anchor[2] - anchor[0], anchor[3] - anchor[1])
                 + math.hypot(edit[2] - edit[0], edit[3] - edit[1])) / 2.0
        values.update({"gap": gap, "scale": scale})
        close = gap <= th.near_max_gap * scale
        distinct = iou < th.move_iou_max
        ok = close and distinct
        reason = (f"gap {gap:.1f} px {'<=' if close else '>'} {th.near_max_gap:g} x {scale:.1f} px, IoU {iou:.3f} "
                  f"{'<' if distinct else '>='} {th.move_iou_max:g}")
        return RegionCheck(int(ok), reason + " (near)", values)
    raise InputError(f"unknown position state {position_state!r}")


# ---------------------------------------------------------------------- Semantic-Aware Judge
def preserved_region(mask_origin: np.ndarray | None, mask_edit: np.ndarray | None,
                     shape: tuple[int, int]) -> np.ndarray:
    """``1 - M_origin U M_edit`` (Eq. 2-3): True where the pixels should be preserved."""
    union = np.zeros(shape, dtype=bool)
    for name, mask in (("M_origin", mask_origin), ("M_edit", mask_edit)):
        if mask is None:
            continue
        mask = np.asarray(mask, dtype=bool)
        if mask.shape != tuple(shape):
            raise InputError(f"{name} has shape {mask.shape}, expected the source image's {tuple(shape)}")
        union |= mask
    return ~union


@dataclass(frozen=True)
class Preservation:
    """S_preserve and what it was computed on; ``empty`` when no pixel is left to compare."""

    score: float
    rmse: float | None
    fraction: float
    empty: bool
    reason: str


def s_preserve(source: Image.Image, edited: Image.Image, keep: np.ndarray) -> Preservation:
    """S_preserve = 1 - RMSE of the pixels (in [0, 1]) that ``keep`` marks, edit resized to the source.

    When ``keep`` is empty (the masks cover the whole image) there is nothing that should have been
    preserved, so nothing was lost: the score is defined as 1.0 and the result is flagged ``empty``.
    """
    keep = np.asarray(keep, dtype=bool)
    expected = (source.size[1], source.size[0])
    if keep.shape != expected:
        raise InputError(f"the preserved-region mask has shape {keep.shape}, expected {expected}")
    fraction = float(keep.mean()) if keep.size else 0.0
    if not keep.any():
        return Preservation(1.0, None, 0.0, True,
                            "the edited regions cover the whole image: nothing to preserve, S_preserve = 1 by definition")
    rmse = l2_distance(source, edited, mask=keep)
    return Preservation(1.0 - rmse, rmse, fraction, False, f"RMSE {rmse:.4f} over {fraction:.1%} of the pixels")


def s_modify(origin_crop: np.ndarray, edit_crop: np.ndarray, text_o1: np.ndarray, text_o2: np.ndarray) -> float:
    """Eq. 1 (as CLIPdir): cs(E(crop_edit) - E(crop_origin), E_T(o2) - E_T(o1)), embeddings L2-normalised.

    A zero direction (identical crops, or o1 == o2 as in "make the cup bigger") gives 0: no
    evidence either way (see :func:`augclip_demo.metrics.vectors.cosine`).
    """
    vectors = [normalize(np.asarray(v, dtype=np.float64).reshape(-1)) for v in (origin_crop, edit_crop, text_o1, text_o2)]
    dims = {v.shape[0] for v in vectors}
    if len(dims) != 1:
        raise InputError(f"S_modify needs embeddings of one dimension, got {sorted(dims)}")
    origin, edit, t1, t2 = vectors
    return cosine(edit - origin, t2 - t1)


def normalize_modify(value: float) -> float:
    """The fixed map of a cosine in [-1, 1] to [0, 1], so one pair is scored without a dataset."""
    return (float(value) + 1.0) / 2.0


def dataset_min_max(values: Any) -> np.ndarray:
    """The paper's Norm (Alg. 2 line 2): ``(x - min) / (max - min)`` over a whole set of S_modify values.

    Every value must be finite. A set whose values are all equal has no spread to normalise: it maps
    to 0.5 (the middle, as the pair map gives a zero cosine), rather than dividing by zero.
    """
    array = np.asarray(values, dtype=np.float64).reshape(-1)
    if array.size == 0:
        raise InputError("dataset min-max needs at least one S_modify value")
    if not np.all(np.isfinite(array)):
        raise InputError("dataset min-max got a NaN or infinite S_modify value; drop failed items first")
    low, high = float(array.min()), float(array.max())
    if high - low <= 0:
        return np.full_like(array, 0.5)
    return (array - low) / (high - low)


def rescore_over_dataset(components: Any) -> list[BPMComponents]:
    """Every BPM of a set recomputed with S_modify min-max normalised over the set (the paper's protocol)."""
    items = list(components)
    if not items:
        return []
    normalised = dataset_min_max([c.s_modify for c in items])
    out = []
    for c, norm in zip(items, normalised):
        semantic = float(norm) + c.s_preserve
        out.append(BPMComponents(
            s_modify=c.s_modify, s_modify_norm=float(norm), s_preserve=c.s_preserve, s_semantic=semantic,
            s_size=c.s_size, s_position=c.s_position, s_region=c.s_region,
            bpm=c.alpha * semantic + (1.0 - c.alpha) * c.s_region, overall_raw=c.overall_raw, alpha=c.alpha,
            s_modify_normalization="dataset"))
    return out


@dataclass(frozen=True)
class BPMComponents:
    """Every number of Alg. 1 line 10-12; ``overall_raw`` is the paper's Fig. 4 / 13 "overall"."""

    s_modify: float
    s_modify_norm: float
    s_preserve: float
    s_semantic: float
    s_size: int
    s_position: int
    s_region: int
    bpm: float
    overall_raw: float
    alpha: float
    # "pair": S_modify mapped by the fixed (x + 1) / 2 (one pair); "dataset": min-max over a set (paper)
    #: how S_modify was brought to [0, 1]: "pair" = fixed (x + 1) / 2; "dataset" = min-max over a set (paper)
    s_modify_normalization: str = "pair"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def combine(s_modify_value: float, s_preserve_value: float, s_size: int, s_position: int,
            alpha: float = DEFAULT_BPM_ALPHA) -> BPMComponents:
    """S_semantic = norm(S_modify) + S_preserve; S_region = S_size + S_position;
    BPM = alpha S_semantic + (1 - alpha) S_region; overall_raw = S_modify + S_preserve + S_region
    (un-normalised, as the paper's figures print "S_overall")."""
    if not (0.0 <= alpha <= 1.0):
        raise InputError(f"alpha must be between 0 and 1, got {alpha}")
    modify_norm = normalize_modify(s_modify_value)
    semantic = modify_norm + float(s_preserve_value)
    region = int(s_size) + int(s_position)
    return BPMComponents(
        s_modify=float(s_modify_value),
        s_modify_norm=modify_norm,
        s_preserve=float(s_preserve_value),
        s_semantic=semantic,
        s_size=int(s_size),
        s_position=int(s_position),
        s_region=region,
        bpm=alpha * semantic + (1.0 - alpha) * region,
        overall_raw=float(s_modify_value) + float(s_preserve_value) + region,
        alpha=float(alpha),
    )
