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
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

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
