"""The examples under ``assets/examples`` (made by ``assets/make_assets.py``), as rows for gr.Examples."""

from __future__ import annotations

import functools
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from ..config import EXAMPLES_DIR


@dataclass
class Example:
    id: str
    label: str
    source: str
    edits: list[str]
    edit_names: list[str]
    target_text: str
    source_text: str
    instruction: str
    source_attributes: list[str]
    target_attributes: list[str]
    #: a world example's object masks (the manifest's ``object_masks``, as absolute paths), else None
    object_masks: dict[str, Any] | None = None

    @property
    def row(self) -> list[Any]:
        """Values for [source, edits, target, source text, instruction, provider, source attrs, target attrs]."""
        return [self.source, self.edits, self.target_text, self.source_text, self.instruction, "manual",
                "\n".join(self.source_attributes), "\n".join(self.target_attributes)]


def load_examples(folder: Path = EXAMPLES_DIR) -> list[Example]:
    examples = []
    for spec_path in sorted(folder.glob("*/example.json")):
        spec = json.loads(spec_path.read_text())
        attrs = json.loads((folder / spec["attributes"]).read_text())
        roles = ", ".join(e["name"] for e in spec["edits"])
        examples.append(Example(
            id=spec["id"],
            label=f"{spec['instruction']} ({len(spec['edits'])} edits: {roles})",
            source=str(folder / spec["source"]),
            edits=[str(folder / e["path"]) for e in spec["edits"]],
            edit_names=[e["name"] for e in spec["edits"]],
            target_text=spec["target_text"],
            source_text=spec["source_text"],
            instruction=spec["instruction"],
            source_attributes=attrs["source_attributes"],
            target_attributes=attrs["target_attributes"],
            object_masks=_absolute_masks(spec.get("object_masks"), folder),
        ))
    return examples


def _absolute_masks(masks: dict[str, Any] | None, folder: Path) -> dict[str, Any] | None:
    if masks is None:
        return None
    named = lambda paths: None if paths is None else {k: str(folder / v) for k, v in paths.items()}  # noqa: E731
    return {"source": named(masks["source"]), "edits": [named(edit) for edit in masks["edits"]]}


def _pixels_key(image: Image.Image) -> str:
    return hashlib.sha256(np.asarray(image.convert("RGB")).tobytes()).hexdigest()


@functools.cache
def _masks_by_pixels(folder: Path) -> dict[str, tuple[str, dict[str, Any]]]:
    """Each shipped world example's images (by their pixels) -> (example id, the example's object masks)."""
    found = {}
    for example in load_examples(folder):
        if example.object_masks is None:
            continue
        found[_pixels_key(Image.open(example.source))] = (example.id, example.object_masks)
    return found


def known_object_masks(source: Image.Image, edits: list[Image.Image],
                       folder: Path = EXAMPLES_DIR) -> tuple[str, dict[str, Any]] | None:
    """(example id, object masks for ``edits`` in their order) when ``source`` is a shipped world example's
    source (same pixels) and every edit one of its edits, else None: a world example's regions are known,
    so BPM on the page takes them from its masks instead of a detector."""
    hit = _masks_by_pixels(folder).get(_pixels_key(source))
    if hit is None:
        return None
    example_id, masks = hit
    example = next(e for e in load_examples(folder) if e.id == example_id)
    by_pixels = {_pixels_key(Image.open(path)): i for i, path in enumerate(example.edits)}
    order = [by_pixels.get(_pixels_key(edit)) for edit in edits]
    if any(i is None for i in order):
        return None
    return example_id, {"source": masks["source"], "edits": [masks["edits"][i] for i in order]}
