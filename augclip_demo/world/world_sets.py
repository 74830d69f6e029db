"""A world set on disk: a manifest (the batch format) with its images, masks, attribute lists and the
judgments that the construction fixes, readable by every path (batch, Ray, protocol, Explore, studies)."""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image

from ..choices import TARGET_ATTRIBUTE_STYLES
from .edits import EDIT_KINDS, HATIE_TYPES, MANIFEST_ROLES, RATINGS, WorldEdit, make_edit
from .scenes import caption, draw_scene, scene_phrases

#: An item's folder under ``images/``: its edit kind and its index in the set.
_ITEM_FOLDER = re.compile(rf"(?:{'|'.join(EDIT_KINDS)})-\d{{4}}")

#: The dataset name world items carry (protocol tables group by it).
WORLD_DATASET = "world"


@dataclass(frozen=True)
class _WorldItem:
    """One written item: its manifest record and where its files went."""

    record: dict
    folder: Path


def _save_mask(mask: np.ndarray, path: Path) -> None:
    Image.fromarray(mask.astype(np.uint8) * 255, mode="L").save(path)


def _changed(a: Image.Image, b: Image.Image) -> np.ndarray:
    """Where two drawings differ (any channel)."""
    return np.any(np.asarray(a) != np.asarray(b), axis=-1)


def target_attributes(edit: WorldEdit, style: str = "scene") -> list[str]:
    """``edit``'s target attribute list in ``style`` (choices.TARGET_ATTRIBUTE_STYLES)."""
    if style not in TARGET_ATTRIBUTE_STYLES:
        raise ValueError(f"unknown target attribute style {style!r}; choose one of {', '.join(TARGET_ATTRIBUTE_STYLES)}")
    scene = scene_phrases(edit.target)
    if style == "scene":
        return scene
    before = set(scene_phrases(edit.source))
    return [p for p in scene if p not in before] or scene


def _write_item(edit: WorldEdit, item_id: str, root: Path, order: list[str], seed: int,
                style: str = "scene") -> _WorldItem:
    """Draw ``edit``'s source and results into ``root/images/item_id/`` and return its manifest record; the
    edits are listed in ``order`` (a permutation of the roles)."""
    folder = root / "images" / item_id
    (folder / "masks").mkdir(parents=True, exist_ok=True)
    rel = f"images/{item_id}"
    source = draw_scene(edit.source)
    source.image.save(folder / "source.png")
    for index, obj in enumerate(edit.source.objects):
        _save_mask(source.masks[index], folder / "masks" / f"{obj.shape}.png")
    drawn = {role: draw_scene(scene) for role, scene in edit.results.items()}
    regions, objects = {}, {}
    for role, picture in drawn.items():
        picture.image.save(folder / f"{role}.png")
        _save_mask(_changed(source.image, picture.image), folder / "masks" / f"changed-{role}.png")
        regions[role] = f"{rel}/masks/changed-{role}.png"
        (folder / "masks" / role).mkdir(exist_ok=True)
        objects[role] = {}
        for index, obj in enumerate(edit.results[role].objects):
            if obj.opacity < 1:  # a half-faded shape (partial add / remove / replace) has no mask of its own
                continue
            _save_mask(picture.masks[index], folder / "masks" / role / f"{obj.shape}.png")
            objects[role][obj.shape] = f"{rel}/masks/{role}/{obj.shape}.png"
    # the region the instruction asks to change: what the correct edit changed
    _save_mask(_changed(source.image, drawn["correct"].image), folder / "edit_mask.png")
    hatie = {"target": edit.edited or "background", "new": edit.new_shape, "target_text": caption(edit.target),
             "foreground": [obj.shape for obj in edit.source.objects],
             "masks": {obj.shape: f"{rel}/masks/{obj.shape}.png" for obj in edit.source.objects}}
    record: dict = {
        "id": item_id,
        "dataset": WORLD_DATASET,
        "source": f"{rel}/source.png",
        "target_text": caption(edit.target),
        "source_text": caption(edit.source),
        "instruction": edit.instruction,
        "output_caption": caption(edit.target),
        "edit_mask": f"{rel}/edit_mask.png",
        "ground_truth": f"{rel}/correct.png",
        "edits": [{"path": f"{rel}/{role}.png", "name": role, "role": MANIFEST_ROLES[role]} for role in order],
        "human": {"preferred": order.index("correct"), "scores": [RATINGS[role] for role in order]},
        "attributes": {"source": scene_phrases(edit.source), "target": target_attributes(edit, style)},
        # every object's mask in the source and in each edit: BPM (--bpm-regions masks) and HATIE read them
        "object_masks": {"source": dict(hatie["masks"]), "edits": [objects[role] for role in order]},
        "meta": {"world": {"kind": edit.kind, "seed": seed, "edited": edit.edited, "new_shape": edit.new_shape,
                           "roles": order, "changed_masks": [regions[role] for role in order],
                           "target_attributes": style},
                 "hatie": hatie},
    }
    if HATIE_TYPES[edit.kind] is not None:
        record["edit_type"] = HATIE_TYPES[edit.kind]
    return _WorldItem(record, folder)


def write_world(out: str | Path, items: int = 70, *, seed: int = 0, kinds: tuple[str, ...] = EDIT_KINDS,
                ground_truth: bool = False, target_attributes: str = "scene") -> Path:
    """Write ``items`` world items (the kinds in turn) under ``out`` and return the manifest's path.

    Each item gets its own random stream (``seed`` and its index), so item ``k`` is the same whatever
    ``items`` is. The edits are listed in a random order per item, so no metric can profit from a position.
    ``ground_truth`` also gives each item its correct edit as a ground-truth image (the reference
    metrics then compare every edit with it; it is the construction's answer, so off by default).
    ``target_attributes`` says what each target attribute list holds (choices.TARGET_ATTRIBUTE_STYLES).
    """
    unknown = [k for k in kinds if k not in EDIT_KINDS]
    if unknown:
        raise ValueError(f"unknown edit kind(s) {', '.join(unknown)}; the world's kinds: {', '.join(EDIT_KINDS)}")
    if target_attributes not in TARGET_ATTRIBUTE_STYLES:
        raise ValueError(f"unknown target attribute style {target_attributes!r}; choose one of "
                         f"{', '.join(TARGET_ATTRIBUTE_STYLES)}")
    root = Path(out)
    root.mkdir(parents=True, exist_ok=True)
    manifest = root / "manifest.jsonl"
    roles = list(RATINGS)
    kept: set[str] = set()
    with open(manifest, "w", encoding="utf-8", newline="\n") as handle:
        for index in range(items):
            rng = np.random.default_rng([seed, index])
            kind = kinds[index % len(kinds)]
            edit = make_edit(rng, kind)
            order = [roles[i] for i in rng.permutation(len(roles))]
            written = _write_item(edit, f"{kind}-{index:04d}", root, order, seed, target_attributes)
            if not ground_truth:
                del written.record["ground_truth"]
            handle.write(json.dumps(written.record) + "\n")
            kept.add(written.record["id"])
    _remove_other_items(root / "images", kept)
    return manifest


def _remove_other_items(images: Path, kept: set[str]) -> None:
    """Remove the item folders of an earlier set written to the same place (named as items are, and not in this
    set), so a set redrawn smaller holds no images its manifest does not list."""
    if not images.is_dir():
        return
    for folder in images.iterdir():
        if folder.is_dir() and folder.name not in kept and _ITEM_FOLDER.fullmatch(folder.name):
            shutil.rmtree(folder)
