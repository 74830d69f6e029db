"""BPM for one source image and one or more edits: a thin orchestration of parse -> detect ->
segment -> judge (Alg. 1). The math lives in :mod:`.components` and :mod:`.localize`; the models in
:mod:`augclip_demo.inference` (passed in, or the shared instances for the current settings).

Every edit is resized to the source image's size first (bicubic, as the L2 baseline does), so
boxes, masks and pixels of both images share one frame; a note says so.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from PIL import Image

from ..choices import DEFAULT_BPM_ALPHA, DEFAULT_BPM_BOX_THRESHOLD, REGION_SOURCES
from ..config import DEFAULT_OWL_BOX_THRESHOLD
from ..errors import InputError
from ..instructions import ParsedInstruction, parse_instruction
from ..io import ImageInput, LoadedImage, open_source_and_edits
from .components import (
    BPMComponents,
    Preservation,
    RegionCheck,
    RegionThresholds,
    as_box,
    combine,
    crop_box,
    f_position,
    f_size,
    pad_to_square,
    preserved_region,
    s_modify,
    s_preserve,
)
from .localize import Localization, ObjectMasks, Region, detected_region, given_regions, localize

if TYPE_CHECKING:
    from .models import BPMModels

STEPS = ("parse", "detect", "segment", "judge")  # timed steps (keys of BPMResult.timings)


@dataclass(frozen=True)
class BPMOptions:
    """alpha (Table 9: 0.7), the detectors' box thresholds, and the region rules' thresholds.

    ``box_threshold`` is GroundingDINO's (standard preset; Grounded-SAM's 0.3), ``fast_box_threshold``
    OWL-ViT's (fast preset; 0.1, OWL-ViT's own): the two models' scores are on different scales, so
    each detector reads its own field (its ``threshold_option``)."""

    alpha: float = DEFAULT_BPM_ALPHA
    box_threshold: float = DEFAULT_BPM_BOX_THRESHOLD
    thresholds: RegionThresholds = field(default_factory=RegionThresholds)
    fast_box_threshold: float = DEFAULT_OWL_BOX_THRESHOLD
    #: where the regions come from: "detected" (the detector and the segmenter) or "masks" (given masks)
    regions: str = "detected"

    def __post_init__(self) -> None:
        if self.regions not in REGION_SOURCES:
            raise InputError(f"regions must be one of {', '.join(REGION_SOURCES)}, got {self.regions!r}")
        if not (isinstance(self.alpha, (int, float)) and 0.0 <= self.alpha <= 1.0):
            raise InputError(f"alpha must be between 0 and 1, got {self.alpha!r}")
        for name in ("box_threshold", "fast_box_threshold"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and 0.0 < value < 1.0):
                raise InputError(f"{name} must be between 0 and 1 (exclusive), got {value!r}")

    def threshold_for(self, detector: Any) -> float:
        """The box threshold ``detector`` reads (GroundingDINO: ``box_threshold``; OWL-ViT: ``fast_box_threshold``)."""
        return float(getattr(self, getattr(detector, "threshold_option", "box_threshold")))

    def to_dict(self) -> dict[str, Any]:
        return {"alpha": self.alpha, "box_threshold": self.box_threshold,
                "fast_box_threshold": self.fast_box_threshold, "thresholds": self.thresholds.to_dict(),
                # named only when not the default, so that runs made before the choice existed resume
                **({"regions": self.regions} if self.regions != "detected" else {})}


@dataclass
class BPMResult:
    """Everything BPM computed for one edit (masks and boxes in the source image's pixel frame)."""

    components: BPMComponents
    parsed: ParsedInstruction
    origin: Region
    edit: Region
    reference: Region | None
    anchor: Region
    preserved_mask: np.ndarray
    preservation: Preservation
    size: RegionCheck
    position: RegionCheck
    found: dict[str, bool | None]
    options: BPMOptions
    image_size: tuple[int, int]
    edit_name: str = ""
    source_name: str = ""
    untrained: bool = False
    models: dict[str, Any] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    # the images the regions refer to (the edit already in the source's frame); not serialised
    source_image: Image.Image | None = field(default=None, repr=False, compare=False)
    edit_image: Image.Image | None = field(default=None, repr=False, compare=False)

    # the numbers, by their paper names
    @property
    def bpm(self) -> float:
        return self.components.bpm

    @property
    def s_modify(self) -> float:
        return self.components.s_modify

    @property
    def s_preserve(self) -> float:
        return self.components.s_preserve

    @property
    def s_semantic(self) -> float:
        return self.components.s_semantic

    @property
    def s_region(self) -> int:
        return self.components.s_region

    @property
    def s_size(self) -> int:
        return self.components.s_size

    @property
    def s_position(self) -> int:
        return self.components.s_position

    @property
    def region_source(self) -> str:
        """Where the regions came from: ``given masks`` or ``detected`` (each region's own provenance says more)."""
        return "given masks" if self.options.regions == "masks" else "detected"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready details (masks summarised by their areas; the arrays stay on this object)."""
        return {
            **self.components.to_dict(),
            "parse": self.parsed.to_dict(),
            "region_source": self.region_source,
            "regions": {
                "origin": self.origin.to_dict(),
                "edit": self.edit.to_dict(),
                "reference": self.reference.to_dict() if self.reference is not None else None,
                "anchor": self.anchor.to_dict(),
            },
            "preserved_fraction": self.preservation.fraction,
            "preserve_rmse": self.preservation.rmse,
            "preserved_region_empty": self.preservation.empty,
            "size_judgement": self.size.to_dict(),
            "position_judgement": self.position.to_dict(),
            "found": dict(self.found),
            "options": self.options.to_dict(),
            "image_size": list(self.image_size),
            "untrained": self.untrained,
            "models": self.models,
            "timings": dict(self.timings),
            "notes": list(self.notes),
        }


def resolve_parse(instruction: str | None, parsed: ParsedInstruction | dict | None, parser: str = "rules",
                  client: Any = None) -> ParsedInstruction:
    """``parsed`` when given (a :class:`ParsedInstruction` or its dict), else the parse of ``instruction``."""
    if parsed is not None:
        if isinstance(parsed, dict):
            return ParsedInstruction.from_dict(parsed)
        if not isinstance(parsed, ParsedInstruction):
            raise InputError(f"parsed must be a ParsedInstruction, got {type(parsed).__name__}")
        return parsed
    if instruction is None:
        raise InputError("BPM needs an instruction (e.g. 'make the cup red') or a parse (o1, o2, size and position "
                         "states); for a description-style target give o1 and o2 directly")
    return parse_instruction(instruction, parser, client=client)


def bpm_score(source: ImageInput | LoadedImage, edited: ImageInput | LoadedImage, instruction: str | None = None,
              parsed: ParsedInstruction | dict | None = None, models: BPMModels | None = None, *,
              options: BPMOptions | None = None, parser: str = "rules", client: Any = None,
              object_masks: ObjectMasks | None = None, edit_mask: np.ndarray | None = None) -> BPMResult:
    """BPM of one edit (Alg. 1): all components, boxes, masks, the parse, found flags and timings.

    Args:
        source, edited: images (path, bytes, PIL, array, or :class:`LoadedImage`).
        instruction: the editing instruction, parsed with ``parser`` (``rules`` or ``llm``).
        parsed: a ready parse instead (hand-filled fields, description-style targets).
        models: :class:`~augclip_demo.bpm.models.BPMModels` (default: the shared ones for
            the environment's settings).
        options: alpha, box threshold, region thresholds, where the regions come from (``regions``).
        object_masks, edit_mask: the given masks when ``options.regions == "masks"`` (see :func:`bpm_score_many`).
    """
    return bpm_score_many(source, [edited], instruction, parsed, models, options=options, parser=parser,
                          client=client, object_masks=object_masks, edit_mask=edit_mask)[0]


def bpm_score_many(source: ImageInput | LoadedImage, edits: Sequence[ImageInput | LoadedImage],
                   instruction: str | None = None, parsed: ParsedInstruction | dict | None = None,
                   models: BPMModels | None = None, *, options: BPMOptions | None = None, parser: str = "rules",
                   client: Any = None, names: Sequence[str] | None = None,
                   progress: Callable[[float, str], None] | None = None, object_masks: ObjectMasks | None = None,
                   edit_mask: np.ndarray | None = None) -> list[BPMResult]:
    """BPM of several edits of one source: each model runs once over all images (batched).

    ``progress(fraction, message)`` hears of each step (parse, loading, detection, segmentation)
    and of each edit as it is judged. With ``options.regions == "masks"`` the regions come from
    ``object_masks`` (named objects' masks in the source and in each edit) and / or ``edit_mask`` (one
    (H, W) region of the source, used as origin and edit region where no object masks are given) instead
    of the detector and the segmenter, which are then not loaded (:func:`~.localize.given_regions`).
    """
    options = options or BPMOptions()
    say = progress or (lambda fraction, message: None)
    timings: dict[str, float] = {}
    clock = _StepClock(timings)
    say(0.0, "BPM: parsing the instruction")
    clock.start()
    parse = resolve_parse(instruction, parsed, parser, client)
    clock.stop("parse")

    src, loaded, edit_images, edit_notes = _open_edits(source, edits, names)
    given = options.regions == "masks"
    if not given and (object_masks is not None or edit_mask is not None):
        raise InputError("masks were given but BPM's regions are set to 'detected': pass "
                         "BPMOptions(regions='masks') to take the regions from them")
    if models is None:
        from .models import get_bpm_models

        models = get_bpm_models(regions=options.regions)
    elif given:
        models = models.for_given_masks()  # the detector and the segmenter are neither loaded nor used
    elif models.given_masks:
        raise InputError("these BPM models have no detector or segmenter: pass BPMOptions(regions='masks') and "
                         "the masks, or models with a detector and a segmenter")
    clock.start()
    if given:
        say(0.05, "BPM: regions from the given masks (no detector or segmenter)")
        models.load()
        clock.stop("model_load")
        shape = (src.image.size[1], src.image.size[0])
        origin, reference, edit_regions = given_regions(parse, object_masks, edit_mask, len(edit_images), shape)
        o2_found: list[bool | None] = [r.found if parse.o2 else None for r in edit_regions]
        for step in ("detect", "segment"):  # nothing detected or segmented: the steps took no time
            timings[step] = timings[f"{step}_cpu"] = 0.0
    else:
        say(0.05, f"BPM: loading {models.detector.family} and {models.segmenter.family}")
        models.load()  # loading is not a per-pair cost: timed apart from the steps
        clock.stop("model_load")
        found = _find_objects(parse, src, edit_images, models, options, say, clock)
        origin = detected_region(parse.o1, found.o1, found.masks[0][0] if found.masks[0] else None)
        reference = detected_region(parse.reference, found.reference, None) if parse.reference else None
        edit_regions = [detected_region(parse.o2, found.o2[i], found.masks[i + 1][0] if found.masks[i + 1] else None)
                        for i in range(len(edit_images))]
        o2_found = [d.found if d is not None else None for d in found.o2]

    # judge: CLIP on every crop and the two texts (one batch each), then the numpy rules (components.py)
    say(0.75, "BPM: encoding the regions (CLIP)")
    clock.start()
    places = [localize(parse, origin, region, reference, src.image.size) for region in edit_regions]
    crops: list[Image.Image] = []
    for place, image in zip(places, edit_images):
        # padded to a square: CLIP's centre crop would otherwise cut off the ends of a long box
        crops += [pad_to_square(crop_box(src.image, place.origin.box)), pad_to_square(crop_box(image, place.edit.box))]
    crop_embeddings = models.encoder.encode_images(crops)
    text_embeddings = models.encoder.encode_texts([parse.o1 or "", parse.o2 or ""])
    judge_start = time.perf_counter()
    results = []
    for i, (place, image) in enumerate(zip(places, edit_images)):
        say(0.85 + 0.15 * i / len(edit_images), f"BPM: judging edit E{i + 1} of {len(edit_images)}")
        modify = s_modify(crop_embeddings[2 * i], crop_embeddings[2 * i + 1], text_embeddings[0], text_embeddings[1])
        found_flags = {"o1": origin.found if parse.o1 else None,
                       "o2": o2_found[i],
                       "reference": reference.found if reference is not None else None}
        results.append(_edit_result(parse, place, src, loaded[i], image, modify, found_flags,
                                    list(loaded[i].notes) + edit_notes[i] + place.notes, models, options))
    timings["judge_math"] = time.perf_counter() - judge_start
    clock.stop("judge")
    timings["total"] = sum(timings[s] for s in STEPS)
    timings["total_cpu"] = sum(timings[f"{s}_cpu"] for s in STEPS)
    timings["edits"] = float(len(edit_images))
    for result in results:
        result.timings = dict(timings)
    return results


def _open_edits(source: ImageInput | LoadedImage, edits: Sequence[ImageInput | LoadedImage],
                names: Sequence[str] | None) -> tuple[LoadedImage, list[LoadedImage], list[Image.Image], list[list[str]]]:
    """The source and the edits as loaded, each edit in the source's frame, and the notes that made."""
    src, loaded = open_source_and_edits(source, edits, names)
    edit_images, edit_notes = [], []
    for item in loaded:
        image, notes = _to_source_frame(item, src)
        edit_images.append(image)
        edit_notes.append(notes)
    return src, loaded, edit_images, edit_notes


@dataclass
class _Found:
    """What the detector and the segmenter found: o1 and the reference in the source, o2 in each edit, and
    the masks per image (the source's first)."""

    o1: Any
    reference: Any
    o2: list[Any]
    masks: list[list[np.ndarray]]


def _find_objects(parse: ParsedInstruction, src: LoadedImage, edit_images: list[Image.Image], models: BPMModels,
                  options: BPMOptions, say: Callable[[float, str], None], clock: _StepClock) -> _Found:
    # detect: o1 and the reference in the source (one pass), o2 in every edit; one batch
    say(0.2, f"BPM: detecting the objects in {1 + len(edit_images)} images ({models.detector.family})")
    clock.start()
    src_phrases = list(dict.fromkeys(p for p in (parse.o1, parse.reference) if p))
    # the source as loaded: its content hash is computed once and keys the fast models' caches
    images: list[Image.Image | LoadedImage] = [src, *edit_images]
    phrases = [src_phrases] + [[parse.o2] if parse.o2 else [] for _ in edit_images]
    detections = models.detector.detect(images, phrases, box_threshold=options.threshold_for(models.detector))
    by_phrase = dict(zip(src_phrases, detections[0]))
    det_o1 = by_phrase.get(parse.o1) if parse.o1 else None
    det_ref = by_phrase.get(parse.reference) if parse.reference else None
    det_o2 = [group[0] if group else None for group in detections[1:]]
    clock.stop("detect")

    # segment: M_origin in the source, M_edit in every edit where the object was found; one batch
    say(0.5, f"BPM: segmenting the found objects ({models.segmenter.family})")
    clock.start()
    boxes = [[det_o1.box] if det_o1 is not None and det_o1.found else []]
    boxes += [[d.box] if d is not None and d.found else [] for d in det_o2]
    masks = models.segmenter.segment(images, boxes) if any(boxes) else [[] for _ in images]
    clock.stop("segment")
    return _Found(det_o1, det_ref, det_o2, masks)


def _edit_result(parse: ParsedInstruction, place: Localization, src: LoadedImage, loaded: LoadedImage,
                 image: Image.Image, modify: float, found: dict[str, bool | None], notes: list[str],
                 models: BPMModels, options: BPMOptions) -> BPMResult:
    """One edit's region rules and semantic measures, combined into its BPM result."""
    shape = (src.image.size[1], src.image.size[0])
    keep = preserved_region(place.origin.mask, place.edit.mask, shape)
    preservation = s_preserve(src.image, image, keep)
    size = f_size(place.origin.area, place.edit.area, parse.size_state, options.thresholds, is_add=parse.is_add,
                  origin_found=place.origin_found, edit_found=place.edit_found)
    position = f_position(
        None if place.anchor.box is None else as_box(place.anchor.box),
        None if place.edit.box is None else as_box(place.edit.box),
        parse.position_state, options.thresholds, is_remove=parse.is_remove,
        anchor_found=place.anchor_found, edit_found=place.edit_found,
    )
    components = combine(modify, preservation.score, size.score, position.score, options.alpha)
    if preservation.empty:
        notes.append(preservation.reason)
    return BPMResult(
        components=components, parsed=parse, origin=place.origin, edit=place.edit, reference=place.reference,
        anchor=place.anchor, preserved_mask=keep, preservation=preservation, size=size, position=position,
        found=found, options=options, image_size=src.image.size, edit_name=loaded.name, source_name=src.name,
        untrained=models.untrained, models=models.info(), notes=notes, source_image=src.image, edit_image=image,
    )


class _StepClock:
    """Wall-clock seconds per step into ``timings[name]`` and process CPU seconds (all threads) into
    ``timings[name + "_cpu"]``; CPU time stays meaningful on a machine shared with other work."""

    def __init__(self, timings: dict[str, float]):
        self.timings = timings
        self._wall = self._cpu = 0.0

    def start(self) -> None:
        self._wall, self._cpu = time.perf_counter(), time.process_time()

    def stop(self, name: str) -> None:
        self.timings[name] = time.perf_counter() - self._wall
        self.timings[f"{name}_cpu"] = time.process_time() - self._cpu


def _to_source_frame(edit: LoadedImage, source: LoadedImage) -> tuple[Image.Image, list[str]]:
    """The edit resized (bicubic) to the source's size, with a note when that changed anything."""
    if edit.image.size == source.image.size:
        return edit.image, []
    (ew, eh), (sw, sh) = edit.image.size, source.image.size
    notes = [f"{edit.name} is {ew}x{eh}, the source {sw}x{sh}: the edit was resized to the source's size (bicubic) "
             "so that boxes, masks and pixels share one frame"]
    if not math.isclose(ew / eh, sw / sh, rel_tol=0.02):
        notes.append(f"{edit.name} has a different aspect ratio ({ew / eh:.3f} vs {sw / sh:.3f}): its content is "
                     "stretched by the resize, which lowers S_preserve")
    return edit.image.resize(source.image.size, Image.BICUBIC), notes
