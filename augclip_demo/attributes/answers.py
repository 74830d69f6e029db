"""Turning a model's answer into a clean attribute list, and merging several sampled lists.

Models answer in many shapes: a Python list (the prompts ask for one), a JSON array, the list in a
code fence, a numbered or bulleted list, any of those wrapped in stray prose ("Sure! Here are ...").
:func:`parse_attribute_list` accepts all of them; :func:`clean_attributes` strips, removes
near-verbatim duplicates (case- and punctuation-insensitive) and empties, and caps the count.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ..io import MAX_JSON_DEPTH, json_depth

#: Default cap per attribute set. The paper tried 10, 20 and 30 (Table 8) and found that not
#: imposing a small fixed number works best; 30 is the largest count it tested.
DEFAULT_MAX_ATTRIBUTES = 30
#: Items longer than this are not attributes (a paragraph that slipped through); they are dropped.
_MAX_ATTRIBUTE_CHARS = 200

_FENCE = re.compile(r"```[A-Za-z0-9_+-]*\s*\n?(.*?)```", re.DOTALL)
_BULLET = re.compile(r"^\s*(?:[-*\u2022\u2023\u25e6\u2013\u2014+]|\(?\d{1,3}[.):]|\(?[a-zA-Z][.)])\s+(.*\S)\s*$")
_HAS_LETTER = re.compile(r"[^\W\d_]")  # an attribute has at least one letter ("1", "--" are debris)
_SMART_QUOTES = str.maketrans({"\u201c": '"', "\u201d": '"', "\u201e": '"', "\u2033": '"',
                               "\u2018": "'", "\u2019": "'", "\u201a": "'"})


def parse_attribute_list(text: str) -> list[str]:
    """Every list item found in ``text`` (uncleaned, in order), or ``[]`` when there is no list.

    Tried in order: the contents of code fences, then the whole text; in each, a bracketed list
    (JSON, then Python literal, then the quoted strings inside the brackets), then numbered or
    bulleted lines, then (only for a fenced block) one item per line.
    """
    if not isinstance(text, str) or not text.strip():
        return []
    text = text.translate(_SMART_QUOTES)
    fenced = [block for block in _FENCE.findall(text) if block.strip()]
    for block in fenced:
        items = _from_brackets(block) or _from_bullets(block) or _from_lines(block)
        if items:
            return items
    unfenced = _FENCE.sub("\n", text) if fenced else text
    return _from_brackets(unfenced) or _from_bullets(unfenced)


def _from_brackets(text: str) -> list[str]:
    """The answer's ``[...]`` list.

    First the widest span that parses as JSON or a Python literal (the outermost list, not an
    ``[ATTRIBUTE]`` placeholder echoed in prose); failing that, a list that is almost valid (an
    unescaped apostrophe inside single quotes, unquoted items) is split on its separators.
    """
    starts = [i for i, ch in enumerate(text) if ch == "["]
    ends = [i for i, ch in enumerate(text) if ch == "]"]
    # The widest spans open at the first brackets and close at the last ones: 64 of each bound the
    # pairs tried (an answer of thousands of brackets would otherwise make billions of them).
    starts, ends = starts[:64], ends[-64:]
    spans = sorted(((s, e) for s in starts for e in ends if e > s), key=lambda se: se[0] - se[1])[:200]
    for start, end in spans:
        items = _literal_list(text[start:end + 1])
        if items:
            return items
    for start in starts:  # the first "[" that opens a list of quoted items, up to the last "]"
        if not re.match(r"\s*[\"']", text[start + 1:]):
            continue
        end = max((e for e in ends if e > start), default=-1)
        if end > start:
            return _split_loose(text[start + 1:end])
    if len(starts) == 1 and len(ends) == 1 and ends[0] > starts[0]:  # [red car, blue sky]
        return _split_loose(text[starts[0] + 1:ends[0]])
    return []


def _split_loose(inner: str) -> list[str]:
    inner = inner.strip()
    if re.match(r"[\"']", inner):
        parts = re.split(r"[\"']\s*,\s*[\"']", inner)
    else:
        parts = inner.split(",")
    return [p.strip().strip("\"'") for p in parts if p.strip().strip("\"'")]


def _literal_list(chunk: str) -> list[str] | None:
    if json_depth(chunk) > MAX_JSON_DEPTH:  # Python's parser needs gigabytes for thousands of nested brackets
        return None
    for loader in (json.loads, ast.literal_eval):
        try:
            value = loader(chunk)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
        if isinstance(value, (list, tuple)):
            flat = list(_flatten(value))
            if flat:
                return flat
    return None


def _flatten(value: object) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _flatten(item)
    elif isinstance(value, dict):  # [{"attribute": "..."}] and similar
        for item in value.values():
            yield from _flatten(item)


def _from_bullets(text: str) -> list[str]:
    items = []
    for line in text.splitlines():
        match = _BULLET.match(line)
        if match:
            items.append(match.group(1))
    return items


def _from_lines(text: str) -> list[str]:
    return [line for line in (ln.strip() for ln in text.splitlines()) if line]


def normalize_key(text: str) -> str:
    """Case- and punctuation-insensitive identity of an attribute (for de-duplication)."""
    text = re.sub(r"[^\w\s]", " ", text.casefold())
    return re.sub(r"\s+", " ", text).strip()


def _clean_attribute(text: str) -> str:
    """Strip whitespace, wrapping quotes, list debris and trailing punctuation from one item."""
    text = re.sub(r"\s+", " ", str(text).translate(_SMART_QUOTES)).strip()
    previous = None
    while previous != text:
        previous = text
        text = text.strip().strip("\"'`").strip()
        text = re.sub(r"^(?:[-*\u2022]\s+|\d{1,3}[.)]\s+)", "", text)
        text = text.rstrip(" ,;.:")
        text = text.replace("**", "").replace("__", "")  # markdown bold from chatty answers
    return text


def clean_attributes(items: Iterable[str], max_items: int | None = DEFAULT_MAX_ATTRIBUTES) -> list[str]:
    """Cleaned, de-duplicated (first spelling wins), non-empty items, at most ``max_items``."""
    seen: set[str] = set()
    out: list[str] = []
    for item in items:
        text = _clean_attribute(item)
        key = normalize_key(text)
        if not _HAS_LETTER.search(key) or key in seen or len(text) > _MAX_ATTRIBUTE_CHARS:
            continue
        seen.add(key)
        out.append(text)
        if max_items is not None and len(out) >= max_items:
            break
    return out


@dataclass(frozen=True)
class MergedAttributes:
    """Attributes merged over samples, most frequent first, with how many samples named each."""

    items: list[str]
    counts: list[int]


def merge_samples(samples: Sequence[Sequence[str]], max_items: int | None = DEFAULT_MAX_ATTRIBUTES) -> MergedAttributes:
    """Union of several sampled lists, ordered by frequency (Sec. 4.1: frequency is importance).

    Each sample votes once per (normalised) attribute; ties keep first-appearance order, and the
    first spelling seen is kept. The cap drops the least frequent attributes first.
    """
    counts: dict[str, int] = {}
    first_text: dict[str, str] = {}
    order: dict[str, int] = {}
    for sample in samples:
        for text in clean_attributes(sample, max_items=None):
            key = normalize_key(text)
            if key not in counts:
                counts[key] = 0
                first_text[key] = text
                order[key] = len(order)
            counts[key] += 1
    keys = sorted(counts, key=lambda k: (-counts[k], order[k]))
    if max_items is not None:
        keys = keys[:max_items]
    return MergedAttributes(items=[first_text[k] for k in keys], counts=[counts[k] for k in keys])
