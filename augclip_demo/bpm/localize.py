"""Editing-region localisation rules (Sec. 3.2) and the documented fallbacks; no models.

Inputs are what the detector and segmenter returned for o1 (source image), o2 (edited image)
and the reference (source image). Rules, in order:

* add (o1 is None): the origin region is the edit region (Sec. 3.2);
* remove (o2 is None): the edit region is the origin region (Sec. 3.2);
* o1 not found but o2 found: the origin region is the edit region; o2 not found but o1 found: the
  edit region is the origin region (the same copying as add / remove, so S_modify and S_preserve
  still compare the right place). The region rules still see the miss and score 0;
* nothing found at all: both boxes are the whole image and both masks are empty, so S_modify
  compares the whole images and S_preserve every pixel (a global edit), and the region rules 0.

The anchor of the position rule is the reference region when the instruction names one; else
the image frame for an add with a direction ("add a tree on the left"); else the origin region.

Given masks (:class:`ObjectMasks`, an item's edit mask) stand in for the detector and the segmenter:
:func:`given_regions` turns them into the same :class:`Region` objects, and the rules above run on them unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import InputError
from ..instructions import ParsedInstruction
from .components import box_area, full_image_box


@dataclass
class Region:
    """One localized region in the source image's pixel frame.

    ``found`` is whether *this* object was detected; ``provenance`` says where box and mask come from
    (``detected``, ``from the edit region (add)``, ``whole image (nothing found)``, ...).
    """

    phrase: str | None
    box: np.ndarray | None
    mask: np.ndarray | None
    confidence: float | None
    found: bool
    provenance: str

    @property
    def area(self) -> int:
        return int(self.mask.sum()) if self.mask is not None else 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "phrase": self.phrase,
            "box": None if self.box is None else [round(float(v), 2) for v in self.box],
            "box_area": None if self.box is None else box_area(self.box),
            "mask_area": self.area if self.mask is not None else None,
            "confidence": None if self.confidence is None else float(self.confidence),
            "found": self.found,
            "provenance": self.provenance,
        }


@dataclass
class Localization:
    """Origin, edit, reference and anchor regions plus the flags the region rules need."""

    origin: Region
    edit: Region
    reference: Region | None
    anchor: Region
    origin_found: bool  # for f_size: o1 was detected (irrelevant for add)
    edit_found: bool  # for f_size / f_position: o2 was detected (or o1, for remove)
    anchor_found: bool
    notes: list[str]


def detected_region(phrase: str | None, detection: Any | None, mask: np.ndarray | None) -> Region:
    """A region from a detection (anything with ``box``, ``score``, ``found``) and its mask."""
    if phrase is None:
        return Region(None, None, None, None, False, "not requested")
    if detection is None or not getattr(detection, "found", False):
        score = getattr(detection, "score", None)
        return Region(phrase, None, None, score, False, "not found")
    return Region(phrase, np.asarray(detection.box, dtype=np.float64), mask, float(detection.score), True, "detected")


#: Provenance of a region read from a mask the caller gave (an object's mask, or the item's edit mask).
GIVEN_MASK = "given mask"
GIVEN_EDIT_MASK = "given mask (the item's edit mask)"


@dataclass(frozen=True)
class ObjectMasks:
    """Masks of named objects, given instead of detecting and segmenting them.

    ``source``: object name -> boolean (H, W) mask in the source image; ``edits``: one entry per edit (in
    the edits' order), object name -> mask of that object in that edit (in the source's frame), or None
    when that edit's objects are not given. A phrase of the parse (o1, o2, the reference) finds its mask
    by its own name, else by its last word ("blue ball" -> "ball"), case and spaces aside
    (:func:`named_mask`). An image whose masks are given holds only the objects named: a phrase with no
    mask there is an object that is not in that image.
    """

    source: Mapping[str, np.ndarray] = field(default_factory=dict)
    edits: Sequence[Mapping[str, np.ndarray] | None] = ()

    def edit(self, index: int) -> Mapping[str, np.ndarray] | None:
        """Edit ``index``'s masks, or None when they are not given."""
        return self.edits[index] if index < len(self.edits) else None


def _name_key(name: str) -> str:
    return " ".join(str(name).lower().split())


def named_mask(phrase: str | None, masks: Mapping[str, np.ndarray]) -> tuple[str, np.ndarray] | None:
    """``(name, mask)`` of the mask named ``phrase``, else the one named by its last word (the head noun of
    "blue ball"), or None."""
    if not phrase:
        return None
    by_key = {_name_key(name): (name, mask) for name, mask in masks.items()}
    key = _name_key(phrase)
    return by_key.get(key) or (by_key.get(key.split()[-1]) if key else None)


def _mask_region(phrase: str | None, mask: np.ndarray | None, provenance: str, shape: tuple[int, int]) -> Region:
    """A region from a given mask: its box is the mask's bounding box (right and bottom exclusive, in pixels);
    an empty or missing mask is an object that is not there."""
    if phrase is None:
        return Region(None, None, None, None, False, "not requested")
    if mask is None:
        return Region(phrase, None, None, None, False, f"not found ({provenance}s hold no {phrase!r})")
    mask = np.asarray(mask)
    if mask.shape != tuple(shape):
        raise InputError(f"the {provenance} of {phrase!r} has shape {mask.shape}, expected the source image's "
                         f"{tuple(shape)}")
    mask = mask.astype(bool)
    if not mask.any():
        return Region(phrase, None, None, None, False, f"not found ({provenance} of {phrase!r} is empty)")
    rows, cols = np.nonzero(mask)
    box = np.array([cols.min(), rows.min(), cols.max() + 1, rows.max() + 1], dtype=np.float64)
    return Region(phrase, box, mask, None, True, provenance)


def _given(phrase: str | None, named: Mapping[str, np.ndarray] | None, edit_mask: np.ndarray | None,
           shape: tuple[int, int]) -> Region:
    """One phrase's region in one image: its named mask when that image's objects are given, else the item's
    edit mask, else not found."""
    if named is not None:
        match = named_mask(phrase, named)
        return _mask_region(phrase, match[1] if match else None, GIVEN_MASK, shape)
    if edit_mask is not None or phrase is None:
        return _mask_region(phrase, edit_mask, GIVEN_EDIT_MASK, shape)
    return Region(phrase, None, None, None, False, "not found (no mask given for this image)")


def given_regions(parsed: ParsedInstruction, objects: ObjectMasks | None, edit_mask: np.ndarray | None,
                  n_edits: int, shape: tuple[int, int]) -> tuple[Region, Region | None, list[Region]]:
    """(origin, reference, edit regions) from given masks instead of detections.

    An image whose object masks are given takes o1 / o2 / the reference from them by name; an image without
    them takes the item's ``edit_mask`` (PIE-Bench's or MagicBrush's single region: then the origin and the
    edit region are that one region); with neither, the object is not found. The reference is looked up
    among the source's object masks only (an edit mask marks the change, not the reference object)."""
    if objects is None and edit_mask is None:
        raise InputError("BPM's regions are set to given masks, but no mask was given: give the objects' masks "
                         "or an edit mask, or let BPM detect the regions")
    if objects is not None and len(objects.edits) > n_edits:
        raise InputError(f"object masks are given for {len(objects.edits)} edits, but there are {n_edits}")
    source = objects.source if objects is not None and objects.source else None
    origin = _given(parsed.o1, source, edit_mask, shape)
    reference = (_given(parsed.reference, source or {}, None, shape) if parsed.reference else None)
    edits = [_given(parsed.o2, objects.edit(i) if objects is not None else None, edit_mask, shape)
             for i in range(n_edits)]
    return origin, reference, edits


def localize(parsed: ParsedInstruction, origin: Region, edit: Region, reference: Region | None,
             image_size: tuple[int, int]) -> Localization:
    """Apply Sec. 3.2's add / remove rules and the fallbacks in the module docstring."""
    notes: list[str] = []
    shape = (image_size[1], image_size[0])
    origin_found, edit_found = origin.found, edit.found
    if parsed.is_add:
        origin = Region(None, edit.box, edit.mask, edit.confidence, False, "the edit region (add, Sec. 3.2)")
        origin_found = edit_found
    elif parsed.is_remove:
        edit = Region(None, origin.box, origin.mask, origin.confidence, False, "the origin region (remove, Sec. 3.2)")
        edit_found = origin_found
    elif not origin_found and edit_found:
        origin = Region(origin.phrase, edit.box, edit.mask, origin.confidence, False,
                        "the edit region (o1 not found)")
        notes.append(f"o1 {parsed.o1!r} was not found in the source image: its region is taken from o2's")
    elif origin_found and not edit_found:
        edit = Region(edit.phrase, origin.box, origin.mask, edit.confidence, False,
                      "the origin region (o2 not found)")
        notes.append(f"o2 {parsed.o2!r} was not found in the edited image: its region is taken from o1's")
    if origin.box is None and edit.box is None:
        whole = full_image_box(image_size)
        empty = np.zeros(shape, dtype=bool)
        origin = Region(origin.phrase, whole, empty, origin.confidence, False, "whole image (nothing found)")
        edit = Region(edit.phrase, whole.copy(), empty.copy(), edit.confidence, False, "whole image (nothing found)")
        notes.append("no object was found in either image: S_modify compares the whole images, S_preserve "
                     "every pixel, and the region rules score 0")

    if reference is not None:
        anchor, anchor_found = reference, reference.found
        if not reference.found:
            notes.append(f"the reference {parsed.reference!r} was not found in the source image: position scores 0")
    elif parsed.is_add and parsed.position_state != "unchanged":
        anchor = Region(None, full_image_box(image_size), None, None, True, "the image frame (add with a direction)")
        anchor_found = True
    else:
        anchor, anchor_found = origin, origin_found
    return Localization(origin, edit, reference, anchor, origin_found, edit_found, anchor_found, notes)
