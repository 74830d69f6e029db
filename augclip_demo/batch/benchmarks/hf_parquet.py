"""Hugging Face datasets in Parquet (MagicBrush, Emu Edit's test set, HQ-Edit, ImgEdit, AnyEdit ...) -> a manifest.

The Hub's Parquet shards store an ``Image`` feature as a struct ``{"bytes": ..., "path": ...}`` (bytes
embedded, or a path); plain binary and path-string columns are read too. A column mapping names the
columns that play each role (:data:`ROLES`), by flag or through a named preset (:data:`PARQUET_PRESETS`,
taken from the datasets' cards). The shards are streamed a few rows at a time, one row group
after another (``ParquetFile.iter_batches``), each embedded image is written once under its content hash
(``<manifest>_images/ab/abcd....png``) and each item is written to the manifest as it is made, so a
100k-row set never sits in memory whole.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...choices import PARQUET_IMAGE_ROLES, PARQUET_PRESETS, PARQUET_TEXT_ROLES, VOTE_FORMATS, ParquetColumns
from ...choices import PARQUET_ROLES as ROLES
from ...errors import InputError
from ..loaders import LoaderResult, _unique
from ..manifest import relative_inside
from ..triplets import safe_filename
from .common import Unmatched, collect_edits, find_image, inside, method_folders, write_items
from .ratings import Ratings, read_ratings
from .votes import Verdict, arena_verdict, comparison_letters, ranking_verdict

_BATCH_ROWS = 32  # rows per streamed batch: a batch holds this many rows' images at most


_MAGIC: tuple[tuple[bytes, int, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", 0, ".png"), (b"\xff\xd8\xff", 0, ".jpg"), (b"GIF87a", 0, ".gif"), (b"GIF89a", 0, ".gif"),
    (b"WEBP", 8, ".webp"), (b"BM", 0, ".bmp"), (b"II*\x00", 0, ".tif"), (b"MM\x00*", 0, ".tif"),
)


def _image_extension(data: bytes) -> str | None:
    """The file extension for encoded image bytes (by their magic number), or None when unknown."""
    for magic, offset, ext in _MAGIC:
        if data[offset:offset + len(magic)] == magic and (ext != ".webp" or data[:4] == b"RIFF"):
            return ext
    return None


#: group roles whose columns may be partly absent from a shard (EditReward-Bench's 2pair shards have two of the
#: four candidate columns): the shard's present columns play the role, in the mapping's order
_PARTIAL_ROLES = ("candidates", "models")
_GROUP_TEXT_ROLES = ("models", "vote", "comparison")


def _column_map(preset: str | None, overrides: Mapping[str, str | None],
                vote_format: str | None = None) -> ParquetColumns:
    """A preset's mapping (or none) with ``overrides`` (role -> column, ``id`` may be ``a,b``) applied."""
    if preset is not None and preset not in PARQUET_PRESETS:
        raise InputError(f"unknown Parquet preset {preset!r}; presets: {', '.join(PARQUET_PRESETS)}")
    base = PARQUET_PRESETS[preset] if preset else ParquetColumns({})
    if vote_format is not None and vote_format not in VOTE_FORMATS:
        raise InputError(f"unknown vote format {vote_format!r}; formats: {', '.join(VOTE_FORMATS)}")
    columns = dict(base.columns)
    optional = set(base.optional)
    for role, value in overrides.items():
        if role not in ROLES:
            raise InputError(f"unknown column role {role!r}; roles: {', '.join(ROLES)}")
        if value:
            columns[role] = tuple(part.strip() for part in value.split(",") if part.strip())
            optional.discard(role)
    if "source" not in columns:
        raise InputError("the column mapping names no source image column: give --source-column or a --preset")
    if "target_caption" not in columns and "instruction" not in columns:
        raise InputError("the column mapping names no text: give --instruction-column and/or --target-caption-column")
    votes = vote_format or base.vote_format
    if "vote" in columns and votes is None:
        raise InputError(f"a vote column needs --vote-format ({', '.join(VOTE_FORMATS)})")
    if "vote" in columns and "candidates" not in columns:
        raise InputError("a vote column needs the candidates it judges: give --candidates-column a,b")
    return ParquetColumns(columns, frozenset(optional), votes, base.output_name)


@dataclass
class _ImageWriter:
    """Writes embedded images once each, under their content hash, below ``folder``."""

    folder: Path
    root: Path  # where path-valued image cells are looked up
    written: set[str] = field(default_factory=set)

    def path_of(self, cell: Any, what: str) -> Path:
        data, path = _cell_parts(cell, what)
        if data is not None:
            ext = _image_extension(data)
            if ext is None:
                raise InputError(f"{what}: the bytes are not an image format this tool reads (PNG, JPEG, GIF, WebP, "
                                 "BMP, TIFF)")
            digest = hashlib.sha256(data).hexdigest()
            target = self.folder / digest[:2] / f"{digest}{ext}"
            if digest not in self.written and not target.is_file():
                target.parent.mkdir(parents=True, exist_ok=True)
                staged = target.with_name(target.name + ".tmp")
                staged.write_bytes(data)
                os.replace(staged, target)
            self.written.add(digest)
            return target
        assert path is not None
        found = inside(self.root, path, what)
        if not found.is_file():
            raise InputError(f"{what}: {path!r} not found under {self.root}")
        return found


def _cell_parts(cell: Any, what: str) -> tuple[bytes | None, str | None]:
    if isinstance(cell, dict):
        data, path = cell.get("bytes"), cell.get("path")
        if data:
            return bytes(data), None
        if path:
            return None, str(path)
        raise InputError(f"{what}: the image cell has neither bytes nor a path")
    if isinstance(cell, (bytes, bytearray, memoryview)):
        return bytes(cell), None
    if isinstance(cell, str) and cell.strip():
        return None, cell.strip()
    raise InputError(f"{what}: empty")


def _shards(paths: Sequence[str | Path]) -> list[Path]:
    shards: list[Path] = []
    for entry in paths:
        path = Path(entry).expanduser()
        if path.is_dir():
            shards.extend(sorted(path.rglob("*.parquet")))
        elif path.is_file():
            shards.append(path)
        else:
            raise InputError(f"Parquet input {path}: not found")
    if not shards:
        raise InputError(f"no .parquet files in {', '.join(str(p) for p in paths)}")
    return shards


def load_parquet(paths: Sequence[str | Path], out: str | Path | None = None, *, preset: str | None = None,
                 columns: Mapping[str, str | None] | None = None, methods: Sequence[str | Path] = (),
                 root: str | Path | None = None, dataset: str | None = None,
                 limit: int | None = None, vote_format: str | None = None,
                 ratings: Sequence[str | Path] = (), rating: str = "overall") -> LoaderResult:
    """A manifest from local Parquet shards (files or folders of them): one item per row.

    Roles: ``source`` (required), ``ground_truth`` (the dataset's target image: the item's
    ``ground_truth`` and a ``gt`` edit), ``edit`` (an edited image in the row: a candidate named by the
    ``model`` column, else the preset), ``mask`` (white = the region to edit: the item's ``edit_mask``),
    ``instruction``, ``source_caption``, ``target_caption`` (the ``target_text``; the instruction when
    absent), ``edit_type`` (kept in ``meta``), ``id`` (default: the row number). ``methods`` add output
    folders holding ``<id>.png`` (or the preset's output name). Image paths in cells are looked up under
    ``root`` (default: the first shard's folder) and must stay inside it.

    Human-vote sets: ``candidates`` (the compared images), ``models`` (who made each) and ``vote`` (read as
    ``vote_format``) give each row its candidates and the manifest's ``human`` (:mod:`.votes`). ``ratings``:
    per-rater TSV files of ImagenHub's human ratings, matched to the rows by output name and to the
    ``methods`` by model name (:mod:`.ratings`; ``rating``: ``overall``, ``sc`` or ``pq``).
    """
    if limit is not None and limit < 1:
        raise InputError(f"--limit must be at least 1 (the number of rows to read), got {limit}")
    shards = _shards(paths)
    mapping = _column_map(preset, columns or {}, vote_format)
    rated = read_ratings(ratings, rating) if ratings else None
    if rated is not None and not methods:
        raise InputError("--ratings score the edited images of --method-dir folders (one per rated model); give them")
    out = Path(out).expanduser() if out else shards[0].parent / "manifest.jsonl"
    folders = method_folders(methods, "Parquet method folder", out)
    name = dataset or preset or "parquet"
    writer = _ImageWriter(out.parent / f"{out.stem}_images", Path(os.path.realpath(root or shards[0].parent)))
    if "candidates" in mapping.columns and folders:
        raise InputError("a vote set's edits are the candidate images of its rows (what people judged); "
                         "--method-dir does not apply to it")
    if not {"edit", "ground_truth", "candidates"} & set(mapping.columns) and not folders:
        raise InputError("no edited image: map an edit, candidates or ground-truth column, or give --method-dir "
                         "folders of outputs named <id>.png")
    unmatched = Unmatched()
    notes = [f"images written once each under {writer.folder}"]
    context = _Context(mapping, folders, writer, out, name, unmatched, rated, notes)
    items = _items(shards, context, limit)
    return write_items(items, out, unmatched, notes)


@dataclass
class _Context:
    """What every row of a load shares, and the tallies written as notes at the end."""

    mapping: ParquetColumns
    folders: list[tuple[str, Path]]
    writer: _ImageWriter
    out: Path
    name: str
    unmatched: Unmatched
    ratings: Ratings | None
    notes: list[str]
    used: set[str] = field(default_factory=set)
    votes: dict[str, int] = field(default_factory=dict)
    rated_rows: set[str] = field(default_factory=set)

    def finish(self) -> None:
        if self.votes:
            counts = ", ".join(f"{n} {kind.replace('_', ' ')}" for kind, n in sorted(self.votes.items()))
            self.notes.append(f"human votes kept: {counts} (a tie or both-bad vote is an item whose candidates have "
                              "equal human scores: 0.5 each for a tie, 0 each for both bad)")
        if self.ratings is not None:
            for stem in self.ratings.rows():
                if stem not in self.rated_rows:
                    self.unmatched.add("rated rows not in the shards", stem)
            self.notes.append(f"human ratings: {self.ratings.describe()}")


def _parquet() -> Any:
    """``pyarrow.parquet`` (an optional dependency, as for Parquet results), or a clear error."""
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise InputError("reading Parquet datasets needs pyarrow: pip install pyarrow (or 'augclip-demo[ray]')")\
            from None
    return pq


def _present(shard: Path, mapping: ParquetColumns) -> dict[str, tuple[str, ...]]:
    """The roles whose columns the shard has; an error for a required one it lacks."""
    pq = _parquet()
    try:
        schema = pq.ParquetFile(shard).schema_arrow
    except Exception as exc:  # noqa: BLE001 - pyarrow raises several types for a bad file
        raise InputError(f"Parquet shard {shard}: cannot be read ({exc})") from None
    names = set(schema.names)
    present: dict[str, tuple[str, ...]] = {}
    for role, cols in mapping.columns.items():
        missing = [c for c in cols if c not in names]
        if role in _PARTIAL_ROLES and len(missing) < len(cols):
            present[role] = tuple(c for c in cols if c in names)
            _check_text_columns(shard, schema, role, present[role])
            if role == "candidates" and len(present[role]) < 2:
                raise InputError(f"Parquet shard {shard}: only one candidate column ({present[role][0]}) of "
                                 f"{', '.join(cols)}; a vote compares two or more")
            continue
        if not missing:
            present[role] = cols
            _check_text_columns(shard, schema, role, cols)
        elif role not in mapping.optional:
            raise InputError(f"Parquet shard {shard}: no column {missing[0]!r} (for {role}); its columns are "
                             f"{', '.join(sorted(names))}")
    return present


def _check_text_columns(shard: Path, schema: Any, role: str, cols: tuple[str, ...]) -> None:
    """A text role's columns must hold text or numbers (an image column's bytes would become the text)."""
    if role not in PARQUET_TEXT_ROLES and role not in _GROUP_TEXT_ROLES:
        return
    import pyarrow as pa

    for col in cols:
        kind = schema.field(col).type
        if pa.types.is_nested(kind) or pa.types.is_binary(kind) or pa.types.is_large_binary(kind):
            raise InputError(f"Parquet shard {shard}: column {col!r} (for {role}) holds {kind}, not text; give a "
                             f"text column (--{role.replace('_', '-')}-column)")


def _output_fields(mapping: ParquetColumns) -> list[str]:
    import string

    if mapping.output_name is None:
        return []
    return [field for _, field, _, _ in string.Formatter().parse(mapping.output_name) if field]


def _items(shards: list[Path], context: _Context, limit: int | None) -> Iterator[dict[str, Any]]:
    pq = _parquet()
    number = 0
    for shard in shards:
        present = _present(shard, context.mapping)
        wanted = sorted({c for cols in present.values() for c in cols} | set(_output_fields(context.mapping)))
        reader = pq.ParquetFile(shard)
        # one iter_batches per row group: a single one over the whole file keeps every row group it has read
        # allocated until it ends (pyarrow 26: the whole shard); one per group frees each group in turn
        for group in range(reader.num_row_groups):
            for row in _rows(reader, shard, group, wanted):
                number += 1
                if limit is not None and number > limit:
                    context.finish()
                    return
                item = _item(row, number, present, context)
                if item is not None:
                    yield item
    context.finish()


def _rows(reader: Any, shard: Path, group: int, wanted: list[str]) -> Iterator[dict[str, Any]]:
    """The rows of one row group, a batch at a time; a damaged group is an error naming the shard."""
    batches = reader.iter_batches(batch_size=_BATCH_ROWS, columns=wanted, row_groups=[group])
    while True:
        try:
            batch = next(batches, None)
            rows = batch.to_pylist() if batch is not None else None
        except Exception as exc:  # noqa: BLE001 - pyarrow raises OSError, ArrowInvalid ... for damaged pages
            raise InputError(f"Parquet shard {shard}: row group {group} cannot be read ({exc}); the file is damaged "
                             "or incomplete: download it again") from None
        if rows is None:
            return
        yield from rows


def _text(row: dict[str, Any], present: dict[str, tuple[str, ...]], role: str) -> str | None:
    if role not in present:
        return None
    values = [row.get(c) for c in present[role]]
    if any(v is None or str(v).strip() == "" for v in values):
        return None
    return "-".join(str(v).strip() for v in values)


def _item(row: dict[str, Any], number: int, present: dict[str, tuple[str, ...]],
          context: _Context) -> dict[str, Any] | None:
    folders, writer, out, name = context.folders, context.writer, context.out, context.name
    used, unmatched = context.used, context.unmatched
    raw_id = _text(row, present, "id") or f"row{number}"
    label = f"row {number} (id {raw_id})"
    target = _text(row, present, "target_caption") or _text(row, present, "instruction")
    if target is None:
        unmatched.add("rows without a caption or instruction (not written)", label)
        return None
    images: dict[str, str] = {}
    for role in PARQUET_IMAGE_ROLES:
        if role not in present:
            continue
        try:
            path = writer.path_of(row.get(present[role][0]), f"{label} {role}")
            images[role] = relative_inside(path, out.parent, f"{role} image")
        except InputError as exc:
            unmatched.add(f"{role} images unusable" + (" (row not written)" if role == "source" else ""), str(exc))
    if "source" not in images:
        return None
    item_id = _unique(raw_id, used)
    item: dict[str, Any] = {"id": item_id, "dataset": name, "source": images["source"], "target_text": target,
                            "edits": []}
    for key, role in (("instruction", "instruction"), ("source_text", "source_caption")):
        value = _text(row, present, role)
        if value:
            item[key] = value
    if "ground_truth" in images:
        item["ground_truth"] = images["ground_truth"]
        item["edits"].append({"path": images["ground_truth"], "name": name, "role": "gt"})
    if "edit" in images:
        item["edits"].append({"path": images["edit"], "name": _text(row, present, "model") or f"{name}-edit",
                              "role": "candidate"})
    if "mask" in images:
        item["edit_mask"] = images["mask"]
    meta: dict[str, Any] = {}
    if "candidates" in present and not _add_candidates(item, meta, row, present, context, label):
        return None
    stem = context.mapping.output_name.format(**row) if context.mapping.output_name else raw_id
    if "candidates" in present:  # the row's own candidates are what people judged; no further outputs
        pass
    elif item_id == raw_id:
        _add_method_outputs(item, stem, folders, out, unmatched)
    else:  # a method's <id>.png belongs to one of the rows sharing the id, and which one is unknown
        unmatched.add("rows whose id repeats an earlier row's (renamed <id>-2 ...; method outputs not looked up)",
                      f"row {number}: {raw_id} -> {item_id}")
    if not item["edits"]:
        unmatched.add("rows with no edited image (not written)", label)
        return None
    if context.ratings is not None:
        _add_ratings(item, meta, stem, context)
    edit_type = _text(row, present, "edit_type")
    item["meta"] = {"benchmark": name, "row": number, **({"edit_type": edit_type} if edit_type else {}), **meta}
    return item


def _add_candidates(item: dict[str, Any], meta: dict[str, Any], row: dict[str, Any],
                    present: dict[str, tuple[str, ...]], context: _Context, label: str) -> bool:
    """The row's compared images as candidate edits, and people's verdict on them; False: the row is not written."""
    mapping, unmatched = context.mapping, context.unmatched
    order = mapping.columns["candidates"]
    model_columns = mapping.columns.get("models", ())
    found: list[tuple[int, str]] = []  # (position in the mapping, image path relative to the manifest)
    for column in present["candidates"]:
        if row.get(column) is None:  # a shard with room for four candidates, of which this row fills fewer
            continue
        try:
            path = context.writer.path_of(row[column], f"{label} {column}")
            found.append((order.index(column), relative_inside(path, context.out.parent, "candidate image")))
        except InputError as exc:
            unmatched.add("candidate images unusable (row not written)", str(exc))
            return False
    if len(found) < 2:
        unmatched.add("rows with fewer than two candidate images (not written)", label)
        return False
    try:
        letters = (comparison_letters(_text(row, present, "comparison"), len(found)) if "comparison" in present
                   else [chr(ord("A") + position) for position, _ in found])
    except InputError as exc:
        unmatched.add("rows whose comparison cannot be read (not written)", f"{label}: {exc}")
        return False
    for (position, path), letter in zip(found, letters):
        column = model_columns[position] if position < len(model_columns) else None
        model = _text(row, {"m": (column,)}, "m") if column and column in present.get("models", ()) else None
        item["edits"].append({"path": path, "name": model or f"{context.name}-{letter}", "role": "candidate"})
    if len({edit["name"] for edit in item["edits"]}) < len(item["edits"]):  # the same model twice: letters tell
        for edit, letter in zip(item["edits"], letters):
            edit["name"] = f"{edit['name']} ({letter})"
    vote = _text(row, present, "vote")
    if "vote" not in present:
        return True
    if vote is None:
        unmatched.add("rows without a vote (written without a human judgment)", label)
        return True
    try:
        verdict = _verdict(vote, mapping.vote_format, letters)
    except InputError as exc:
        unmatched.add("rows whose vote cannot be read (not written)", f"{label}: {exc}")
        return False
    item["human"] = verdict.human()
    meta.update({"vote": vote, "vote_kind": verdict.kind, "candidates": letters})
    context.votes[verdict.kind] = context.votes.get(verdict.kind, 0) + 1
    return True


def _verdict(vote: str, vote_format: str | None, letters: list[str]) -> Verdict:
    if vote_format == "arena":
        if len(letters) != 2:
            raise InputError(f"an arena vote judges two candidates, the row has {len(letters)}")
        return arena_verdict(vote)
    return ranking_verdict(vote, letters)


def _add_ratings(item: dict[str, Any], meta: dict[str, Any], stem: str, context: _Context) -> None:
    """People's ratings of the row's edits (by model name) as ``human.scores``; the raters' parts in ``meta``."""
    assert context.ratings is not None
    scores, parts = [], {}
    for edit in item["edits"]:
        rated = context.ratings.lookup(stem, edit["name"])
        scores.append(None if rated is None else rated.score)
        if rated is not None:
            parts[edit["name"]] = rated.to_dict()
    if not parts:
        context.unmatched.add("rows without human ratings (written without them)", stem)
        return
    context.rated_rows.add(stem)
    item["human"] = {"scores": scores}
    meta["ratings"] = parts


def _add_method_outputs(item: dict[str, Any], raw_id: str, folders: list[tuple[str, Path]], out: Path,
                        unmatched: Unmatched) -> None:
    plain = "/" not in raw_id and "\\" not in raw_id and raw_id not in (".", "..")
    item["edits"] += collect_edits(
        folders, lambda _, folder: (find_image(folder, raw_id) if plain else None)
        or find_image(folder, safe_filename(raw_id)), f"{raw_id}.png", out, unmatched)
