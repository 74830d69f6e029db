"""A results file with its manifest and images in one folder (an uploaded zip, extracted): which file is which.

A results file is a ``.parquet`` file or a JSON-lines file whose first record has a ``status`` (every record a
batch run writes has one); a manifest is a JSON-lines file whose first item has ``source`` and ``edits`` but no
``status``. The images are read where the manifest names them, relative to its folder (as in a batch run).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from ..errors import InputError

_SKIPPED = ("__MACOSX",)
_FIRST_LINE_BYTES = 1 << 20  # a first record longer than this is not read to tell the file's kind


@dataclass(frozen=True)
class Bundle:
    """The results file of an extracted folder and the manifest beside it (None: none in the folder)."""

    results: Path
    manifest: Path | None


def _first_record(path: Path) -> dict | None:
    """The first JSON object of a JSON-lines file, None when it does not start with one."""
    try:
        with open(path, encoding="utf-8-sig", errors="replace") as handle:
            for line in iter(lambda: handle.readline(_FIRST_LINE_BYTES), ""):
                if line.strip():
                    record = json.loads(line)
                    return record if isinstance(record, dict) else None
    except (OSError, ValueError, RecursionError):
        return None
    return None


def find_bundle(folder: Path) -> Bundle:
    """The one results file under ``folder`` and its manifest; a clear error when there is no results file, or
    more than one results file or manifest (naming them, relative to the zip)."""
    results: list[Path] = []
    manifests: list[Path] = []
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and not set(p.relative_to(folder).parts) & set(_SKIPPED)):
        suffix = path.suffix.lower()
        if suffix == ".parquet":
            results.append(path)
        elif suffix in (".jsonl", ".json"):
            record = _first_record(path)
            if record is None:
                continue
            if "status" in record:
                results.append(path)
            elif "source" in record and "edits" in record:
                manifests.append(path)

    def names(paths: list[Path]) -> str:
        return ", ".join(p.relative_to(folder).as_posix() for p in paths[:5]) + (" …" if len(paths) > 5 else "")

    if not results:
        raise InputError("the zip holds no batch results file (a .jsonl whose records have a status, or a .parquet "
                         "file): put the run's results file in it, beside its manifest and images")
    if len(results) > 1:
        raise InputError(f"the zip holds {len(results)} results files ({names(results)}): put one run's results in it")
    if len(manifests) > 1:
        raise InputError(f"the zip holds {len(manifests)} manifests ({names(manifests)}): put the one of these results "
                         "in it")
    return Bundle(results[0], manifests[0] if manifests else None)
