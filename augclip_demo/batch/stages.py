"""The stages of a batch item as functions over plain data: decode -> attributes / regions -> encode -> score
-> record.

Each function takes and returns plain values (items, arrays, dicts), so an engine can run it
where it likes: the streaming runner (:mod:`.runner`) runs decoding in threads and scoring in a
thread or process pool; another engine can run the same functions as its own tasks.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..attributes.base import AttributeProvider, Attributes
from ..bpm import BPMOptions, BPMResult, bpm_score_many
from ..bpm.models import BPMModels
from ..config import Settings
from ..errors import AugclipError, InputError, InstructionParseError
from ..hatie import HatieModels, HatieResult, hatie_score_many
from ..inference.clip_encoder import ClipEncoder
from ..instructions import ParsedInstruction, resolve_parse
from ..io import LoadedImage, open_image
from ..judge import JudgeOptions, MLLMJudge
from ..judge.judge import CONTENT_FAILURES, judge_signature
from ..metrics.hatie import CRITERION_LABELS, NEEDS_A_SET, HatieOptions, total_weights
from ..metrics.suite import HATIE_KEYS, METRICS, ItemScores, MetricInputs, score_item
from ..metrics.vectors import unit_rows
from ..pipeline import NETWORK_METRICS, Evaluator, FeatureNetworks, feature_inputs
from .manifest import ManifestItem
from .plan import image_key


# ---------------------------------------------------------------------------------------------- attributes
class AttributeSource:
    """A run's attribute provider, built once on first use; its failure becomes each item's error."""

    def __init__(self, evaluator: Evaluator, name: str):
        self.evaluator = evaluator
        self.name = name
        self._provider: AttributeProvider | None = None
        self._error: str | None = None
        self._build_lock = threading.Lock()
        self._call_lock = threading.Lock()

    def extract(self, source: LoadedImage, item: ManifestItem) -> Attributes:
        with self._build_lock:
            if self._provider is None and self._error is None:
                try:
                    self._provider = self.evaluator.provider(self.name)
                except AugclipError as exc:
                    self._error = f"no attributes in the manifest, and attribute provider {self.name!r} is not available: {exc}"
        if self._error is not None:
            raise InputError(self._error)
        assert self._provider is not None
        if getattr(self._provider, "thread_safe", False):
            return self.evaluator.resolve_attributes(self._provider, source, item.target_text, item.source_text)
        with self._call_lock:  # providers are serialised unless they declare ``thread_safe = True``
            return self.evaluator.resolve_attributes(self._provider, source, item.target_text, item.source_text)


# ---------------------------------------------------------------------------------------------- feature networks
class FeatureFailure(InputError):
    """A feature network (DINO / LPIPS) could not run for an item (e.g. its weights are missing)."""


class FeatureSource:
    """A run's feature networks for ``dino_gt`` / ``structure_distance`` / ``lpips_unedited``: each loads on
    first use through the process-wide model pool (one load per network and run), and the network passes
    of the decode workers run one at a time. Values come from :func:`~augclip_demo.pipeline.feature_inputs`,
    the Evaluator's own code."""

    def __init__(self, settings: Settings, networks: FeatureNetworks, keys: Sequence[str]):
        self.settings = settings
        self.networks = networks
        self.keys = tuple(key for key in keys if key in NETWORK_METRICS)
        self.notes: list[str] = []  # untrained networks met so far (the run's summary lists them)
        self._lock = threading.Lock()

    def inputs(self, source: LoadedImage, edits: Sequence[LoadedImage], ground_truth: LoadedImage | None,
               mask: np.ndarray | None, target_text: str | None = None) -> dict[str, Any]:
        """The :class:`MetricInputs` fields the feature networks make for one item."""
        with self._lock:
            try:
                fields, notes = feature_inputs(source.image, [edit.image for edit in edits],
                                               ground_truth.image if ground_truth is not None else None, mask,
                                               self.keys, self.networks, self.settings, target_text)
            except AugclipError as exc:
                raise FeatureFailure(str(exc)) from exc
            self.notes.extend(note for note in notes if note not in self.notes)
        return fields

    def signature(self) -> dict[str, Any]:
        """The networks behind the chosen feature metrics (compared on resume, like the CLIP model)."""
        specs = {"dino_gt": self.networks.dino, "structure_distance": self.networks.structure,
                 "lpips_unedited": self.networks.lpips, "clip_score_whole": self.networks.pie_clip,
                 "clip_score_edited": self.networks.pie_clip}
        out: dict[str, Any] = {key: specs[key] for key in self.keys}
        if "structure_distance" in self.keys:
            out["structure_pixel_scale"] = self.networks.structure_pixel_scale
        return out


# ---------------------------------------------------------------------------------------------- regions
NO_PARSE = ("no instruction and no parse in the manifest: BPM needs the item's \"instruction\" (e.g. 'make the cup "
            "red') or a \"parse\" object naming o1 / o2")


class RegionSource:
    """A run's BPM region models (GroundingDINO, SAM and the run's CLIP), loaded on first use; a load
    failure becomes the error of every item that needs them (recorded as failed, so
    ``--retry-failed`` runs them again once the weights are there)."""

    def __init__(self, models: BPMModels, options: BPMOptions, parser: str = "rules", *,
                 keys: Sequence[str] = ("bpm",), hatie: HatieOptions | None = None, features: Any = None,
                 vqa: Any = None, calibrated: dict[str, dict[str, float]] | None = None):
        self.models = models
        self.options = options
        self.parser = parser
        self.keys = tuple(keys)  # the region metrics the run asked for (bpm and / or the hatie rows)
        self.hatie = hatie or HatieOptions()
        self.features = features  # HATIE's DINOv2 / LPIPS (None: left out, noted on every result)
        self.vqa = vqa  # HATIE's VQA scorer when hatie.vqa is on
        self.calibrated = dict(calibrated or {})  # saved criterion weight sets (HatieOptions.total may name one)
        self._loaded = False
        self._error: str | None = None
        self._lock = threading.Lock()

    @classmethod
    def from_settings(cls, settings: Settings, encoder: ClipEncoder, options: BPMOptions,
                      parser: str = "rules", **kwargs: Any) -> RegionSource:
        """The shared detector and segmenter for ``settings`` with the run's CLIP encoder (nothing loaded)."""
        from ..bpm.models import get_bpm_models

        return cls(get_bpm_models(settings, encoder=encoder), options, parser, **kwargs)

    @property
    def bpm(self) -> bool:
        return "bpm" in self.keys

    @property
    def hatie_keys(self) -> list[str]:
        return [key for key in self.keys if key in HATIE_KEYS]

    def hatie_models(self) -> HatieModels:
        models = self.loaded()
        return HatieModels(models.detector, models.segmenter, models.encoder, self.features, self.vqa)

    @property
    def untrained(self) -> bool:
        return self.models.untrained

    def signature(self) -> dict[str, Any]:
        """What decides the BPM values besides the images (compared on resume, like the CLIP model)."""
        detector, segmenter = self.models.detector, self.models.segmenter
        options = self.options.to_dict()
        for key in ("box_threshold", "fast_box_threshold"):  # only the threshold this detector reads decides
            if key != getattr(detector, "threshold_option", "box_threshold"):
                options.pop(key, None)
        checkpoint = getattr(segmenter, "checkpoint", None)  # SAM 2 has none: its spec names the folder
        out = {"detector": detector.spec, "segmenter": segmenter.spec,
               "sam_checkpoint": str(checkpoint) if checkpoint else None,
               "parser": self.parser, "options": options, "untrained": self.untrained}
        size = getattr(segmenter, "input_size", None)
        if size is not None:  # SAM 2's input side (the fast preset runs it at 512 px)
            out["segmenter_input"] = size
        if getattr(detector, "input_size", None) is not None:  # GroundingDINO below its checkpoint's size
            out["detector_input"] = list(detector.input_size)
        if self.hatie_keys:
            out["hatie"] = {"options": self.hatie.to_dict(), "weights": hatie_weights(self.hatie.total, self.calibrated),
                            "features": self.features.info() if self.features is not None else None,
                            "vqa": self.vqa.info() if self.vqa is not None else None}
        return out

    def loaded(self) -> BPMModels:
        with self._lock:
            if not self._loaded and self._error is None:
                try:
                    self.models.load()
                    self._loaded = True
                except AugclipError as exc:
                    self._error = f"BPM region models are not available: {exc}"
        if self._error is not None:
            raise InputError(self._error)
        return self.models


def hatie_weights(name: str, calibrated: dict[str, dict[str, float]]) -> dict[str, float]:
    """The criterion weights a run's totals use (compared on resume: a changed set reruns nothing silently)."""
    return total_weights(name, calibrated)


def item_parse(item: ManifestItem, parser: str = "rules") -> tuple[ParsedInstruction | None, str | None]:
    """The parse BPM uses for an item (its instruction's parse with the manifest's ``parse`` corrections,
    or the corrections alone), or None and the reason it has none."""
    if not (item.instruction and item.instruction.strip()) and not item.parse:
        return None, NO_PARSE
    try:
        return resolve_parse(item.instruction, item.parse, parser), None
    except InstructionParseError as exc:
        if item.instruction and item.instruction.strip():
            return None, f"the instruction parser refused {item.instruction!r}: {exc}"
        return None, f"the manifest's parse is not enough for BPM: {exc}"


def bpm_summary(result: BPMResult) -> dict[str, Any]:
    """The few numbers of one edit's BPM result a batch record keeps (no masks, boxes or images)."""
    return {**result.components.to_dict(), "found": dict(result.found)}


def score_regions(item: ManifestItem, source: LoadedImage, edits: list[LoadedImage], parsed: ParsedInstruction | None,
                  regions: RegionSource, scores: ItemScores | None = None) -> ItemScores:
    """The regions stage of one item: BPM of every edit (Alg. 1) with ``parsed`` (when there is one and BPM
    was asked for) and HATIE's criteria (when asked for); runs in a decode worker while the full-size
    images are in memory. A failure of the models raises (the item fails)."""
    scores = scores or ItemScores.empty(len(edits))
    if regions.bpm and parsed is not None:
        models = regions.loaded()
        results = bpm_score_many(source, edits, parsed=parsed, models=models, options=regions.options,
                                 names=[edit.name for edit in item.edits])
        for i, result in enumerate(results):
            scores.values[i]["bpm"] = float(result.bpm)
            scores.details[i]["bpm"] = bpm_summary(result)
    if regions.hatie_keys:
        hatie = hatie_score_many(source, edits, item.instruction, regions.hatie_models(), parsed=parsed,
                                 edit_type=item.edit_type, target_text=item.target_text, options=regions.hatie,
                                 calibrated=regions.calibrated,
                                 names=[edit.name for edit in item.edits])
        for i, result in enumerate(hatie):
            add_hatie(scores, i, result, regions.hatie_keys)
    return scores


def add_hatie(scores: ItemScores, i: int, result: HatieResult, keys: Sequence[str]) -> None:
    """Edit ``i``'s HATIE values (each chosen key), reasons and the record's ``hatie`` summary."""
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
                                          or f"HATIE does not score {CRITERION_LABELS.get(criterion, criterion)} for "
                                          f"{result.edit_type.edit_type} edits (App. C.1)")
    scores.details[i]["hatie"] = result.summary()


def regions_unavailable(n_edits: int, reason: str, keys: Sequence[str] = ("bpm",)) -> ItemScores:
    """Every edit without BPM, with the item's reason."""
    scores = ItemScores.empty(n_edits)
    for i in range(n_edits):
        for key in keys:
            scores.values[i][key] = None
            scores.unavailable[i][key] = reason
    return scores


# ---------------------------------------------------------------------------------------------- judge
class JudgeSource:
    """A run's MLLM judge, built on first use and shared by every decode worker (its concurrency and
    rate bounds hold for the whole run). An endpoint that cannot be built or answers with a transport
    error (down, unauthorised, rate limited after every retry) fails the item, so ``--retry-failed``
    asks again later (answers already given come from the cache); an answer the judge cannot use
    (refused, filtered, invalid JSON) leaves the row unavailable with the reason."""

    def __init__(self, settings: Settings, options: JudgeOptions):
        self.settings = settings
        self.options = options
        self._judge: MLLMJudge | None = None
        self._error: str | None = None
        self._lock = threading.Lock()

    def signature(self) -> dict[str, Any]:
        """What decides the judge's values besides the images (compared on resume; the same whether or not
        the endpoint is reachable, so a run can resume once it is)."""
        model = (self.options.model or self.settings.judge_model or self.settings.mllm_model).strip()
        return judge_signature(self.options, model)

    def loaded(self, raise_error: bool = True) -> MLLMJudge | None:
        with self._lock:
            if self._judge is None and self._error is None:
                try:
                    self._judge = MLLMJudge(self.options, settings=self.settings)
                except AugclipError as exc:
                    self._error = f"the MLLM judge is not available: {exc}"
        if self._error is not None and raise_error:
            raise InputError(self._error)
        return self._judge


def score_judge(item: ManifestItem, source: LoadedImage, edits: list[LoadedImage], judge: JudgeSource) -> ItemScores:
    """The judge stage of one item (every edit against the item's instruction, else its target text); runs in a
    decode worker while the images are in memory."""
    results = judge.loaded().judge_edits(source, edits, item.instruction or item.target_text)  # type: ignore[union-attr]
    scores = ItemScores.empty(len(edits))
    for i, result in enumerate(results):
        endpoint = [q for q in result.questions.values() if q.kind is not None and q.kind not in CONTENT_FAILURES
                    and q.kind != "no_request"]
        if endpoint:
            raise InputError(endpoint[0].reason or "the MLLM judge failed")
        scores.values[i].update(result.metrics())
        scores.unavailable[i].update(result.unavailable())
        scores.details[i]["judge"] = result.to_dict()
    return scores


# ---------------------------------------------------------------------------------------------- decode
@dataclass
class DecodedItem:
    """What decoding one item produced (no full-size image outlives the decode task)."""

    # image key -> (content hash, prepared pixels or None, embedding from the encoder's cache or None)
    images: dict[str, tuple[str, Any, np.ndarray | None]] = field(default_factory=dict)
    shas: dict[str, str] = field(default_factory=dict)  # every decoded image key -> content hash
    failed_images: dict[str, str] = field(default_factory=dict)  # image key -> why it could not be opened
    pixel_scores: ItemScores | None = None
    region_scores: ItemScores | None = None
    judge_scores: ItemScores | None = None
    parse: dict[str, Any] | None = None  # the parse BPM used (regions stage)
    attributes: Attributes | None = None
    error: str | None = None


def decode_item(item: ManifestItem, claim: set[str], encoder: ClipEncoder, pixel_metrics: Sequence[str],
                attributes: AttributeSource | None, max_pixels: int | None,
                regions: RegionSource | None = None, judge: JudgeSource | None = None,
                features: FeatureSource | None = None) -> DecodedItem:
    """Decode an item's images, prepare the ``claim``\\ ed ones for the encoder, score the pixel-stage
    metrics, extract attributes (when ``attributes`` is given), run BPM (when ``regions`` is given) and the
    MLLM judge (when ``judge`` is given); the feature networks (``features``) serve the network metrics
    among ``pixel_metrics``; runs in a decode worker."""
    out = DecodedItem()
    parsed: ParsedInstruction | None = None
    if regions is not None:
        parsed, reason = item_parse(item, regions.parser)
        if parsed is None:
            if regions.bpm:
                out.region_scores = regions_unavailable(len(item.edits), reason or NO_PARSE)
        else:
            out.parse = parsed.to_dict()
    run_regions = regions is not None and (parsed is not None or bool(regions.hatie_keys))
    need_all = bool(pixel_metrics) or run_regions or judge is not None
    loaded: dict[str, LoadedImage] = {}
    for label, path, written in item.labelled_images():
        key = image_key(path)
        if key in loaded or key in out.failed_images:
            continue
        if not (need_all or key in claim or (label == "source" and attributes is not None)):
            continue
        try:
            image = open_image(path, name=written, max_pixels=max_pixels)
        except AugclipError as exc:
            out.failed_images[key] = str(exc)
            out.error = out.error or f"{label}: {exc}"
            continue
        loaded[key] = image
        sha = image.sha256
        out.shas[key] = sha
        if key in claim:
            cached = encoder.image_cache.get(sha)
            out.images[key] = (sha, None, cached) if cached is not None else (sha, encoder.preprocess_image(image), None)
    if out.error is not None:
        return out
    if need_all:
        source = loaded[image_key(item.source_path)]
        edits = [loaded[image_key(edit.resolved)] for edit in item.edits]
        if pixel_metrics:
            truth = loaded.get(image_key(item.ground_truth_path)) if item.ground_truth_path is not None else None
            try:
                out.pixel_scores = score_pixels(item, source, edits, pixel_metrics, truth, features)
            except FeatureFailure as exc:
                out.error = f"feature networks: {exc}"
                return out
            except AugclipError as exc:
                out.error = f"edit_mask: {exc}"
                return out
        if run_regions:
            assert regions is not None
            try:
                out.region_scores = score_regions(item, source, edits, parsed, regions, out.region_scores)
            except AugclipError as exc:
                out.error = f"{'BPM' if regions.bpm and parsed is not None else 'HATIE'}: {exc}"
                return out
        if judge is not None:
            try:
                out.judge_scores = score_judge(item, source, edits, judge)
            except AugclipError as exc:
                out.error = f"judge: {exc}"
                return out
    if attributes is not None:
        try:
            out.attributes = attributes.extract(loaded[image_key(item.source_path)], item)
        except AugclipError as exc:
            out.error = str(exc)
    return out


def score_pixels(item: ManifestItem, source: LoadedImage, edits: list[LoadedImage], keys: Sequence[str],
                 ground_truth: LoadedImage | None = None, features: FeatureSource | None = None) -> ItemScores:
    """The pixel-stage metrics of one item's decoded images (with its ground truth and edit mask, if any),
    and the network metrics among ``keys`` (``dino_gt``, ``structure_distance``, ``lpips_unedited``) when
    ``features`` is given.

    The unedited-region measures (PSNR / MSE / SSIM, torchmetrics) run only when a chosen metric needs
    them; LPIPS, which loads a network, only with ``features`` (else its reason says so)."""
    mask = None
    fields: dict[str, Any] = {}
    if item.edit_mask_path is not None:
        from ..pipeline import load_edit_mask

        mask = load_edit_mask(item.edit_mask_path, source.image.size)
    if features is not None and features.keys:
        fields = features.inputs(source, edits, ground_truth, mask, item.target_text)
    elif mask is not None and any("unedited_measures" in METRICS[key].needs for key in keys):
        from ..inference.image_measures import unedited_measures

        fields["unedited_measures"] = [unedited_measures(source.image, edit.image, mask) for edit in edits]
    inputs = MetricInputs(source_image=source.image, edit_images=[edit.image for edit in edits],
                          instruction=item.instruction or None, target_text=item.target_text,
                          ground_truth_image=ground_truth.image if ground_truth is not None else None,
                          mask=mask, **fields)
    return score_item(inputs, keys)


# ---------------------------------------------------------------------------------------------- encode
def encode_images(encoder: ClipEncoder, pixels: list[Any], shas: list[str], batch_size: int) -> np.ndarray:
    """Unit float64 rows for prepared images (the one normalisation of the run's image embeddings)."""
    return unit_rows(encoder.encode_preprocessed(pixels, keys=shas, batch_size=batch_size), "image embeddings")


def encode_texts(encoder: ClipEncoder, texts: list[str], batch_size: int,
                 token_rows: dict[str, Any] | None = None) -> np.ndarray:
    """Unit float64 rows for texts (the one normalisation of the run's text embeddings); ``token_rows``:
    rows the encoder's tokenizer gave in a decode process, by stripped text."""
    return unit_rows(encoder.encode_texts(texts, batch_size=batch_size, token_rows=token_rows), "text embeddings")


def unit_row(row: np.ndarray, what: str) -> np.ndarray:
    """One embedding from the encoder's cache, normalised like :func:`encode_images` rows."""
    return unit_rows(np.asarray(row)[None, :], what)[0]


# ---------------------------------------------------------------------------------------------- score
def embedding_inputs(item: ManifestItem, attributes: Attributes | None, images: Sequence[np.ndarray],
                     texts: dict[str, np.ndarray], needs: set[str], augclip_options: dict[str, Any]) -> MetricInputs:
    """The embedding-stage inputs of one item: ``images`` are its unit rows, source first; ``texts``
    maps every text the item needs to its unit row."""
    with_attributes = "attribute_embeddings" in needs and attributes is not None
    n_edits = len(item.edits)
    truth = images[1 + n_edits] if item.ground_truth_path is not None and len(images) > 1 + n_edits else None
    return MetricInputs(
        source_embedding=images[0],
        edit_embeddings=np.stack(images[1:1 + n_edits]),
        ground_truth_embedding=truth,
        output_caption_embedding=(texts[item.output_caption] if "output_caption_embedding" in needs
                                  and item.output_caption else None),
        target_text_embedding=texts[item.target_text] if "target_text_embedding" in needs else None,
        source_text_embedding=(texts[item.source_text] if "source_text_embedding" in needs and item.source_text
                               else None),
        source_attr_embeddings=np.stack([texts[t] for t in attributes.source]) if with_attributes else None,  # type: ignore[union-attr]
        target_attr_embeddings=np.stack([texts[t] for t in attributes.target]) if with_attributes else None,  # type: ignore[union-attr]
        instruction=item.instruction or None,
        target_text=item.target_text,
        augclip_options=augclip_options,
    )


# ---------------------------------------------------------------------------------------------- records
def ok_record(item: ManifestItem, dataset: str, scores: ItemScores, shas: Sequence[str | None],
              attributes: Attributes | None, order: Sequence[str], run: dict[str, Any],
              extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """The results line of a scored item (``shas``: the edits' content hashes; ``extra``: item-level
    fields of a stage, e.g. ``bpm_parse``)."""
    edits = []
    for i, edit in enumerate(item.edits):
        values, reasons = scores.values[i], scores.unavailable[i]
        entry: dict[str, Any] = {
            "index": i, "path": edit.path, "name": edit.name, "role": edit.role, "sha256": shas[i],
            "metrics": {key: values.get(key) for key in order},
            "unavailable": {key: reasons[key] for key in order if key in reasons},
        }
        entry.update(scores.details[i])
        edits.append(entry)
    return {
        "id": item.id, "dataset": item.dataset or dataset, "status": "ok", "source": item.source,
        "target_text": item.target_text, "source_text": item.source_text, "instruction": item.instruction,
        "edits": edits, "human": item.human.to_dict() if item.human else None,
        "attributes": attributes.to_dict() if attributes is not None else None,
        "meta": item.meta, **(extra or {}), "run": run,
    }


def error_record(item: ManifestItem, dataset: str, error: str, run: dict[str, Any]) -> dict[str, Any]:
    """The results line of an item that could not be scored."""
    return {"id": item.id, "dataset": item.dataset or dataset, "status": "error", "error": error,
            "source": item.source, "target_text": item.target_text,
            "edits": [{"index": i, "path": e.path, "name": e.name, "role": e.role} for i, e in enumerate(item.edits)],
            "human": item.human.to_dict() if item.human else None, "meta": item.meta, "run": run}
