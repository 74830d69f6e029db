"""Batch results as a Parquet dataset: a folder of part files, one row per item, written atomically.

Any engine may write results here (the Ray engine writes them directly; a local JSONL results
file converts with :func:`~.results.export_parquet`), and everything that reads results
(:func:`~.results.iter_results`: the protocol tables, the CSV export) reads them back as the very
records a JSONL results file holds, so the two formats give identical protocol tables.

Columns are the record's top-level fields, in the local runner's order (:data:`COLUMNS`): the
scalar texts (``id``, ``dataset``, ``status``, ``error``, ``source``, ``target_text``,
``source_text``, ``instruction``) as strings, the nested fields (``edits``, ``human``,
``attributes``, ``meta``, ``bpm_parse``, ``run``) as JSON text, fields a later stage adds under
``extra`` (JSON), and ``fields`` (the record's keys in order, so a row reads back as exactly its
record: an error record has no ``instruction`` at all, an ok record has ``source_text: null``).

Why part files: each is written under a temporary name and renamed into place, so a reader or a
resumed run sees whole parts or nothing (no torn rows), and a rerun never rewrites a finished item.
Parts are numbered; reading them in name order gives the order they were written in.

pyarrow is needed only here (it comes with the ``ray`` extra).
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from ..errors import InputError

_TEXT_COLUMNS = ("id", "dataset", "status", "error", "source", "target_text", "source_text", "instruction")
_JSON_COLUMNS = ("edits", "human", "attributes", "meta", "bpm_parse", "run")
#: Every column of a results part file, in order (``extra``: other top-level fields; ``fields``: key order).
COLUMNS = (*_TEXT_COLUMNS, *_JSON_COLUMNS, "extra", "fields")
PART_PREFIX = "part-"


def is_parquet_results(path: str | Path) -> bool:
    """A Parquet results dataset: a folder, or a name ending in ``.parquet``."""
    path = Path(path)
    return path.is_dir() or path.suffix == ".parquet"


def _pyarrow() -> Any:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise InputError("Parquet results need pyarrow: pip install 'augclip-demo[ray]' (or pip install pyarrow)")\
            from None
    return pa, pq


def _schema(pa: Any) -> Any:
    return pa.schema([(name, pa.string()) for name in (*_TEXT_COLUMNS, *_JSON_COLUMNS, "extra")]
                     + [("fields", pa.list_(pa.string()))])


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, allow_nan=False)


def record_to_row(record: dict[str, Any]) -> dict[str, Any]:
    """One results record as one row of :data:`COLUMNS`."""
    row: dict[str, Any] = {name: None for name in COLUMNS}
    extra = {}
    for key, value in record.items():
        if key in _TEXT_COLUMNS:
            if value is not None and not isinstance(value, str):
                raise InputError(f"results record {record.get('id')!r}: field {key} must be text, got "
                                 f"{type(value).__name__}")
            row[key] = value
        elif key in _JSON_COLUMNS:
            row[key] = _dumps(value)
        else:
            extra[key] = value
    row["extra"] = _dumps(extra) if extra else None
    row["fields"] = list(record)
    return row


def row_to_record(row: dict[str, Any]) -> dict[str, Any]:
    """The record a row was made from (inverse of :func:`record_to_row`)."""
    extra = json.loads(row["extra"]) if row.get("extra") else {}
    record: dict[str, Any] = {}
    for key in row["fields"]:
        if key in _TEXT_COLUMNS:
            record[key] = row[key]
        elif key in _JSON_COLUMNS:
            record[key] = json.loads(row[key])
        else:
            record[key] = extra[key]
    return record


def part_files(folder: str | Path) -> list[Path]:
    """The finished part files of a results folder, in the order they were written."""
    folder = Path(folder)
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if p.name.startswith(PART_PREFIX) and p.suffix == ".parquet")


def iter_parquet_results(path: str | Path) -> Iterator[dict[str, Any]]:
    """Stream the records of a Parquet results folder (or one ``.parquet`` file), in writing order."""
    path = Path(path)
    if not path.exists():
        raise InputError(f"results {path}: not found")
    _, pq = _pyarrow()
    files = part_files(path) if path.is_dir() else [path]
    for file in files:
        try:
            parquet = pq.ParquetFile(file)
            missing = [name for name in ("id", "fields") if name not in parquet.schema_arrow.names]
            if missing:
                raise InputError(f"results file {file}: not a batch results part (no column {missing[0]!r})")
            for batch in parquet.iter_batches(batch_size=1024):
                for row in batch.to_pylist():
                    yield row_to_record(row)
        except InputError:
            raise
        except Exception as exc:  # pyarrow's errors for a damaged file
            raise InputError(f"results file {file}: not a readable Parquet file ({exc}); remove it and rerun the "
                             "batch to score its items again") from None


class ParquetResultsWriter:
    """Appends records to a results folder as numbered part files (each written whole, then renamed)."""

    def __init__(self, folder: str | Path, rows_per_part: int = 512):
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.rows_per_part = max(1, int(rows_per_part))
        self.pending: list[dict[str, Any]] = []
        existing = part_files(self.folder)
        self.next_part = 1 + max((_part_number(p) for p in existing), default=-1)

    def write(self, record: dict[str, Any]) -> None:
        self.pending.append(record_to_row(record))
        if len(self.pending) >= self.rows_per_part:
            self.flush()

    def flush(self) -> Path | None:
        """Write the held rows as one part file (nothing when none are held)."""
        if not self.pending:
            return None
        pa, pq = _pyarrow()
        table = pa.Table.from_pylist(self.pending, schema=_schema(pa))
        final = self.folder / f"{PART_PREFIX}{self.next_part:06d}.parquet"
        tmp = self.folder / f".{final.name}.{uuid.uuid4().hex[:8]}.tmp"
        pq.write_table(table, tmp)
        os.replace(tmp, final)  # atomic: a reader sees the whole part or none of it
        self.next_part += 1
        self.pending = []
        return final

    def close(self) -> None:
        self.flush()

    def __enter__(self) -> ParquetResultsWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _part_number(path: Path) -> int:
    try:
        return int(path.stem[len(PART_PREFIX):])
    except ValueError:
        return -1


def prepare_parquet_folder(folder: str | Path, *, overwrite: bool = False, retry_failed: bool = False) -> int:
    """Make a results folder ready to append to: leftovers of a killed writer removed, every part removed
    (``overwrite``) or parts rewritten without their failed records (``retry_failed``); returns how many
    failed records were dropped."""
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise InputError(f"results {folder}: Parquet results are a folder of part files; this is a file: use "
                         "another --out")
    folder.mkdir(parents=True, exist_ok=True)
    for leftover in folder.glob(f".{PART_PREFIX}*.tmp"):  # a writer killed mid-part
        leftover.unlink()
    if overwrite:
        for part in part_files(folder):
            part.unlink()
        return 0
    dropped = 0
    if not retry_failed:
        return dropped
    for part in part_files(folder):
        records = list(iter_parquet_results(part))
        kept = [r for r in records if r.get("status") == "ok"]
        if len(kept) == len(records):
            continue
        dropped += len(records) - len(kept)
        pa, pq = _pyarrow()
        tmp = folder / f".{part.name}.{uuid.uuid4().hex[:8]}.tmp"
        pq.write_table(pa.Table.from_pylist([record_to_row(r) for r in kept], schema=_schema(pa)), tmp)
        os.replace(tmp, part)
    return dropped


def write_parquet_results(records: Iterable[dict[str, Any]], folder: str | Path, rows_per_part: int = 512) -> Path:
    """Write ``records`` as a new Parquet results folder (parts already there are removed first)."""
    folder = Path(folder)
    prepare_parquet_folder(folder, overwrite=True)
    with ParquetResultsWriter(folder, rows_per_part) as writer:
        for record in records:
            writer.write(record)
    return folder
