"""What each metric is called, which way is better, and which are shown by default."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from .clip_metrics import AUGMENTED_VARIANTS, augmented_variant_name


@dataclass(frozen=True)
class MetricInfo:
    key: str
    label: str
    higher_is_better: bool
    description: str
    primary: bool = False


def _augmented_info(replace: str, weighted: bool) -> MetricInfo:
    what = {"src": "source text -> mean of D_S", "tgt": "target text -> mean of D_T", "both": "both texts -> attribute means"}
    return MetricInfo(
        key=augmented_variant_name(replace, weighted),  # type: ignore[arg-type]
        label=f"CLIPdir+{replace}{' (w)' if weighted else ''}",
        higher_is_better=True,
        description=f"augmented CLIPdir, {what[replace]}" + (" (alpha-weighted, Eq. 14)" if weighted else " (Eq. 13)"),
    )


METRICS: dict[str, MetricInfo] = {
    info.key: info
    for info in [
        MetricInfo("augclip", "AugCLIP", True, "cosine to the estimated ideal edit E(I_src)+v (Eq. 3)", primary=True),
        MetricInfo("clip_dir", "CLIPdir", True, "directional CLIP similarity (Eq. 1-2); needs a source text", primary=True),
        MetricInfo("clip_i", "CLIP-I", True, "cosine between edit and source image (preservation)", primary=True),
        MetricInfo("clip_t", "CLIP-T", True, "cosine between edit and target text (modification)", primary=True),
        MetricInfo("l2", "L2", False, "pixel RMSE in [0,1] to the source (lower is better)", primary=True),
        *[_augmented_info(replace, weighted) for replace, weighted in AUGMENTED_VARIANTS],
    ]
}


def register_metric(info: MetricInfo) -> None:
    """Add a metric (e.g. BPM) so tables, verdicts and protocols know its direction and label."""
    METRICS[info.key] = info


register_metric(MetricInfo(
    "bpm", "BPM", True,
    "BPM paper, Alg. 1: 0.7 S_semantic + 0.3 S_region from GroundingDINO + SAM regions; needs an instruction "
    "(or o1/o2) and the region models",
    primary=True,
))




def best_index(values: Sequence[float | None], key: str) -> int | None:
    """Index of the best value under metric ``key`` (first on ties); None if no value is available."""
    info = METRICS.get(key)
    higher = info.higher_is_better if info else True
    best: int | None = None
    for i, value in enumerate(values):
        if value is None or (isinstance(value, float) and math.isnan(value)):
            continue
        if best is None:
            best = i
            continue
        current = values[best]
        assert current is not None
        if (value > current) if higher else (value < current):
            best = i
    return best
