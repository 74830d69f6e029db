"""The metric suite: one table of every per-edit metric, read by everything that scores or shows one.

The Evaluator (``score`` and ``rescore``), batch runs, report tables, verdicts, the app and the
protocol tables all read :data:`METRICS`. A row (:class:`Metric`) holds what a metric is called,
which way is better, what it needs (names from the :data:`NEEDS` vocabulary), what it is computed
from (its basis) and the function that computes it for one edit.

Bases (what a metric is computed from; the pipeline's per-item *stages*, :mod:`augclip_demo.pipeline.stages`,
are what fill them):

* ``embeddings``: pure math on unit embeddings; re-run by every rescore (AugCLIP options and
  attribute lists change them); in batch runs it runs in the fit pool (threads or processes);
* ``pixels``: needs the decoded images; computed once per evaluation (no AugCLIP option changes
  it); in batch runs it runs in the decode workers, while the images are in memory;
* ``regions``: the value is supplied by the BPM stage (:mod:`augclip_demo.bpm`, which needs region
  models); the row has no function, so tables, verdicts and protocols still know its label and
  direction.
* ``judge``: the value is supplied by the MLLM judge (:mod:`augclip_demo.judge`, which calls a chat
  model through :mod:`augclip_demo.llm`); no function here either, for the same reason.

Embeddings reach the metrics as unit float64 vectors: the Evaluator and the batch runner pass every
embedding through :func:`~.vectors.unit_rows` once, where it comes from the encoder, and the
functions here call the ``*_from_unit`` kernels, which do no checks and no normalisation. The
public functions (:func:`~.clip_metrics.clip_dir`, :func:`~.augclip.augclip_score`, ...) keep
checking and normalising their inputs for callers who pass raw embeddings.

Adding a metric is one row: give it a key, label, direction, description, its needs and a
``compute(inputs, i)`` that returns the value for edit ``i`` (a float, or :class:`Scored` to keep a
richer result). Its flags say where it shows: ``primary`` (every table, the Help tab, batch runs by
default) or ``reference`` (tables, where an edit has a value for it: :meth:`Metric.shown`). A need the
vocabulary lacks is one :data:`NEEDS` entry plus the
:class:`MetricInputs` field(s) that carry it. A metric that cannot score one edit raises
:class:`MetricUnavailable` with the reason; an item lacking a need gets the need's ``missing``
reason without the function being called.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from PIL import Image

from ..errors import InputError
from .augclip import augclip_from_unit, augclip_score
from .clip_metrics import (
    AUGMENTED_VARIANTS,
    Replacement,
    augmented_clip_dir_from_unit,
    augmented_variant_name,
    clip_dir_from_unit,
    clip_score_from_unit,
)
from .pixel import l2_distance
from .reference import l1_to_ground_truth, l2_to_ground_truth, structure_distance
from .vectors import cosine

Basis = Literal["embeddings", "pixels", "regions", "judge"]
_BASES: tuple[str, ...] = ("embeddings", "pixels", "regions", "judge")
#: Bases whose values another layer supplies (their rows have no compute function), and how to get them.
_SUPPLIED_BASES: dict[str, str] = {
    "regions": "which needs region models: score them with `augclip-demo bpm`",
    "judge": "which needs an MLLM judge: add --judge (and --judge-model) to `augclip-demo score`",
}
NO_SOURCE_TEXT = "no source text given: CLIPdir needs one (Eq. 2) and is not computed from a made-up text"
_NO_INSTRUCTION = "no instruction given in the manifest"
UNDEFINED = "the metric is undefined for this edit (not a finite number)"
_NO_DINO = ("no ground-truth image given, or DINO not requested (it loads facebook/dino-vits16: ask for the dino_gt "
           "metric)")
_NO_STRUCTURE = "not requested (it loads facebook/dino-vitb8: ask for the structure_distance metric)"
_NO_LPIPS = "not requested (it loads the LPIPS network: ask for the lpips_unedited metric)"
_NO_MASK = "no edit mask given (upload one, or run BPM: its regions then give the mask)"
_NO_UNEDITED = "the edit mask covers the whole image: nothing unedited to compare"
_NO_PIE_CLIP = "not requested (it loads CLIP ViT-L/14: ask for the clip_score_whole / clip_score_edited metrics)"
_NO_PIE_CLIP_MASK = ("no edit mask given, or not requested (it loads CLIP ViT-L/14: ask for the clip_score_edited "
                    "metric)")


class MetricUnavailable(Exception):
    """Raised by a metric for an edit it cannot score; the message is recorded as the reason."""


# ---------------------------------------------------------------------------------------------- inputs
@dataclass(frozen=True)
class _Need:
    """One kind of input a metric may need: the :class:`MetricInputs` fields that carry it."""

    fields: tuple[str, ...]
    description: str
    missing: str  # the reason shown for an edit whose item lacks it


NEEDS: dict[str, _Need] = {
    "image_embeddings": _Need(("source_embedding", "edit_embeddings"),
                             "unit CLIP embeddings of the source image and of every edited image",
                             "no image embeddings"),
    "target_text_embedding": _Need(("target_text_embedding",), "unit CLIP embedding of the target text",
                                  "no target text given"),
    "source_text_embedding": _Need(("source_text_embedding",), "unit CLIP embedding of the source text",
                                  NO_SOURCE_TEXT),
    "attribute_embeddings": _Need(("source_attr_embeddings", "target_attr_embeddings"),
                                 "unit CLIP embeddings of the source (D_S) and target (D_T) attributes",
                                 "no attributes given"),
    "pixels": _Need(("source_image", "edit_images"), "the decoded source and edited images", "no decoded images"),
    "instruction": _Need(("instruction",), "the edit instruction as written", _NO_INSTRUCTION),
    "target_text": _Need(("target_text",), "the target text as written (e.g. for a language-model judge)",
                        "no target text given"),
    "mask": _Need(("mask",), "a boolean (H, W) mask of the region the edit should change", "no edit mask given"),
    "ground_truth_image": _Need(("ground_truth_image",), "a reference edited image (ground truth)",
                               "no ground-truth image given"),
    "ground_truth_embedding": _Need(("ground_truth_embedding",), "unit CLIP embedding of the ground-truth image",
                                   "no ground-truth image given"),
    "output_caption_embedding": _Need(("output_caption_embedding",), "unit CLIP embedding of the output caption "
                                     "(a description of the wanted result)", "no output caption given"),
    "dino_embeddings": _Need(("dino_edit_embeddings", "dino_ground_truth_embedding"),
                            "unit DINO ViT-S/16 class-token features of every edit and of the ground truth",
                            _NO_DINO),
    "structure_keys": _Need(("structure_keys_source", "structure_keys_edits"),
                           "last-block attention keys (DINO ViT-B/8) of the source and of every edit", _NO_STRUCTURE),
    "unedited_measures": _Need(("unedited_measures",), "PSNR / MSE / SSIM / LPIPS outside the edit mask, measured "
                              "per edit with torchmetrics (inference/image_measures.py)", _NO_MASK),
    "pie_clip_embeddings": _Need(("pie_clip_edit_embeddings", "pie_clip_target_embedding"),
                                "unit CLIP ViT-L/14 embeddings of every edit and of the target text (PIE-Bench)",
                                _NO_PIE_CLIP),
    "pie_clip_masked_embeddings": _Need(("pie_clip_masked_edit_embeddings", "pie_clip_target_embedding"),
                                       "unit CLIP ViT-L/14 embeddings of every edit with the pixels outside the edit "
                                       "mask black, and of the target text (PIE-Bench)", _NO_PIE_CLIP_MASK),
    # supplied by the judge stage (no MetricInputs field): listed so tables and docs can say what it needs
    "llm": _Need((), "an MLLM judge: an OpenAI-compatible chat model that reads images (--judge-model)",
                "no judge model configured (set OPENAI_BASE_URL or OPENAI_API_KEY, and --judge-model)"),
}

# augclip_score's own defaults, for inputs that give no AugCLIP options (one place for them)
_AUGCLIP_DEFAULTS: dict[str, Any] = {
    name: param.default for name, param in inspect.signature(augclip_score).parameters.items()
    if param.default is not inspect.Parameter.empty
}


@dataclass
class MetricInputs:
    """Everything the metrics of one source image and its edits may use; an absent input is None.

    Plain arrays, images and builtins only, so the embedding part can be sent to a worker process.
    Embeddings are unit float64 vectors (rows) made by :func:`~.vectors.unit_rows`.
    """

    source_embedding: np.ndarray | None = None  # (d,)
    edit_embeddings: np.ndarray | None = None  # (n_edits, d)
    target_text_embedding: np.ndarray | None = None  # (d,)
    source_text_embedding: np.ndarray | None = None  # (d,)
    source_attr_embeddings: np.ndarray | None = None  # (n_s, d)
    target_attr_embeddings: np.ndarray | None = None  # (n_t, d)
    source_image: Image.Image | None = None
    edit_images: list[Image.Image] | None = None
    instruction: str | None = None
    target_text: str | None = None
    mask: np.ndarray | None = None
    ground_truth_image: Image.Image | None = None
    ground_truth_embedding: np.ndarray | None = None  # (d,) CLIP
    output_caption: str | None = None
    output_caption_embedding: np.ndarray | None = None  # (d,) CLIP
    dino_edit_embeddings: np.ndarray | None = None  # (n_edits, d_dino)
    dino_ground_truth_embedding: np.ndarray | None = None  # (d_dino,)
    structure_keys_source: np.ndarray | None = None  # (tokens, d) float32
    structure_keys_edits: list[np.ndarray] | None = None  # per edit, (tokens, d)
    unedited_measures: list[dict[str, float | None]] | None = None  # per edit, by metric key
    pie_clip_edit_embeddings: np.ndarray | None = None  # (n_edits, d) PIE-Bench's CLIP (ViT-L/14)
    pie_clip_masked_edit_embeddings: np.ndarray | None = None  # (n_edits, d) the same, outside the mask black
    pie_clip_target_embedding: np.ndarray | None = None  # (d,)
    augclip_options: dict[str, Any] | None = None  # keyword arguments of augclip_score; None: its defaults

    @property
    def n_edits(self) -> int:
        for edits in (self.edit_embeddings, self.edit_images):
            if edits is not None:
                return len(edits)
        return 0

    def missing(self, needs: Iterable[str]) -> str | None:
        """The reason the first absent need gives, or None when every need is there."""
        for name in sorted(needs):
            need = NEEDS[name]
            if any(getattr(self, attr) is None for attr in need.fields):
                return need.missing
        return None


# ---------------------------------------------------------------------------------------------- the table
@dataclass
class Scored:
    """A value together with the metric's full result for one edit (e.g. the AugCLIP fit)."""

    value: float
    detail: Any = None


MetricFn = Callable[[MetricInputs, int], "float | Scored"]


@dataclass(frozen=True)
class Metric:
    """One row of the table (see the module docstring)."""

    key: str
    label: str
    higher_is_better: bool
    description: str
    needs: frozenset[str]
    basis: Basis
    compute: MetricFn | None = None  # None: supplied by another layer (basis ``regions`` or ``judge``)
    primary: bool = False  # shown in tables and computed by batch runs by default
    #: a reference-based or preservation metric: most evaluations lack its input (a ground truth, a caption, a
    #: mask, a network), so tables show it only where an edit has a value for it (:meth:`shown`)
    reference: bool = False
    summarize: Callable[[Any], dict[str, float]] | None = None  # detail -> the fields kept in batch results

    def __post_init__(self) -> None:
        if self.basis not in _BASES:
            raise ValueError(f"metric {self.key!r}: basis must be one of {', '.join(_BASES)}, got {self.basis!r}")
        unknown = sorted(set(self.needs) - set(NEEDS))
        if unknown:
            raise ValueError(f"metric {self.key!r}: unknown need(s) {', '.join(unknown)}; add them to NEEDS first")
        if self.primary and self.reference:
            raise ValueError(f"metric {self.key!r}: a row is primary (always shown) or reference (shown where it has "
                             "a value), not both")
        if (self.compute is None) != (self.basis in _SUPPLIED_BASES):
            raise ValueError(f"metric {self.key!r}: a {self.basis!r} metric "
                             + ("needs a compute function" if self.compute is None else "is supplied by its stage"))

    def shown(self, valued: bool) -> bool:
        """Whether a report's tables (the CLI's, the app's, the CSV) show this metric: a primary one always, a
        reference one where some edit has a value for it (``valued``)."""
        return self.primary or (self.reference and valued)

    @property
    def computable(self) -> bool:
        """Computed from :class:`MetricInputs` here (not supplied by another stage)."""
        return self.compute is not None


def _augclip(inputs: MetricInputs, i: int) -> Scored:
    assert inputs.edit_embeddings is not None
    options = {**_AUGCLIP_DEFAULTS, **(inputs.augclip_options or {})}
    result = augclip_from_unit(inputs.source_embedding, inputs.edit_embeddings[i],  # type: ignore[arg-type]
                               inputs.source_attr_embeddings, inputs.target_attr_embeddings,  # type: ignore[arg-type]
                               **options)
    return Scored(result.score, result)


def _augclip_summary(result: Any) -> dict[str, float]:
    return {"c": result.c, "w_norm": result.w_norm, "v_norm": float(np.linalg.norm(result.v)),
            "fit_accuracy": result.fit_accuracy}


def _clip_dir(inputs: MetricInputs, i: int) -> float:
    assert inputs.edit_embeddings is not None
    return clip_dir_from_unit(inputs.source_embedding, inputs.edit_embeddings[i],  # type: ignore[arg-type]
                              inputs.source_text_embedding, inputs.target_text_embedding)  # type: ignore[arg-type]


def _clip_i(inputs: MetricInputs, i: int) -> float:
    assert inputs.edit_embeddings is not None and inputs.source_embedding is not None
    return cosine(inputs.source_embedding, inputs.edit_embeddings[i])


def _clip_t(inputs: MetricInputs, i: int) -> float:
    assert inputs.edit_embeddings is not None and inputs.target_text_embedding is not None
    return cosine(inputs.edit_embeddings[i], inputs.target_text_embedding)


def _l2(inputs: MetricInputs, i: int) -> float:
    assert inputs.source_image is not None and inputs.edit_images is not None
    return l2_distance(inputs.source_image, inputs.edit_images[i])


def _l1_gt(inputs: MetricInputs, i: int) -> float:
    assert inputs.edit_images is not None and inputs.ground_truth_image is not None
    return l1_to_ground_truth(inputs.edit_images[i], inputs.ground_truth_image)


def _l2_gt(inputs: MetricInputs, i: int) -> float:
    assert inputs.edit_images is not None and inputs.ground_truth_image is not None
    return l2_to_ground_truth(inputs.edit_images[i], inputs.ground_truth_image)


def _clip_i_gt(inputs: MetricInputs, i: int) -> float:
    assert inputs.edit_embeddings is not None and inputs.ground_truth_embedding is not None
    return cosine(inputs.edit_embeddings[i], inputs.ground_truth_embedding)


def _dino_gt(inputs: MetricInputs, i: int) -> float:
    assert inputs.dino_edit_embeddings is not None and inputs.dino_ground_truth_embedding is not None
    return cosine(inputs.dino_edit_embeddings[i], inputs.dino_ground_truth_embedding)


def _clip_t_caption(inputs: MetricInputs, i: int) -> float:
    assert inputs.edit_embeddings is not None and inputs.output_caption_embedding is not None
    return cosine(inputs.edit_embeddings[i], inputs.output_caption_embedding)


def _structure(inputs: MetricInputs, i: int) -> float:
    assert inputs.structure_keys_source is not None and inputs.structure_keys_edits is not None
    return structure_distance(inputs.structure_keys_source, inputs.structure_keys_edits[i])


def _pie_clip(field_name: str) -> MetricFn:
    """PIE-Bench's CLIP score of the image embeddings in ``field_name`` (whole edits, or their edited parts)."""
    def compute(inputs: MetricInputs, i: int) -> float:
        rows = getattr(inputs, field_name)
        assert rows is not None and inputs.pie_clip_target_embedding is not None
        return clip_score_from_unit(rows[i], inputs.pie_clip_target_embedding)
    return compute


def _unedited(key: str) -> MetricFn:
    def compute(inputs: MetricInputs, i: int) -> float:
        assert inputs.unedited_measures is not None
        measures = inputs.unedited_measures[i]
        if all(value is None for value in measures.values()):
            raise MetricUnavailable(_NO_UNEDITED)
        value = measures.get(key)
        if value is None:
            raise MetricUnavailable(_NO_LPIPS if key == "lpips_unedited" else _NO_UNEDITED)
        return value
    return compute


def _augmented(replace: Replacement, weighted: bool) -> MetricFn:
    def compute(inputs: MetricInputs, i: int) -> float:
        assert inputs.edit_embeddings is not None
        return augmented_clip_dir_from_unit(
            inputs.source_embedding, inputs.edit_embeddings[i],  # type: ignore[arg-type]
            inputs.source_attr_embeddings, inputs.target_attr_embeddings,  # type: ignore[arg-type]
            replace, weighted, inputs.source_text_embedding, inputs.target_text_embedding)
    return compute


def _augmented_row(replace: Replacement, weighted: bool) -> Metric:
    what = {"src": "source text -> mean of D_S", "tgt": "target text -> mean of D_T", "both": "both texts -> attribute means"}
    text = {"src": {"target_text_embedding"}, "tgt": {"source_text_embedding"}, "both": set()}
    return Metric(
        key=augmented_variant_name(replace, weighted),
        label=f"CLIPdir+{replace}{' (w)' if weighted else ''}",
        higher_is_better=True,
        description=f"augmented CLIPdir, {what[replace]}" + (" (alpha-weighted, Eq. 14)" if weighted else " (Eq. 13)"),
        needs=frozenset({"image_embeddings", "attribute_embeddings"} | text[replace]),
        basis="embeddings",
        compute=_augmented(replace, weighted),
    )


_IMAGES = frozenset({"image_embeddings"})

_HATIE_NEEDS = frozenset({"pixels", "instruction"})
#: HATIE (Ryu et al., CVPR 2025): the four per-edit criteria, the edit's total over them, and Image Quality, which
#: needs a set (the FID of all sources vs all edits of one model: batch and protocol tables only). Which
#: criterion each key is lives with the criteria (:data:`augclip_demo.hatie.criteria.HATIE_KEYS`).
HATIE_ROWS: tuple[Metric, ...] = (
    Metric("hatie", "HATIE", True, "HATIE total of one edit: its criteria weighted (published 0.2 OF / 0.4 BF / "
           "0.1 OC / 0.3 BC, renormalised over the criteria its edit type has); IQ needs a set", _HATIE_NEEDS,
           "regions"),
    Metric("hatie_of", "HATIE OF", True, "HATIE Object Fidelity: detector confidence, CLIP and VQA on the object; "
           "size for resizes; add: relation to the anchor", _HATIE_NEEDS, "regions"),
    Metric("hatie_bf", "HATIE BF", True, "HATIE Background Fidelity: CLIP (and VQA) of the background / style "
           "change, squashed", _HATIE_NEEDS, "regions"),
    Metric("hatie_oc", "HATIE OC", True, "HATIE Object Consistency: CLIP / LPIPS / DINO / L2 of the object's crops, "
           "centre-of-mass shift and size ratio", _HATIE_NEEDS, "regions"),
    Metric("hatie_bc", "HATIE BC", True, "HATIE Background Consistency: CLIP / LPIPS / DINO / L2 of the backgrounds "
           "outside the edited object (style: plain, edge, grey, small versions)", _HATIE_NEEDS, "regions"),
    Metric("hatie_iq", "HATIE IQ", True, "HATIE Image Quality: 1 - tanh(FID / 25) between a model's sources and "
           "edits; needs a set (a single pair has none)", frozenset({"pixels"}), "regions"),
)

METRIC_TABLE: tuple[Metric, ...] = (
    Metric("augclip", "AugCLIP", True, "cosine to the estimated ideal edit E(I_src)+v (Eq. 3)",
           _IMAGES | {"attribute_embeddings"}, "embeddings", _augclip, primary=True, summarize=_augclip_summary),
    Metric("clip_dir", "CLIPdir", True, "directional CLIP similarity (Eq. 1-2); needs a source text",
           _IMAGES | {"source_text_embedding", "target_text_embedding"}, "embeddings", _clip_dir, primary=True),
    Metric("clip_i", "CLIP-I", True, "cosine between edit and source image (preservation)",
           _IMAGES, "embeddings", _clip_i, primary=True),
    Metric("clip_t", "CLIP-T", True, "cosine between edit and target text (modification)",
           _IMAGES | {"target_text_embedding"}, "embeddings", _clip_t, primary=True),
    Metric("l2", "L2", False, "pixel RMSE in [0,1] to the source",
           frozenset({"pixels"}), "pixels", _l2, primary=True),
    *(_augmented_row(replace, weighted) for replace, weighted in AUGMENTED_VARIANTS),
    # reference-based (MagicBrush's evaluation: a ground-truth image per edit, an output caption)
    Metric("l1_gt", "L1 (GT)", False, "mean absolute pixel difference in [0,1] to the ground-truth image (MagicBrush)",
           frozenset({"pixels", "ground_truth_image"}), "pixels", _l1_gt, reference=True),
    Metric("l2_gt", "L2 (GT)", False, "mean squared pixel difference in [0,1] to the ground-truth image "
           "(MagicBrush's L2, an MSE)", frozenset({"pixels", "ground_truth_image"}), "pixels", _l2_gt, reference=True),
    Metric("clip_i_gt", "CLIP-I (GT)", True, "cosine between the CLIP embeddings of edit and ground truth (MagicBrush)",
           _IMAGES | {"ground_truth_embedding"}, "embeddings", _clip_i_gt, reference=True),
    Metric("dino_gt", "DINO (GT)", True, "cosine between DINO ViT-S/16 class tokens of edit and ground truth "
           "(MagicBrush)", frozenset({"dino_embeddings"}), "embeddings", _dino_gt, reference=True),
    Metric("clip_t_caption", "CLIP-T (caption)", True, "cosine between the edit and the output caption (MagicBrush's "
           "CLIP-T)", _IMAGES | {"output_caption_embedding"}, "embeddings", _clip_t_caption, reference=True),
    # preservation (PIE-Bench: outside the edit mask; structure distance on the whole image)
    Metric("structure_distance", "Structure dist.", False, "MSE between DINO ViT-B/8 key self-similarities of source "
           "and edit (PIE-Bench)", frozenset({"structure_keys"}), "pixels", _structure, reference=True),
    Metric("psnr_unedited", "PSNR (unedited)", True, "PSNR in dB between source and edit outside the edit mask "
           "(PIE-Bench)", frozenset({"unedited_measures"}), "pixels", _unedited("psnr_unedited"), reference=True),
    Metric("lpips_unedited", "LPIPS (unedited)", False, "LPIPS (SqueezeNet) between source and edit outside the edit "
           "mask (PIE-Bench)", frozenset({"unedited_measures"}), "pixels", _unedited("lpips_unedited"), reference=True),
    Metric("mse_unedited", "MSE (unedited)", False, "mean squared pixel difference in [0,1] outside the edit mask "
           "(PIE-Bench)", frozenset({"unedited_measures"}), "pixels", _unedited("mse_unedited"), reference=True),
    Metric("ssim_unedited", "SSIM (unedited)", True, "SSIM between source and edit outside the edit mask (PIE-Bench)",
           frozenset({"unedited_measures"}), "pixels", _unedited("ssim_unedited"), reference=True),
    Metric("clip_score_whole", "CLIP score (whole)", True, "PIE-Bench's CLIP similarity of the whole edit to the "
           "target prompt: 100 x max(cosine, 0), CLIP ViT-L/14", frozenset({"pie_clip_embeddings"}), "pixels",
           _pie_clip("pie_clip_edit_embeddings"), reference=True),
    Metric("clip_score_edited", "CLIP score (edited)", True, "PIE-Bench's CLIP similarity of the edited part (pixels "
           "outside the edit mask black) to the target prompt: 100 x max(cosine, 0), CLIP ViT-L/14",
           frozenset({"pie_clip_masked_embeddings"}), "pixels", _pie_clip("pie_clip_masked_edit_embeddings"), reference=True),
    Metric("bpm", "BPM", True,
           "BPM paper, Alg. 1: 0.7 S_semantic + 0.3 S_region from GroundingDINO + SAM regions; needs an instruction "
           "(or o1/o2) and the region models", frozenset({"pixels", "instruction"}), "regions", primary=True),
    Metric("judge_sc", "Judge SC", True,
           "MLLM judge, semantic consistency 0-10: min(request carried out, rest kept) from source + edit + the "
           "instruction (else the target text); mean over samples", frozenset({"pixels", "target_text", "llm"}),
           "judge", primary=True),
    Metric("judge_pq", "Judge PQ", True,
           "MLLM judge, perceptual quality 0-10: min(natural look, free of artifacts) from the edit alone; mean over "
           "samples", frozenset({"pixels", "llm"}), "judge", primary=True),
    Metric("judge_overall", "Judge overall", True,
           "MLLM judge, overall 0-10: sqrt(SC x PQ) per sample (VIEScore's combination), mean over samples",
           frozenset({"pixels", "target_text", "llm"}), "judge", primary=True),
    *HATIE_ROWS,
)

METRICS: dict[str, Metric] = {metric.key: metric for metric in METRIC_TABLE}



def register_metric(metric: Metric) -> None:
    """Add a row at run time (an extension's metric); the table above is the place for our own."""
    METRICS[metric.key] = metric


def metric_keys(*, basis: str | None = None, computable: bool | None = None, primary: bool | None = None,
                reference: bool | None = None) -> list[str]:
    """Keys in table order, filtered by basis / computable here / primary / reference."""
    return [key for key, metric in METRICS.items()
            if (basis is None or metric.basis == basis)
            and (computable is None or metric.computable == computable)
            and (primary is None or metric.primary == primary)
            and (reference is None or metric.reference == reference)]


def shown_metric_keys(present: Iterable[str], valued: Iterable[str]) -> list[str]:
    """The metrics a report's tables show, in table order (:meth:`Metric.shown`): of the keys ``present`` in
    some edit's results, each primary one, and each reference one among ``valued`` (some edit has a value)."""
    present, valued = set(present), set(valued)
    return [key for key, metric in METRICS.items() if key in present and metric.shown(key in valued)]


def needs_of(keys: Iterable[str]) -> set[str]:
    """Every need of these metrics."""
    return {need for key in keys for need in METRICS[key].needs}


def parse_metric_keys(value: str | Iterable[str] | None, *, supplied_bases: Iterable[str] = ()) -> list[str]:
    """``"augclip,l2"`` / a list / ``None`` (the primary computable metrics) / ``"all"`` -> checked keys.

    Metrics computed from :class:`MetricInputs` can always be chosen; a metric supplied by another
    layer (BPM: basis ``regions``) only when the caller runs that stage (``supplied_bases``). ``all``
    stands for every computable metric; a supplied one is added by name (``"all,bpm"``).
    """
    bases = set(supplied_bases)
    selectable = metric_keys(computable=True) + [key for key, metric in METRICS.items()
                                                 if not metric.computable and metric.basis in bases]
    if value is None:
        return metric_keys(computable=True, primary=True)
    names = [part.strip() for part in (value.split(",") if isinstance(value, str) else value)]
    names = [name.strip() for part in names for name in part.split(",") if name.strip()]
    if not names:
        raise InputError("no metric given; choose from " + ", ".join(selectable))
    names = [key for name in names for key in (metric_keys(computable=True) if name == "all" else [name])]
    supplied = [name for name in names if name in METRICS and not METRICS[name].computable
                and METRICS[name].basis not in bases]
    if supplied:
        basis = METRICS[supplied[0]].basis
        raise InputError(f"metric(s) {', '.join(supplied)} come from the {basis} stage, "
                         f"{_SUPPLIED_BASES.get(basis, 'which is not run here')}; here choose from "
                         + ", ".join(selectable))
    unknown = [name for name in names if name not in METRICS]
    if unknown:
        raise InputError(f"unknown metric(s) {', '.join(unknown)}; available: {', '.join(selectable)} (or 'all')")
    return list(dict.fromkeys(names))


# ---------------------------------------------------------------------------------------------- scoring
@dataclass
class ItemScores:
    """Per edit: values, reasons for missing values, and full results (details) by metric key."""

    values: list[dict[str, float | None]]
    unavailable: list[dict[str, str]]
    details: list[dict[str, Any]] = field(default_factory=list)

    @classmethod
    def empty(cls, n_edits: int) -> ItemScores:
        return cls([{} for _ in range(n_edits)], [{} for _ in range(n_edits)], [{} for _ in range(n_edits)])

    def merged(self, other: ItemScores, order: Sequence[str]) -> ItemScores:
        """Both stages' scores per edit, values in ``order`` (keys in neither are left out)."""
        out = ItemScores.empty(len(self.values))
        for i in range(len(self.values)):
            values = {**self.values[i], **other.values[i]}
            out.values[i] = {key: values[key] for key in order if key in values}
            out.unavailable[i] = {**self.unavailable[i], **other.unavailable[i]}
            out.details[i] = {**self.details[i], **other.details[i]}
        return out

    def summarized(self) -> ItemScores:
        """Details replaced by the small JSON summaries their metrics define (dropped where none)."""
        details = [{key: METRICS[key].summarize(detail)  # type: ignore[misc]
                    for key, detail in row.items() if METRICS[key].summarize is not None} for row in self.details]
        return ItemScores(self.values, self.unavailable, details)


def score_item(inputs: MetricInputs, keys: Iterable[str], *, strict: bool = False) -> ItemScores:
    """The metrics ``keys`` for every edit of one item.

    A missing need makes the metric unavailable (with the need's reason) for every edit, and
    :class:`MetricUnavailable` for one edit. With ``strict`` a metric's ``ValueError`` (e.g. a
    degenerate AugCLIP fit) propagates and values are kept as computed; without it (batch runs)
    the edit gets no value and the reason, non-finite values become None with a reason, and the
    other metrics and edits are still computed.
    """
    n = inputs.n_edits
    scores = ItemScores.empty(n)
    for key in keys:
        metric = METRICS[key]
        if metric.compute is None:
            raise ValueError(f"metric {key!r} is supplied by the {metric.basis} stage, not computed here")
        reason = inputs.missing(metric.needs)
        if reason is not None:
            for i in range(n):
                scores.values[i][key] = None
                scores.unavailable[i][key] = reason
            continue
        for i in range(n):
            try:
                out = metric.compute(inputs, i)
            except MetricUnavailable as exc:
                scores.values[i][key], scores.unavailable[i][key] = None, str(exc)
                continue
            except ValueError as exc:
                if strict:
                    raise
                scores.values[i][key], scores.unavailable[i][key] = None, str(exc)
                continue
            value, detail = (out.value, out.detail) if isinstance(out, Scored) else (out, None)
            value = float(value)
            if not strict and not math.isfinite(value):
                scores.values[i][key], scores.unavailable[i][key] = None, UNDEFINED
                continue
            scores.values[i][key] = value
            if detail is not None:
                scores.details[i][key] = detail
    return scores


def best_index(values: Sequence[float | None], key: str) -> int | None:
    """Index of the best value under metric ``key`` (first on ties); None if no value is available."""
    metric = METRICS.get(key)
    higher = metric.higher_is_better if metric else True
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
