"""EditVal (Basu et al., "EditVal: Benchmarking Diffusion Based Text-Guided Image Editing Methods", 2023).

The released layout (the ``editval_code`` repository)::

    object.json          {"<COCO class>": {"<COCO image id>": {"<edit type>": {"from": [...], "to": [...]}}}}
    <coco>/000000100166.jpg                       (MS-COCO train2017 names; <id>.jpg / img_<id>.png also found)
    <method>/<edit type>/<image id>/<to>.png      (the repository's recommended output layout)
    <method>/<edit type>/<image id>/<image id>_<edit type>_<to>_<setting>.png   (what its generation code,
                                                  e.g. SDE_edit/edit_loader.py, writes: one file per setting,
                                                  beside <image id>_unedited.png)

Edit types: action, alter_parts, background, color, object_addition, object_replacement,
position_replacement, positional_addition, shape, size, style, texture, viewpoint. Each
(image, edit type, target value) becomes one item (an output per setting of the generation code is an
edit named ``<method>@<setting>``); its target text and instruction are written here
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
    edit_entry,
    find_image,
    find_inside,
    image_files,
    inside,
    manifest_path,
    method_folders,
    real_folder,
    with_article,
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
    a_cls = with_article(cls)
    if edit_type == "object_addition":
        return f"a photo of {a_cls} and {with_article(value)}", f"add {with_article(value)}"
    if edit_type == "positional_addition":
        thing, relation = _positional(value)
        return (f"a photo of {with_article(thing)} {relation} {a_cls}",
                f"add {with_article(thing)} {relation} the {cls}")
    if edit_type in ("size", "color", "texture", "shape"):
        verb = {"size": "make the {c} {v}", "color": "make the {c} {v}", "texture": "give the {c} a {v} texture",
                "shape": "change the shape of the {c} to {v}"}[edit_type]
        return f"a photo of {with_article(f'{value} {cls}')}", verb.format(c=cls, v=value)
    if edit_type == "alter_parts":
        part = value[4:] if value.lower().startswith("add ") else value
        return f"a photo of {a_cls} with {part}", f"{value} to the {cls}"
    if edit_type == "viewpoint":
        return f"a photo of {a_cls} seen from the {value}", f"show the {cls} from the {value}"
    if edit_type == "style":
        return f"a picture of {a_cls} in the style of {value}", f"turn the picture into {value}"
    if edit_type == "object_replacement":
        replaced = source_value or cls
        return f"a photo of {with_article(value)}", f"replace the {replaced} with {with_article(value)}"
    if edit_type == "action":
        return f"a photo of {a_cls} {_gerund(value)}", f"make the {cls} {value}"
    if edit_type == "background":
        return (f"a photo of {a_cls} with {with_article(value)} in the background",
                f"change the background to {with_article(value)}")
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
    data = _read_json(inside(root, object_json, "object.json"), "EditVal object.json")
    if not isinstance(data, dict):
        raise InputError(f"EditVal {root / object_json}: expected an object of class -> image id -> edit type")
    coco = real_folder(coco_dir if coco_dir else root / "images", "EditVal COCO image folder")
    out = manifest_path(out, root, methods, "EditVal method folder", "editval", also=[coco])
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
            "source_text": f"a photo of {with_article(name)}", "instruction": instruction, "edits": [],
            "meta": {"benchmark": "editval", "edit_type": edit_type, "class": cls, "image_id": image_id,
                     "from": source_value, "to": value}}
        siblings = data[cls][image_id][edit_type]["to"]
        for method, folder in folders:
            found = _outputs(method, folder, edit_type, image_id, value, siblings, unmatched)
            if not found:
                unmatched.add(f"{method}: no output", f"{edit_type}/{image_id}/{value}.png")
            item["edits"] += [edit for name, path in found if (edit := edit_entry(path, out, name, unmatched))]
        if not item["edits"]:
            unmatched.add("edits with no output from any method (not written)", item_id)
            continue
        yield item


def _outputs(method: str, folder: Path, edit_type: str, image_id: str, value: str, siblings: list[Any],
             unmatched: Unmatched) -> list[tuple[str, Path]]:
    """A method's outputs for one edit, as (edit name, file): the README's ``<type>/<id>/<to>.png``, else the
    files EditVal's generation code writes into that folder, ``<id>_<type>_<to>_<setting>....png``, one edit
    per setting, named ``<method>@<setting>`` (e.g. SDEdit's noise strength: ``sde_edit@0.5``)."""
    found = find_inside(folder, f"{edit_type}/{image_id}/{value}", f"{method} output", unmatched)
    if found is not None:
        return [(method, found)]
    try:
        where = inside(folder, f"{edit_type}/{image_id}", f"{method} output")
    except InputError as exc:
        unmatched.add(f"{method} output: paths refused", str(exc))
        return []
    if not where.is_dir():
        return []
    others = [str(v).strip() for v in siblings if isinstance(v, str) and str(v).strip() != value]
    outputs = []
    for file in image_files(where):
        setting = _generated_setting(file.stem, f"{image_id}_{edit_type}_", value, others)
        if setting is not None:
            outputs.append((f"{method}@{setting}" if setting else method, file))
    return outputs


def _generated_setting(stem: str, prefix: str, value: str, others: list[str]) -> str | None:
    """The settings part of a generation-code file name for ``value`` ("" when none), or None when the file
    belongs to another value (the longest value the name starts with wins: ``cup`` vs ``cup holder``)."""
    if not stem.startswith(prefix):
        return None
    rest = stem[len(prefix):]

    def match(candidate: str) -> str | None:
        for spelling in dict.fromkeys((candidate, candidate.replace(" ", "_"))):
            if rest == spelling or rest.startswith(spelling + "_"):
                return rest[len(spelling):].strip("_")
        return None

    setting = match(value)
    if setting is None or any(len(other) > len(value) and match(other) is not None for other in others):
        return None
    return setting
