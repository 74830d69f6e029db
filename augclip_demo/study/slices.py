"""A study over an Explore slice: the slice's edits, grouped by item, become the study's units.

The Explore package is a sibling layer that this package does not import (import-linter keeps the two
independent), so a slice and its opened results are read here through the few members this needs
(:class:`SlicedResults`, :class:`ResultSlice`: what ``explore.ResultsStore`` and ``explore.Slice`` have).

A slice's edit is matched to its manifest edit by the item id and the edit's position in the record, which
``batch`` writes in manifest order; the editing model's name is compared as well, so results of another
manifest are refused instead of judged against the wrong pictures.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from ..batch.manifest import ManifestItem, load_manifest
from .store import Study, StudyError, create_study

#: the most edits a slice may hand to a study (a study of more units is split by the operator anyway)
MAX_SLICE_EDITS = 200_000


class SlicedResults(Protocol):
    files: Sequence[Any]  # each with ``.manifest`` (a Path or None) and ``.results``

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]: ...


class ResultSlice(Protocol):
    name: str

    def where(self, store: Any) -> tuple[str, list[Any]]: ...

    def describe(self) -> str: ...


@dataclass
class Selection:
    """The edits of a slice as a study takes them: one manifest, item id -> edit indices (and the manifest's
    items, read once here: the study is made from them)."""

    manifest: Path
    only: dict[str, set[int]] = field(default_factory=dict)
    description: str = ""
    items: list[ManifestItem] = field(default_factory=list, repr=False)

    @property
    def n_edits(self) -> int:
        return sum(len(edits) for edits in self.only.values())


def slice_selection(results: SlicedResults, active: ResultSlice) -> Selection:
    """The slice's edits, checked against the manifest their results were opened with."""
    where, params = active.where(results)
    rows = results.query(f"SELECT file_no, id, edit, model FROM edits WHERE {where} ORDER BY file_no, item, edit "
                         f"LIMIT {MAX_SLICE_EDITS + 1}", params)
    if not rows:
        raise StudyError(f"slice {active.name!r} holds no scored edit: nothing to judge")
    if len(rows) > MAX_SLICE_EDITS:
        raise StudyError(f"slice {active.name!r} holds more than {MAX_SLICE_EDITS} edits; narrow it first")
    manifests = {}
    for file_no in sorted({row[0] for row in rows}):
        opened = results.files[file_no]
        if opened.manifest is None:
            raise StudyError(f"results {Path(opened.results).name} were opened without their manifest; a study needs "
                             "the manifest's pictures (open them with their manifest)")
        manifests[file_no] = Path(opened.manifest).resolve()
    if len(set(manifests.values())) > 1:
        names = ", ".join(sorted({path.name for path in manifests.values()}))
        raise StudyError(f"slice {active.name!r} spans results of {len(set(manifests.values()))} manifests ({names}); "
                         "a study shows the edits of one manifest: narrow the slice to one file or run")
    manifest = next(iter(manifests.values()))
    items = load_manifest(manifest)
    names = {item.id: [edit.name for edit in item.edits] for item in items}
    selection = Selection(manifest, description=active.describe(), items=items)
    for _, item_id, edit, model in rows:
        item_id, edit = str(item_id), int(edit)
        known = names.get(item_id)
        if known is None or edit >= len(known) or (model and known[edit] != model):
            raise StudyError(f"item {item_id!r} edit {edit} ({model}) of the results is not that edit of manifest "
                             f"{manifest.name}: the results were made from another manifest")
        selection.only.setdefault(item_id, set()).add(edit)
    return selection


def create_study_from_slice(db: str | Path, name: str, results: SlicedResults, active: ResultSlice,
                            **design: Any) -> tuple[Study, Selection]:
    """A study over the edits of ``active`` (``design``: :func:`~augclip_demo.study.store.create_study`'s options)."""
    selection = slice_selection(results, active)
    study = create_study(db, name, selection.manifest, only=selection.only, items=selection.items, **design)
    return study, selection
