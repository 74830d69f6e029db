"""Batch manifests: one JSON object per line describing a source image, a target text and its edits.

Format (JSONL, UTF-8; blank lines are ignored)::

    {"id": "cat-hat",                                  # unique in the manifest (string or integer)
     "source": "originals/cat.png",                    # path relative to the manifest's folder
     "target_text": "a photo of a cat wearing a hat",
     "source_text": "a photo of a cat",                # optional (CLIPdir needs it)
     "instruction": "put a hat on the cat",            # optional (BPM needs it)
     "parse": {"o2": "hat", "position_state": "up"},   # optional: corrections of the instruction's parse
     "edit_type": "add",                               # optional: HATIE's edit type (else from the instruction)
     "dataset": "tedbench",                            # optional; groups the protocol tables
     "edits": [{"path": "imagic/cat-hat.png", "name": "imagic", "role": "gt"},
               {"path": "noise/cat.png", "name": "noise", "role": "ep"}],
     "human": {"preferred": 0} or {"scores": [4.5, 2.0]},            # optional
     "attributes": {"source": [...], "target": [...]} or "attrs/cat-hat.json",  # optional
     "ground_truth": "gt/cat-hat.png",                 # optional: a target image (MagicBrush): L1 / L2 / CLIP-I to it
     "edit_mask": "masks/cat-hat.png",                 # optional: white = edit region (PIE-Bench): PSNR / MSE / SSIM outside
     "object_masks": {"source": {"cat": "masks/cat.png"},              # optional: named objects' masks, the
                      "edits": [{"cat": "masks/imagic-cat.png"}, null]},  # source's and each edit's (or null)
     "output_caption": "a cat in a red hat",           # optional: a caption of the wanted result: CLIP-T to it
     "meta": {...}}                                    # optional, free-form, copied to the results

Every path must stay inside the manifest's folder: absolute paths, ``..`` components and symlinks
that resolve outside are refused. :func:`scan_manifest` checks every line and reports every
problem at once (:class:`~augclip_demo.errors.ManifestError`); nothing is run on a bad manifest.

``object_masks`` gives BPM (``--bpm-regions masks``) and HATIE their regions instead of a detector and a
segmenter: ``source`` maps object names to mask images of the source, ``edits`` holds one such object (or
null: not given) per edit, in the edits' order (docs/bpm.md, "Given masks").

``parse`` corrects BPM's parse of the instruction field by field, as the app's fields and the CLI's
``--o1/--o2/--size-state/--position-state/--reference`` do: any of ``o1``, ``o2``, ``size_state``,
``position_state``, ``reference`` (a string, or null / "None" for no object); the fields it leaves
out keep the parsed value. Without an instruction (or when the parser refuses it) ``o1`` / ``o2``
give the whole parse.
"""

from __future__ import annotations

import difflib
import json
import math
import os
import re
import stat
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from ..attributes.base import Attributes
from ..errors import InputError, InstructionParseError, ManifestError
from ..instructions.edit_types import check_edit_type
from ..io import MAX_JSON_DEPTH, json_depth

ROLES: tuple[str, ...] = ("gt", "ep", "em", "candidate")
_ITEM_KEYS = ("id", "source", "target_text", "source_text", "instruction", "parse", "dataset", "edits", "human",
             "attributes", "ground_truth", "edit_mask", "output_caption", "meta", "edit_type", "object_masks")
_OBJECT_MASK_KEYS = ("source", "edits")
_EDIT_KEYS = ("path", "name", "role")
_HUMAN_KEYS = ("preferred", "scores")


@dataclass(frozen=True)
class EditSpec:
    """One edited image of an item: its path as written, the editing model's name, and its role."""

    path: str
    name: str
    role: str
    resolved: Path


@dataclass(frozen=True)
class HumanJudgment:
    """Human data for an item: the 2AFC choice (index into edits) and/or one score per edit."""

    preferred: int | None = None
    scores: tuple[float | None, ...] | None = None

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {}
        if self.preferred is not None:
            data["preferred"] = self.preferred
        if self.scores is not None:
            data["scores"] = list(self.scores)
        return data


@dataclass
class ManifestItem:
    id: str
    line: int
    source: str
    source_path: Path
    target_text: str
    edits: list[EditSpec]
    source_text: str | None = None
    instruction: str | None = None
    parse: dict[str, str | None] | None = None  # corrections of the instruction's parse (see the module doc)
    dataset: str | None = None
    human: HumanJudgment | None = None
    attributes: Attributes | None = None
    attributes_file: str | None = None
    meta: Any = None
    ground_truth: str | None = None  # as written; ground_truth_path resolved
    ground_truth_path: Path | None = None
    edit_mask: str | None = None
    edit_mask_path: Path | None = None
    output_caption: str | None = None
    edit_type: str | None = None  # HATIE's edit type when the manifest gives it
    #: ``{"source": {name: path}, "edits": [{name: path} or None per edit]}`` as written (paths checked);
    #: object_mask_paths: the same with each path resolved
    object_masks: dict[str, Any] | None = None
    object_mask_paths: dict[str, Any] | None = None

    @property
    def root(self) -> Path:
        """The manifest's folder: ``source_path`` is it joined with the parts of ``source``."""
        return self.source_path.parents[len(_relative_parts(self.source, self.source_path, "source")) - 1]

    def image_paths(self) -> list[Path]:
        """The images to encode: the source, the edits, then the ground truth when there is one."""
        extra = [self.ground_truth_path] if self.ground_truth_path is not None else []
        return [self.source_path] + [edit.resolved for edit in self.edits] + extra

    def files(self) -> list[Path]:
        """Every file the item reads: its images, then its attribute file, edit mask and object masks."""
        masks = self.object_mask_paths or {}
        named = [*(masks.get("source") or {}).values(), *(p for edit in masks.get("edits") or [] if edit
                                                        for p in edit.values())]
        extra = [self.root / self.attributes_file] if self.attributes_file else []
        extra += [self.edit_mask_path] if self.edit_mask_path is not None else []
        return list(dict.fromkeys([*self.image_paths(), *extra, *(Path(p) for p in named)]))

    def labelled_images(self) -> list[tuple[str, Path, str]]:
        """(label in error messages, resolved path, path as written) of each image, in :meth:`image_paths` order."""
        labelled = [("source", self.source_path, self.source)] + [
            (f"edits[{i}] ({edit.name})", edit.resolved, edit.path) for i, edit in enumerate(self.edits)]
        if self.ground_truth_path is not None:
            labelled.append(("ground_truth", self.ground_truth_path, self.ground_truth or ""))
        return labelled

    def to_dict(self) -> dict[str, Any]:
        """The manifest line for this item (paths as written, relative to the manifest)."""
        data: dict[str, Any] = {"id": self.id, "source": self.source, "target_text": self.target_text}
        for key in ("source_text", "instruction", "dataset"):
            if getattr(self, key):
                data[key] = getattr(self, key)
        if self.parse:
            data["parse"] = dict(self.parse)
        data["edits"] = [{"path": e.path, "name": e.name, "role": e.role} for e in self.edits]
        if self.human is not None:
            data["human"] = self.human.to_dict()
        if self.attributes_file:
            data["attributes"] = self.attributes_file
        elif self.attributes is not None:
            data["attributes"] = {"source": list(self.attributes.source), "target": list(self.attributes.target)}
        for key in ("ground_truth", "edit_mask", "output_caption"):
            if getattr(self, key):
                data[key] = getattr(self, key)
        if self.meta is not None:
            data["meta"] = self.meta
        if self.edit_type:
            data["edit_type"] = self.edit_type
        if self.object_masks is not None:
            data["object_masks"] = self.object_masks
        return data


@dataclass
class ManifestScan:
    """Result of checking a whole manifest: the items that parsed and every problem found."""

    path: Path
    items: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


# ---------------------------------------------------------------------------------------------- paths
def is_absolute_like(text: str) -> bool:
    """True for POSIX absolute paths, Windows drive or UNC paths (refused on every platform)."""
    return text.startswith(("/", "\\")) or bool(re.match(r"^[A-Za-z]:", text))


_CONTROL_CHARACTER = re.compile(r"[\x00-\x1f]")  # compiled once: every path of a manifest is checked, twice


def _relative_parts(relative: str, root: Path, what: str) -> tuple[str, ...]:
    if not isinstance(relative, str) or not relative.strip():
        raise InputError(f"{what} is empty")
    text = relative.strip()
    if _CONTROL_CHARACTER.search(text):
        raise InputError(f"{what} {text!r} contains a control character (such as a NUL byte); file names cannot")
    if is_absolute_like(text):
        raise InputError(f"{what} {text!r} is absolute; write it relative to the manifest's folder ({root})")
    parts = tuple(p for p in text.replace("\\", "/").split("/") if p and p != ".")
    if ".." in parts:
        raise InputError(f"{what} {text!r} contains '..'; paths must stay inside the manifest's folder ({root})")
    if not parts:
        raise InputError(f"{what} {text!r} names the manifest's folder itself, not a file")
    return parts


def _outside(real: Path, root: Path) -> bool:
    return real != root and root not in real.parents


def resolve_inside(root: Path, relative: str, what: str = "path") -> Path:
    """``root / relative`` after checking it stays inside ``root`` (a resolved folder).

    Raises :class:`InputError` for an empty, absolute or ``..`` path, and for a path whose real
    location (after following symlinks) is outside ``root``. Backslashes count as separators.
    The path is returned as written under ``root`` (symlinks inside the folder are kept, so two
    passes over a manifest name every file the same way).
    """
    parts = _relative_parts(relative, root, what)
    candidate = root.joinpath(*parts)
    real = Path(os.path.realpath(candidate))
    if _outside(real, root):
        raise InputError(f"{what} {relative.strip()!r} is a symlink that points outside the manifest's folder (to "
                         f"{real}); copy the file into the folder instead")
    return candidate


class _PathChecker:
    """Path checks for one pass over a manifest, with the folders' real paths cached.

    A dataset has many files in few folders: caching each folder's real path leaves one ``lstat``
    per file. ``check_files=False`` only parses paths (no file system access): the runner's second
    pass, after the first has checked everything.
    """

    def __init__(self, root: Path, check_files: bool = True):
        self.root = root
        self.check_files = check_files
        self._dirs: dict[tuple[str, ...], Path] = {}
        self.attributes: dict[str, Attributes | str] = {}

    def file(self, relative: str, what: str) -> Path:
        parts = _relative_parts(relative, self.root, what)
        candidate = self.root.joinpath(*parts)
        if not self.check_files:
            return candidate
        parent = self._dirs.get(parts[:-1])
        if parent is None:
            parent = Path(os.path.realpath(self.root.joinpath(*parts[:-1])))
            if len(self._dirs) < 65536:
                self._dirs[parts[:-1]] = parent
        text = relative.strip()
        if _outside(parent, self.root):
            raise InputError(f"{what} {text!r} is under a symlink that points outside the manifest's folder (to "
                             f"{parent}); copy the files into the folder instead")
        try:
            info = os.lstat(parent / parts[-1])
        except FileNotFoundError:
            raise InputError(f"{what} {text!r}: file not found ({candidate})") from None
        except OSError as exc:
            raise InputError(f"{what} {text!r}: cannot be read ({exc.strerror})") from None
        if stat.S_ISLNK(info.st_mode):
            real = Path(os.path.realpath(parent / parts[-1]))
            if _outside(real, self.root):
                raise InputError(f"{what} {text!r} is a symlink that points outside the manifest's folder (to "
                                 f"{real}); copy the file into the folder instead")
            if not real.exists():
                raise InputError(f"{what} {text!r}: file not found (a broken symlink to {real})")
            info = os.stat(real)
        if stat.S_ISDIR(info.st_mode):
            raise InputError(f"{what} {text!r} is a folder, not a file")
        return candidate


def relative_inside(path: Path, root: Path, what: str = "file") -> str:
    """``path`` written relative to ``root`` with forward slashes; an error if it is not inside."""
    real_root = Path(os.path.realpath(root))
    real = Path(os.path.realpath(path))
    if real != real_root and real_root not in real.parents:
        raise InputError(f"{what} {path} is outside the manifest's folder {real_root}; write the manifest into a "
                         "folder that contains every image (e.g. the dataset's root)")
    absolute = Path(os.path.abspath(path))
    try:
        return absolute.relative_to(Path(os.path.abspath(root))).as_posix()
    except ValueError:  # root given through a symlink: fall back to the resolved locations
        return real.relative_to(real_root).as_posix()


# ---------------------------------------------------------------------------------------------- parsing
def _unknown_keys(data: dict[str, Any], allowed: Iterable[str], where: str) -> list[str]:
    problems = []
    for key in data:
        if key not in allowed:
            close = difflib.get_close_matches(str(key), list(allowed), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else f" (allowed: {', '.join(allowed)})"
            problems.append(f"{where}unknown key {key!r}{hint}")
    return problems


def _optional_text(data: dict[str, Any], key: str, problems: list[str]) -> str | None:
    value = data.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        problems.append(f"{key} must be a string, got {type(value).__name__}")
        return None
    return value.strip() or None


def _parse_corrections(value: Any, problems: list[str]) -> dict[str, str | None] | None:
    """The item's ``parse`` object: known fields only, strings or null, valid states."""
    from ..instructions import CORRECTABLE_FIELDS, POSITION_STATES, SIZE_STATES

    if value is None:
        return None
    if not isinstance(value, dict):
        problems.append(f"parse must be an object with any of {', '.join(CORRECTABLE_FIELDS)}, "
                        f"got {type(value).__name__}")
        return None
    found = len(problems)
    problems.extend(f"parse.{key} is not a parse field (use {', '.join(CORRECTABLE_FIELDS)})"
                    for key in value if key not in CORRECTABLE_FIELDS)
    out: dict[str, str | None] = {}
    for key in CORRECTABLE_FIELDS:
        if key not in value:
            continue
        field_value = value[key]
        if field_value is not None and not isinstance(field_value, str):
            problems.append(f"parse.{key} must be a string or null, got {type(field_value).__name__}")
            continue
        states = {"size_state": SIZE_STATES, "position_state": POSITION_STATES}.get(key)
        if states is not None:
            if field_value is None or field_value.strip().lower() not in states:
                problems.append(f"parse.{key} must be one of {', '.join(states)}, got {field_value!r}")
                continue
            field_value = field_value.strip().lower()
        elif field_value is None:
            field_value = "None"  # null means "no object", as the app's and the CLI's "None"
        out[key] = field_value
    return out if len(problems) == found and out else None


def _parse_attributes(value: Any, checker: _PathChecker, problems: list[str]) -> tuple[Attributes | None, str | None]:
    if value is None:
        return None, None
    if isinstance(value, str):
        cached = checker.attributes.get(value)
        if cached is None:
            try:
                path = checker.file(value, "attributes file")
                cached = Attributes.load(path).validate()
            except InputError as exc:
                cached = str(exc)
            if len(checker.attributes) < 4096:
                checker.attributes[value] = cached
        if isinstance(cached, str):
            problems.append(cached)
            return None, value
        return cached, value
    if isinstance(value, dict):
        if "source_attributes" in value or "target_attributes" in value:
            data = value
        else:
            bad = _unknown_keys(value, ("source", "target", "provenance"), "attributes: ")
            if bad:
                problems.extend(bad)
                return None, None
            data = {"source_attributes": value.get("source"), "target_attributes": value.get("target"),
                    "provenance": value.get("provenance")}
        try:
            return Attributes.from_dict(data, origin="attributes").validate(), None
        except InputError as exc:
            problems.append(str(exc))
            return None, None
    problems.append("attributes must be an object {\"source\": [...], \"target\": [...]} or a path to a JSON file, "
                    f"got {type(value).__name__}")
    return None, None


def _parse_edits(value: Any, checker: _PathChecker, problems: list[str]) -> list[EditSpec]:
    if not isinstance(value, list) or not value:
        problems.append("edits must be a non-empty list of {\"path\": ..., \"name\": ..., \"role\": ...}")
        return []
    edits: list[EditSpec] = []
    seen_roles: dict[str, int] = {}
    for index, entry in enumerate(value):
        where = f"edits[{index}]"
        if isinstance(entry, str):  # shorthand: just the path
            entry = {"path": entry}
        if not isinstance(entry, dict):
            problems.append(f"{where} must be an object with a path, got {type(entry).__name__}")
            continue
        bad = _unknown_keys(entry, _EDIT_KEYS, f"{where}: ")
        problems.extend(bad)
        role = entry.get("role", "candidate")
        if role not in ROLES:
            problems.append(f"{where}.role {role!r} is not one of {', '.join(ROLES)}")
            continue
        if role != "candidate":
            if role in seen_roles:
                problems.append(f"{where}: a second edit with role {role!r} (first: edits[{seen_roles[role]}]); "
                                "an item has at most one gt, one ep and one em")
                continue
            seen_roles[role] = index
        path_text = entry.get("path")
        if not isinstance(path_text, str):
            problems.append(f"{where}.path is missing or not a string")
            continue
        try:
            resolved = checker.file(path_text, f"{where}.path")
        except InputError as exc:
            problems.append(str(exc))
            continue
        name = entry.get("name")
        if name is not None and not isinstance(name, str):
            problems.append(f"{where}.name must be a string, got {type(name).__name__}")
            continue
        if not name or not name.strip():
            name = role if role != "candidate" else PurePosixPath(path_text.replace("\\", "/")).stem
        if not bad:
            edits.append(EditSpec(path=path_text.strip(), name=name.strip(), role=role, resolved=resolved))
    return edits


def _parse_human(value: Any, n_edits: int, problems: list[str]) -> HumanJudgment | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        problems.append(f"human must be an object with 'preferred' and/or 'scores', got {type(value).__name__}")
        return None
    bad = _unknown_keys(value, _HUMAN_KEYS, "human: ")
    if bad:
        problems.extend(bad)
        return None
    if "preferred" not in value and "scores" not in value:
        problems.append("human needs 'preferred' (index of the edit people chose) or 'scores' (one per edit)")
        return None
    preferred = value.get("preferred")
    if preferred is not None and (isinstance(preferred, bool) or not isinstance(preferred, int)
                                  or not 0 <= preferred < n_edits):
        problems.append(f"human.preferred must be an edit index from 0 to {n_edits - 1}, got {preferred!r}")
        return None
    scores = value.get("scores")
    parsed_scores: tuple[float | None, ...] | None = None
    if scores is not None:
        if not isinstance(scores, list) or len(scores) != n_edits:
            problems.append(f"human.scores must be a list with one number (or null) per edit ({n_edits}), got {scores!r}")
            return None
        out: list[float | None] = []
        for i, score in enumerate(scores):
            if score is None:
                out.append(None)
            elif isinstance(score, bool) or not isinstance(score, (int, float)) or not math.isfinite(score):
                problems.append(f"human.scores[{i}] must be a finite number or null, got {score!r}")
                return None
            else:
                out.append(float(score))
        parsed_scores = tuple(out)
    return HumanJudgment(preferred=preferred, scores=parsed_scores)


def _parse_item(data: Any, line: int, root: Path,
               checker: _PathChecker | None = None) -> tuple[ManifestItem | None, list[str]]:
    """One manifest line as an item, or the list of problems found on it (all of them)."""
    problems: list[str] = []
    checker = checker or _PathChecker(root)
    if not isinstance(data, dict):
        return None, [f"expected a JSON object, got {type(data).__name__}"]
    problems.extend(_unknown_keys(data, _ITEM_KEYS, ""))
    raw_id = data.get("id")
    if isinstance(raw_id, bool) or not isinstance(raw_id, (str, int)) or not str(raw_id).strip():
        problems.append("id is missing (give every item a unique string id)")
        item_id = ""
    else:
        item_id = str(raw_id).strip()
    raw_source = data.get("source")
    source_path: Path | None = None
    if not isinstance(raw_source, str):
        problems.append("source is missing or not a string (path of the source image)")
    else:
        try:
            source_path = checker.file(raw_source, "source")
        except InputError as exc:
            problems.append(str(exc))
    target = data.get("target_text")
    if not isinstance(target, str) or not target.strip():
        problems.append("target_text is missing or empty")
    texts = {key: _optional_text(data, key, problems) for key in ("source_text", "instruction", "dataset")}
    corrections = _parse_corrections(data.get("parse"), problems)
    edits = _parse_edits(data.get("edits"), checker, problems)
    n_edits = len(data["edits"]) if isinstance(data.get("edits"), list) else 0
    human = _parse_human(data.get("human"), n_edits, problems)
    attributes, attributes_file = _parse_attributes(data.get("attributes"), checker, problems)
    reference_paths: dict[str, tuple[str, Path] | None] = {}
    for key in ("ground_truth", "edit_mask"):
        value = data.get(key)
        reference_paths[key] = None
        if value is None:
            continue
        if not isinstance(value, str):
            problems.append(f"{key} must be a path (a string) relative to the manifest's folder")
            continue
        try:
            reference_paths[key] = (value.strip(), checker.file(value, key))
        except InputError as exc:
            problems.append(str(exc))
    output_caption = _optional_text(data, "output_caption", problems)
    object_masks = _parse_object_masks(data.get("object_masks"), n_edits, checker, problems)
    edit_type = None
    if data.get("edit_type") is not None:
        try:
            edit_type = check_edit_type(data["edit_type"])
        except InstructionParseError as exc:
            problems.append(str(exc))
    if problems:
        return None, problems
    assert source_path is not None and isinstance(raw_source, str) and isinstance(target, str)
    item = ManifestItem(
        id=item_id, line=line, source=raw_source.strip(), source_path=source_path,
        target_text=target.strip(), edits=edits, source_text=texts["source_text"],
        instruction=texts["instruction"], parse=corrections, dataset=texts["dataset"], human=human,
        attributes=attributes, attributes_file=attributes_file, meta=data.get("meta"), edit_type=edit_type,
        ground_truth=(reference_paths["ground_truth"] or (None, None))[0],
        ground_truth_path=(reference_paths["ground_truth"] or (None, None))[1],
        edit_mask=(reference_paths["edit_mask"] or (None, None))[0],
        edit_mask_path=(reference_paths["edit_mask"] or (None, None))[1],
        output_caption=output_caption,
        object_masks=data.get("object_masks") if object_masks is not None else None, object_mask_paths=object_masks,
    )
    return item, []


def _named_mask_paths(value: Any, where: str, checker: _PathChecker, problems: list[str]) -> dict[str, Path] | None:
    """``{object name: mask path}`` of one image, each path checked (None after a problem)."""
    if not isinstance(value, dict):
        problems.append(f"{where} must be an object (object name -> mask path), got {type(value).__name__}")
        return None
    out = {}
    for name, rel in value.items():
        if not isinstance(rel, str) or not str(name).strip():
            problems.append(f"{where}[{name!r}] must be a mask path (a string) under a non-empty object name")
            continue
        try:
            out[str(name)] = checker.file(rel, f"{where}[{name!r}]")
        except InputError as exc:
            problems.append(str(exc))
    return out


def _parse_object_masks(value: Any, n_edits: int, checker: _PathChecker, problems: list[str]) -> dict[str, Any] | None:
    """The item's ``object_masks``: ``source`` (object name -> path) and ``edits`` (one such object or null per
    edit), every path checked; resolved paths, or None when absent or wrong (the problems say why)."""
    if value is None:
        return None
    if not isinstance(value, dict):
        problems.append("object_masks must be an object {\"source\": {name: path}, \"edits\": [{name: path} or "
                        f"null per edit]}}, got {type(value).__name__}")
        return None
    before = len(problems)
    problems.extend(_unknown_keys(value, _OBJECT_MASK_KEYS, "object_masks: "))
    source = _named_mask_paths(value.get("source") or {}, "object_masks.source", checker, problems)
    edits = value.get("edits")
    if edits is None:  # only the source's masks given
        edits = [None] * n_edits
    if not isinstance(edits, list) or len(edits) != n_edits:
        problems.append(f"object_masks.edits must be a list with one entry per edit ({n_edits}; null where an "
                        f"edit's masks are not given), got {edits!r:.80}")
        edits = []
    edit_paths = [None if entry is None else _named_mask_paths(entry, f"object_masks.edits[{i}]", checker, problems)
                  for i, entry in enumerate(edits)]
    if len(problems) > before:
        return None
    return {"source": source, "edits": edit_paths}


# ---------------------------------------------------------------------------------------------- files
def manifest_root(path: str | Path) -> Path:
    return Path(os.path.realpath(Path(path).expanduser().parent))


def _read_lines(path: Path) -> Iterator[tuple[int, str]]:
    if not path.exists():
        raise InputError(f"manifest {path}: file not found")
    if path.is_dir():
        raise InputError(f"manifest {path}: is a folder; give the .jsonl file")
    try:
        with open(path, encoding="utf-8-sig") as handle:
            yield from enumerate(handle, start=1)
    except UnicodeDecodeError as exc:
        raise InputError(f"manifest {path}: not UTF-8 text ({exc}); save it as UTF-8 JSON lines") from None


_UNREADABLE = object()


def iter_manifest(path: str | Path, *, problems: list[str] | None = None,
                  check_files: bool = True, rejected_lines: set[int] | None = None) -> Iterator[ManifestItem]:
    """Stream the valid items of a manifest (one line at a time; memory does not grow with its size).

    With ``problems`` given, bad lines are described there (``line N (id X): ...``) and skipped
    (their numbers are added to ``rejected_lines`` when given); without it the first bad line raises
    :class:`ManifestError`. Repeated ids count as problems. ``check_files=False`` skips the
    file-system checks: for a second pass over a checked manifest, which must then skip the lines
    the first pass rejected (``item.line in rejected_lines``), since only a file check finds those.
    """
    path = Path(path).expanduser()
    root = manifest_root(path)
    seen: dict[str, int] = {}
    checker = _PathChecker(root, check_files)
    for number, line in _read_lines(path):
        if not line.strip():
            continue
        found: list[str] = []
        data: Any = _UNREADABLE
        if json_depth(line) > MAX_JSON_DEPTH:
            found.append(f"JSON nested more than {MAX_JSON_DEPTH} levels deep; an item needs only a few")
        else:
            try:
                data = json.loads(line)
            except json.JSONDecodeError as exc:
                found.append(f"not valid JSON ({exc.msg} at column {exc.colno})")
        item = None
        if data is not _UNREADABLE:  # a line reading `null` is parsed (and refused) like any other value
            item, found = _parse_item(data, number, root, checker)
        item_id = item.id if item else (str(data.get("id")) if isinstance(data, dict) and data.get("id") is not None
                                        else None)
        if item_id is not None and item_id in seen:
            found.append(f"id {item_id!r} repeats the id on line {seen[item_id]}")
        elif item_id is not None:
            seen[item_id] = number
        if found:
            label = f"line {number}" + (f" (id {item_id!r})" if item_id else "")
            messages = [f"{label}: {message}" for message in found]
            if problems is None:
                raise ManifestError(str(path), messages)
            problems.extend(messages)
            if rejected_lines is not None:
                rejected_lines.add(number)
            continue
        assert item is not None
        yield item


def scan_manifest(path: str | Path) -> ManifestScan:
    """Check every line of a manifest; ``scan.problems`` lists everything wrong (empty when valid)."""
    scan = ManifestScan(path=Path(path))
    problems: list[str] = []
    for _ in iter_manifest(path, problems=problems):
        scan.items += 1
    scan.problems = problems
    if scan.items == 0 and not problems:
        problems.append("the manifest has no items (one JSON object per line expected)")
    return scan


def validate_manifest(path: str | Path) -> ManifestScan:
    """:func:`scan_manifest`, raising :class:`ManifestError` with every problem when there is any."""
    scan = scan_manifest(path)
    if scan.problems:
        raise ManifestError(str(path), scan.problems)
    return scan


def load_manifest(path: str | Path) -> list[ManifestItem]:
    """All items of a (small) manifest, validated first. Batch runs stream instead."""
    validate_manifest(path)
    return list(iter_manifest(path, check_files=False))  # the files were just checked


def write_manifest(items: Iterable[ManifestItem | dict[str, Any]], path: str | Path) -> Path:
    """Write items (or plain dicts in the manifest format) as JSONL, then validate the file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8", newline="\n") as handle:
        for item in items:
            data = item.to_dict() if isinstance(item, ManifestItem) else item
            handle.write(json.dumps(data, ensure_ascii=False) + "\n")
    os.replace(tmp, path)
    validate_manifest(path)
    return path
