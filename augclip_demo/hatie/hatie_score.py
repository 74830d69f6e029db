"""HATIE for one source image and its edits: type -> detect -> segment -> measure -> criteria.

The detector and segmenter are BPM's (GroundingDINO + SAM, :mod:`augclip_demo.bpm.models`), where
HATIE uses a closed-vocabulary Mask R-CNN (docs/method-notes.md says where that can change the
numbers); with HATIE's own benchmark (:class:`HatieQuery`) the source's masks are the benchmark's and
only the edits are segmented, as in the published code. CLIP is HATIE's own ViT-B/32 (the feature
networks' ``clip_network``; :attr:`HatieOptions.clip` ``"run"`` uses the run's encoder); DINOv2 and
LPIPS come from the feature networks; VQA from the OpenAI-compatible client when
:attr:`HatieOptions.vqa` is on. Every measure is collected first and computed in one batch per
model; the criteria are then the pure math of :mod:`augclip_demo.hatie.criteria`.

Image pairs are passed edit first, source second, as the published code does (it matters for L2,
which resizes the second image to the first's size).
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from PIL import Image

from ..bpm.localize import ObjectMasks, named_mask
from ..errors import InputError
from ..instructions import EditType, ParsedInstruction, classify_edit_type, try_parse
from ..io import ImageInput, LoadedImage, open_source_and_edits
from . import criteria as H
from . import images as HI
from .networks import FeatureNetworks, row_cosines
from .vqa import VqaScorer, object_question, relation_question, scene_question

#: HATIE keeps every detection, however unsure (App. D.2); GroundingDINO needs a threshold above 0.
DEFAULT_BOX_THRESHOLD = 0.1
#: A box under 5 px on either side counts as "object missing" (hatie-notes, "Pipeline").
_MIN_BOX_PX = 5
#: The phrase our open-vocabulary detector is given for "every foreground object" when the item names
#: none (HATIE's foreground is the annotated editable objects of its dataset).
_DEFAULT_FOREGROUND = ("object",)
#: Our parse's position words as relation phrases; the benchmark's own locations are used as the code
#: writes them (left / right: "on the left side of"; front: "in front of"; others as given).
_RELATION_WORDS = {"up": "above", "down": "under", "left": "on the left side of", "right": "on the right side of",
                  "inside": "in", "near": "next to", "unchanged": "with", "front": "in front of"}


@dataclass(frozen=True)
class HatieQuery:
    """One query of HATIE's own benchmark, as its files give it: the type's objects and the source's masks.

    ``source_masks``: object name -> boolean mask of the original image (the benchmark's, in the 512 x 512
    frame), used instead of detecting the source. ``target``: the object edited (remove / replace:
    the object before; add: the object added); ``new``: the replacing object (replace); ``anchor`` and
    ``location`` (add); ``after`` (attribute: the new attribute); ``subtype`` (resize: larger / smaller);
    ``foreground``: the objects a background change keeps; ``target_text``: the wanted background / style.
    """

    query_id: str | None = None
    target: str | None = None
    new: str | None = None
    anchor: str | None = None
    location: str | None = None
    after: str | None = None
    subtype: str | None = None
    foreground: tuple[str, ...] = ()
    target_text: str | None = None
    source_masks: Mapping[str, np.ndarray] = field(default_factory=dict)


@dataclass
class HatieModels:
    """What HATIE runs: BPM's detector, segmenter and CLIP encoder, the feature networks (None: DINO
    and LPIPS are left out, with a note on every result) and the optional VQA scorer."""

    detector: Any
    segmenter: Any
    encoder: Any
    features: FeatureNetworks | None = None
    vqa: VqaScorer | None = None

    @property
    def untrained(self) -> bool:
        parts = [self.detector, self.segmenter, self.encoder] + ([self.features] if self.features else [])
        return any(bool(getattr(p, "untrained", False)) for p in parts)

    def load(self) -> HatieModels:
        """Load CLIP and the feature networks; the detector and the segmenter load on their first use (with given
        masks for every image they are never needed)."""
        self.encoder.load()
        if self.features is not None and hasattr(self.features, "load"):
            self.features.load()
        return self

    def clip_for(self, options: H.HatieOptions | None) -> tuple[Any, str | None]:
        """The CLIP encoder of HATIE's measures and a note when it is not the one the options ask for: the one
        place :attr:`HatieOptions.clip <augclip_demo.hatie.criteria.HatieOptions.clip>` is decided (HATIE's own
        CLIP is built and loaded only when this returns it)."""
        if (options or H.HatieOptions()).clip == "run":
            return self.encoder, None
        own = getattr(self.features, "clip_network", None) if self.features is not None else None
        if own is None:
            return self.encoder, "HATIE's own CLIP (ViT-B/32) is not configured: the run's CLIP measured instead"
        return own, None

    def untrained_for(self, options: H.HatieOptions | None, *, regions: bool = True) -> bool:
        """Whether a model HATIE measures with under ``options`` has random weights (its CLIP: :meth:`clip_for`'s);
        ``regions=False``: the detector and the segmenter did not run (every region came from given masks)."""
        parts = ([self.detector, self.segmenter] if regions else []) + [self.encoder] + (
            [self.features] if self.features else [])
        return (any(bool(getattr(p, "untrained", False)) for p in parts)
                or bool(getattr(self.clip_for(options)[0], "untrained", False)))

    def info(self) -> dict[str, Any]:
        return {"detector": self.detector.info(), "segmenter": self.segmenter.info(),
                "clip": {"model": getattr(self.encoder.spec, "raw", str(self.encoder.spec)),
                         "untrained": self.encoder.untrained},
                "features": self.features.info() if self.features is not None else None,
                "vqa": self.vqa.info() if self.vqa is not None else None, "untrained": self.untrained}


@dataclass
class HatieResult:
    """HATIE for one edit: the criteria (None with ``reason`` when the edit cannot be scored), the edit
    type and how it was found, the masks used (512 x 512 frame), texts, detections and notes."""

    edit_type: EditType
    scores: H.HatieScores | None
    reason: str | None = None
    masks: dict[str, np.ndarray] = field(default_factory=dict)
    texts: dict[str, str] = field(default_factory=dict)
    detections: dict[str, dict[str, Any]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    untrained: bool = False
    models: dict[str, Any] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    edit_name: str = ""
    source_image: Image.Image | None = field(default=None, repr=False, compare=False)
    edit_image: Image.Image | None = field(default=None, repr=False, compare=False)

    def value(self, key: str) -> float | None:
        if self.scores is None:
            return None
        return self.scores.total if key == "total" else self.scores.value(key)

    def summary(self) -> dict[str, Any]:
        """The small JSON record a batch line keeps: type, criteria, total, components."""
        return {**({} if self.scores is None else self.scores.to_dict()),
                "edit_type": self.edit_type.to_dict(), "reason": self.reason,
                "detections": self.detections, "texts": self.texts, "notes": list(self.notes),
                "untrained": self.untrained}

    def to_dict(self) -> dict[str, Any]:
        return {**self.summary(), "masks": {k: int(np.count_nonzero(v)) for k, v in self.masks.items()},
                "models": self.models, "timings": dict(self.timings)}


# ---------------------------------------------------------------------------------------------- batching
@dataclass(frozen=True)
class _Ways:
    """Indices of one three-way comparison's pairs: edges, each degradation step, downscaled."""

    edges: int
    steps: tuple[int, ...]
    downscaled: int


class _Measures:
    """Image pairs (four measures each) and image-text checks gathered for all edits, computed with one call
    per model."""

    def __init__(self, models: HatieModels, options: H.HatieOptions):
        self.models = models
        self.encoder, self.note = models.clip_for(options)
        self.pairs: list[tuple[np.ndarray, np.ndarray]] = []
        self.checks: list[tuple[np.ndarray, str]] = []
        self.questions: list[tuple[np.ndarray, str]] = []
        self._sims: list[H.Similarities] = []
        self._align: list[float] = []
        self._vqa: list[float] = []

    def pair(self, first: np.ndarray, second: np.ndarray) -> int:
        """CLIP, LPIPS, DINO and L2 of two images (edit side first)."""
        self.pairs.append((first, second))
        return len(self.pairs) - 1

    def ways(self, first: np.ndarray, second: np.ndarray) -> _Ways:
        """The style / attribute comparison's pairs: edge maps, the degradation steps, the downscaled grey."""
        steps = zip(HI.degradation_steps(first), HI.degradation_steps(second))
        return _Ways(self.pair(HI.edge_map(first), HI.edge_map(second)), tuple(self.pair(a, b) for a, b in steps),
                     self.pair(HI.downscaled_grey(first), HI.downscaled_grey(second)))

    def check(self, image: np.ndarray, text: str) -> int:
        self.checks.append((image, text))
        return len(self.checks) - 1

    def ask(self, image: np.ndarray, question: str) -> int | None:
        if self.models.vqa is None:
            return None
        self.questions.append((image, question))
        return len(self.questions) - 1

    def run(self) -> None:
        enc, feats = self.encoder, self.models.features
        images = [HI.to_image(p[k]) for p in self.pairs for k in (0, 1)] + [HI.to_image(i) for i, _ in self.checks]
        emb = np.asarray(enc.encode_images(images), np.float64) if images else np.zeros((0, 1))
        n_pair = 2 * len(self.pairs)
        clip_cos = row_cosines(emb[0:n_pair:2], emb[1:n_pair:2]) if self.pairs else np.zeros(0)
        if self.checks:
            texts = np.asarray(enc.encode_texts([t for _, t in self.checks]), np.float64)
            self._align = [H.cosine_to_unit(c) for c in row_cosines(emb[n_pair:], texts)]
        dino_cos: np.ndarray | None = None
        lpips: np.ndarray | None = None
        if feats is not None and self.pairs:
            d = np.asarray(feats.dino([p[k] for p in self.pairs for k in (0, 1)]), np.float64)
            dino_cos = row_cosines(d[0::2], d[1::2])
            lpips = np.asarray(feats.lpips([p[0] for p in self.pairs], [p[1] for p in self.pairs]), np.float64)
        for i, (a, b) in enumerate(self.pairs):
            self._sims.append(H.Similarities(
                clip=H.cosine_to_unit(clip_cos[i]),
                lpips=H.lpips_to_similarity(lpips[i]) if lpips is not None else None,
                dino=H.cosine_to_unit(dino_cos[i]) if dino_cos is not None else None,
                l2=HI.l2_similarity_code(a, b)))
        if self.models.vqa is not None:
            self._vqa = [self.models.vqa.ask(HI.to_image(img), q).p_yes for img, q in self.questions]

    def sims(self, index: int) -> H.Similarities:
        return self._sims[index]

    def way_sims(self, ways: _Ways) -> dict[str, H.Similarities]:
        """The three ways' similarities; the degradation way holds each measure's test score."""
        steps = [self._sims[i] for i in ways.steps]
        degradation = H.Similarities(**{m: H.degradation_score([getattr(s, m) for s in steps])
                                        if all(getattr(s, m) is not None for s in steps) else None
                                        for m in H.MEASURES})
        return {"edges": self._sims[ways.edges], "degradation": degradation, "downscaled": self._sims[ways.downscaled]}

    def alignment(self, index: int) -> float:
        return self._align[index]

    def answer(self, index: int | None) -> float | None:
        return None if index is None else self._vqa[index]


# ---------------------------------------------------------------------------------------------- texts
def _background_text(parsed: ParsedInstruction | None, target_text: str | None) -> str | None:
    """The wanted background ("beach") from the parse's o2 ("beach background") or the target text."""
    phrase = parsed.o2 if parsed is not None and parsed.o2 else None
    if phrase:
        phrase = re.sub(r"\b(?:background|backdrop|scenery|setting)\b", "", phrase).strip() or phrase
        return phrase
    return target_text


def _style_text(instruction: str | None, target_text: str | None) -> str | None:
    """The wanted style: the target text when given, else the words after into / to / as / like / in."""
    if target_text and target_text.strip():
        return target_text.strip()
    if not instruction:
        return None
    m = re.search(r"\b(?:into|to|as|like|in)\s+(?:an?\s+|the\s+)?(.+?)[.!]?$", instruction.strip().lower())
    return (m.group(1) if m else instruction.strip().lower()) or None


def relation_text(new: str, anchor: str | None, position: str, how: str) -> str:
    """"cup on the left side of table" for an added object; ``how="repeat"`` writes the added object where
    the anchor belongs, as the published code does ("cup on the left side of cup")."""
    other = new if how == "repeat" or not anchor else anchor
    return f"{new} {_RELATION_WORDS.get(position, position or 'with')} {other}"


# ---------------------------------------------------------------------------------------------- scoring
def _frame(item: LoadedImage) -> tuple[Image.Image, np.ndarray]:
    array = HI.as_array(item.image)
    return HI.to_image(array), array


def _found(det: Any) -> bool:
    if det is None or not det.found or det.box is None:
        return False
    x0, y0, x1, y1 = (float(v) for v in det.box)
    return (x1 - x0) >= _MIN_BOX_PX and (y1 - y0) >= _MIN_BOX_PX


def hatie_score(source: ImageInput | LoadedImage, edited: ImageInput | LoadedImage, instruction: str | None = None,
                models: HatieModels | None = None, **kwargs: Any) -> HatieResult:
    """HATIE of one edit (see :func:`hatie_score_many`)."""
    return hatie_score_many(source, [edited], instruction, models, **kwargs)[0]


@dataclass(frozen=True)
class _Objects:
    """What one edit type looks for: in the source, in the edits, and the texts of its checks."""

    source: list[str]
    edit: list[str]
    o1: str | None
    o2: str | None
    anchor: str | None
    location: str
    direction: str | None


def _objects(t: str, parsed: ParsedInstruction | None, query: HatieQuery | None, fg: list[str]) -> _Objects:
    q = query or HatieQuery()
    o1, o2 = (parsed.o1, parsed.o2) if parsed is not None else (None, None)
    if query is not None and q.target:
        o1 = q.target
        o2 = {"add": q.target, "replace": q.new, "attribute": f"{q.after} {q.target}" if q.after else o2}.get(t, o2)
        if t == "add":
            o1 = None
    anchor = q.anchor or (parsed.reference if parsed is not None else None)
    location = q.location or (parsed.position_state if parsed is not None else "unchanged")
    direction = {"enlarge": "larger", "shrink": "smaller"}.get(q.subtype or "", q.subtype) or (
        parsed.size_state if parsed is not None else None)
    src = {"add": [], "background": fg, "style": []}.get(t, [o1])
    edit = {"add": [o2] + ([anchor] if anchor else []), "replace": [o2], "background": fg, "style": []}.get(t, [o1])
    return _Objects([p for p in src if p], [p for p in edit if p], o1, o2, anchor, location, direction)


@dataclass(frozen=True)
class _Given:
    """A source object given by the benchmark's mask (no detection): found, full confidence, its box."""

    box: tuple[float, float, float, float]
    score: float = 1.0
    found: bool = True


def _given_found(masks: list[np.ndarray | None]) -> list[_Given | None]:
    return [_Given(tuple(float(v) for v in HI.box_of(m))) if m is not None else None for m in masks]


def _given_masks(phrases: list[str], named: Mapping[str, np.ndarray]) -> list[np.ndarray | None]:
    """Each phrase's given mask (by name, else by its last word) in the 512 frame; None where none is given or it
    is empty (the object is not in that image)."""
    out = []
    for phrase in phrases:
        match = named_mask(phrase, named)
        out.append(HI.resize_mask(match[1]) if match is not None and np.any(match[1]) else None)
    return out


def _detect(models: HatieModels, images: list[Image.Image], phrase_lists: list[list[str]], box_threshold: float,
            given: Sequence[Mapping[str, np.ndarray] | None]) -> tuple[list[list[Any]], list[list[np.ndarray | None]]]:
    """(detections, masks in the 512 frame) per image; an image with ``given`` masks
    (``given[i]``: object name -> mask; the source first) takes them instead of detection and segmentation."""
    given = list(given) + [None] * (len(images) - len(given))
    lists = [[] if given[i] is not None else p for i, p in enumerate(phrase_lists)]
    detections = (models.detector.detect(images, lists, box_threshold=box_threshold)
                  if any(lists) else [[] for _ in images])
    found = [[d if _found(d) else None for d in group] for group in detections]
    boxes = [[d.box for d in group if d is not None] for group in found]
    masks_flat = models.segmenter.segment(images, boxes) if any(boxes) else [[] for _ in images]
    masks: list[list[np.ndarray | None]] = []
    for group, got in zip(found, masks_flat):
        it = iter(got)
        masks.append([HI.resize_mask(next(it)) if d is not None else None for d in group])
    for i, named in enumerate(given):
        if named is not None:
            masks[i] = _given_masks(phrase_lists[i], named)
            found[i] = _given_found(masks[i])
    return found, masks


def hatie_score_many(source: ImageInput | LoadedImage, edits: Sequence[ImageInput | LoadedImage],
                     instruction: str | None = None, models: HatieModels | None = None, *,
                     parsed: ParsedInstruction | None = None, edit_type: str | None = None,
                     target_text: str | None = None, options: H.HatieOptions | None = None,
                     foreground: Sequence[str] | None = None, box_threshold: float = DEFAULT_BOX_THRESHOLD,
                     calibrated: Mapping[str, Mapping[str, float]] | None = None,
                     names: Sequence[str] | None = None, query: HatieQuery | None = None,
                     object_masks: ObjectMasks | None = None) -> list[HatieResult]:
    """HATIE's criteria for every edit of one source.

    Args:
        instruction: the edit instruction (parsed with the rules parser unless ``parsed`` is given).
        edit_type: HATIE's type when the user gives it (else classified from the instruction).
        target_text: the wanted background / style for background and style edits (else read
            from the parse or the instruction).
        foreground: the phrases of the objects a background change must keep (default "object").
        options: the named choices of :class:`~augclip_demo.hatie.criteria.HatieOptions`.
        query: a query of HATIE's own benchmark: its objects, and the source's masks instead of detection.
        object_masks: named objects' masks of the source and of each edit (:class:`~augclip_demo.bpm.ObjectMasks`,
            in the source's frame): an image whose masks are given is neither detected nor segmented, each object
            is found where its mask is (by name, else by the phrase's last word) with confidence 1, and absent
            where it has none; the query's source masks come first.
    """
    if models is None:
        raise InputError("HATIE needs its models (detector, segmenter, CLIP, feature networks): pass HatieModels")
    options = options or H.HatieOptions()
    if options.vqa and models.vqa is None:
        raise InputError("HATIE's VQA option is on but no VQA client is set: configure an OpenAI-compatible "
                         "vision model (OPENAI_BASE_URL / AUGCLIP_MLLM_MODEL) or turn VQA off")
    start = time.perf_counter()
    notes: list[str] = []
    if parsed is None and query is None and instruction and instruction.strip():
        parsed = try_parse(instruction).parsed
    kind = classify_edit_type(instruction, parsed, edit_type)
    src_item, loaded = open_source_and_edits(source, edits, names)
    src_image, src = _frame(src_item)
    frames = [_frame(item) for item in loaded]
    source_given = (dict(query.source_masks) if query is not None and query.source_masks else None) or (
        dict(object_masks.source) if object_masks is not None and object_masks.source else None)
    given = [source_given] + [object_masks.edit(i) if object_masks is not None else None for i in range(len(loaded))]
    regions_run = any(g is None for g in given)  # the detector and the segmenter run only for images without given masks
    common = dict(untrained=models.untrained_for(options, regions=regions_run), models=models.info(),
                  source_image=src_image)
    if not regions_run:
        notes.append("regions from the given masks (no detector or segmenter ran; a given object's confidence is 1)")
    if models.features is None:
        notes.append("no feature networks: DINOv2 and LPIPS are left out and their weights shared by the rest")

    def unscored(reason: str) -> list[HatieResult]:
        return [HatieResult(kind, None, reason=reason, edit_name=item.name, edit_image=img, **common)
                for item, (img, _) in zip(loaded, frames)]

    if kind.edit_type is None:
        return unscored(f"not a HATIE edit type: {kind.reason}")
    t = kind.edit_type
    fg = list(foreground or (query.foreground if query is not None and query.foreground else None)
              or (list(source_given) if source_given and t == "background" else None) or _DEFAULT_FOREGROUND)
    obj = _objects(t, parsed, query, fg)
    need = {"add": obj.o2, "remove": obj.o1, "replace": obj.o1 and obj.o2, "resize": obj.o1,
            "attribute": obj.o1 and obj.o2}
    if t in need and not need[t]:
        why = "no parse of the instruction" if parsed is None else f"the parse lacks an object ({parsed.describe()})"
        return unscored(f"a {t} edit needs the objects: {why}")
    if t == "resize" and obj.direction not in ("larger", "smaller"):
        return unscored("a resize needs a direction (larger / smaller) in the parse")
    images = [src_image] + [img for img, _ in frames]
    found, masks = _detect(models, images, [obj.source] + [obj.edit for _ in frames], box_threshold, given)
    t_detect = time.perf_counter()

    measures = _Measures(models, options)
    if measures.note:
        notes.append(measures.note)
    wanted = (query.target_text if query is not None else None) or target_text
    text_parse = None if query is not None and query.target_text else parsed  # the benchmark names the scene
    plans = [_plan(t, src, arr, masks[0], masks[i + 1], found[0], found[i + 1], obj, text_parse, instruction, wanted,
                   options, measures) for i, (_, arr) in enumerate(frames)]
    measures.run()
    results = []
    for i, (item, (img, _)) in enumerate(zip(loaded, frames)):
        scores = H.combine(t, plans[i].criteria(measures), options, calibrated)
        results.append(HatieResult(kind, scores, masks=plans[i].masks, texts=plans[i].texts,
                                   detections=plans[i].detections, notes=notes + plans[i].notes + list(item.notes),
                                   edit_name=item.name, edit_image=img,
                                   timings={"detect_segment": t_detect - start,
                                            "measure": time.perf_counter() - t_detect}, **common))
    return results


@dataclass
class _Plan:
    """What one edit measures (indices into :class:`_Measures`) and how they become criteria."""

    edit_type: str
    options: H.HatieOptions
    masks: dict[str, np.ndarray] = field(default_factory=dict)
    texts: dict[str, str] = field(default_factory=dict)
    detections: dict[str, dict[str, Any]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    target: tuple[bool, float, int | None, int | None] | None = None  # found, confidence, check, question
    relation: tuple[int | None, int | None] = (None, None)
    oc: list[tuple[np.ndarray | None, np.ndarray | None, int | _Ways | None]] = field(default_factory=list)
    bc: int | _Ways | None = None
    bf: tuple[int | None, int | None] = (None, None)
    areas: tuple[int, int] = (0, 0)
    direction: str | None = None

    def criteria(self, m: _Measures) -> dict[str, H.CriterionScore]:
        t, o = self.edit_type, self.options
        out: dict[str, H.CriterionScore] = {}

        def compared(index: int | _Ways | None) -> dict[str, H.Similarities]:
            if index is None:
                return {}
            return m.way_sims(index) if isinstance(index, _Ways) else {"plain": m.sims(index)}

        if "object_fidelity" in H.TYPE_CRITERIA[t]:
            evidence = None
            if self.target is not None:
                f, conf, check, question = self.target
                evidence = H.ObjectEvidence(f, conf if f else 0.0, m.alignment(check) if check is not None else None,
                                            m.answer(question))
            rel_clip = m.alignment(self.relation[0]) if self.relation[0] is not None else None
            out["object_fidelity"] = H.object_fidelity(
                t, o, target=evidence, relation_clip=rel_clip, relation_vqa=m.answer(self.relation[1]),
                source_area=self.areas[0], edit_area=self.areas[1], direction=self.direction)
        if "background_fidelity" in H.TYPE_CRITERIA[t]:
            clip = m.alignment(self.bf[0]) if self.bf[0] is not None else None
            out["background_fidelity"] = H.background_fidelity(t, clip, m.answer(self.bf[1]), o)
        if "object_consistency" in H.TYPE_CRITERIA[t]:
            per_object = [H.object_consistency(t, source_mask=ms, edit_mask=me, appearance_by_comparison=compared(i),
                                               options=o) for ms, me, i in self.oc]
            if t == "background":
                out["object_consistency"] = H.mean_object_consistency(per_object)
            elif per_object:
                out["object_consistency"] = per_object[0]
        if "background_consistency" in H.TYPE_CRITERIA[t] and self.bc is not None:
            out["background_consistency"] = H.background_consistency(t, compared(self.bc), o)
        return out


def _det_dict(det: Any) -> dict[str, Any]:
    return {"found": det is not None, "score": float(det.score) if det is not None else 0.0,
            "box": [float(v) for v in det.box] if det is not None else None}


def _plan(t: str, src: np.ndarray, edit: np.ndarray, src_masks: list, edit_masks: list, src_found: list,
          edit_found: list, obj: _Objects, parsed: ParsedInstruction | None, instruction: str | None,
          target_text: str | None, options: H.HatieOptions, m: _Measures) -> _Plan:
    plan = _Plan(t, options)
    if t == "style":
        text = _style_text(instruction, target_text)
        if text:
            plan.texts["style"] = text
            plan.bf = (m.check(edit, text), m.ask(edit, scene_question(text)))
        plan.bc = m.ways(edit, src)
        return plan
    if t == "background":
        return _plan_background(plan, src, edit, src_masks, edit_masks, src_found, edit_found, obj,
                                _background_text(parsed, target_text), m)
    if t == "add":
        return _plan_add(plan, src, edit, edit_masks, edit_found, obj, options, m)
    return _plan_object(plan, src, edit, src_masks, edit_masks, src_found, edit_found, obj, m)


def _plan_background(plan: _Plan, src: np.ndarray, edit: np.ndarray, src_masks: list, edit_masks: list,
                     src_found: list, edit_found: list, obj: _Objects, text: str | None, m: _Measures) -> _Plan:
    """Background change: BF on the edit with only the edit's object masks hidden (published code); OC per
    foreground object, the crops compared plainly."""
    hidden = HI.union(*edit_masks)
    if hidden is not None:
        plan.masks["foreground of the edit (masked out)"] = hidden
    if text:
        plan.texts["background"] = text
        background = HI.mask_out(edit, hidden)
        plan.bf = (m.check(background, text), m.ask(background, scene_question(f"showing a {text} background")))
    for phrase, ms, me, ds, de in zip(obj.source, src_masks, edit_masks, src_found, edit_found):
        plan.detections[f"{phrase} (source)"], plan.detections[f"{phrase} (edit)"] = _det_dict(ds), _det_dict(de)
        index = None
        if ms is not None and me is not None:
            index = m.pair(HI.object_crop(edit, me), HI.object_crop(src, ms))
        plan.oc.append((ms, me, index))
    if not any(ms is not None for ms in src_masks):
        plan.notes.append(f"no foreground object ({', '.join(obj.source)}) found in the source: Object "
                          "Consistency is not scored")
    return plan


def _plan_add(plan: _Plan, src: np.ndarray, edit: np.ndarray, edit_masks: list, edit_found: list, obj: _Objects,
              options: H.HatieOptions, m: _Measures) -> _Plan:
    """Object addition: presence on the new object's crop; the relation on the crop of the merged boxes of
    the new object and the anchor (the whole image when the anchor is not found); BC with the new object
    hidden (the whole images when it is not found)."""
    me = edit_masks[0] if edit_masks else None
    de = edit_found[0] if edit_found else None
    name = obj.o2 or ""
    plan.texts["object"] = name
    plan.detections["added object (edit)"] = _det_dict(de)
    if me is not None and de is not None:
        plan.masks["added object (edit)"] = me
        crop = HI.object_crop(edit, me)
        plan.target = (True, float(de.score), m.check(crop, name), m.ask(crop, object_question(name)))
        anchor_mask = edit_masks[1] if len(edit_masks) > 1 else None
        if anchor_mask is not None:
            plan.masks["anchor (edit)"] = anchor_mask
            x0, y0, x1, y1 = HI.merged_box(HI.box_of(me), HI.box_of(anchor_mask))
            region = HI.square_pad(edit[y0:y1, x0:x1])
        else:
            region = edit
            plan.notes.append("the anchor was not found in the edit: the relation is checked on the whole image")
        rel = relation_text(name, obj.anchor, obj.location, options.relation_prompt)
        plan.texts["relation"] = rel
        plan.relation = (m.check(region, rel), m.ask(region, relation_question(rel)))
    else:
        plan.target = (False, 0.0, None, None)
        plan.notes.append("the added object was not found: Background Consistency compares the whole images")
    plan.bc = m.pair(HI.mask_out(edit, me), HI.mask_out(src, me))
    return plan


def _plan_object(plan: _Plan, src: np.ndarray, edit: np.ndarray, src_masks: list, edit_masks: list,
                 src_found: list, edit_found: list, obj: _Objects, m: _Measures) -> _Plan:
    """Remove, replace, resize, attribute: OF on the edit's object crop, OC (position; appearance of the crops:
    plain for resize, three ways for attribute), BC with both objects' masks hidden."""
    t = plan.edit_type
    ms = src_masks[0] if src_masks else None
    me = edit_masks[0] if edit_masks else None
    de = edit_found[0] if edit_found else None
    plan.detections["object (source)"] = _det_dict(src_found[0] if src_found else None)
    plan.detections["object (edit)"] = _det_dict(de)
    if ms is None:
        plan.notes.append(f"{obj.o1!r} was not found in the source image: the criteria that need it are not scored")
    else:
        plan.masks["object (source)"] = ms
    if me is not None:
        plan.masks["object (edit)"] = me
    if t == "resize":
        plan.areas = (H.mask_area(ms), H.mask_area(me))
        plan.direction = obj.direction
    else:
        name = obj.o1 if t == "remove" else obj.o2
        plan.texts["object"] = name or ""
        if me is not None and de is not None:
            crop = HI.object_crop(edit, me)
            plan.target = (True, float(de.score), m.check(crop, name or ""), m.ask(crop, object_question(name or "")))
        else:
            plan.target = (False, 0.0, None, None)
    if t in H.OC_MIX and ms is not None:
        index: int | _Ways | None = None
        if me is not None and H.OC_MIX[t][0] > 0:
            a, b = HI.object_crop(edit, me), HI.object_crop(src, ms)
            index = m.ways(a, b) if t == "attribute" else m.pair(a, b)
        plan.oc.append((ms, me, index))
    hidden = HI.union(ms, me)
    if hidden is not None:
        plan.masks["background: masked out"] = hidden
    plan.bc = m.pair(HI.mask_out(edit, hidden), HI.mask_out(src, hidden))
    return plan
