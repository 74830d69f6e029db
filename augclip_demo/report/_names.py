"""PLACEHOLDER until branch s2-names lands its shortening rule: short, distinct edit names and E1..En ids.

Everything in the views and the HTML report goes through :func:`edit_label`, :func:`short_names`
and :func:`edit_ids`, so swapping this module for the real rule is a one-line import change.
"""

from __future__ import annotations

import os
from collections.abc import Sequence


def edit_ids(count: int) -> list[str]:
    return [f"E{i + 1}" for i in range(count)]


def short_names(names: Sequence[str]) -> list[str]:
    """Names without their common prefix and suffix (kept whole when that would leave one empty)."""
    names = [str(n) for n in names]
    if len(names) < 2:
        return names
    prefix = os.path.commonprefix(names)
    suffix = os.path.commonprefix([n[::-1] for n in names])[::-1]
    cut = [n[len(prefix): len(n) - len(suffix) if suffix else None] for n in names]
    return cut if all(cut) and len(set(cut)) == len(cut) else names


def edit_label(index: int, names: Sequence[str]) -> str:
    return f"E{index + 1} {short_names(names)[index]}"
