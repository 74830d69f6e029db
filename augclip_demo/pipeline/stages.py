"""The per-item stages: one protocol, one object per metric family, run by every path.

A stage runs on one item's loaded images and inputs (:class:`ItemImages`) and returns what it
found (:class:`StageOutput`): values and reasons for the metric keys it declares
(:attr:`ItemStage.keys`), the full per-edit results (BPM regions, HATIE criteria, judge answers),
the :class:`~augclip_demo.metrics.suite.MetricInputs` fields it made and notes. What it needs of an
item is what its keys need in the metric table (:attr:`ItemStage.needs`).

The :class:`~.evaluator.Evaluator` (``evaluate``, ``add_bpm``, ``add_hatie``, ``add_judge``), the local
batch runner (decode workers) and the Ray engine (its actors) build these objects and call
:meth:`ItemStage.run`; none of them decides which metric a stage fills or how. The CLIP embeddings
are the one part outside: each path encodes in its own batches (one item, or many items per forward
pass), and the embedding metrics are then the metric table's functions over those rows.

Stages (keys filled):

* :class:`PixelStage` (``pixels``): the pixel metrics (L2, L1 / L2 to the ground truth, PSNR / MSE /
  SSIM outside a given edit mask) and the feature networks (``dino_gt``, ``structure_distance``,
  ``lpips_unedited``, ``clip_score_whole``, ``clip_score_edited``);
* :class:`BpmStage` (``bpm``): BPM of every edit and, when no edit mask was given, the unedited-region
  metrics outside each edit's BPM regions;
* :class:`HatieStage` (``hatie`` ...): HATIE's per-edit criteria; Image Quality needs a set and says so;
* :class:`JudgeStage` (``judge_sc``, ``judge_pq``, ``judge_overall``): the MLLM judge.

A path differs only in its failure policy (``strict``: the Evaluator lets a metric's error reach the
caller; batch runs record it), never in the values.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from ..choices import FEATURE_METRICS, FeatureNetworks
from ..errors import AugclipError, InputError
from ..hatie.criteria import CRITERION_LABELS, HATIE_KEYS, NEEDS_A_SET, HatieOptions
from ..io import LoadedImage
from ..metrics.suite import METRICS, UNDEFINED, ItemScores, MetricInputs, needs_of, score_item
from ..report import UNTRAINED_WARNING
from .features import feature_inputs

ProgressCallback = Callable[[float, str], None]

#: PSNR / MSE / SSIM / LPIPS outside the edit mask (given, or BPM's regions)
_UNEDITED_KEYS: tuple[str, ...] = ("psnr_unedited", "mse_unedited", "ssim_unedited", "lpips_unedited")
_BPM_MASK_NOTE = "PSNR / MSE / SSIM / LPIPS (unedited) are measured outside each edit's BPM regions (no mask was given)"
NO_PARSE = ("no instruction and no parse in the manifest: BPM needs the item's \"instruction\" (e.g. 'make the cup "
            "red') or a \"parse\" object naming o1 / o2")


def pixel_family_keys() -> list[str]:
    """Every metric :class:`PixelStage` fills, in table order (the pixel metrics and the feature networks)."""
    return [key for key, metric in METRICS.items()
            if metric.computable and (metric.basis == "pixels" or key in FEATURE_METRICS)]


@dataclass
class ItemImages:
    """One item's loaded images and inputs: what every stage runs on."""

    source: LoadedImage
    edits: list[LoadedImage]
    target_text: str | None = None
    instruction: str | None = None
    parsed: Any = None  # BPM's parse (ParsedInstruction) when the path resolved one
    parse_reason: str | None = None  # why the item has no parse (BPM is then unavailable with it)
    edit_type: str | None = None  # HATIE's edit type when the item names it
    ground_truth: LoadedImage | None = None
    edit_mask: np.ndarray | None = None  # (H, W) of the source, True = the region the edit should change
    hatie_query: Any = None  # HATIE's own benchmark query (HatieQuery: its objects and source masks), when given
    object_masks: Any = None  # named objects' masks in the source and each edit (bpm.ObjectMasks), when given

    @property
    def names(self) -> list[str]:
        return [edit.name for edit in self.edits]

    def pixel_inputs(self, **fields: Any) -> MetricInputs:
        """The metric inputs of the images themselves, with ``fields`` a stage made."""
        return MetricInputs(source_image=self.source.image, edit_images=[edit.image for edit in self.edits],
                            instruction=self.instruction or None, target_text=self.target_text,
                            ground_truth_image=self.ground_truth.image if self.ground_truth is not None else None,
                            mask=self.edit_mask, **fields)


@dataclass
class StageOutput:
    """What a stage found for one item."""

    scores: ItemScores  # values and reasons of the stage's keys; details: the small per-edit record summaries
    results: list[Any] = field(default_factory=list)  # full per-edit results (BPMResult, HatieResult, JudgeResult)
    fields: dict[str, Any] = field(default_factory=dict)  # MetricInputs fields the stage made
    notes: list[str] = field(default_factory=list)  # untrained networks, where a mask came from
    extra: dict[str, Any] = field(default_factory=dict)  # item-level record fields (BPM's parse)


class ItemStage(Protocol):
    """The protocol every stage follows."""

    name: str  # labels its failures ("BPM: ...") and its timing
    keys: tuple[str, ...]  # the metric keys it fills

    @property
    def needs(self) -> frozenset[str]:
        """What it reads of an item (the :data:`~augclip_demo.metrics.suite.NEEDS` of its keys)."""
        ...

    def run(self, item: ItemImages, progress: ProgressCallback | None = None) -> StageOutput:
        ...


class _KeyedStage:
    name = "stage"
    keys: tuple[str, ...] = ()

    @property
    def needs(self) -> frozenset[str]:
        return frozenset(needs_of(self.keys))


def merge_scores(base: ItemScores, other: ItemScores) -> None:
    """``other``'s values and reasons into ``base``, edit by edit: a key ``other`` fills replaces ``base``'s value
    and reason (e.g. BPM's regions give the unedited metrics the mask the pixel stage lacked)."""
    for i in range(len(base.values)):
        for key, value in other.values[i].items():
            base.values[i][key] = value
            base.unavailable[i].pop(key, None)
            if key in other.unavailable[i]:
                base.unavailable[i][key] = other.unavailable[i][key]
        for key, reason in other.unavailable[i].items():
            if key not in other.values[i]:
                base.unavailable[i][key] = reason
        base.details[i].update(other.details[i])


def _finite_scores(inputs: MetricInputs, keys: Sequence[str], *, strict: bool) -> ItemScores:
    """:func:`~augclip_demo.metrics.suite.score_item` with one rule for values that are not finite numbers on every
    path (e.g. PSNR of pixels identical outside the mask): no value, the reason says so (a JSON report or record
    cannot hold one). ``strict``: a metric's ValueError reaches the caller (the Evaluator) instead of being the
    edit's reason (batch runs)."""
    scores = score_item(inputs, keys, strict=strict)
    for values, reasons in zip(scores.values, scores.unavailable):
        for key, value in values.items():
            if value is not None and not np.isfinite(value):
                values[key], reasons[key] = None, UNDEFINED
    return scores


def _unavailable_scores(n_edits: int, keys: Sequence[str], reason: str) -> ItemScores:
    """Every edit without ``keys``, with one reason."""
    scores = ItemScores.empty(n_edits)
    for i in range(n_edits):
        for key in keys:
            scores.values[i][key], scores.unavailable[i][key] = None, reason
    return scores


# ---------------------------------------------------------------------------------------------- pixels
class FeatureFailure(InputError):
    """A feature network (DINO / LPIPS) could not run for an item (e.g. its weights are missing)."""


class PixelStage(_KeyedStage):
    """The pixel metrics and the feature networks of one item's decoded images (with its ground truth and edit
    mask, if any). The networks load on first use through the process-wide model pool; their passes run one at a
    time (a batch run calls this from several decode threads)."""

    name = "pixels"

    def __init__(self, keys: Sequence[str], networks: FeatureNetworks, settings: Any, *,
                 run_networks: Collection[str] | None = None, strict: bool = False):
        family = set(pixel_family_keys())
        self.keys = tuple(key for key in keys if key in family)
        self.networks = networks
        self.settings = settings
        self.strict = strict
        # the feature metrics whose networks run (default: those among ``keys``); the others get their reason
        self.network_keys = tuple(key for key in self.keys if key in FEATURE_METRICS
                                  and (run_networks is None or key in run_networks))
        self._lock = threading.Lock()

    def feature_fields(self, item: ItemImages) -> tuple[dict[str, Any], list[str]]:
        """The network-made inputs (DINO embeddings and keys, the unedited measures with a mask) and notes."""
        wants_measures = item.edit_mask is not None and any(
            "unedited_measures" in METRICS[key].needs for key in self.keys)
        if not self.network_keys and not wants_measures:
            return {}, []
        truth = item.ground_truth.image if item.ground_truth is not None else None
        with self._lock:
            try:
                return feature_inputs(item.source.image, [edit.image for edit in item.edits], truth, item.edit_mask,
                                      self.network_keys, self.networks, self.settings, item.target_text)
            except AugclipError as exc:
                if self.network_keys:
                    raise FeatureFailure(str(exc)) from exc
                raise

    def run(self, item: ItemImages, progress: ProgressCallback | None = None) -> StageOutput:
        fields, notes = self.feature_fields(item)
        scores = _finite_scores(item.pixel_inputs(**fields), self.keys, strict=self.strict)
        return StageOutput(scores, fields=fields, notes=notes)


# ---------------------------------------------------------------------------------------------- BPM
def _bpm_summary(result: Any) -> dict[str, Any]:
    """The few numbers of one edit's BPM result a batch record keeps (no masks, boxes or images)."""
    return {**result.components.to_dict(), "found": dict(result.found), "region_source": result.region_source}


_GIVEN_MASKS_NOTE = "BPM's regions come from the given masks (no detector or segmenter ran)"
_NO_MASKS = ("BPM's regions are set to given masks, but the item gives none: add its \"object_masks\" or an "
            "\"edit_mask\", or let BPM detect the regions")


def _bpm_model_list(models: Any) -> list[Any]:
    """The models that computed BPM: detector, segmenter (unless the regions were given) and CLIP."""
    return [m for m in (models.detector, models.segmenter, models.encoder) if m is not None]


def _region_model_names(models: Any) -> str:
    """``GroundingDINO / SAM / CLIP`` or ``OWL-ViT / SAM 2 / CLIP``: the families that computed BPM."""
    return " / ".join(getattr(m, "family", type(m).__name__) for m in _bpm_model_list(models))


def _bpm_notes(models: Any) -> list[str]:
    """What a report says about BPM's models (given masks, the fast preset, random weights)."""
    notes = []
    if models.detector is None:
        notes.append(_GIVEN_MASKS_NOTE)
    elif getattr(models, "preset", "standard") == "fast":
        notes.append(f"BPM from the fast preset ({models.detector.label}; {models.segmenter.label}), not the paper's "
                     "GroundingDINO + SAM: AUGCLIP_BPM_PRESET=standard gives those (docs/bpm.md, presets)")
    if models.untrained:
        parts = [f"{getattr(m, 'family', type(m).__name__)} random" for m in _bpm_model_list(models) if m.untrained]
        notes.append(f"BPM {UNTRAINED_WARNING} ({_region_model_names(models)}: {'; '.join(parts)})")
    return notes


class BpmStage(_KeyedStage):
    """BPM of every edit (Alg. 1) and, for an item without an edit mask, PSNR / MSE / SSIM (LPIPS when asked
    for) outside each edit's BPM regions (not BPM's preserved mask)."""

    name = "BPM"

    def __init__(self, models: Callable[[], Any], options: Any = None, *, parser: str = "rules", client: Any = None,
                 unedited: Collection[str] = _UNEDITED_KEYS, lpips: str | None = None, settings: Any = None,
                 strict: bool = False):
        self.models = models  # returns the loaded region models (raises with the reason they are missing)
        self.options = options
        self.parser = parser
        self.client = client
        self.unedited = tuple(key for key in _UNEDITED_KEYS if key in unedited)
        self.keys = ("bpm", *self.unedited)
        self.lpips = lpips  # the LPIPS network of lpips_unedited (None: not asked for)
        self.settings = settings
        self.strict = strict

    @property
    def given_masks(self) -> bool:
        """Whether the regions come from the item's given masks (``BPMOptions.regions == "masks"``)."""
        return self.options is not None and self.options.regions == "masks"

    def run(self, item: ItemImages, progress: ProgressCallback | None = None) -> StageOutput:
        from ..bpm import bpm_score_many

        if item.parsed is None and item.parse_reason is not None:
            return StageOutput(_unavailable_scores(len(item.edits), ("bpm",), item.parse_reason))
        given = self.given_masks
        if given and item.object_masks is None and item.edit_mask is None:
            return StageOutput(_unavailable_scores(len(item.edits), ("bpm",), _NO_MASKS))
        models = self.models()
        masks = {"object_masks": item.object_masks, "edit_mask": item.edit_mask} if given else {}
        results = bpm_score_many(item.source, item.edits, item.instruction, item.parsed, models, options=self.options,
                                 parser=self.parser, client=self.client, names=item.names, progress=progress, **masks)
        scores = ItemScores.empty(len(item.edits))
        for i, result in enumerate(results):
            scores.values[i]["bpm"] = float(result.bpm)
            scores.details[i]["bpm"] = _bpm_summary(result)
        out = StageOutput(scores, results=list(results))
        if item.edit_mask is None and self.unedited:
            self._unedited_outside_regions(item, results, out)
        out.notes.extend(_bpm_notes(models))
        return out

    def _unedited_outside_regions(self, item: ItemImages, results: Sequence[Any], out: StageOutput) -> None:
        from ..inference.image_measures import unedited_measures
        from ..inference.lpips import get_lpips

        lpips = get_lpips(self.lpips, self.settings) if self.lpips is not None else None
        size = (item.source.image.height, item.source.image.width)
        measures: list[dict[str, float | None]] = []
        for edit, result in zip(item.edits, results):
            region = ~np.asarray(result.preserved_mask, dtype=bool)
            if region.shape != size or not region.any():  # nothing localised: no mask to measure outside
                measures.append(dict.fromkeys(_UNEDITED_KEYS))
                continue
            measures.append(unedited_measures(item.source.image, edit.image, region, lpips))
        out.fields["unedited_measures"] = measures
        merge_scores(out.scores, _finite_scores(item.pixel_inputs(unedited_measures=measures), self.unedited,
                                               strict=self.strict))
        out.notes.append(_BPM_MASK_NOTE)
        if lpips is not None and lpips.untrained:
            out.notes.append(f"LPIPS (unedited) {UNTRAINED_WARNING} ({lpips.label})")


# ---------------------------------------------------------------------------------------------- HATIE
def hatie_models(settings: Any, encoder: Any, features: Any = "auto", vqa: Any = None) -> Any:
    """HATIE's models: GroundingDINO + SAM whatever BPM's preset (HATIE's detection threshold is on
    GroundingDINO's scale, OWL-ViT's scores are lower, and its regions are those of the published pipeline),
    the given CLIP, the DINOv2 / LPIPS networks (``"auto"``: the settings' own; None: left out, noted on
    every result) and the optional VQA scorer."""
    from ..bpm.models import get_bpm_models
    from ..hatie import HatieModels

    if isinstance(features, str) and features == "auto":
        from ..hatie.networks import HatieFeatures

        features = HatieFeatures(settings)
    bpm = get_bpm_models(settings.replace(bpm_preset="standard"), encoder=encoder)
    return HatieModels(bpm.detector, bpm.segmenter, bpm.encoder, features, vqa)


def _hatie_scores(results: Sequence[Any], keys: Sequence[str]) -> ItemScores:
    """Each edit's HATIE values (each chosen key), reasons and the record's ``hatie`` summary."""
    scores = ItemScores.empty(len(results))
    for i, result in enumerate(results):
        for key in keys:
            criterion = HATIE_KEYS[key]
            if criterion == "image_quality":
                scores.values[i][key], scores.unavailable[i][key] = None, NEEDS_A_SET
                continue
            value = result.value(criterion)
            scores.values[i][key] = value
            if value is None:
                score = result.scores.criteria.get(criterion) if result.scores is not None else None
                scores.unavailable[i][key] = (result.reason or (score.reason if score is not None else None)
                                              or f"HATIE does not score {CRITERION_LABELS.get(criterion, criterion)} "
                                              f"for {result.edit_type.edit_type} edits (App. C.1)")
        scores.details[i]["hatie"] = result.summary()
    return scores


class HatieStage(_KeyedStage):
    """HATIE's per-edit criteria (``hatie``, ``hatie_of`` ... ``hatie_bc``); ``hatie_iq`` needs a set of edits,
    which one item is not, and says so."""

    name = "HATIE"

    def __init__(self, models: Callable[[], Any], keys: Sequence[str] = tuple(HATIE_KEYS), *,
                 options: HatieOptions | None = None, calibrated: dict[str, dict[str, float]] | None = None):
        self.models = models  # returns the loaded HatieModels
        self.keys = tuple(key for key in keys if key in HATIE_KEYS)
        self.options = options
        self.calibrated = dict(calibrated or {})

    def run(self, item: ItemImages, progress: ProgressCallback | None = None) -> StageOutput:
        from ..hatie import hatie_score_many

        models = self.models()
        results = hatie_score_many(item.source, item.edits, item.instruction, models, parsed=item.parsed,
                                   edit_type=item.edit_type, target_text=item.target_text, options=self.options,
                                   calibrated=self.calibrated, names=item.names, query=item.hatie_query,
                                   object_masks=item.object_masks)
        notes = [f"HATIE {UNTRAINED_WARNING}"] if models.untrained_for(self.options) else []
        return StageOutput(_hatie_scores(results, self.keys), results=list(results), notes=notes)


# ---------------------------------------------------------------------------------------------- judge
class JudgeStage(_KeyedStage):
    """The MLLM judge's rows of every edit, judged against the item's instruction, else its target text.

    A judge that cannot be built or an endpoint that fails (down, unauthorised, rate limited) leaves the rows
    unavailable with the reason, or, with ``fail_on_endpoint`` (batch runs: ``--retry-failed`` asks again
    later), raises; an answer the judge cannot use (refused, filtered, invalid JSON) is always a reason."""

    name = "judge"

    def __init__(self, judge: Callable[[], Any], *, fail_on_endpoint: bool = False):
        from ..judge import JUDGE_METRICS

        self.judge = judge  # returns the MLLMJudge (raises LLMError / InputError when it cannot be built)
        self.keys = tuple(JUDGE_METRICS)
        self.fail_on_endpoint = fail_on_endpoint

    def run(self, item: ItemImages, progress: ProgressCallback | None = None) -> StageOutput:
        from ..errors import LLMError
        from ..judge import unavailable_result
        from ..judge.judge import CONTENT_FAILURES

        try:
            judge = self.judge()
        except LLMError as exc:
            if self.fail_on_endpoint:
                raise
            results = [unavailable_result(f"judge unavailable: {exc}")] * len(item.edits)
        else:
            results = judge.judge_edits(item.source, item.edits, item.instruction or item.target_text)
        scores = ItemScores.empty(len(item.edits))
        for i, result in enumerate(results):
            endpoint = [q for q in result.questions.values() if q.kind is not None and q.kind not in CONTENT_FAILURES
                        and q.kind != "no_request"]
            if endpoint and self.fail_on_endpoint:
                raise InputError(endpoint[0].reason or "the MLLM judge failed")
            scores.values[i].update(result.metrics())
            scores.unavailable[i].update(result.unavailable())
            scores.details[i]["judge"] = result.to_dict()
        return StageOutput(scores, results=list(results))
