"""PIE-Bench (Ju et al., the PnP Inversion paper, ICLR 2024).

The released benchmark (``data/`` of the PnPInversion repository's download)::

    data/mapping_file.json      {"000000000000": {"image_path": "0_random_140/000000000000.jpg",
                                                  "original_prompt": "...", "editing_prompt": "... [word] ...",
                                                  "editing_instruction": "...", "editing_type_id": "0",
                                                  "blended_word": "...", "mask": [start, length, ...]}, ...}
    data/annotation_images/0_random_140/000000000000.jpg ...
    output/<method>/annotation_images/0_random_140/000000000000.jpg   (a method's outputs, same tree)

``mask`` is run-length encoded over the flattened 512 x 512 image: pairs of (start, length), 1 = the
part to edit. The benchmark's evaluation decodes it and then marks the image's one-pixel border as
edited too (to absorb annotation errors at the edge); :func:`decode_pie_mask` does the same by
default (``border=False`` gives the annotation alone). Brackets in the prompts mark the changed words;
the evaluation removes them, and so does this loader. A non-square output (some methods save the
source and the edit side by side) is cropped to its bottom-right 512 x 512 square, as the
evaluation does; the crop is written next to the manifest.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from ...errors import InputError
from ..loaders import LoaderResult, _read_json
from ..manifest import relative_inside
from ..triplets import safe_filename
from .common import (
    Unmatched,
    edit_entry,
    find_image,
    inside,
    manifest_path,
    method_folders,
    real_folder,
    write_items,
)

_MASK_SIDE = 512
#: PIE-Bench's ten editing types (README of the PnPInversion repository), by ``editing_type_id``.
_EDIT_TYPE_NAMES: dict[str, str] = {
    "0": "random", "1": "change object", "2": "add object", "3": "delete object", "4": "change content",
    "5": "change pose", "6": "change color", "7": "change material", "8": "change background", "9": "change style",
}
#: The same types in HATIE's vocabulary (the manifest's ``edit_type``) where one fits; 0 (random) has none.
_HATIE_TYPES: dict[str, str] = {"1": "replace", "2": "add", "3": "remove", "4": "attribute", "5": "attribute",
                               "6": "attribute", "7": "attribute", "8": "background", "9": "style"}


def decode_pie_mask(encoded: Sequence[int], side: int = _MASK_SIDE, *, border: bool = True) -> np.ndarray:
    """A PIE-Bench run-length mask as a boolean (side, side) array, True = the part to edit.

    ``encoded`` holds (start, length) pairs over the row-major flattened image; a run that passes the
    end is cut there. With ``border`` (the benchmark's evaluation), the outermost rows and columns
    are marked as edited too.
    """
    values = list(encoded)
    if len(values) % 2:
        raise InputError(f"the run-length mask has an odd number of values ({len(values)}); it holds (start, length) "
                         "pairs")
    total = side * side
    flat = np.zeros(total, dtype=bool)
    for start, length in zip(values[0::2], values[1::2]):
        if isinstance(start, bool) or isinstance(length, bool) or not isinstance(start, int)\
                or not isinstance(length, int) or start < 0 or length < 0:
            raise InputError(f"the run-length mask has a run ({start!r}, {length!r}) that is not two non-negative "
                             "integers")
        if start >= total:
            raise InputError(f"the run-length mask has a run starting at {start}, past the {side} x {side} image")
        flat[start:start + length] = True
    mask = flat.reshape(side, side)
    if border:
        mask[0, :] = mask[-1, :] = True
        mask[:, 0] = mask[:, -1] = True
    return mask


def _plain_prompt(prompt: str) -> str:
    """A PIE-Bench prompt without the brackets that mark its changed words."""
    return " ".join(prompt.replace("[", "").replace("]", "").split())


def _outputs_root(folder: Path) -> Path:
    """A method's folder laid out like ``annotation_images/`` (itself, or its ``annotation_images`` child)."""
    child = folder / "annotation_images"
    return child if child.is_dir() else folder


def _square_output(path: Path, crops: Path, name: str, key: str) -> Path:
    """``path``, or its bottom-right 512 x 512 crop when the output is not square.

    The crop is written on every run (never reused from an earlier one: the outputs may have been
    regenerated since), staged and renamed so a reader never sees half a file.
    """
    with Image.open(path) as image:
        width, height = image.size
        if width == height:
            return path
        target = crops / safe_filename(name) / f"{safe_filename(key)}.png"
        target.parent.mkdir(parents=True, exist_ok=True)
        staged = target.with_name(target.name + ".tmp")
        image.convert("RGB").crop((width - _MASK_SIDE, height - _MASK_SIDE, width, height)).save(staged, format="PNG")
    os.replace(staged, target)
    return target


def load_pie_bench(root: str | Path, out: str | Path | None = None, *, methods: Sequence[str | Path] = (),
                   mapping: str = "mapping_file.json", edit_types: Sequence[str] | None = None,
                   mask_border: bool = True, dataset: str = "pie-bench") -> LoaderResult:
    """A manifest for PIE-Bench: one item per annotated image, one edit per method folder that has its output.

    ``root`` is the benchmark's ``data`` folder (``mapping_file.json``, ``annotation_images/``);
    ``methods`` are output folders (``DIR`` or ``NAME=DIR``) laid out like ``annotation_images/``
    (PIE-Bench's ``output/<method>/annotation_images/`` works as given). Each item has the target prompt
    as ``target_text``, the source prompt as ``source_text``, the instruction, the decoded mask as its
    ``edit_mask`` (a PNG written next to the manifest), the edit type (HATIE's where one fits, and
    PIE-Bench's own id and name in ``meta``); ``edit_types`` keeps only those ids.
    """
    root = real_folder(root, "PIE-Bench data folder")
    out = manifest_path(out, root, methods, "PIE-Bench method folder", "pie-bench")
    entries = _read_json(inside(root, mapping, "mapping file"), "PIE-Bench mapping file")
    if not isinstance(entries, dict):
        raise InputError(f"PIE-Bench mapping file {root / mapping}: expected an object of image id -> annotation")
    images = root / "annotation_images"
    if not images.is_dir():
        raise InputError(f"PIE-Bench: {images} not found (the folder of source images)")
    folders = [(name, _outputs_root(path)) for name, path in method_folders(methods, "PIE-Bench method folder", out)]
    if not folders:
        raise InputError("PIE-Bench: give at least one method's output folder (--method-dir DIR or NAME=DIR); "
                         "the benchmark has no edited images of its own")
    wanted = {str(t) for t in edit_types} if edit_types else None
    unknown_types = sorted((wanted or set()) - set(_EDIT_TYPE_NAMES))
    if unknown_types:
        raise InputError(f"PIE-Bench: unknown editing type id(s) {', '.join(unknown_types)} (0-9)")
    masks = out.parent / f"{out.stem}_masks"
    crops = out.parent / f"{out.stem}_crops"
    unmatched = Unmatched()
    notes = [f"masks written to {masks}" + (" (one-pixel border marked as edited, as PIE-Bench's evaluation)"
                                             if mask_border else " (the annotation alone, no border)")]
    items = _items(entries, root, images, folders, out, masks, crops, wanted, mask_border, dataset, unmatched)
    return write_items(items, out, unmatched, notes)


def _items(entries: dict[str, Any], root: Path, images: Path, folders: list[tuple[str, Path]], out: Path,
           masks: Path, crops: Path, wanted: set[str] | None, mask_border: bool, dataset: str,
           unmatched: Unmatched) -> Iterator[dict[str, Any]]:
    for key, entry in entries.items():
        if not isinstance(entry, dict) or not isinstance(entry.get("image_path"), str)\
                or not isinstance(entry.get("editing_prompt"), str):
            unmatched.add("entries without image_path / editing_prompt (not used)", str(key))
            continue
        type_id = str(entry.get("editing_type_id", ""))
        if wanted is not None and type_id not in wanted:
            continue
        try:
            source = inside(images, entry["image_path"], f"{key}: image_path")
        except InputError as exc:
            unmatched.add("image paths refused (not used)", str(exc))
            continue
        if not source.is_file():
            unmatched.add("source images missing (item not written)", f"annotation_images/{entry['image_path']}")
            continue
        item = _item(str(key), entry, source, type_id, out, dataset)
        for name, folder in folders:
            try:
                found = inside(folder, entry["image_path"], f"{name} output")
                found = found if found.is_file() else find_image(found.parent, found.stem) or found  # .png saves
                if not found.is_file():
                    unmatched.add(f"{name}: no output", entry["image_path"])
                    continue
                square = _square_output(found, crops, name, str(key))
            except (InputError, OSError) as exc:  # a symlink out of the folder, an unreadable image
                unmatched.add(f"{name}: outputs refused or unreadable (not used)", f"{entry['image_path']}: {exc}")
                continue
            edit = edit_entry(square, out, name, unmatched)
            if edit is not None:
                item["edits"].append(edit)
        if not item["edits"]:
            unmatched.add("items with no output from any method (not written)", str(key))
            continue
        _attach_mask(item, entry.get("mask"), str(key), masks, out, mask_border, unmatched)
        yield item


def _item(key: str, entry: dict[str, Any], source: Path, type_id: str, out: Path, dataset: str) -> dict[str, Any]:
    item: dict[str, Any] = {"id": key, "dataset": dataset,
                            "source": relative_inside(source, out.parent, "source image"),
                            "target_text": _plain_prompt(entry["editing_prompt"]), "edits": []}
    if isinstance(entry.get("original_prompt"), str) and entry["original_prompt"].strip():
        item["source_text"] = _plain_prompt(entry["original_prompt"])
    if isinstance(entry.get("editing_instruction"), str) and entry["editing_instruction"].strip():
        item["instruction"] = entry["editing_instruction"].strip()
    if type_id in _HATIE_TYPES:
        item["edit_type"] = _HATIE_TYPES[type_id]
    item["meta"] = {"benchmark": "pie-bench", "editing_type_id": type_id,
                    "editing_type": _EDIT_TYPE_NAMES.get(type_id), "blended_word": entry.get("blended_word"),
                    "editing_prompt": entry["editing_prompt"]}
    return item


def _attach_mask(item: dict[str, Any], encoded: Any, key: str, masks: Path, out: Path, border: bool,
                 unmatched: Unmatched) -> None:
    if not isinstance(encoded, list):
        unmatched.add("items without a mask (written without edit_mask)", key)
        return
    try:
        mask = decode_pie_mask(encoded, border=border)
    except InputError as exc:
        unmatched.add("masks that do not decode (written without edit_mask)", f"{key}: {exc}")
        return
    path = masks / f"{safe_filename(key)}.png"
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(mask.astype(np.uint8) * 255, mode="L").save(path)
    item["edit_mask"] = relative_inside(path, out.parent, "edit mask")

