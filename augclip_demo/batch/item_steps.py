"""The steps of a batch item as functions over plain data: decode (and the pipeline's per-item stages) -> encode
-> score -> record.

The per-item stages (pixels and feature networks, BPM, HATIE, the judge) are the pipeline's own stage
objects (:mod:`augclip_demo.pipeline.stages`), built for a run by :func:`run_stages`; this module loads
an item's images for them and keeps the run's models and signatures. Each function takes and returns
plain values (items, arrays, dicts), so an engine can run it where it likes: the streaming runner
(:mod:`.runner`) runs decoding in threads and scoring in a thread or process pool; the Ray engine runs
the same functions in its actors.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..attributes.base import AttributeProvider, Attributes
from ..bpm import BPMOptions
from ..bpm.models import BPMModels
from ..choices import FEATURE_NETWORKS
from ..config import DEFAULT_MAX_IMAGE_SIDE, Settings
from ..errors import AugclipError, InputError, InstructionParseError
from ..hatie.criteria import HATIE_KEYS, HatieOptions, total_weights
from ..inference.clip_encoder import ClipEncoder
from ..instructions import ParsedInstruction, resolve_parse
from ..io import LoadedImage, open_image
from ..judge import JudgeOptions, MLLMJudge
from ..judge.judge import judge_signature
from ..llm import OpenAICompatibleClient
from ..metrics.suite import METRICS, ItemScores, MetricInputs
from ..metrics.vectors import unit_rows
from ..pipeline import FEATURE_METRICS, Evaluator, FeatureNetworks, load_edit_mask, load_object_masks
from ..pipeline.stages import (
    NO_PARSE,
    BpmStage,
    FeatureFailure,
    HatieStage,
    ItemImages,
    ItemStage,
    JudgeStage,
    PixelStage,
    hatie_models,
    merge_scores,
    pixel_family_keys,
)
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


# ---------------------------------------------------------------------------------------------- models
class _LazyModels:
    """Models built and loaded on first use; a load failure becomes the error of every item that needs them
    (recorded as failed, so ``--retry-failed`` runs them again once the weights are there)."""

    def __init__(self, build: Callable[[], Any], what: str):
        self.build = build
        self.what = what
        self._models: Any = None
        self._error: str | None = None
        self._lock = threading.Lock()

    def __call__(self) -> Any:
        with self._lock:
            if self._models is None and self._error is None:
                try:
                    models = self.build()
                    models.load()
                    self._models = models
                except AugclipError as exc:
                    self._error = f"{self.what} are not available: {exc}"
        if self._error is not None:
            raise InputError(self._error)
        return self._models


def feature_signature(networks: FeatureNetworks, keys: Sequence[str]) -> dict[str, Any]:
    """The networks behind the chosen feature metrics (compared on resume, like the CLIP model)."""
    out: dict[str, Any] = {key: networks.spec_of(key) for key in keys if key in FEATURE_METRICS}
    for net in FEATURE_NETWORKS:  # and the other fields their rows say change their metrics
        if set(net.metrics) & set(keys):
            out.update({name: getattr(networks, name) for name in net.options})
    return out


class RegionSource:
    """A run's BPM region models (GroundingDINO, SAM and the run's CLIP), loaded on first use, and what decides
    the region metrics besides the images (the run signature)."""

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
        self.loaded = _LazyModels(lambda: self.models, "BPM region models")

    @classmethod
    def from_settings(cls, settings: Settings, encoder: ClipEncoder, options: BPMOptions,
                      parser: str = "rules", **kwargs: Any) -> RegionSource:
        """The shared detector and segmenter for ``settings`` with the run's CLIP encoder (nothing loaded)."""
        from ..bpm.models import get_bpm_models

        return cls(get_bpm_models(settings, encoder=encoder, regions=options.regions), options, parser, **kwargs)

    @property
    def bpm(self) -> bool:
        return "bpm" in self.keys

    @property
    def hatie_keys(self) -> list[str]:
        return [key for key in self.keys if key in HATIE_KEYS]

    @property
    def untrained(self) -> bool:
        return self.models.untrained

    def signature(self) -> dict[str, Any]:
        """What decides the BPM values besides the images (compared on resume, like the CLIP model)."""
        detector, segmenter = self.models.detector, self.models.segmenter
        options = self.options.to_dict()
        if detector is None or segmenter is None:  # regions from given masks: no detector, segmenter or threshold
            for key in ("box_threshold", "fast_box_threshold"):
                options.pop(key, None)
            return {"regions": "given masks", "parser": self.parser, "options": options, "untrained": self.untrained,
                    **self._hatie_signature()}
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
        return {**out, **self._hatie_signature()}

    def _hatie_signature(self) -> dict[str, Any]:
        if not self.hatie_keys:
            return {}
        return {"hatie": {"options": self.hatie.to_dict(), "weights": hatie_weights(self.hatie.total, self.calibrated),
                          "features": self.features.info() if self.features is not None else None,
                          "vqa": self.vqa.info() if self.vqa is not None else None}}


def hatie_weights(name: str, calibrated: dict[str, dict[str, float]]) -> dict[str, float]:
    """The criterion weights a run's totals use (compared on resume: a changed set reruns nothing silently)."""
    return total_weights(name, calibrated)


def item_parse(item: ManifestItem, parser: str = "rules", client: Any = None) -> tuple[ParsedInstruction | None, str | None]:
    """The parse BPM uses for an item (its instruction's parse with the manifest's ``parse`` corrections,
    or the corrections alone), or None and the reason it has none; ``client``: the run's chat client for
    the ``llm`` parser."""
    if not (item.instruction and item.instruction.strip()) and not item.parse:
        return None, NO_PARSE
    try:
        return resolve_parse(item.instruction, item.parse, parser, client=client), None
    except InstructionParseError as exc:
        if item.instruction and item.instruction.strip():
            return None, f"the instruction parser refused {item.instruction!r}: {exc}"
        return None, f"the manifest's parse is not enough for BPM: {exc}"


class JudgeSource:
    """A run's MLLM judge, built on first use and shared by every decode worker (its concurrency and
    rate bounds hold for the whole run)."""

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

    def loaded(self) -> MLLMJudge:
        with self._lock:
            if self._judge is None and self._error is None:
                try:
                    self._judge = MLLMJudge(self.options, settings=self.settings)
                except AugclipError as exc:
                    self._error = f"the MLLM judge is not available: {exc}"
        if self._error is not None:
            raise InputError(self._error)
        assert self._judge is not None
        return self._judge


@dataclass(frozen=True)
class HatieFeatureSpecs:
    """HATIE's feature networks by spec, for a run that sends its options to other processes (a Ray actor): the
    networks themselves do not pickle, so each actor builds them from these (:func:`run_stages`)."""

    dino: str
    lpips: str
    fid: str
    clip: str = ""  # HATIE's own CLIP spec; "" = the run's CLIP

    @classmethod
    def of(cls, features: Any) -> Any:
        """The specs of a :class:`~augclip_demo.hatie.networks.HatieFeatures` (anything else as it is)."""
        from ..hatie.networks import HatieFeatures

        if not isinstance(features, HatieFeatures):
            return features
        return cls(features.dino_network.spec, features.lpips_network.spec, features._fid_spec, features.clip_spec)

    def build(self, settings: Settings) -> Any:
        from ..hatie.networks import HatieFeatures

        return HatieFeatures(settings, dino=self.dino, lpips=self.lpips, fid=self.fid, clip=self.clip)


# ---------------------------------------------------------------------------------------------- the run's stages
@dataclass
class RunStages:
    """The per-item stages of a batch run (the pipeline's stage objects) and the sources behind their signature.

    Built in one place (:func:`run_stages`) from the run's options, by the local runner and by every Ray actor.
    An endpoint failure of the judge and a feature network that cannot load fail the item (``--retry-failed``
    runs it again); a metric's error is the edit's reason."""

    pixels: PixelStage | None = None
    bpm: BpmStage | None = None
    hatie: HatieStage | None = None
    judge: JudgeStage | None = None
    regions: RegionSource | None = None
    judge_source: JudgeSource | None = None
    parser: str = "rules"
    #: the chat client of the ``llm`` parser, built from the run's settings (None for the rules)
    parse_client: Any = None
    feature_keys: tuple[str, ...] = ()

    def all(self) -> list[ItemStage]:
        return [stage for stage in (self.pixels, self.bpm, self.hatie, self.judge) if stage is not None]

    def with_models(self) -> list[ItemStage]:
        """The stages that run region models or the judge (the Ray engine gives them their own actors)."""
        return [stage for stage in (self.bpm, self.hatie, self.judge) if stage is not None]

    @property
    def parses(self) -> bool:
        """Whether items are parsed for BPM (and HATIE), and records keep the parse."""
        return self.regions is not None


def run_stages(options: Any, settings: Settings, encoder: ClipEncoder) -> RunStages:
    """The stages a run of ``options`` (a :class:`~.options.BatchOptions`) computes, nothing loaded yet."""
    metrics = list(options.metrics)
    out = RunStages(parser=options.parser, feature_keys=tuple(options.feature_metrics),
                    parse_client=OpenAICompatibleClient(settings) if options.parser == "llm" else None)
    pixel_keys = [key for key in metrics if key in pixel_family_keys()]
    if pixel_keys:
        # a feature network runs when asked for by name ("all" gives those metrics their reason, as the Evaluator does)
        out.pixels = PixelStage(pixel_keys, options.networks, settings, run_networks=options.feature_metrics)
    region_keys = [key for key in metrics if METRICS[key].basis == "regions"]
    if region_keys:
        hatie_keys = [key for key in region_keys if key in HATIE_KEYS]
        features = options.hatie_features
        if isinstance(features, str) and features == "auto" and not hatie_keys:
            features = None
        elif isinstance(features, str) and features == "auto":
            from ..hatie.networks import HatieFeatures

            features = HatieFeatures(settings)
        elif isinstance(features, HatieFeatureSpecs):
            features = features.build(settings)
        out.regions = regions = RegionSource.from_settings(
            settings, encoder, options.bpm, options.parser, keys=region_keys, hatie=options.hatie, features=features,
            vqa=options.hatie_vqa, calibrated=options.hatie_calibrated)
        if regions.bpm:
            lpips = (options.networks.spec_of("lpips_unedited") if "lpips_unedited" in options.feature_metrics
                     else None)
            out.bpm = BpmStage(regions.loaded, options.bpm, parser=options.parser, unedited=metrics, lpips=lpips,
                               settings=settings)
        if hatie_keys:
            models = _LazyModels(lambda: hatie_models(settings, encoder, features, options.hatie_vqa),
                                 "HATIE's region models")
            out.hatie = HatieStage(models, hatie_keys, options=options.hatie, calibrated=options.hatie_calibrated)
    if any(METRICS[key].basis == "judge" for key in metrics):
        out.judge_source = JudgeSource(settings, options.judge or JudgeOptions.from_settings(settings))
        out.judge = JudgeStage(out.judge_source.loaded, fail_on_endpoint=True)
    return out


# ---------------------------------------------------------------------------------------------- decode
@dataclass
class DecodedItem:
    """What decoding one item produced (no full-size image outlives the decode task)."""

    # image key -> (content hash, prepared pixels or None, embedding from the encoder's cache or None)
    images: dict[str, tuple[str, Any, np.ndarray | None]] = field(default_factory=dict)
    shas: dict[str, str] = field(default_factory=dict)  # every decoded image key -> content hash
    failed_images: dict[str, str] = field(default_factory=dict)  # image key -> why it could not be opened
    stage_scores: ItemScores | None = None  # every per-item stage's values and reasons, merged in stage order
    notes: list[str] = field(default_factory=list)  # the pixel stage's notes (untrained feature networks)
    parse: dict[str, Any] | None = None  # the parse BPM used (regions stage)
    attributes: Attributes | None = None
    error: str | None = None


def decode_item(item: ManifestItem, claim: set[str], encoder: ClipEncoder, stages: Sequence[ItemStage],
                attributes: AttributeSource | None, max_pixels: int | None, parser: str | None = None,
                max_side: int = DEFAULT_MAX_IMAGE_SIDE, parse_client: Any = None) -> DecodedItem:
    """Decode an item's images, prepare the ``claim``\\ ed ones for the encoder, run the per-item ``stages`` on
    them (pixels, BPM, HATIE, the judge) and extract attributes (when ``attributes`` is given); ``parser``:
    BPM's instruction parser (None: the item is not parsed) and ``parse_client`` its chat client; ``max_pixels`` / ``max_side``: the settings'
    image limits. Runs in a decode worker."""
    out = DecodedItem()
    parsed: ParsedInstruction | None = None
    parse_reason: str | None = None
    if parser is not None:
        parsed, parse_reason = item_parse(item, parser, parse_client)
        out.parse = parsed.to_dict() if parsed is not None else None
    need_all = bool(stages)
    loaded: dict[str, LoadedImage] = {}
    for label, path, written in item.labelled_images():
        key = image_key(path)
        if key in loaded or key in out.failed_images:
            continue
        if not (need_all or key in claim or (label == "source" and attributes is not None)):
            continue
        try:
            image = open_image(path, name=written, max_pixels=max_pixels, max_side=max_side)
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
        truth = loaded.get(image_key(item.ground_truth_path)) if item.ground_truth_path is not None else None
        try:
            mask = load_edit_mask(item.edit_mask_path, source.image.size) if item.edit_mask_path is not None else None
        except AugclipError as exc:
            out.error = f"edit_mask: {exc}"
            return out
        query = None
        if any(isinstance(stage, HatieStage) for stage in stages):  # the masks are read for HATIE only
            from .benchmarks.hatie_bench import hatie_query

            try:
                query = hatie_query(item)
            except AugclipError as exc:
                out.error = str(exc)
                return out
        try:
            objects = _object_masks(item, stages, source.image.size)
        except AugclipError as exc:
            out.error = f"object_masks: {exc}"
            return out
        images = ItemImages(source, [loaded[image_key(edit.resolved)] for edit in item.edits], item.target_text,
                            item.instruction or None, parsed, parse_reason, item.edit_type, truth, mask, query,
                            objects)
        out.error = _run_item_stages(stages, images, out)
        if out.error is not None:
            return out
    if attributes is not None:
        try:
            out.attributes = attributes.extract(loaded[image_key(item.source_path)], item)
        except AugclipError as exc:
            out.error = str(exc)
    return out


def _object_masks(item: ManifestItem, stages: Sequence[ItemStage], size: tuple[int, int]) -> Any:
    """The item's ``object_masks`` read (each resized to the source's ``size``) when a stage uses them: HATIE, or
    BPM with given-mask regions; else None."""
    wanted = any(isinstance(stage, HatieStage) or (isinstance(stage, BpmStage) and stage.given_masks)
                 for stage in stages)
    if not wanted or item.object_mask_paths is None:
        return None
    return load_object_masks(item.object_mask_paths, size, len(item.edits))


def _run_item_stages(stages: Sequence[ItemStage], item: ItemImages, out: DecodedItem) -> str | None:
    """Every stage on the item, their scores merged into ``out``; returns the item's error, if any."""
    out.stage_scores = ItemScores.empty(len(item.edits))
    for stage in stages:
        try:
            output = stage.run(item)
        except FeatureFailure as exc:
            return f"feature networks: {exc}"
        except AugclipError as exc:
            return f"{'edit_mask' if isinstance(stage, PixelStage) else stage.name}: {exc}"
        merge_scores(out.stage_scores, output.scores)
        if isinstance(stage, PixelStage):
            out.notes.extend(output.notes)
    return None


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
