"""Disagreements: items whose edits two rankings put different winners on top, strongest first.

A ranking is a metric's (its values oriented so that higher is better) or the humans' (the 2AFC choice when the
chosen edit is in the slice, else the highest human score among the slice's edits: the reading of
:func:`augclip_demo.explore.slices.slice_edits`). Over the slice's items with at least two edits that both can rank, an item
disagrees when the edits one ranking puts on top and those the other puts on top have none in common (a tie
at the top counts every tied edit as a winner, so a tie never makes a disagreement on its own).

Strength: how far each metric prefers its own winner over the other ranking's, in standard deviations of
that metric over the slice's edits, averaged over the metrics involved (for the humans, only the metric's
margin counts, their choice carries no size). So 2.0 means the metrics' winners are, on average, two
standard deviations apart under the metric that did not pick them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .agreement_matrix import single_run
from .slices import Slice, slice_edits
from .store import ResultsStore, higher_is_better, masked_to_nan, metric_column

HUMAN = "human"
_MAX_LISTED = 500


@dataclass
class Disagreement:
    item: int
    id: str
    dataset: str
    winner_a: str  # the winning edit's model name (index in brackets when two edits share a name)
    winner_b: str
    strength: float
    edit_a: int
    edit_b: int


def _judge_sql(key: str) -> str:
    if key == HUMAN:  # the choice within the slice (slices.slice_edits), else the scores
        return ("CASE WHEN slice_preferred IS NOT NULL THEN CAST(edit = slice_preferred AS DOUBLE) "
                "WHEN has_scores THEN human_score END")
    return metric_column(key)


def disagreements(store: ResultsStore, active: Slice, a: str, b: str, *, limit: int = _MAX_LISTED) -> list[Disagreement]:
    """The slice's items where ``a`` and ``b`` (metric keys or :data:`HUMAN`) pick different winners."""
    single_run(store, active)
    for key in (a, b):
        if key != HUMAN and key not in store.metrics:
            from ..errors import InputError

            raise InputError(f"no metric {key!r} in these results; present: {', '.join(store.metrics)}")
    edits, params = slice_edits(store, active)
    data = store.arrays(f"SELECT item, edit, id, dataset, model, {_judge_sql(a)} AS a, {_judge_sql(b)} AS b FROM "
                        f"{edits} ORDER BY item, edit", params)
    if len(data["item"]) == 0:
        return []
    items = np.asarray(data["item"])
    va = masked_to_nan(data["a"]) * (1 if a == HUMAN or higher_is_better(a) else -1)
    vb = masked_to_nan(data["b"]) * (1 if b == HUMAN or higher_is_better(b) else -1)
    starts = np.flatnonzero(np.r_[True, items[1:] != items[:-1]])
    sizes = np.diff(np.r_[starts, len(items)])
    group = np.repeat(np.arange(len(starts)), sizes)
    complete = (np.add.reduceat(np.isnan(va) | np.isnan(vb), starts) == 0) & (sizes >= 2)
    top_a = va == np.fmax.reduceat(np.nan_to_num(va, nan=-np.inf), starts)[group]
    top_b = vb == np.fmax.reduceat(np.nan_to_num(vb, nan=-np.inf), starts)[group]
    shared = np.add.reduceat(top_a & top_b, starts) > 0
    candidates = np.flatnonzero(complete & ~shared)
    sd_a = np.nanstd(va) if a != HUMAN else np.nan
    sd_b = np.nanstd(vb) if b != HUMAN else np.nan
    found = []
    for g in candidates:
        rows = slice(starts[g], starts[g] + sizes[g])
        win_a = starts[g] + int(np.argmax(top_a[rows]))  # first of the tied winners
        win_b = starts[g] + int(np.argmax(top_b[rows]))
        margins = []
        if a != HUMAN and sd_a > 0:
            margins.append((va[win_a] - va[win_b]) / sd_a)
        if b != HUMAN and sd_b > 0:
            margins.append((vb[win_b] - vb[win_a]) / sd_b)
        strength = float(np.mean(margins)) if margins else 0.0
        found.append(Disagreement(int(items[win_a]), str(data["id"][win_a]), str(data["dataset"][win_a]),
                                  _name(data, win_a), _name(data, win_b), strength,
                                  int(data["edit"][win_a]), int(data["edit"][win_b])))
    found.sort(key=lambda d: (-d.strength, d.item))
    return found[:limit]


def _name(data: dict[str, np.ndarray], row: int) -> str:
    return f"{data['model'][row]} [{int(data['edit'][row])}]"
