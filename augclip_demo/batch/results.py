"""Batch results files: JSONL, one record per item, appended and flushed item by item.

A record (``status`` ``ok`` or ``error``)::

    {"id": "cat-hat", "dataset": "tedbench", "status": "ok", "source": "originals/cat.png",
     "target_text": "...", "source_text": null, "instruction": null,
     "edits": [{"index": 0, "path": "...", "name": "imagic", "role": "gt", "sha256": "...",
                "metrics": {"augclip": 0.71, "clip_dir": null, ...},
                "unavailable": {"clip_dir": "no source text given: ..."},
                "augclip": {"c": 0.12, "w_norm": 3.1, "v_norm": 0.37, "fit_accuracy": 1.0}}],
     "human": {"preferred": 0}, "attributes": {...}, "meta": null,
     "run": {"model": "ViT-B-16/openai", "untrained": false, "metrics": [...], "options": {...}}}

Because every record is written with one ``write`` and flushed, a crash or Ctrl-C loses at most
the line being written; :func:`read_resume_state` / :func:`apply_resume_state` drop such a torn
last line and return the ids already done, so a rerun resumes where the last one stopped.
"""

from __future__ import annotations

import contextlib
import csv
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..io import spreadsheet_row
from .results_parquet import (
    ParquetResultsWriter,
    is_parquet_results,
    iter_parquet_results,
    prepare_parquet_folder,
    write_parquet_results,
)

_RUN_KEYS_COMPARED = ("model", "precision", "matmul", "metrics", "options", "bpm", "judge", "features")
# "precision" / "matmul": the CLIP numerics (autocast dtype, CPU matrix kernels; a file from before they were
# recorded reads None); "bpm": region models and options; "judge": the judge's model, prompt version,
# temperature and samples; "features": the DINO / LPIPS networks


@dataclass
class ResumeState:
    """What an existing results file already holds (read without changing it)."""

    done: set[str] = field(default_factory=set)
    n_ok: int = 0
    n_failed: int = 0
    exists: bool = False
    torn_at: int | None = None  # byte offset where a torn last line starts
    dropped_failed: int = 0

    @property
    def dropped_torn_line(self) -> bool:
        return self.torn_at is not None

    def count(self, record: dict[str, Any], retry_failed: bool) -> None:
        """Take one existing record into account: ok ones are done; failed ones too unless they are retried."""
        if record.get("status") == "ok":
            self.done.add(str(record["id"]))
            self.n_ok += 1
        else:
            self.n_failed += 1
            if not retry_failed:
                self.done.add(str(record["id"]))


def iter_results(path: str | Path) -> Iterator[dict[str, Any]]:
    """Stream the records of a results file; a torn last line (killed writer) is skipped. A Parquet
    results folder (``.parquet``, see :mod:`.results_parquet`) gives the same records."""
    path = Path(path)
    if is_parquet_results(path):
        yield from iter_parquet_results(path)
        return
    if not path.is_file():
        raise InputError(f"results file {path}: not found")
    with open(path, encoding="utf-8") as handle:
        pending_error: str | None = None
        for number, line in enumerate(handle, start=1):
            if pending_error:
                raise InputError(pending_error)
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                # Only the very last line may be torn; anything else is a damaged file.
                pending_error = (f"results file {path} line {number}: not valid JSON ({exc.msg}); "
                                 "the file is damaged: fix that line or rerun with --overwrite")
                continue
            if not isinstance(record, dict) or "id" not in record:
                raise InputError(f"results file {path} line {number}: not a batch result record")
            yield record


def _compare_run(path: Path, record: dict[str, Any], run: dict[str, Any]) -> None:
    old = record.get("run") or {}
    for key in _RUN_KEYS_COMPARED:
        if old.get(key) != run.get(key):
            then = "not recorded" if key not in old else repr(old.get(key))
            raise InputError(
                f"results file {path} was written with {key} {then}, this run uses {run.get(key)!r}; "
                "results of different settings must not be mixed: use another --out, or --overwrite to start over"
                + (f" (or run with --cpu-matmul {old.get(key)} to continue it)" if key == "matmul"
                   and old.get(key) in ("onednn", "blas") else "")
            )


def read_resume_state(path: str | Path, run: dict[str, Any], *, overwrite: bool = False,
                      retry_failed: bool = False) -> ResumeState:
    """Which ids an existing results file already holds (nothing is changed yet).

    Every record must come from the same settings (model, metrics, AugCLIP options), else an
    error; a torn last line (the writer was killed mid-line) is noted, any other bad line is an
    error. With ``retry_failed`` failed items do not count as done.
    """
    path = Path(path)
    state = ResumeState()
    if is_parquet_results(path):
        return _read_parquet_resume_state(path, run, overwrite=overwrite, retry_failed=retry_failed)
    if overwrite or not path.exists():
        return state
    state.exists = True
    offset = 0
    with open(path, "rb") as handle:
        for number, raw in enumerate(handle, start=1):
            line_start = offset
            offset += len(raw)
            if not raw.strip():
                continue
            try:
                record = json.loads(raw.decode("utf-8"))
                if not raw.endswith(b"\n"):
                    raise ValueError("no newline: the writer stopped mid-line")
            except (ValueError, UnicodeDecodeError) as exc:
                if handle.read().strip():
                    raise InputError(f"results file {path} line {number}: not a valid record ({exc}); the file is "
                                     "damaged: fix that line or rerun with --overwrite") from None
                state.torn_at = line_start
                break
            if not isinstance(record, dict) or "id" not in record:
                raise InputError(f"results file {path} line {number}: not a batch result record")
            _compare_run(path, record, run)
            state.count(record, retry_failed)
    return state


def apply_resume_state(path: str | Path, state: ResumeState, *, overwrite: bool = False,
                       retry_failed: bool = False) -> None:
    """Make the file match ``state``: create or empty it, cut a torn line, drop failed records to retry."""
    path = Path(path)
    if is_parquet_results(path):
        state.dropped_failed += prepare_parquet_folder(path, overwrite=overwrite, retry_failed=retry_failed)
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    if overwrite or not state.exists:
        path.write_text("", encoding="utf-8")
        return
    if state.torn_at is not None:
        with open(path, "r+b") as handle:
            handle.truncate(state.torn_at)
    if retry_failed and state.n_failed:
        tmp = path.with_name(path.name + ".tmp")
        with open(path, encoding="utf-8") as src, open(tmp, "w", encoding="utf-8", newline="\n") as dst:
            for line in src:
                if line.strip() and json.loads(line).get("status") != "ok":
                    state.dropped_failed += 1
                    continue
                dst.write(line)
        os.replace(tmp, path)


@contextlib.contextmanager
def no_empty_results_on_failure(path: str | Path) -> Iterator[None]:
    """Around a run: when it raises (a missing weight, Ctrl-C, a bug) and its JSONL results file holds no
    byte, the file goes, so a failed run leaves no empty results behind for `protocol` to read as a run."""
    try:
        yield
    except BaseException:
        path = Path(path)
        if not is_parquet_results(path):
            with contextlib.suppress(OSError):
                if path.is_file() and path.stat().st_size == 0:
                    path.unlink()
        raise


def _read_parquet_resume_state(path: Path, run: dict[str, Any], *, overwrite: bool,
                               retry_failed: bool) -> ResumeState:
    state = ResumeState()
    if path.exists() and not path.is_dir():
        raise InputError(f"results {path}: Parquet results are a folder of part files; this is a file: use another "
                         "--out")
    if overwrite or not path.exists():
        return state
    state.exists = True
    for record in iter_parquet_results(path):
        _compare_run(path, record, run)
        state.count(record, retry_failed)
    return state


class RunLock:
    """An exclusive advisory lock on ``<results>.lock`` for the duration of a run (POSIX; no-op elsewhere)."""

    def __init__(self, results: str | Path):
        self.path = Path(str(results) + ".lock")
        self._handle: Any = None

    def __enter__(self) -> RunLock:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._handle = open(self.path, "a+")  # noqa: SIM115 - closed in __exit__
        try:
            import fcntl
        except ImportError:
            return self
        try:
            fcntl.flock(self._handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            self._handle.close()
            raise InputError(f"results file {str(self.path)[:-5]} is being written by another batch run; wait for "
                             "it to finish or choose another --out") from None
        return self

    def __exit__(self, *exc: object) -> None:
        with contextlib.suppress(OSError):
            self.path.unlink()
        self._handle.close()


class ResultsWriter:
    """Appends records to a results file, one line each, flushed at once (survives a killed process)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self._handle = open(self.path, "a", encoding="utf-8", newline="\n")  # noqa: SIM115 - closed in close()

    def write(self, record: dict[str, Any]) -> None:
        self._handle.write(json.dumps(record, ensure_ascii=False, allow_nan=False) + "\n")
        self._handle.flush()

    def close(self) -> None:
        if not self._handle.closed:
            self._handle.close()

    def __enter__(self) -> ResultsWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_results_writer(path: str | Path, rows_per_part: int = 512) -> ResultsWriter | ParquetResultsWriter:
    """The writer for a results path: JSONL (one flushed line per record) or a Parquet folder (part files)."""
    if is_parquet_results(path):
        return ParquetResultsWriter(path, rows_per_part)
    return ResultsWriter(path)


class InOrderWriter:
    """Writes records in manifest order although items finish out of order (held until their turn)."""

    def __init__(self, writer: ResultsWriter | ParquetResultsWriter):
        self.writer = writer
        self.held: dict[int, dict[str, Any]] = {}  # ordinal -> record waiting for earlier items
        self.next_ordinal = 0

    def put(self, ordinal: int, record: dict[str, Any]) -> None:
        self.held[ordinal] = record

    def write_ready(self) -> list[dict[str, Any]]:
        """Write every record whose predecessors are written; returns them."""
        written = []
        while self.next_ordinal in self.held:
            record = self.held.pop(self.next_ordinal)
            self.writer.write(record)
            written.append(record)
            self.next_ordinal += 1
        return written


def export_parquet(results_path: str | Path, folder: str | Path, rows_per_part: int = 512) -> Path:
    """A results file (JSONL, or another Parquet folder) rewritten as a Parquet results folder (same records)."""
    return write_parquet_results(iter_results(results_path), folder, rows_per_part)


# ---------------------------------------------------------------------------------------------- CSV
_CSV_FIXED = ["id", "dataset", "status", "edit", "name", "role", "path"]


def _results_metric_keys(path: str | Path) -> list[str]:
    keys: dict[str, None] = {}
    for record in iter_results(path):
        for key in (record.get("run") or {}).get("metrics", []):
            keys.setdefault(key, None)
        for edit in record.get("edits", []):
            for key in edit.get("metrics", {}) or {}:
                keys.setdefault(key, None)
    return list(keys)


def export_csv(results_path: str | Path, csv_path: str | Path) -> Path:
    """One CSV row per edit (a failed item: one row with its error), streamed from the JSONL; an empty metric
    cell's reason is in the ``unavailable`` column."""
    keys = _results_metric_keys(results_path)
    csv_path = Path(csv_path)
    csv_path.parent.mkdir(parents=True, exist_ok=True)
    with open(csv_path, "w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=_CSV_FIXED + keys + ["unavailable", "error", "model", "untrained"])
        writer.writeheader()
        for record in iter_results(results_path):
            run = record.get("run") or {}
            base = {"id": record["id"], "dataset": record.get("dataset", ""), "status": record.get("status", ""),
                    "model": run.get("model", ""), "untrained": run.get("untrained", "")}
            if record.get("status") != "ok":
                writer.writerow(spreadsheet_row({**base, "error": record.get("error", "")}))
                continue
            for edit in record.get("edits", []):
                row = {**base, "edit": edit.get("index", 0) + 1, "name": edit.get("name", ""),
                       "role": edit.get("role", ""), "path": edit.get("path", "")}
                for key in keys:
                    value = (edit.get("metrics") or {}).get(key)
                    row[key] = "" if value is None else value
                # why a metric cell is empty ("bpm: the instruction has no parse"), as the record says
                row["unavailable"] = "; ".join(f"{key}: {why}" for key, why in (edit.get("unavailable") or {}).items())
                writer.writerow(spreadsheet_row(row))  # names and paths come from uploads: never a formula
    return csv_path
