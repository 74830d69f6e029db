"""What the benchmark loaders share: the report of what could not be matched, safe paths, image lookup, writing.

Every loader reads paths and ids from files it does not control (a mapping file, a Parquet column), so
each path is joined under the dataset's folder with :func:`inside`, which refuses absolute paths,
``..`` components and symlinks that leave it (the manifest's own rules). Whatever cannot be matched
(an output missing, an id the layout does not know, a path refused) is counted in :class:`Unmatched`,
whose report is a few lines, one per kind, with the first examples: nothing is dropped silently.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...errors import InputError, ManifestError
from ..loaders import IMAGE_EXTENSIONS, LoaderResult
from ..manifest import relative_inside, resolve_inside, write_manifest

EXAMPLES = 3  # examples shown per kind of unmatched entry


@dataclass
class Unmatched:
    """Entries a loader could not match, counted by kind ("ip2p: no output"), with the first few examples."""

    counts: dict[str, int] = field(default_factory=dict)
    examples: dict[str, list[str]] = field(default_factory=dict)

    def add(self, kind: str, example: str) -> None:
        self.counts[kind] = self.counts.get(kind, 0) + 1
        shown = self.examples.setdefault(kind, [])
        if len(shown) < EXAMPLES:
            shown.append(example)

    def lines(self) -> list[str]:
        """One line per kind: ``<kind>: N (e.g. a, b, c)``."""
        out = []
        for kind, count in self.counts.items():
            more = ", ..." if count > len(self.examples[kind]) else ""
            out.append(f"{kind}: {count} ({'e.g. ' if more else ''}{', '.join(self.examples[kind])}{more})")
        return out


def real_folder(path: str | Path, what: str) -> Path:
    """``path`` as a resolved existing folder, or a clear error."""
    folder = Path(path).expanduser()
    if not folder.is_dir():
        raise InputError(f"{what}: {folder} is not a folder")
    return Path(os.path.realpath(folder))


def inside(root: Path, relative: str, what: str) -> Path:
    """``root / relative`` when it stays inside ``root`` (a resolved folder); :class:`InputError` otherwise."""
    if not isinstance(relative, str):
        raise InputError(f"{what} must be text, got {type(relative).__name__}")
    return resolve_inside(root, relative, what)


def find_image(folder: Path, stem: str) -> Path | None:
    """``folder/stem.<ext>`` for the first image extension that exists (any case of the extension)."""
    for ext in IMAGE_EXTENSIONS:
        for candidate in (folder / f"{stem}{ext}", folder / f"{stem}{ext.upper()}"):
            if candidate.is_file():
                return candidate
    return None


def image_files(folder: Path) -> list[Path]:
    """The images directly in ``folder``, sorted by name."""
    return sorted(p for p in folder.iterdir() if p.is_file() and p.suffix.lower() in IMAGE_EXTENSIONS)


def method_folders(paths: Iterable[str | Path] | None, what: str, out: Path | None = None) -> list[tuple[str, Path]]:
    """``NAME=DIR`` or ``DIR`` (name: the folder's name) -> (name, resolved folder); names must be unique, and
    with ``out`` each folder must lie inside the manifest's folder (the manifest's paths are relative to it)."""
    found: list[tuple[str, Path]] = []
    for entry in paths or ():
        text = str(entry)
        name, sep, folder = text.partition("=")
        if not sep or not name or "/" in name or "\\" in name:
            name, folder = "", text
        path = real_folder(folder, what)
        name = name or path.name
        if any(name == other for other, _ in found):
            raise InputError(f"{what}: two method folders are both named {name!r}; name them with NAME=DIR")
        if out is not None and not _is_within(path, out.parent):
            raise InputError(f"{what} {path} is outside the manifest's folder {out.parent}; write the manifest (--out) "
                             "into a folder that holds the dataset and every output folder")
        found.append((name, path))
    return found


def manifest_path(out: str | Path | None, root: Path, methods: Iterable[str | Path] | None, what: str, name: str,
                  also: Iterable[Path] = ()) -> Path:
    """Where the manifest goes: ``out`` when given; else ``root/manifest.jsonl`` when ``root`` (resolved) holds
    every method folder (and the folders in ``also``), else ``<name>.jsonl`` in the deepest folder that holds
    them all (``manifest pie-bench data --method-dir output/p2p`` writes ``./pie-bench.jsonl``: the manifest's
    paths are relative to its folder, which must hold the dataset and every output)."""
    if out:
        return Path(out).expanduser()
    folders = [path for _, path in method_folders(methods, what)] + list(also)
    base = Path(os.path.commonpath([root, *folders]))
    if base == root:
        return root / "manifest.jsonl"
    if base == Path(base.anchor):
        raise InputError(f"{what}s and the dataset folder {root} have no common folder but the file system's root; "
                         "give the manifest's path (--out) in a folder that holds them all")
    return base / f"{name}.jsonl"


def _is_within(path: Path, folder: Path) -> bool:
    root = Path(os.path.realpath(folder))
    return path == root or root in path.parents


def edit_entry(path: Path, out: Path, name: str, unmatched: Unmatched, role: str = "candidate") -> dict[str, str] | None:
    """The manifest's edit for ``path``, or None (counted) when the file lies outside the manifest's folder."""
    try:
        return {"path": relative_inside(path, out.parent, f"{name} output"), "name": name, "role": role}
    except InputError as exc:
        unmatched.add(f"{name}: outputs outside the manifest's folder (not used)", str(exc))
        return None


def collect_edits(folders: list[tuple[str, Path]], find: Callable[[str, Path], Path | None], missing: str,
                  out: Path, unmatched: Unmatched) -> list[dict[str, str]]:
    """One candidate edit per method whose ``find(name, folder)`` gives an output; the others are counted as
    ``<name>: no output`` with ``missing`` as the example."""
    edits = []
    for name, folder in folders:
        found = find(name, folder)
        if found is None:
            unmatched.add(f"{name}: no output", missing)
            continue
        edit = edit_entry(found, out, name, unmatched)
        if edit is not None:
            edits.append(edit)
    return edits


def find_inside(folder: Path, relative_stem: str, what: str, unmatched: Unmatched) -> Path | None:
    """The image ``folder/relative_stem.<ext>``, the stem checked to stay inside ``folder``; refusals are counted."""
    try:
        stem = inside(folder, relative_stem, what)
    except InputError as exc:
        unmatched.add(f"{what}: paths refused", str(exc))
        return None
    return find_image(stem.parent, stem.name)


def article(word: str) -> str:
    """``a`` or ``an`` before ``word`` (by its first letter)."""
    return "an" if word[:1].lower() in "aeiou" else "a"


#: plurals that do not end in "s" (among the nouns the benchmarks' lists hold or could)
_IRREGULAR_PLURALS = frozenset({"people", "children", "men", "women", "feet", "teeth", "mice", "geese"})


def _is_plural(noun: str) -> bool:
    """Whether a noun phrase names several things, by its last word: ``books``, ``sunglasses``, ``people``;
    not ``glass``, ``bus``, ``cactus``, ``tennis``."""
    words = noun.lower().split()
    last = words[-1] if words else ""
    if last in _IRREGULAR_PLURALS:
        return True
    return last.endswith("s") and not last.endswith(("ss", "us", "is"))


def with_article(noun: str) -> str:
    """``noun`` as the object of a sentence: ``a bag``, ``an apple``, but ``books`` (no article before a plural)."""
    return noun if _is_plural(noun) else f"{article(noun)} {noun}"


def write_items(items: Iterable[dict[str, Any]], out: Path, unmatched: Unmatched,
                notes: list[str] | None = None) -> LoaderResult:
    """Write the manifest as the items come (then validated), and the report; an error when there is no item.

    The items are written one by one (a generator is never held whole), so a large benchmark costs
    one item's memory here.
    """
    counter = {"items": 0, "edits": 0}

    def counted() -> Iterator[dict[str, Any]]:
        for item in items:
            counter["items"] += 1
            counter["edits"] += len(item["edits"])
            yield item

    try:
        write_manifest(counted(), out)
    except InputError as exc:
        out.with_name(out.name + ".tmp").unlink(missing_ok=True)  # write_manifest's staging file
        if isinstance(exc, ManifestError) and not counter["items"]:
            out.unlink(missing_ok=True)
            raise InputError("no items found: " + ("; ".join(unmatched.lines()[:5]) or "the layout is empty")) from None
        raise
    return LoaderResult(manifest=out, n_items=counter["items"], n_edits=counter["edits"],
                        warnings=unmatched.lines(), notes=list(notes or []))
