"""The examples under ``assets/examples`` (made by ``assets/make_assets.py``), as rows for gr.Examples."""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from PIL import Image

from ..config import EXAMPLES_DIR
from ..io import image_content_hash


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


@functools.cache
def _world_masks_by_hash(folder: Path) -> dict[str, tuple[dict[str, Any], dict[str, int]]]:
    """Each shipped world example's source (by its content hash, :func:`~augclip_demo.io.image_content_hash`)
    -> (its object masks, each edit's content hash -> the edit's index)."""
    found = {}
    for example in load_examples(folder):
        if example.object_masks is not None:
            edits = {image_content_hash(Image.open(path)): i for i, path in enumerate(example.edits)}
            found[image_content_hash(Image.open(example.source))] = (example.object_masks, edits)
    return found


def known_object_masks(source_hash: str, edit_hashes: list[str], folder: Path = EXAMPLES_DIR) -> dict[str, Any] | None:
    """Object masks for the edits in their order when the source is a shipped world example's source (same
    content hash) and every edit one of its edits, else None: a world example's regions are known, so BPM on
    the page takes them from its masks instead of a detector."""
    hit = _world_masks_by_hash(folder).get(source_hash)
    if hit is None:
        return None
    masks, edits = hit
    order = [edits.get(h) for h in edit_hashes]
    if any(i is None for i in order):
        return None
    return {"source": masks["source"], "edits": [masks["edits"][i] for i in order]}
