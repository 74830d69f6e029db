"""EditVal (Basu et al., "EditVal: Benchmarking Diffusion Based Text-Guided Image Editing Methods", 2023).

The released layout (the ``editval_code`` repository)::

    object.json          {"<COCO class>": {"<COCO image id>": {"<edit type>": {"from": [...], "to": [...]}}}}
    <coco>/000000100166.jpg                       (MS-COCO train2017 names; <id>.jpg / img_<id>.png also found)
    <method>/<edit type>/<image id>/<to>.png      (the repository's recommended output layout)

Edit types: action, alter_parts, background, color, object_addition, object_replacement,
position_replacement, positional_addition, shape, size, style, texture, viewpoint. Each
(image, edit type, target value) becomes one item; its target text and instruction are written here
from the class, the type and the value (our own templates, :func:`describe_edit`), and the EditVal
type stays in ``meta.edit_type`` (``--split-types`` also names the dataset per type, so the
protocol tables get one column per type).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from ...errors import InputError
from ..loaders import LoaderResult, _read_json, slug
from ..manifest import relative_inside
from .common import (
    Unmatched,
    article,
    collect_edits,
    find_image,
    find_inside,
    inside,
    method_folders,
    real_folder,
    write_items,
)

_EDITVAL_TYPES: tuple[str, ...] = ("action", "alter_parts", "background", "color", "object_addition",
                                  "object_replacement", "position_replacement", "positional_addition", "shape",
                                  "size", "style", "texture", "viewpoint")
_RELATIONS = {"on top": "on top of", "below": "below", "to right": "to the right of", "to left": "to the left of",
              "above": "above", "behind": "behind", "in front": "in front of"}
_IRREGULAR_ING = {"lay": "lying", "lie": "lying", "sit": "sitting", "run": "running", "hit": "hitting",
                  "swim": "swimming", "stand": "standing", "jump": "jumping"}


def _gerund(verb: str) -> str:
    verb = verb.strip()
    if verb in _IRREGULAR_ING:
        return _IRREGULAR_ING[verb]
    return (verb[:-1] if verb.endswith("e") and not verb.endswith("ee") else verb) + "ing"


def _positional(value: str) -> tuple[str, str]:
    """``"bag on top"`` -> (``"bag"``, ``"on top of"``); no known relation: (value, ``"next to"``)."""
    for words, relation in _RELATIONS.items():
        if value.endswith(" " + words):
            return value[: -len(words) - 1].strip(), relation
    return value, "next to"


def describe_edit(cls: str, edit_type: str, source_value: str, value: str) -> tuple[str, str]:
    """(target text, instruction) for one EditVal edit, in our own words.

    ``cls`` is the COCO class (underscores as spaces), ``source_value`` the ``from`` value ("" when
    none), ``value`` the ``to`` value.
    """
    a_cls = f"{article(cls)} {cls}"
    if edit_type == "object_addition":
        return f"a photo of {a_cls} and {article(value)} {value}", f"add {article(value)} {value}"
    if edit_type == "positional_addition":
        thing, relation = _positional(value)
        return (f"a photo of {article(thing)} {thing} {relation} {a_cls}",
                f"add {article(thing)} {thing} {relation} the {cls}")
    if edit_type in ("size", "color", "texture", "shape"):
        verb = {"size": "make the {c} {v}", "color": "make the {c} {v}", "texture": "give the {c} a {v} texture",
                "shape": "change the shape of the {c} to {v}"}[edit_type]
        return f"a photo of {article(value)} {value} {cls}", verb.format(c=cls, v=value)
    if edit_type == "alter_parts":
        part = value[4:] if value.lower().startswith("add ") else value
        return f"a photo of {a_cls} with {part}", f"{value} to the {cls}"
    if edit_type == "viewpoint":
        return f"a photo of {a_cls} seen from the {value}", f"show the {cls} from the {value}"
    if edit_type == "style":
        return f"a picture of {a_cls} in the style of {value}", f"turn the picture into {value}"
    if edit_type == "object_replacement":
        replaced = source_value or cls
        return f"a photo of {article(value)} {value}", f"replace the {replaced} with {article(value)} {value}"
    if edit_type == "action":
        return f"a photo of {a_cls} {_gerund(value)}", f"make the {cls} {value}"
    if edit_type == "background":
        return (f"a photo of {a_cls} with {article(value)} {value} in the background",
                f"change the background to {article(value)} {value}")
    if edit_type == "position_replacement":
        where = "in the center" if value == "center" else f"on the {value}"
        return f"a photo of {a_cls} {where} of the picture", f"move the {cls} {where.replace('on the', 'to the')}"
    label = edit_type.replace("_", " ")
    return f"a photo of {a_cls} with {label} {value}", f"change the {label} of the {cls} to {value}"


def _coco_image(folder: Path, image_id: str) -> Path | None:
    for stem in (f"{int(image_id):012d}" if image_id.isdigit() else image_id, image_id, f"img_{image_id}"):
        found = find_image(folder, stem)
        if found is not None:
            return found
    return None


def load_editval(root: str | Path, out: str | Path | None = None, *, coco_dir: str | Path | None = None,
                 methods: Sequence[str | Path] = (), object_json: str = "object.json", split_types: bool = False,
                 dataset: str = "editval") -> LoaderResult:
    """A manifest for EditVal: one item per (image, edit type, target value), one edit per method with an output.

    ``root`` holds ``object.json``; ``coco_dir`` (default ``ROOT/images``) the COCO images;
    ``methods`` the output folders (``DIR`` or ``NAME=DIR``), each ``<edit type>/<image id>/<to>.png``.
    """
    root = real_folder(root, "EditVal folder")
    out = Path(out).expanduser() if out else root / "manifest.jsonl"
    data = _read_json(inside(root, object_json, "object.json"), "EditVal object.json")
    if not isinstance(data, dict):
        raise InputError(f"EditVal {root / object_json}: expected an object of class -> image id -> edit type")
    coco = real_folder(coco_dir if coco_dir else root / "images", "EditVal COCO image folder")
    folders = method_folders(methods, "EditVal method folder", out)
    if not folders:
        raise InputError("EditVal: give at least one method's output folder (--method-dir DIR or NAME=DIR), laid out "
                         "as <edit type>/<image id>/<to>.png")
    unmatched = Unmatched()
    items = _items(data, coco, folders, out, split_types, dataset, unmatched)
    return write_items(items, out, unmatched)


def _edits_of(data: dict[str, Any], unmatched: Unmatched) -> Iterator[tuple[str, str, str, str, str]]:
    """(class, image id, edit type, from, to) for every edit object.json asks for."""
    for cls, images in data.items():
        if not isinstance(images, dict):
            unmatched.add("classes that are not objects (not used)", str(cls))
            continue
        for image_id, edits in images.items():
            if not isinstance(edits, dict):
                unmatched.add("images whose edits are not an object (not used)", f"{cls}/{image_id}")
                continue
            for edit_type, values in edits.items():
                targets = values.get("to") if isinstance(values, dict) else None
                if not isinstance(targets, list):
                    unmatched.add("edits without a 'to' list (not used)", f"{image_id}/{edit_type}")
                    continue
                sources = values.get("from") or [""]
                source_value = str(sources[0]).strip() if isinstance(sources, list) and sources else ""
                for value in targets:
                    if isinstance(value, str) and value.strip():
                        yield str(cls), str(image_id), str(edit_type), source_value, value.strip()
                    else:
                        unmatched.add("'to' values that are not text or are empty (not used)",
                                      f"{image_id}/{edit_type}: {value!r}")


def _items(data: dict[str, Any], coco: Path, folders: list[tuple[str, Path]], out: Path, split_types: bool,
           dataset: str, unmatched: Unmatched) -> Iterator[dict[str, Any]]:
    used: set[str] = set()
    for cls, image_id, edit_type, source_value, value in _edits_of(data, unmatched):
        if edit_type not in _EDITVAL_TYPES:
            unmatched.add("edit types EditVal does not define (described generically)", edit_type)
        source = _coco_image(coco, image_id) if "/" not in image_id and "\\" not in image_id else None
        if source is None:
            unmatched.add("COCO images missing (items not written)", image_id)
            continue
        name = cls.replace("_", " ").strip()
        target, instruction = describe_edit(name, edit_type, source_value, value)
        item_id = f"{image_id}-{edit_type}-{slug(value)}"
        if item_id in used:  # object.json repeats a value for one image: one item is enough
            unmatched.add("repeated (image, edit type, value) entries (one item kept)", item_id)
            continue
        used.add(item_id)
        item: dict[str, Any] = {
            "id": item_id, "dataset": f"{dataset}:{edit_type}" if split_types else dataset,
            "source": relative_inside(source, out.parent, "COCO image"), "target_text": target,
            "source_text": f"a photo of {article(name)} {name}", "instruction": instruction, "edits": [],
            "meta": {"benchmark": "editval", "edit_type": edit_type, "class": cls, "image_id": image_id,
                     "from": source_value, "to": value}}
        where = f"{edit_type}/{image_id}/{value}"
        item["edits"] = collect_edits(
            folders, lambda method, folder: find_inside(folder, where, f"{method} output", unmatched),  # noqa: B023
            f"{where}.png", out, unmatched)
        if not item["edits"]:
            unmatched.add("edits with no output from any method (not written)", item_id)
            continue
        yield item
