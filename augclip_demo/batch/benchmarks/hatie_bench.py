"""HATIE's own benchmark files -> a manifest, and a manifest item -> the :class:`HatieQuery` it scores with.

The benchmark (hatie-notes.md, "The benchmark's own files") gives a query pickle (original image id ->
list of queries), the original images (``ID.jpg``), a pickle of the source objects' masks (a list of
``{"image": id, "editable_objs": {object id: {"mask": HxW, "bbox": [x0, y0, x1, y1]}}}``) and, per
model, a folder of outputs named ``PREFIX_{query id}.EXT``. :func:`write_hatie_manifest` turns them
into a manifest: one item per query, one edit per model that has an output, each item's type,
instruction and captions, and the benchmark's source masks written as PNG files next to the
manifest. Scoring such an item uses those masks for the source and segments only the edits, as
the published code does: :func:`hatie_query` reads an item's ``meta.hatie`` back, its mask files through
the manifest's own path check.

Pickles can run code when loaded. They are read here only from files the operator names on the
command line or in Python, through :class:`_RestrictedUnpickler`, which admits plain Python values
and numpy arrays and refuses everything else; the web app never reads them.
"""

from __future__ import annotations

import io
import pickle
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from ...errors import InputError
from ...hatie.hatie_score import HatieQuery
from ..manifest import ManifestItem, relative_inside, resolve_inside, write_manifest

#: The benchmark's query types -> our edit types.
_QUERY_TYPES = {"obj_add": "add", "obj_rep": "replace", "obj_remove": "remove", "obj_resize": "resize",
               "attr_chg": "attribute", "bg_chg": "background", "style_chg": "style"}
_OUTPUT_EXTENSIONS = (".png", ".jpg", ".jpeg", ".webp", ".bmp")
#: What a benchmark pickle may hold besides plain values: numpy arrays, their dtypes and scalars.
_ALLOWED = {("numpy", "ndarray"), ("numpy", "dtype"), ("numpy.core.multiarray", "_reconstruct"),
            ("numpy._core.multiarray", "_reconstruct"), ("numpy.core.multiarray", "scalar"),
            ("numpy._core.multiarray", "scalar"), ("builtins", "set"), ("builtins", "frozenset")}


class _RefusedPickle(pickle.UnpicklingError):
    """A pickle asked for something other than plain values and numpy arrays."""


class _RestrictedUnpickler(pickle.Unpickler):
    """Unpickles plain values (dict, list, tuple, str, numbers, bool, None, sets) and numpy arrays only."""

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in _ALLOWED or (module == "numpy.dtypes" and name.endswith("DType")):
            return super().find_class(module, name)
        raise _RefusedPickle(f"refused to load {module}.{name}: a HATIE benchmark file holds only plain "
                                     "values and numpy arrays")


def load_benchmark_pickle(path: str | Path, what: str) -> Any:
    """A benchmark pickle read with :class:`_RestrictedUnpickler`; a clear error for anything else."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{what}: {path} is not a file")
    try:
        return _RestrictedUnpickler(io.BytesIO(path.read_bytes())).load()
    except _RefusedPickle as exc:
        raise InputError(f"{what} {path}: {exc}") from None
    except Exception as exc:  # truncated or not a pickle at all
        raise InputError(f"{what} {path}: not a readable pickle ({type(exc).__name__}: {exc})") from None


def _name(value: Any) -> str | None:
    """A class name from ``[object id, name]`` or a plain name."""
    if isinstance(value, (list, tuple)):
        return str(value[1]) if len(value) > 1 else None
    return None if value is None else str(value)


def _object_id(value: Any) -> Any:
    return value[0] if isinstance(value, (list, tuple)) and value else None


@dataclass
class BenchmarkSet:
    """What :func:`write_hatie_manifest` wrote."""

    manifest: Path
    items: int
    edits: int
    missing: dict[str, int]
    masks: int


def _masks_by_image(masks: Any, path: Path) -> dict[str, dict[Any, dict[str, Any]]]:
    if not isinstance(masks, list):
        raise InputError(f"mask file {path}: expected a list of {{'image', 'editable_objs'}} entries, got "
                         f"{type(masks).__name__}")
    out = {}
    for i, entry in enumerate(masks):
        if not isinstance(entry, dict) or "image" not in entry or not isinstance(entry.get("editable_objs"), dict):
            raise InputError(f"mask file {path}: entry {i} lacks 'image' or an 'editable_objs' dict")
        out[str(entry["image"])] = entry["editable_objs"]
    return out


def _find_output(folders: Sequence[tuple[str, Path, str]], qid: Any) -> list[tuple[str, Path]]:
    found = []
    for model, folder, prefix in folders:
        for ext in _OUTPUT_EXTENSIONS:
            candidate = folder / f"{prefix}_{qid}{ext}"
            if candidate.is_file():
                found.append((model, candidate))
                break
    return found


def _query_fields(kind: str, query: Mapping[str, Any], objects: Mapping[Any, Any]) -> tuple[dict[str, Any], dict]:
    """(the item's ``meta.hatie`` fields, object name -> mask array) of one query."""
    fields: dict[str, Any] = {"query_id": str(query["id"]), "type": kind}
    masks: dict[str, np.ndarray] = {}

    def mask_of(obj_id: Any) -> np.ndarray | None:
        entry = objects.get(obj_id, objects.get(str(obj_id)))
        return None if entry is None else np.asarray(entry["mask"]).astype(bool)

    if kind == "add":
        fields.update(target=_name(query.get("target")), anchor=_name(query.get("anchor")),
                      location=query.get("location"))
    elif kind == "replace":
        fields.update(target=_name(query.get("original")), new=_name(query.get("target")))
        masks[fields["target"]] = mask_of(_object_id(query.get("original")))
    elif kind in ("remove", "resize", "attribute"):
        fields["target"] = _name(query.get("target"))
        masks[fields["target"]] = mask_of(_object_id(query.get("target")))
        if kind == "attribute":
            fields["after"] = query.get("after")
        if kind == "resize":
            fields["subtype"] = query.get("subtype")
    else:  # background / style: the wanted scene is the query's target
        fields["target_text"] = _name(query.get("target"))
        if kind == "background":
            # the published code pairs the image's mask entries, in order, with the query's editable objects
            names = [_name(o) for o in query.get("editable_objs") or []]
            fields["foreground"] = names
            for name, entry in zip(names, objects.values()):
                masks[name] = np.asarray(entry["mask"]).astype(bool)
    return fields, {k: v for k, v in masks.items() if k and v is not None}


def write_hatie_manifest(queries_path: str | Path, originals: str | Path, masks_path: str | Path,
                         outputs: Iterable[tuple[str, str | Path, str]], out: str | Path, *,
                         dataset: str = "hatie") -> BenchmarkSet:
    """A manifest of HATIE's benchmark: ``outputs`` are (model name, folder, file prefix) triples."""
    queries_path, originals, masks_path, out = Path(queries_path), Path(originals), Path(masks_path), Path(out)
    queries = load_benchmark_pickle(queries_path, "query file")
    if not isinstance(queries, dict):
        raise InputError(f"query file {queries_path}: expected a dict of image id -> list of queries, got "
                         f"{type(queries).__name__}")
    by_image = _masks_by_image(load_benchmark_pickle(masks_path, "mask file"), masks_path)
    folders = [(model, Path(folder), prefix) for model, folder, prefix in outputs]
    for _, folder, _ in folders:
        if not folder.is_dir():
            raise InputError(f"outputs folder {folder} does not exist")
    root = out.parent
    mask_dir = root / "masks"
    lines, missing, written, n_edits = [], {m: 0 for m, _, _ in folders}, set(), 0
    for image_id, image_queries in queries.items():
        source = originals / f"{image_id}.jpg"
        for index, query in enumerate(image_queries or []):
            if not isinstance(query, dict) or "type" not in query or "id" not in query:
                raise InputError(f"query file {queries_path}: query {index} of image {image_id} lacks 'type' or 'id'")
            kind = _QUERY_TYPES.get(str(query["type"]))
            if kind is None:
                raise InputError(f"query file {queries_path}: unknown query type {query['type']!r} (query "
                                 f"{query['id']}); known: {', '.join(_QUERY_TYPES)}")
            found = _find_output(folders, query["id"])
            for model in {m for m, _, _ in folders} - {m for m, _ in found}:
                missing[model] += 1
            if not found:
                continue
            if not source.is_file():
                raise InputError(f"original image {source} (image {image_id}) is missing")
            fields, masks = _query_fields(kind, query, by_image.get(str(image_id), {}))
            fields["masks"] = {}
            for name, mask in masks.items():
                rel = f"masks/{image_id}_{_safe(name)}.png"
                if rel not in written:
                    mask_dir.mkdir(parents=True, exist_ok=True)
                    Image.fromarray(mask.astype(np.uint8) * 255).save(root / rel)
                    written.add(rel)
                fields["masks"][name] = rel
            n_edits += len(found)
            line = {"id": f"q{query['id']}", "source": relative_inside(source, root, "original image"),
                    "target_text": query.get("target_caption") or query.get("instruction") or "",
                    "source_text": query.get("original_caption"), "instruction": query.get("instruction"),
                    "edit_type": kind, "dataset": dataset,
                    "edits": [{"path": relative_inside(p, root, f"{m} output"), "name": m} for m, p in found],
                    "meta": {"hatie": fields}}
            lines.append({k: v for k, v in line.items() if v is not None})
    if not lines:
        raise InputError("no query has an output in the given folders (files are named PREFIX_{query id}.EXT)")
    write_manifest(lines, out)
    return BenchmarkSet(out, len(lines), n_edits, missing, len(written))


def _safe(name: str) -> str:
    return "".join(ch if ch.isalnum() else "-" for ch in name)[:60] or "object"


def hatie_query(item: ManifestItem) -> HatieQuery | None:
    """The benchmark query of a manifest item (its ``meta.hatie``) with the source masks read, or None.

    Each mask path goes through :func:`~..manifest.resolve_inside`, as every other file a manifest names:
    a path outside the manifest's folder is refused with the field that names it."""
    meta = item.meta.get("hatie") if isinstance(item.meta, dict) else None
    if not isinstance(meta, dict):
        return None
    named = meta.get("masks") or {}
    if not isinstance(named, dict):
        raise InputError("meta.hatie.masks must be an object (object name -> mask path relative to the manifest's "
                         f"folder), got {type(named).__name__}")
    masks = {}
    for name, rel in named.items():
        what = f"meta.hatie.masks[{str(name)!r}]"
        if not isinstance(rel, str):
            raise InputError(f"{what} must be a path relative to the manifest's folder, got {type(rel).__name__}")
        path = resolve_inside(item.root, rel, what)
        try:
            with Image.open(path) as image:
                masks[str(name)] = np.asarray(image.convert("L")) > 127
        except (OSError, SyntaxError, ValueError, Image.DecompressionBombError) as exc:  # Pillow's kinds of bad file
            raise InputError(f"{what} {rel.strip()!r} cannot be read as an image: {exc}") from None
    return HatieQuery(query_id=meta.get("query_id"), target=meta.get("target"), new=meta.get("new"),
                      anchor=meta.get("anchor"), location=meta.get("location"), after=meta.get("after"),
                      subtype=meta.get("subtype"), foreground=_foreground(meta.get("foreground")),
                      target_text=meta.get("target_text"), source_masks=masks)


def _foreground(value: object) -> tuple[str, ...]:
    """``meta.hatie.foreground``: a list of object names (absent: none)."""
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(name, str) for name in value):
        raise InputError(f"meta.hatie.foreground must be a list of object names, got {value!r:.80}")
    return tuple(value)
