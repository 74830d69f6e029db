"""CelebA-style attribute editing: a folder of faces, a list of attribute target texts, per-model outputs.

The AugCLIP paper's CelebA study edits face photos towards attributes ("smiling", "blond hair") and
asks people which edit is better; no single release fixes a layout, so this one is ours::

    faces/000001.jpg ...                      the source faces
    attributes.txt                            one target text per line ("a photo of a smiling person"), or
    attributes.csv                            columns name,target_text (name = the outputs' folder name)
    <model>/<attribute>/<face stem>.png       per model: one folder per attribute (the CSV's name, the text's
                                              slug, or its 1-based line number), one output per face
    <model>/<face stem>-<attribute>.png       (also accepted: flat, the face's stem then the attribute)

One item per (face, attribute); ``source_text`` is a neutral description of a face (``--source-text``).
"""

from __future__ import annotations

import csv
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...errors import InputError
from ..loaders import LoaderResult, slug
from ..manifest import relative_inside
from .common import (
    Unmatched,
    collect_edits,
    find_image,
    image_files,
    inside,
    manifest_path,
    method_folders,
    real_folder,
    write_items,
)

_DEFAULT_SOURCE_TEXT = "a photo of a face"


@dataclass(frozen=True)
class _AttributeTarget:
    """One attribute: the names its outputs may be filed under, and its target text."""

    keys: tuple[str, ...]
    text: str


def _read_attributes(path: Path) -> list[_AttributeTarget]:
    """Attribute targets from a ``.txt`` (one text per line) or ``.csv`` (``name,target_text``) file."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"attribute list {path}: cannot be read as UTF-8 text ({exc})") from None
    targets: list[_AttributeTarget] = []
    if path.suffix.lower() == ".csv":
        rows = list(csv.DictReader(text.splitlines()))
        if not rows or not {"name", "target_text"} <= set(rows[0]):
            raise InputError(f"attribute list {path}: a CSV needs the columns name,target_text")
        for number, row in enumerate(rows, start=2):
            name, target = (row.get("name") or "").strip(), (row.get("target_text") or "").strip()
            if not name or not target:
                raise InputError(f"attribute list {path}, row {number}: name and target_text must both be given")
            targets.append(_AttributeTarget((name, slug(target)), target))
    else:
        lines = [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
        targets = [_AttributeTarget((slug(line), str(number)), line) for number, line in enumerate(lines, start=1)]
    if not targets:
        raise InputError(f"attribute list {path} is empty: give one target text per line")
    names = [t.keys[0] for t in targets]
    if len(set(names)) != len(names):
        raise InputError(f"attribute list {path}: two attributes share the name {_first_repeat(names)!r}")
    return targets


def _first_repeat(names: list[str]) -> str:
    seen: set[str] = set()
    for name in names:
        if name in seen:
            return name
        seen.add(name)
    return ""


def _output(folder: Path, face: Path, target: _AttributeTarget) -> Path | None:
    for key in target.keys:
        if key in (".", "..") or "/" in key or "\\" in key:
            continue
        found = find_image(folder / key, face.stem) or find_image(folder, f"{face.stem}-{key}")
        if found is not None:
            return found
    return None


def load_celeba(root: str | Path, out: str | Path | None = None, *, methods: Sequence[str | Path] = (),
                faces: str = "faces", attributes: str = "attributes.txt", source_text: str = _DEFAULT_SOURCE_TEXT,
                dataset: str = "celeba") -> LoaderResult:
    """A manifest for attribute edits of faces: one item per (face, attribute), one edit per model with its output."""
    root = real_folder(root, "CelebA-style folder")
    out = manifest_path(out, root, methods, "CelebA-style model folder", "celeba")
    face_dir = inside(root, faces, "faces folder")
    if not face_dir.is_dir():
        raise InputError(f"CelebA-style: {face_dir} is not a folder of face images")
    list_path = inside(root, attributes, "attribute list")
    if not list_path.is_file():
        raise InputError(f"CelebA-style: {list_path} not found (one target text per line, or name,target_text CSV)")
    targets = _read_attributes(list_path)
    folders = method_folders(methods, "CelebA-style model folder", out)
    if not folders:
        raise InputError("CelebA-style: give at least one model's output folder (--method-dir DIR or NAME=DIR), laid "
                         "out as <attribute>/<face>.png")
    unmatched = Unmatched()
    items = _items(image_files(face_dir), targets, folders, out, source_text, dataset, unmatched)
    return write_items(items, out, unmatched)


def _items(faces: list[Path], targets: list[_AttributeTarget], folders: list[tuple[str, Path]], out: Path,
           source_text: str, dataset: str, unmatched: Unmatched) -> Iterator[dict[str, Any]]:
    for face in faces:
        for target in targets:
            edits = collect_edits(folders, lambda _, folder: _output(folder, face, target),  # noqa: B023
                                  f"{target.keys[0]}/{face.stem}", out, unmatched)
            item_id = f"{face.stem}-{target.keys[0]}"
            if not edits:
                unmatched.add("(face, attribute) pairs with no output from any model (not written)", item_id)
                continue
            yield {"id": item_id, "dataset": dataset, "source": relative_inside(face, out.parent, "face image"),
                   "target_text": target.text, "source_text": source_text, "edits": edits,
                   "meta": {"benchmark": "celeba", "attribute": target.keys[0]}}
