"""DreamBooth (Ruiz et al., the DreamBooth paper on subject-driven fine-tuning, CVPR 2023): its released
subject set as a manifest of subject-driven generations.

The released layout (``dataset/`` of the google/dreambooth repository)::

    dataset/<subject>/00.jpg ...                 (4-6 photos per subject)
    dataset/prompts_and_classes.txt              a "Classes" section (``subject_name,class`` lines) and
                                                 "Object Prompts" / "Live Subject Prompts" lists of
                                                 ``'a {0} {1} ...'.format(unique_token, class_token),`` lines

The live subjects are the cats and dogs (the dataset's README); the others take the object prompts.
Generated images are one folder per model, ``<model>/<subject>/<file>``, where the file's name starts
with the prompt's index in its list (``03.png``, ``03_1.png``, ``3-a.png``) or is the filled prompt
itself (``a dog in the snow.png`` or, with the unique token the model was trained with,
``a sks dog in the snow.png``; underscores or spaces; a ``_<n>`` sample suffix allowed). Without
``unique_token``, any one word in the token's place is taken as the token when the name then fits
exactly one prompt; with it, only that token.
One item per (subject, prompt): source = the subject's first photo, target = the prompt with the
class filled in (``{0}``, the unique token, is left out unless ``unique_token`` is given: a token
trained into the model means nothing to the CLIP that scores the edit).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from ...errors import InputError
from ..loaders import LoaderResult, normalize_text, slug
from .common import (
    Unmatched,
    edit_entry,
    image_files,
    inside,
    manifest_path,
    method_folders,
    real_folder,
    with_article,
    write_items,
)

_LIVE_CLASSES: tuple[str, ...] = ("cat", "dog")
_PROMPT_LINE = re.compile(r"""^\s*(['"])(.*)\1\s*\.format\(""")
_INDEXED = re.compile(r"^(\d+)(?:[_-].*)?$")
_SAMPLE_SUFFIX = re.compile(r"[_-]\d+$")


def _parse_prompts_and_classes(text: str) -> tuple[dict[str, str], list[str], list[str]]:
    """(subject -> class, object prompts, live-subject prompts) from ``prompts_and_classes.txt``."""
    classes: dict[str, str] = {}
    lists: dict[str, list[str]] = {"object": [], "live": []}
    section = None
    for raw in text.splitlines():
        line = raw.strip()
        lowered = line.lower()
        if lowered == "classes":
            section = "classes"
        elif lowered == "object prompts":
            section = "object"
        elif lowered == "live subject prompts":
            section = "live"
        elif section == "classes" and "," in line and lowered != "subject_name,class":
            subject, cls = (part.strip() for part in line.split(",", 1))
            if subject and cls:
                classes[subject] = cls
        elif section in lists:
            match = _PROMPT_LINE.match(line)
            if match:
                lists[section].append(match.group(2))
    return classes, lists["object"], lists["live"]


def _fill_prompt(template: str, cls: str, unique_token: str = "") -> str:
    """The prompt with the unique token (``{0}``) and the class (``{1}``) filled in, spaces collapsed."""
    return " ".join(template.replace("{0}", unique_token).replace("{1}", cls).split())


#: stands for the unique token while a prompt is normalised (letters only, so normalize_text keeps it whole)
_TOKEN_MARK = "qqtokenslotqq"


def _prompt_words(template: str, cls: str) -> list[str]:
    """The prompt's normalised words with the class filled in and :data:`_TOKEN_MARK` where the token goes."""
    return normalize_text(template.replace("{0}", f" {_TOKEN_MARK} ").replace("{1}", cls)).split()


def _spells(words: list[str], pattern: list[str], token: list[str] | None) -> bool:
    """Whether a file name's words spell the prompt ``pattern``: without the token, or with ``token`` in its
    place (``None``: any one word there, so ``a sks backpack`` is ``a {0} backpack``)."""
    if words == [w for w in pattern if w != _TOKEN_MARK]:
        return True
    if token is None:
        return (_TOKEN_MARK in pattern and len(words) == len(pattern)
                and all(w == p for w, p in zip(words, pattern) if p != _TOKEN_MARK))
    return bool(token) and words == [part for w in pattern for part in (token if w == _TOKEN_MARK else [w])]


def _prompt_index(stem: str, patterns: list[list[str]], unique_token: str = "") -> int | None:
    """The prompt a generated file belongs to: by a leading index, else by its text (``patterns[i]``: prompt
    i's words from :func:`_prompt_words`), without the unique token, with ``unique_token``, or, when none is
    given, with any one word in the token's place when that fits exactly one prompt; None if neither."""
    match = _INDEXED.match(stem)
    if match:
        index = int(match.group(1))
        return index if index < len(patterns) else None
    words = normalize_text(_SAMPLE_SUFFIX.sub("", stem)).split()
    token = normalize_text(unique_token).split()
    exact = [i for i, pattern in enumerate(patterns) if _spells(words, pattern, token)]
    if exact or token:
        return exact[0] if exact else None
    loose = [i for i, pattern in enumerate(patterns) if _spells(words, pattern, None)]
    return loose[0] if len(loose) == 1 else None


def load_dreambooth(root: str | Path, out: str | Path | None = None, *, methods: Sequence[str | Path] = (),
                    prompts_file: str = "prompts_and_classes.txt", unique_token: str = "",
                    live_classes: Sequence[str] = _LIVE_CLASSES, dataset: str = "dreambooth") -> LoaderResult:
    """A manifest for DreamBooth generations: one item per (subject, prompt), one edit per generated image.

    ``root`` is the dataset folder (subject folders + ``prompts_and_classes.txt``); ``methods`` the
    models' folders (``DIR`` or ``NAME=DIR``) with ``<subject>/<file>`` inside.
    """
    root = real_folder(root, "DreamBooth dataset folder")
    out = manifest_path(out, root, methods, "DreamBooth model folder", "dreambooth")
    path = inside(root, prompts_file, "prompts and classes file")
    if not path.is_file():
        raise InputError(f"DreamBooth: {path} not found (the dataset's prompts_and_classes.txt)")
    try:
        classes, object_prompts, live_prompts = _parse_prompts_and_classes(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as exc:
        raise InputError(f"DreamBooth: {path} is not UTF-8 text ({exc})") from None
    if not classes or not (object_prompts or live_prompts):
        raise InputError(f"DreamBooth: {path} has no 'Classes' section (subject_name,class lines) or no prompt list "
                         "('Object Prompts' / 'Live Subject Prompts' with 'a {0} {1} ...'.format(...) lines)")
    folders = method_folders(methods, "DreamBooth model folder", out)
    if not folders:
        raise InputError("DreamBooth: give at least one model's folder of generated images (--method-dir DIR or "
                         "NAME=DIR), laid out as <subject>/<prompt index or prompt>.png")
    unmatched = Unmatched()
    live = {c.strip().lower() for c in live_classes}
    prompts = {subject: live_prompts if cls.lower() in live and live_prompts else object_prompts
               for subject, cls in classes.items()}
    for name, folder in folders:
        for child in sorted(p.name for p in folder.iterdir() if p.is_dir()):
            if child not in classes:
                unmatched.add(f"{name}: subject folders not in the class list (not used)", child)
        for file in image_files(folder):
            unmatched.add(f"{name}: images outside a subject folder (not used)", file.name)
    items = _items(root, classes, prompts, live, folders, out, unique_token, dataset, unmatched)
    return write_items(items, out, unmatched)


def _generated(folder: Path | None, patterns: list[list[str]], unique_token: str, name: str, subject: str,
               unmatched: Unmatched) -> dict[int, list[Path]]:
    by_prompt: dict[int, list[Path]] = {}
    if folder is None or not folder.is_dir():
        return by_prompt
    for file in image_files(folder):
        index = _prompt_index(file.stem, patterns, unique_token)
        if index is None:
            unmatched.add(f"{name}: generated files that match no prompt (not used)", f"{subject}/{file.name}")
            continue
        by_prompt.setdefault(index, []).append(file)
    return by_prompt


def _subject_folder(folder: Path, subject: str, name: str, unmatched: Unmatched) -> Path | None:
    try:
        return inside(folder, subject, f"{name} subject folder")
    except InputError as exc:  # a symlink out of the model's folder
        unmatched.add(f"{name}: subject folders refused (not used)", str(exc))
        return None


def _items(root: Path, classes: dict[str, str], prompts: dict[str, list[str]], live: set[str],
           folders: list[tuple[str, Path]], out: Path, unique_token: str, dataset: str,
           unmatched: Unmatched) -> Iterator[dict[str, Any]]:
    from ..manifest import relative_inside

    for subject, cls in classes.items():
        try:
            photos_dir = inside(root, subject, "subject folder")
        except InputError as exc:
            unmatched.add("subject names refused (not used)", str(exc))
            continue
        photos = image_files(photos_dir) if photos_dir.is_dir() else []
        if not photos:
            unmatched.add("subjects without photos (not used)", subject)
            continue
        filled = [_fill_prompt(template, cls, unique_token) for template in prompts[subject]]
        patterns = [_prompt_words(template, cls) for template in prompts[subject]]
        generated = {name: _generated(_subject_folder(folder, subject, name, unmatched), patterns, unique_token,
                                      name, subject, unmatched) for name, folder in folders}
        for index, target in enumerate(filled):
            edits = [edit for name, _ in folders for file in generated[name].get(index, [])
                     if (edit := edit_entry(file, out, name, unmatched)) is not None]
            for name, _ in folders:
                if index not in generated[name]:
                    unmatched.add(f"{name}: no generated image", f"{subject} / {target!r}")
            if not edits:
                unmatched.add("prompts with no generated image from any model (not written)", f"{subject} #{index}")
                continue
            yield {"id": f"{subject}-{index:02d}-{slug(target, 40)}", "dataset": dataset,
                   "source": relative_inside(photos[0], out.parent, "subject photo"), "target_text": target,
                   "source_text": f"a photo of {with_article(cls)}", "edits": edits,
                   "meta": {"benchmark": "dreambooth", "subject": subject, "class": cls, "prompt_index": index,
                            "live": cls.lower() in live}}
