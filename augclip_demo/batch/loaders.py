"""Turn known benchmark layouts into manifests.

* :func:`load_tedbench` - TEdBench (Imagic's benchmark): ``input_list.json``
  (``[{"img_name": "cat.jpeg", "target_text": "A photo of a cat wearing a hat."}, ...]``),
  the source images in ``originals/``, and one folder per editing method holding
  ``<img_name>-<target text>.png`` (spaces may be underscores; the final period may be missing).
* :func:`load_magicbrush` - MagicBrush's released test split: ``edit_sessions.json``
  (``{"<img_id>": [{"input": ..., "mask": ..., "output": ..., "instruction": ...}, ...]}``),
  ``images/<img_id>/<img_id>-input.png`` / ``-output<k>.png``, optionally
  ``global_descriptions.json`` (``{"<img_id>": {"<file name>": "caption"}}``), and optionally an
  editing method's outputs laid out as MagicBrush's evaluation script expects
  (``<method_dir>/<img_id>/<img_id>_1.png`` for turn 1, ``<img_id>_inde_<k>.png`` for turn k).
* :func:`load_csv_pairs` - any folder of images plus a CSV with one row per edited image.

Each writes a manifest (validated) whose paths are relative to the manifest's folder, so the
manifest must be written in a folder that contains every image (by default the dataset's root).
"""

from __future__ import annotations

import csv
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InputError
from .manifest import relative_inside, write_manifest

IMAGE_EXTENSIONS = (".png", ".jpg", ".jpeg", ".webp", ".bmp", ".gif", ".tif", ".tiff")


@dataclass
class LoaderResult:
    manifest: Path
    n_items: int
    n_edits: int
    warnings: list[str] = field(default_factory=list)  # what could not be matched or was left out
    notes: list[str] = field(default_factory=list)  # what was done, for information (e.g. where masks went)

    def format(self) -> str:
        lines = [f"wrote {self.manifest}: {self.n_items} item(s), {self.n_edits} edited image(s)"]
        lines += [f"note: {n}" for n in self.notes]
        lines += [f"warning: {w}" for w in self.warnings[:20]]
        if len(self.warnings) > 20:
            lines.append(f"... and {len(self.warnings) - 20} more warning(s)")
        return "\n".join(lines)


def normalize_text(text: str) -> str:
    """Lower case, every run of non-alphanumerics -> one space (matches file names to texts)."""
    return re.sub(r"[^a-z0-9]+", " ", text.lower()).strip()


def slug(text: str, limit: int = 60) -> str:
    return normalize_text(text).replace(" ", "_")[:limit] or "item"


def _unique(base: str, used: set[str]) -> str:
    candidate, n = base, 2
    while candidate in used:
        candidate, n = f"{base}-{n}", n + 1
    used.add(candidate)
    return candidate


def _read_json(path: Path, what: str) -> Any:
    if not path.is_file():
        raise InputError(f"{what}: {path} not found")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"{what}: {path} is not valid JSON ({exc})") from None


def _finish(items: list[dict[str, Any]], out: Path, attributes_dir: Path | None, warnings: list[str],
            notes: list[str] | None = None) -> LoaderResult:
    if not items:
        raise InputError("no items found: " + ("; ".join(warnings[:5]) if warnings else "the layout is empty"))
    if attributes_dir is not None:
        found = 0
        for item in items:
            candidate = attributes_dir / f"{item['id']}.json"
            if candidate.is_file():
                item["attributes"] = relative_inside(candidate, out.parent, "attributes file")
                found += 1
        if found < len(items):
            warnings.append(f"{len(items) - found} item(s) have no {attributes_dir}/<id>.json; their attributes come "
                            "from the attribute provider at run time")
    write_manifest(items, out)
    return LoaderResult(manifest=out, n_items=len(items), n_edits=sum(len(i["edits"]) for i in items), warnings=warnings,
                        notes=notes or [])


# ---------------------------------------------------------------------------------------------- TEdBench
def load_tedbench(root: str | Path, out: str | Path | None = None, *, methods: list[str] | None = None,
                  gt_method: str | None = None, dataset: str = "tedbench",
                  attributes_dir: str | Path | None = None) -> LoaderResult:
    """A manifest for TEdBench: one item per (original, target text), one edit per method folder.

    ``methods`` picks method folders (default: every folder except ``originals``); the outputs of
    ``gt_method`` get role ``gt`` (the AugCLIP paper's ground truth test uses Imagic's released
    edits as the well-edited images), the rest role ``candidate``.
    """
    root = Path(root).expanduser()
    out = Path(out).expanduser() if out else root / "manifest.jsonl"
    entries = _read_json(root / "input_list.json", "TEdBench input list")
    if not isinstance(entries, list):
        raise InputError(f"TEdBench input list {root / 'input_list.json'}: expected a list of "
                         '{"img_name": ..., "target_text": ...}')
    originals = root / "originals"
    if not originals.is_dir():
        raise InputError(f"TEdBench: {originals} not found (the folder of source images)")
    notes: list[str] = []
    if methods is None:
        folders = sorted(p.name for p in root.iterdir() if p.is_dir() and p.name != "originals"
                         and not p.name.startswith((".", "_")))
        triplet_folders = [name for name in folders if _is_triplet_folder(root, name)]
        methods = [name for name in folders if name not in triplet_folders]
        if triplet_folders:
            notes.append(f"not method folders: {', '.join(triplet_folders)} (the `triplets` command's ep / em "
                         "images; --methods NAME ... includes a folder by name)")
    for method in methods:
        if not (root / method).is_dir():
            raise InputError(f"TEdBench: method folder {root / method} not found")
    if gt_method is not None and gt_method not in methods:
        raise InputError(f"TEdBench: --gt-method {gt_method!r} is not one of the method folders ({', '.join(methods)})")
    names = sorted({str(e.get("img_name")) for e in entries if isinstance(e, dict)}, key=len, reverse=True)
    outputs: dict[str, dict[tuple[str, str], Path]] = {}
    warnings: list[str] = []
    for method in methods:
        index: dict[tuple[str, str], Path] = {}
        for path in sorted((root / method).iterdir()):
            if path.suffix.lower() not in IMAGE_EXTENSIONS:
                continue
            original = next((n for n in names if path.name.startswith(n + "-")), None)
            if original is None:
                warnings.append(f"{method}/{path.name}: matches no original image name; ignored")
                continue
            index[(original, normalize_text(Path(path.name[len(original) + 1:]).stem))] = path
        outputs[method] = index
    items: list[dict[str, Any]] = []
    used: set[str] = set()
    for number, entry in enumerate(entries, start=1):
        if not isinstance(entry, dict) or not entry.get("img_name") or not entry.get("target_text"):
            warnings.append(f"input_list.json entry {number}: needs img_name and target_text; skipped")
            continue
        img_name, target = str(entry["img_name"]), str(entry["target_text"]).strip()
        source = originals / img_name
        if not source.is_file():
            warnings.append(f"input_list.json entry {number}: {source} not found; skipped")
            continue
        edits = []
        for method in methods:
            found = outputs[method].get((img_name, normalize_text(target)))
            if found is None:
                warnings.append(f"{method}: no output for {img_name} / {target!r}")
                continue
            edits.append({"path": relative_inside(found, out.parent, "edited image"), "name": method,
                          "role": "gt" if method == gt_method else "candidate"})
        if not edits:
            warnings.append(f"{img_name} / {target!r}: no method has an output; skipped")
            continue
        items.append({"id": _unique(f"{Path(img_name).stem}-{slug(target)}", used), "dataset": dataset,
                      "source": relative_inside(source, out.parent, "source image"), "target_text": target,
                      "edits": edits})
    return _finish(items, out, Path(attributes_dir) if attributes_dir else None, warnings, notes)


def _is_triplet_folder(root: Path, name: str) -> bool:
    """Whether ``root/name`` is a folder the ``triplets`` command wrote: ``<stem>_ep`` or ``<stem>_em`` beside
    its manifest ``<stem>.jsonl`` (or beside its ep / em partner folder)."""
    for suffix, partner in (("_ep", "_em"), ("_em", "_ep")):
        if name.endswith(suffix) and len(name) > len(suffix):
            stem = name[: -len(suffix)]
            return (root / f"{stem}.jsonl").is_file() or (root / f"{stem}{partner}").is_dir()
    return False


# ---------------------------------------------------------------------------------------------- MagicBrush
def _find_image(folder: Path, stem: str) -> Path | None:
    for ext in IMAGE_EXTENSIONS:
        if (folder / f"{stem}{ext}").is_file():
            return folder / f"{stem}{ext}"
    return None


def load_magicbrush(root: str | Path, out: str | Path | None = None, *, method_dir: str | Path | None = None,
                    method_name: str | None = None, first_turn_only: bool = False, dataset: str = "magicbrush",
                    attributes_dir: str | Path | None = None) -> LoaderResult:
    """A manifest for MagicBrush: one item per editing turn; the annotated output is the ``gt`` edit.

    Turn k's source is that turn's ``input`` (the previous turn's ground-truth output for k > 1),
    its instruction the turn's instruction; the annotated output is also the item's ``ground_truth``
    (the reference metrics ``l1_gt``, ``l2_gt``, ``clip_i_gt``, ``dino_gt`` compare each edit to it). ``target_text`` is the output's global description
    when ``global_descriptions.json`` has one (a description suits CLIP's text side), else the
    instruction; ``source_text`` is the input's description when present. ``method_dir`` adds an
    editing method's independent (single-turn) outputs as ``candidate`` edits.
    """
    root = Path(root).expanduser()
    out = Path(out).expanduser() if out else root / "manifest.jsonl"
    sessions = _read_json(root / "edit_sessions.json", "MagicBrush edit sessions (test/edit_sessions.json)")
    if not isinstance(sessions, dict):
        raise InputError(f"MagicBrush: {root / 'edit_sessions.json'} should map image ids to lists of turns")
    images = root / "images"
    if not images.is_dir():
        raise InputError(f"MagicBrush: {images} not found (expected images/<img_id>/<img_id>-input.png ...)")
    descriptions: dict[str, Any] = {}
    if (root / "global_descriptions.json").is_file():
        descriptions = _read_json(root / "global_descriptions.json", "MagicBrush global descriptions")
    method = Path(method_dir).expanduser() if method_dir else None
    name = method_name or (method.name if method else None)
    warnings: list[str] = []
    if not descriptions:
        warnings.append("no global_descriptions.json: target_text is the instruction (CLIP-T / CLIPdir then compare "
                        "images with an instruction, not a description)")
    items: list[dict[str, Any]] = []
    used: set[str] = set()
    for img_id, turns in sessions.items():
        if not isinstance(turns, list):
            warnings.append(f"{img_id}: turns should be a list; skipped")
            continue
        for turn, session in enumerate(turns, start=1):
            if first_turn_only and turn > 1:
                break
            if not isinstance(session, dict) or not all(session.get(k) for k in ("input", "output", "instruction")):
                warnings.append(f"{img_id} turn {turn}: needs input, output and instruction; skipped")
                continue
            folder = images / str(img_id)
            source, output = folder / session["input"], folder / session["output"]
            missing = [p for p in (source, output) if not p.is_file()]
            if missing:
                warnings.append(f"{img_id} turn {turn}: {missing[0]} not found; skipped")
                continue
            captions = descriptions.get(str(img_id), {}) if isinstance(descriptions, dict) else {}
            instruction = str(session["instruction"]).strip()
            item: dict[str, Any] = {
                "id": _unique(f"{img_id}-t{turn}", used), "dataset": dataset,
                "source": relative_inside(source, out.parent, "source image"),
                "target_text": str(captions.get(session["output"]) or instruction).strip(),
                "instruction": instruction,
                "edits": [{"path": relative_inside(output, out.parent, "ground-truth image"), "name": "magicbrush",
                           "role": "gt"}],
            }
            item["ground_truth"] = item["edits"][0]["path"]  # the reference metrics (l1_gt, ...) compare to it
            if captions.get(session["input"]):
                item["source_text"] = str(captions[session["input"]]).strip()
            if method is not None:
                stem = f"{img_id}_1" if turn == 1 else f"{img_id}_inde_{turn}"
                found = _find_image(method / str(img_id), stem)
                if found is None:
                    warnings.append(f"{name}: no {method / str(img_id) / stem}.png")
                else:
                    item["edits"].append({"path": relative_inside(found, out.parent, "method output"), "name": name,
                                          "role": "candidate"})
            items.append(item)
    return _finish(items, out, Path(attributes_dir) if attributes_dir else None, warnings)


# ---------------------------------------------------------------------------------------------- CSV
CSV_COLUMNS = ("id", "source", "edit", "target_text", "source_text", "instruction", "name", "role", "human_score",
               "preferred", "dataset", "attributes", "o1", "o2", "size_state", "position_state", "reference")
_PARSE_COLUMNS = ("o1", "o2", "size_state", "position_state", "reference")  # corrections of the parse (manifest "parse")
_TRUE_WORDS = {"1", "true", "yes", "y", "x"}


def load_csv_pairs(csv_path: str | Path, out: str | Path | None = None, *, root: str | Path | None = None,
                   dataset: str | None = None) -> LoaderResult:
    """A manifest from a CSV with one row per edited image (rows sharing an ``id`` form one item).

    Required columns: ``source``, ``edit`` (paths relative to ``root``, default the CSV's folder)
    and ``target_text``. Optional: ``id`` (default: one item per row), ``source_text``,
    ``instruction``, ``name`` (editing model), ``role`` (gt / ep / em / candidate),
    ``human_score`` (per edit), ``preferred`` (1 on the edit people chose), ``dataset``,
    ``attributes`` (path to an attributes JSON file), and the parse corrections ``o1``, ``o2``,
    ``size_state``, ``position_state``, ``reference`` (the manifest's ``parse`` object; empty cells
    keep the parsed value).
    """
    csv_path = Path(csv_path).expanduser()
    if not csv_path.is_file():
        raise InputError(f"CSV {csv_path}: not found")
    base = Path(root).expanduser() if root else csv_path.parent
    out = Path(out).expanduser() if out else csv_path.with_suffix(".jsonl")
    try:
        with open(csv_path, encoding="utf-8-sig", newline="") as handle:
            reader = csv.DictReader(handle)
            columns = [c.strip() for c in (reader.fieldnames or [])]
            rows = [{(k or "").strip(): (v or "").strip() for k, v in row.items()} for row in reader]
    except UnicodeDecodeError as exc:
        raise InputError(f"CSV {csv_path}: not UTF-8 text ({exc})") from None
    missing = [c for c in ("source", "edit", "target_text") if c not in columns]
    if missing:
        raise InputError(f"CSV {csv_path}: missing column(s) {', '.join(missing)}; columns are {', '.join(columns)} "
                         f"(allowed: {', '.join(CSV_COLUMNS)})")
    unknown = [c for c in columns if c not in CSV_COLUMNS]
    if unknown:
        raise InputError(f"CSV {csv_path}: unknown column(s) {', '.join(unknown)} (allowed: {', '.join(CSV_COLUMNS)})")
    grouped: dict[str, list[tuple[int, dict[str, str]]]] = {}
    for number, row in enumerate(rows, start=2):
        key = row.get("id") or f"row{number - 1}"
        grouped.setdefault(key, []).append((number, row))
    problems: list[str] = []
    items: list[dict[str, Any]] = []
    for item_id, group in grouped.items():
        first = group[0][1]
        for field_name in ("source", "target_text", "source_text", "instruction", "dataset", "attributes",
                           *_PARSE_COLUMNS):
            values = {row.get(field_name, "") for _, row in group}
            if len(values) > 1:
                problems.append(f"id {item_id!r}: rows {', '.join(str(n) for n, _ in group)} disagree on {field_name}")
        edits, scores, preferred = [], [], []
        for position, (number, row) in enumerate(group):
            if not row.get("edit"):
                problems.append(f"row {number}: edit is empty")
                continue
            edits.append({"path": _rebase(row["edit"], base, out.parent), "name": row.get("name") or None,
                          "role": row.get("role") or "candidate"})
            score = row.get("human_score", "")
            try:
                scores.append(float(score) if score else None)
            except ValueError:
                problems.append(f"row {number}: human_score {score!r} is not a number")
            if row.get("preferred", "").lower() in _TRUE_WORDS:
                preferred.append(position)
        for edit in edits:
            if edit["name"] is None:
                del edit["name"]
        item: dict[str, Any] = {"id": item_id, "source": _rebase(first["source"], base, out.parent),
                                "target_text": first["target_text"], "edits": edits}
        for field_name in ("source_text", "instruction"):
            if first.get(field_name):
                item[field_name] = first[field_name]
        corrections = {name: first[name] for name in _PARSE_COLUMNS if first.get(name)}
        if corrections:
            item["parse"] = corrections
        if first.get("dataset") or dataset:
            item["dataset"] = first.get("dataset") or dataset
        if first.get("attributes"):
            item["attributes"] = _rebase(first["attributes"], base, out.parent)
        human: dict[str, Any] = {}
        if len(preferred) > 1:
            problems.append(f"id {item_id!r}: more than one row marked preferred")
        elif preferred:
            human["preferred"] = preferred[0]
        if any(s is not None for s in scores):
            human["scores"] = scores
        if human:
            item["human"] = human
        items.append(item)
    if problems:
        raise InputError(f"CSV {csv_path}: " + "; ".join(problems[:20]))
    return _finish(items, out, None, [])


def _rebase(relative: str, base: Path, manifest_dir: Path) -> str:
    """A CSV path (relative to ``base``) rewritten relative to the manifest's folder."""
    path = Path(relative)
    if path.is_absolute():
        raise InputError(f"CSV path {relative!r} is absolute; write it relative to the CSV's folder")
    return relative_inside(base / path, manifest_dir, "CSV path")
