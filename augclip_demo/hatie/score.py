"""HATIE for one source image and its edits: type -> detect -> segment -> measure -> criteria.

The detector and segmenter are BPM's (GroundingDINO + SAM, :mod:`augclip_demo.bpm.models`), where
HATIE uses a closed-vocabulary Mask R-CNN (docs/method-notes.md says where that can change the
numbers). CLIP is the run's encoder; DINOv2 and LPIPS come from the feature networks; VQA from
the OpenAI-compatible client when :attr:`HatieOptions.vqa` is on. Every measure is collected
first and computed in one batch per model; the criteria are then the pure math of
:mod:`augclip_demo.metrics.hatie`.
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from PIL import Image

from ..errors import InputError
from ..instructions import EditType, ParsedInstruction, classify_edit_type, try_parse
from ..io import ImageInput, LoadedImage, open_image
from ..metrics import hatie as H
from ..metrics import hatie_images as HI
from .features import FeatureNetworks, row_cosines
from .vqa import VqaScorer, object_question, relation_question, scene_question

#: HATIE keeps every detection, however unsure (App. D.2); GroundingDINO needs a threshold above 0.
DEFAULT_BOX_THRESHOLD = 0.1
#: A box under 5 px on either side counts as "object missing" (hatie-notes, "Pipeline").
MIN_BOX_PX = 5
#: Object crops are compared at this size; LPIPS at 64 x 64 (hatie-notes) and whole images at 256.
OBJECT_SIZE = 224
LPIPS_OBJECT_SIZE = 64
LPIPS_IMAGE_SIZE = 256
#: The phrase our open-vocabulary detector is given for "every foreground object" when the item names
#: none (HATIE's foreground is the annotated editable objects of its dataset).
DEFAULT_FOREGROUND = ("object",)
RELATION_WORDS = {"up": "above", "down": "under", "left": "to the left of", "right": "to the right of",
                  "inside": "in", "near": "next to", "unchanged": "with"}


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
        for part in (self.detector, self.segmenter, self.encoder):
            part.load()
        if self.features is not None and hasattr(self.features, "load"):
            self.features.load()
        return self

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
class _Measures:
    """Image pairs and image-text checks gathered for all edits, computed with one call per model."""

    def __init__(self, models: HatieModels):
        self.models = models
        self.pairs: list[tuple[np.ndarray, np.ndarray, bool, int]] = []
        self.checks: list[tuple[np.ndarray, str]] = []
        self.questions: list[tuple[np.ndarray, str]] = []
        self._sims: list[H.Similarities] = []
        self._align: list[float] = []
        self._vqa: list[float] = []

    def pair(self, a: np.ndarray, b: np.ndarray, *, clip: bool = True, lpips_size: int = LPIPS_IMAGE_SIZE) -> int:
        self.pairs.append((a, b, clip, lpips_size))
        return len(self.pairs) - 1

    def versions(self, a: np.ndarray, b: np.ndarray, lpips_size: int) -> dict[str, int]:
        va, vb = HI.comparison_versions(a), HI.comparison_versions(b)
        return {name: self.pair(va[name], vb[name], clip=False, lpips_size=lpips_size) for name in H.COMPARISONS}

    def check(self, image: np.ndarray, text: str) -> int:
        self.checks.append((image, text))
        return len(self.checks) - 1

    def ask(self, image: np.ndarray, question: str) -> int | None:
        if self.models.vqa is None:
            return None
        self.questions.append((image, question))
        return len(self.questions) - 1

    def run(self) -> None:
        enc, feats = self.models.encoder, self.models.features
        clip_rows = [i for i, p in enumerate(self.pairs) if p[2]]
        images = [HI.to_image(self.pairs[i][k]) for i in clip_rows for k in (0, 1)]
        images += [HI.to_image(img) for img, _ in self.checks]
        emb = np.asarray(enc.encode_images(images), np.float64) if images else np.zeros((0, 1))
        n_pair = 2 * len(clip_rows)
        clip_cos = dict(zip(clip_rows, row_cosines(emb[0:n_pair:2], emb[1:n_pair:2]))) if clip_rows else {}
        if self.checks:
            texts = np.asarray(enc.encode_texts([t for _, t in self.checks]), np.float64)
            self._align = [H.cosine_to_unit(c) for c in row_cosines(emb[n_pair:], texts)]
        dino_cos: dict[int, float] = {}
        lpips: dict[int, float] = {}
        if feats is not None and self.pairs:
            all_images = [HI.to_image(p[k]) for p in self.pairs for k in (0, 1)]
            d = np.asarray(feats.dino(all_images), np.float64)
            dino_cos = dict(enumerate(row_cosines(d[0::2], d[1::2])))
            for size in sorted({p[3] for p in self.pairs}):
                rows = [i for i, p in enumerate(self.pairs) if p[3] == size]
                first = [HI.to_image(HI.resize_array(self.pairs[i][0], size)) for i in rows]
                second = [HI.to_image(HI.resize_array(self.pairs[i][1], size)) for i in rows]
                lpips.update(zip(rows, np.asarray(feats.lpips(first, second), np.float64).tolist()))
        for i, (a, b, _, _) in enumerate(self.pairs):
            self._sims.append(H.Similarities(
                clip=H.cosine_to_unit(clip_cos[i]) if i in clip_cos else None,
                lpips=H.lpips_to_similarity(lpips[i]) if i in lpips else None,
                dino=H.cosine_to_unit(dino_cos[i]) if i in dino_cos else None,
                l2=H.l2_similarity(a, b)))
        if self.models.vqa is not None:
            self._vqa = [self.models.vqa.ask(HI.to_image(img), q).p_yes for img, q in self.questions]

    def sims(self, index: int) -> H.Similarities:
        return self._sims[index]

    def alignment(self, index: int) -> float:
        return self._align[index]

    def answer(self, index: int | None) -> float | None:
        return None if index is None else self._vqa[index]


# ---------------------------------------------------------------------------------------------- texts
def background_text(parsed: ParsedInstruction | None, target_text: str | None) -> str | None:
    """The wanted background ("beach") from the parse's o2 ("beach background") or the target text."""
    phrase = parsed.o2 if parsed is not None and parsed.o2 else None
    if phrase:
        phrase = re.sub(r"\b(?:background|backdrop|scenery|setting)\b", "", phrase).strip() or phrase
        return phrase
    return target_text


def style_text(instruction: str | None, target_text: str | None) -> str | None:
    """The wanted style: the target text when given, else the words after into / to / as / like / in."""
    if target_text and target_text.strip():
        return target_text.strip()
    if not instruction:
        return None
    m = re.search(r"\b(?:into|to|as|like|in)\s+(?:an?\s+|the\s+)?(.+?)[.!]?$", instruction.strip().lower())
    return (m.group(1) if m else instruction.strip().lower()) or None


def relation_text(new: str, anchor: str | None, position: str, how: str) -> str:
    """"cup on table" for an added object; ``how="repeat"`` writes the added object twice (the code)."""
    other = new if how == "repeat" or not anchor else anchor
    return f"{new} {RELATION_WORDS.get(position, 'with')} {other}"


# ---------------------------------------------------------------------------------------------- scoring
def _frame(item: LoadedImage) -> tuple[Image.Image, np.ndarray]:
    array = HI.as_array(item.image)
    return HI.to_image(array), array


def _found(det: Any) -> bool:
    if det is None or not det.found or det.box is None:
        return False
    x0, y0, x1, y1 = (float(v) for v in det.box)
    return (x1 - x0) >= MIN_BOX_PX and (y1 - y0) >= MIN_BOX_PX


def hatie_score(source: ImageInput | LoadedImage, edited: ImageInput | LoadedImage, instruction: str | None = None,
                models: HatieModels | None = None, **kwargs: Any) -> HatieResult:
    """HATIE of one edit (see :func:`hatie_score_many`)."""
    return hatie_score_many(source, [edited], instruction, models, **kwargs)[0]


def hatie_score_many(source: ImageInput | LoadedImage, edits: Sequence[ImageInput | LoadedImage],
                     instruction: str | None = None, models: HatieModels | None = None, *,
                     parsed: ParsedInstruction | None = None, edit_type: str | None = None,
                     target_text: str | None = None, options: H.HatieOptions | None = None,
                     foreground: Sequence[str] | None = None, box_threshold: float = DEFAULT_BOX_THRESHOLD,
                     calibrated: Mapping[str, Mapping[str, float]] | None = None,
                     names: Sequence[str] | None = None) -> list[HatieResult]:
    """HATIE's criteria for every edit of one source.

    Args:
        instruction: the edit instruction (parsed with the rules parser unless ``parsed`` is given).
        edit_type: HATIE's type when the user gives it (else classified from the instruction).
        target_text: the wanted background / style for background and style edits (else read
            from the parse or the instruction).
        foreground: the phrases of the objects a background change must keep (default "object").
        options: the named choices of :class:`~augclip_demo.metrics.hatie.HatieOptions`.
    """
    if models is None:
        raise InputError("HATIE needs its models (detector, segmenter, CLIP, feature networks): pass HatieModels")
    options = options or H.HatieOptions()
    if options.vqa and models.vqa is None:
        raise InputError("HATIE's VQA option is on but no VQA client is set: configure an OpenAI-compatible "
                         "vision model (OPENAI_BASE_URL / AUGCLIP_MLLM_MODEL) or turn VQA off")
    if not edits:
        raise InputError("no edited image given: pass at least one")
    start = time.perf_counter()
    notes: list[str] = []
    if parsed is None and instruction and instruction.strip():
        outcome = try_parse(instruction)
        parsed = outcome.parsed
    kind = classify_edit_type(instruction, parsed, edit_type)
    src_item = open_image(source, name="source")
    loaded = [open_image(e, name=(names[i] if names else f"edit {i + 1}")) for i, e in enumerate(edits)]
    src_image, src = _frame(src_item)
    frames = [_frame(item) for item in loaded]
    common = dict(untrained=models.untrained, models=models.info(), source_image=src_image)
    if models.features is None:
        notes.append("no feature networks: DINOv2 and LPIPS are left out and their weights shared by the rest")
    if kind.edit_type is None:
        return [HatieResult(kind, None, reason=f"not a HATIE edit type: {kind.reason}", edit_name=item.name,
                            edit_image=img, **common) for item, (img, _) in zip(loaded, frames)]
    t = kind.edit_type
    o1, o2 = (parsed.o1, parsed.o2) if parsed is not None else (None, None)
    need = {"add": o2, "remove": o1, "replace": o1 and o2, "resize": o1, "attribute": o1 and o2}
    if t in need and not need[t]:
        why = "no parse of the instruction" if parsed is None else f"the parse lacks an object ({parsed.describe()})"
        return [HatieResult(kind, None, reason=f"a {t} edit needs the objects: {why}", edit_name=item.name,
                            edit_image=img, **common) for item, (img, _) in zip(loaded, frames)]
    if t == "resize" and parsed is not None and parsed.size_state == "unchanged":
        return [HatieResult(kind, None, reason="a resize needs a direction (larger / smaller) in the parse",
                            edit_name=item.name, edit_image=img, **common) for item, (img, _) in zip(loaded, frames)]
    fg = list(foreground or DEFAULT_FOREGROUND)
    anchor = parsed.reference if parsed is not None else None

    # detect: what each image must be searched for
    src_phrases = {"add": [anchor] if anchor else [], "background": fg, "style": []}.get(t, [o1])
    edit_phrases = {"add": [o2] + ([anchor] if anchor else []), "replace": [o2], "background": fg,
                    "style": []}.get(t, [o1])
    images = [src_image] + [img for img, _ in frames]
    phrase_lists = [[p for p in src_phrases if p]] + [[p for p in edit_phrases if p] for _ in frames]
    detections = (models.detector.detect(images, phrase_lists, box_threshold=box_threshold)
                  if any(phrase_lists) else [[] for _ in images])
    found = [[d if _found(d) else None for d in group] for group in detections]
    boxes = [[d.box for d in group if d is not None] for group in found]
    masks_flat = models.segmenter.segment(images, boxes) if any(boxes) else [[] for _ in images]
    masks: list[list[np.ndarray | None]] = []
    for group, got in zip(found, masks_flat):
        it = iter(got)
        masks.append([HI.resize_mask(next(it)) if d is not None else None for d in group])
    t_detect = time.perf_counter()

    measures = _Measures(models)
    plans = [_plan(t, src, arr, masks[0], masks[i + 1], found[0], found[i + 1], parsed, instruction, target_text,
                   fg, options, measures) for i, (_, arr) in enumerate(frames)]
    measures.run()
    results = []
    for i, (item, (img, _)) in enumerate(zip(loaded, frames)):
        plan = plans[i]
        criteria = plan.criteria(measures)
        scores = H.combine(t, criteria, options, calibrated)
        results.append(HatieResult(kind, scores, masks=plan.masks, texts=plan.texts, detections=plan.detections,
                                   notes=notes + plan.notes + list(item.notes), edit_name=item.name, edit_image=img,
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
    oc: list[tuple[np.ndarray | None, np.ndarray | None, dict[str, int]]] = field(default_factory=list)
    bc: dict[str, int] = field(default_factory=dict)
    bf: tuple[int | None, int | None] = (None, None)
    areas: tuple[int, int] = (0, 0)
    direction: str | None = None

    def criteria(self, m: _Measures) -> dict[str, H.CriterionScore]:
        t, o = self.edit_type, self.options
        out: dict[str, H.CriterionScore] = {}
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
            per_object = [H.object_consistency(t, source_mask=ms, edit_mask=me,
                                               appearance_by_comparison={k: m.sims(v) for k, v in pairs.items()},
                                               options=o) for ms, me, pairs in self.oc]
            if t == "background":
                out["object_consistency"] = H.mean_object_consistency(per_object)
            elif per_object:
                out["object_consistency"] = per_object[0]
        if "background_consistency" in H.TYPE_CRITERIA[t] and self.bc:
            out["background_consistency"] = H.background_consistency(t, {k: m.sims(v) for k, v in self.bc.items()}, o)
        return out


def _object_crops(src: np.ndarray, edit: np.ndarray, ms: np.ndarray, me: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    a = HI.square_crop(HI.keep_only(src, ms), HI.square_box(ms))
    b = HI.square_crop(HI.keep_only(edit, me), HI.square_box(me))
    return HI.resize_array(a, OBJECT_SIZE), HI.resize_array(b, OBJECT_SIZE)


def _det_dict(det: Any) -> dict[str, Any]:
    return {"found": det is not None, "score": float(det.score) if det is not None else 0.0,
            "box": [float(v) for v in det.box] if det is not None else None}


def _plan(t: str, src: np.ndarray, edit: np.ndarray, src_masks: list, edit_masks: list, src_found: list,
          edit_found: list, parsed: ParsedInstruction | None, instruction: str | None, target_text: str | None,
          foreground: list[str], options: H.HatieOptions, m: _Measures) -> _Plan:
    plan = _Plan(t, options)
    o1, o2 = (parsed.o1, parsed.o2) if parsed is not None else (None, None)
    if t == "style":
        text = style_text(instruction, target_text)
        if text:
            plan.texts["style"] = text
            plan.bf = (m.check(edit, text), m.ask(edit, scene_question(text)))
        plan.bc = m.versions(src, edit, LPIPS_IMAGE_SIZE)
        return plan
    if t == "background":
        text = background_text(parsed, target_text)
        fg_union = HI.union(*src_masks, *edit_masks)
        if fg_union is not None:
            plan.masks["foreground (masked out)"] = fg_union
        if text:
            plan.texts["background"] = text
            plan.bf = (m.check(HI.mask_out(edit, fg_union), text),
                       m.ask(edit, scene_question(f"showing a {text} background")))
        for phrase, ms, me, ds, de in zip(foreground, src_masks, edit_masks, src_found, edit_found):
            plan.detections[f"{phrase} (source)"], plan.detections[f"{phrase} (edit)"] = _det_dict(ds), _det_dict(de)
            pairs = {}
            if ms is not None and me is not None:
                a, b = _object_crops(src, edit, ms, me)
                pairs = {"plain": m.pair(a, b, lpips_size=LPIPS_OBJECT_SIZE)}
            plan.oc.append((ms, me, pairs))
        if not any(ms is not None for ms in src_masks):
            plan.notes.append(f"no foreground object ({', '.join(foreground)}) found in the source: Object "
                              "Consistency is not scored")
        return plan
    # object edits
    ms = src_masks[0] if src_masks else None  # o1 (or the anchor of an add) in the source
    me = edit_masks[0] if edit_masks else None  # the target object in the edit
    de = edit_found[0] if edit_found else None
    if t == "add":
        anchor_src = ms
        plan.texts["object"] = o2 or ""
        plan.detections["added object (edit)"] = _det_dict(de)
        if anchor_src is not None:
            plan.masks["anchor (source)"] = anchor_src
        if me is not None:
            plan.masks["added object (edit)"] = me
            crop = HI.square_crop(HI.keep_only(edit, me), HI.square_box(me))
            plan.target = (True, float(de.score), m.check(crop, o2 or ""), m.ask(edit, object_question(o2 or "")))
            anchor_edit = edit_masks[1] if len(edit_masks) > 1 else None
            both = HI.union(me, anchor_edit)
            rel = relation_text(o2 or "", parsed.reference if parsed else None,
                                parsed.position_state if parsed else "unchanged", options.relation_prompt)
            plan.texts["relation"] = rel
            region = HI.square_crop(edit, HI.square_box(both)) if both is not None else edit
            plan.relation = (m.check(region, rel), m.ask(region, relation_question(rel)))
            if anchor_edit is None:
                plan.notes.append("the anchor was not found in the edit: the relation crop holds the new object only")
        else:
            plan.target = (False, 0.0, None, None)
        background_mask = me
        plan.bc = {"plain": m.pair(HI.mask_out(src, background_mask), HI.mask_out(edit, background_mask))}
        if background_mask is None:
            plan.notes.append("the added object was not found: Background Consistency compares the whole images")
        return plan
    plan.detections["object (source)"] = _det_dict(src_found[0] if src_found else None)
    plan.detections["object (edit)"] = _det_dict(de)
    if ms is None:
        plan.notes.append(f"{o1!r} was not found in the source image: the criteria that need it are not scored")
    else:
        plan.masks["object (source)"] = ms
    if me is not None:
        plan.masks["object (edit)"] = me
    # Object Fidelity
    if t == "resize":
        plan.areas = (H.mask_area(ms), H.mask_area(me))
        plan.direction = parsed.size_state if parsed else None
    else:
        name = o1 if t == "remove" else o2
        plan.texts["object"] = name or ""
        if me is not None and de is not None:
            crop = HI.square_crop(HI.keep_only(edit, me), HI.square_box(me))
            plan.target = (True, float(de.score), m.check(crop, name or ""), m.ask(edit, object_question(name or "")))
        else:
            plan.target = (False, 0.0, None, None)
    # Object Consistency
    if t in H.OC_MIX and ms is not None:
        pairs: dict[str, int] = {}
        if me is not None and H.OC_MIX[t][0] > 0:
            a, b = _object_crops(src, edit, ms, me)
            pairs = (m.versions(a, b, LPIPS_OBJECT_SIZE) if t == "attribute"
                     else {"plain": m.pair(a, b, lpips_size=LPIPS_OBJECT_SIZE)})
        plan.oc.append((ms, me, pairs))
    # Background Consistency: the union of the object's regions masked out of both images
    hidden = HI.union(ms, me)
    if hidden is not None:
        plan.masks["background: masked out"] = hidden
    plan.bc = {"plain": m.pair(HI.mask_out(src, hidden), HI.mask_out(edit, hidden))}
    return plan
