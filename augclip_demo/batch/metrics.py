"""The metrics a batch run can compute, and what each one needs.

A :class:`BatchMetric` runs at one of two stages:

* ``pixels``: in the decode workers, with the decoded source and edited images of one item
  (:class:`PixelContext`); e.g. L2, and later BPM (which also needs the item's instruction);
* ``embeddings``: in the fit pool, with the CLIP embeddings of one item (:class:`EmbeddingContext`);
  e.g. AugCLIP (whose hyperplane fits run here, in parallel with the encoder), CLIPdir, CLIP-I/-T.

``needs`` names the inputs a metric uses (``target_text``, ``source_text``, ``attributes``,
``instruction``): the runner encodes only the texts the chosen metrics need, resolves attributes
only when one needs them, and reports a metric as unavailable (with the reason) for an item that
lacks an optional input. Adding a metric is one :func:`register_batch_metric` call, e.g. for BPM::

    register_batch_metric(BatchMetric("bpm", "pixels", frozenset({"instruction"}), _bpm))

with ``_bpm(ctx, i)`` returning ``bpm_score(ctx.source.image, ctx.edits[i].image, ctx.item.instruction)``.
Values are plain floats; raise :class:`MetricUnavailable` to report a reason instead.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from ..errors import InputError
from ..io import LoadedImage
from ..metrics.augclip import augclip_score
from ..metrics.clip_metrics import (
    AUGMENTED_VARIANTS,
    augmented_clip_dir,
    augmented_variant_name,
    clip_dir,
    clip_i,
    clip_t,
)
from ..metrics.pixel import l2_distance
from .manifest import ManifestItem

Stage = Literal["pixels", "embeddings"]
NO_SOURCE_TEXT = "no source text given: CLIPdir needs one (Eq. 2) and is not computed from a made-up text"
NO_INSTRUCTION = "no instruction given in the manifest"
DEFAULT_METRICS: tuple[str, ...] = ("augclip", "clip_dir", "clip_i", "clip_t", "l2")


class MetricUnavailable(Exception):
    """Raised by a metric for an edit it cannot score; the message is recorded as the reason."""


@dataclass
class PixelContext:
    """One item's decoded images (pixel-stage metrics)."""

    item: ManifestItem
    source: LoadedImage
    edits: list[LoadedImage]
    cache: dict[str, Any] = field(default_factory=dict)  # per-item memo shared by the item's edits


@dataclass
class EmbeddingContext:
    """One item's embeddings (unit rows) and AugCLIP options (embedding-stage metrics).

    Plain arrays and builtins only, so it can be sent to a fit worker process.
    """

    source: np.ndarray
    edits: np.ndarray
    target_text: np.ndarray | None
    source_text: np.ndarray | None
    source_attrs: np.ndarray | None
    target_attrs: np.ndarray | None
    options: dict[str, Any]
    details: list[dict[str, Any]] = field(default_factory=list)  # per edit: extra values for the results
    cache: dict[str, Any] = field(default_factory=dict)


MetricFn = Callable[[Any, int], float]


@dataclass(frozen=True)
class BatchMetric:
    key: str
    stage: Stage
    needs: frozenset[str]
    compute: MetricFn


BATCH_METRICS: dict[str, BatchMetric] = {}


def register_batch_metric(metric: BatchMetric) -> None:
    """Make a metric selectable with ``--metrics`` (also register its label with metrics.registry)."""
    if metric.stage not in ("pixels", "embeddings"):
        raise ValueError(f"stage must be 'pixels' or 'embeddings', got {metric.stage!r}")
    BATCH_METRICS[metric.key] = metric


def parse_metrics(value: str | Iterable[str] | None) -> list[str]:
    """``"augclip,l2"`` / a list / ``None`` (the default set) / ``"all"`` -> validated metric keys."""
    if value is None:
        return list(DEFAULT_METRICS)
    names = [part.strip() for part in (value.split(",") if isinstance(value, str) else value)]
    names = [name for part in names for name in part.split(",") if name.strip()]
    if not names:
        raise InputError("no metric given; choose from " + ", ".join(BATCH_METRICS))
    if names == ["all"]:
        return list(BATCH_METRICS)
    unknown = [name for name in names if name not in BATCH_METRICS]
    if unknown:
        raise InputError(f"unknown metric(s) {', '.join(unknown)}; available: {', '.join(BATCH_METRICS)} (or 'all')")
    return list(dict.fromkeys(names))


def metric_needs(keys: Iterable[str]) -> set[str]:
    return {need for key in keys for need in BATCH_METRICS[key].needs}


# ---------------------------------------------------------------------------------------------- core metrics
def _augclip(ctx: EmbeddingContext, i: int) -> float:
    opts = ctx.options
    res = augclip_score(ctx.source, ctx.edits[i], ctx.source_attrs, ctx.target_attrs,
                        weighting=opts["weighting"], include_images=opts["include_images"],
                        classifier=opts["classifier"], C=opts["C"],
                        weight_scaling=opts.get("weight_scaling", "raw"), projection=opts.get("projection", "clamped"))
    ctx.details[i]["augclip"] = {"c": res.c, "w_norm": res.w_norm, "v_norm": float(np.linalg.norm(res.v)),
                                 "fit_accuracy": res.fit_accuracy}
    return res.score


def _clip_dir(ctx: EmbeddingContext, i: int) -> float:
    if ctx.source_text is None:
        raise MetricUnavailable(NO_SOURCE_TEXT)
    assert ctx.target_text is not None
    return clip_dir(ctx.source, ctx.edits[i], ctx.source_text, ctx.target_text)


def _clip_i(ctx: EmbeddingContext, i: int) -> float:
    return clip_i(ctx.source, ctx.edits[i])


def _clip_t(ctx: EmbeddingContext, i: int) -> float:
    assert ctx.target_text is not None
    return clip_t(ctx.edits[i], ctx.target_text)


def _l2(ctx: PixelContext, i: int) -> float:
    return l2_distance(ctx.source.image, ctx.edits[i].image)


def _augmented(replace: str, weighted: bool) -> MetricFn:
    def compute(ctx: EmbeddingContext, i: int) -> float:
        if replace == "tgt" and ctx.source_text is None:
            raise MetricUnavailable(NO_SOURCE_TEXT)
        return augmented_clip_dir(ctx.source, ctx.edits[i], ctx.source_attrs, ctx.target_attrs, replace,  # type: ignore[arg-type]
                                  weighted, src_text=ctx.source_text, tgt_text=ctx.target_text)
    return compute


for _metric in [
    BatchMetric("augclip", "embeddings", frozenset({"attributes"}), _augclip),
    BatchMetric("clip_dir", "embeddings", frozenset({"target_text", "source_text"}), _clip_dir),
    BatchMetric("clip_i", "embeddings", frozenset(), _clip_i),
    BatchMetric("clip_t", "embeddings", frozenset({"target_text"}), _clip_t),
    BatchMetric("l2", "pixels", frozenset(), _l2),
    *[BatchMetric(augmented_variant_name(replace, weighted), "embeddings",
                  frozenset({"attributes", "target_text"} | ({"source_text"} if replace == "tgt" else set())),
                  _augmented(replace, weighted))
      for replace, weighted in AUGMENTED_VARIANTS],
]:
    register_batch_metric(_metric)


# ---------------------------------------------------------------------------------------------- evaluation
def _run(metric: BatchMetric, ctx: Any, n_edits: int, values: list[dict[str, float | None]],
         unavailable: list[dict[str, str]]) -> None:
    for i in range(n_edits):
        try:
            value = float(metric.compute(ctx, i))
            values[i][metric.key] = value if np.isfinite(value) else None
            if not np.isfinite(value):
                unavailable[i][metric.key] = "the metric is undefined for this edit (not a finite number)"
        except (MetricUnavailable, ValueError) as exc:
            # ValueError: the metric's own input checks (e.g. a degenerate AugCLIP fit); the edit
            # gets no value and the reason, the other metrics and edits are still computed.
            values[i][metric.key] = None
            unavailable[i][metric.key] = str(exc)


def score_pixels(ctx: PixelContext, keys: Iterable[str]) -> tuple[list[dict[str, float | None]], list[dict[str, str]]]:
    """Pixel-stage metrics for every edit of one item: (values per edit, reasons per edit)."""
    n = len(ctx.edits)
    values: list[dict[str, float | None]] = [{} for _ in range(n)]
    unavailable: list[dict[str, str]] = [{} for _ in range(n)]
    for key in keys:
        metric = BATCH_METRICS[key]
        if "instruction" in metric.needs and not ctx.item.instruction:
            for i in range(n):
                values[i][key] = None
                unavailable[i][key] = NO_INSTRUCTION
            continue
        _run(metric, ctx, n, values, unavailable)
    return values, unavailable


def score_embeddings(ctx: EmbeddingContext, keys: list[str]
                     ) -> tuple[list[dict[str, float | None]], list[dict[str, str]], list[dict[str, Any]]]:
    """Embedding-stage metrics for every edit of one item (runs in a fit worker: no model here)."""
    n = len(ctx.edits)
    ctx.details = [{} for _ in range(n)]
    values: list[dict[str, float | None]] = [{} for _ in range(n)]
    unavailable: list[dict[str, str]] = [{} for _ in range(n)]
    for key in keys:
        _run(BATCH_METRICS[key], ctx, n, values, unavailable)
    return values, unavailable, ctx.details
