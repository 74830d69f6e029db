"""What a study asks: its units (pairs of edits of one source, or single edits) and each rater's task list.

Every rater gets ``per_rater`` distinct units: those with the fewest raters so far (ties broken at
random), so raters added one after another spread the judgments evenly and each unit reaches
``per_unit`` judgments once ``ceil(units * per_unit / per_rater)`` raters have joined. The order of
the tasks and, for pairs, which edit is shown on the left, are drawn per rater from the study's seed
and the rater's number (``random.Random``, reproducible). Attention checks repeat ``repeats`` of the
rater's pairs at least :data:`_MIN_REPEAT_GAP` tasks later in the list with the sides swapped (so an
original is drawn from the positions that leave room: a list of n pairs has at most n - 2 repeats); only a rater's first answer on a unit counts
in the statistics and the exports, the repeat measures the rater's own consistency.
"""

from __future__ import annotations

import random
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations

from ..batch.manifest import ManifestItem

#: a repeat is placed at least this many tasks after its original (positions differ by at least this much)
_MIN_REPEAT_GAP = 3


@dataclass(frozen=True)
class Unit:
    """One thing judged: a pair of edits (``edit_b`` set; ``edit_a < edit_b``) or one edit of an item."""

    item_id: str
    edit_a: int
    edit_b: int | None = None


@dataclass(frozen=True)
class Task:
    """A rater's task: the unit, its place in the rater's list, the sides and whether it repeats an earlier task."""

    position: int
    unit: int  # index into the study's units
    swapped: bool  # pairs: edit_b is shown on the left
    repeat_of: int | None = None  # position of the original task


def study_units(items: Sequence[ManifestItem], kind: str,
                only: Mapping[str, Collection[int]] | None = None) -> list[Unit]:
    """Pairs of edits of the same source (every pair of an item's edits) or single edits, in manifest order.

    ``only`` (item id -> edit indices, e.g. the edits of an Explore slice): units over those edits alone."""
    units: list[Unit] = []
    for item in items:
        chosen = range(len(item.edits)) if only is None else sorted(set(only.get(item.id, ())))
        if kind == "2afc":
            units.extend(Unit(item.id, a, b) for a, b in combinations(chosen, 2))
        else:
            units.extend(Unit(item.id, a) for a in chosen)
    return units


def rater_rng(seed: int, rater_number: int) -> random.Random:
    return random.Random(f"augclip-study:{seed}:{rater_number}")


def choose_units(assigned: Sequence[int], per_rater: int, rng: random.Random) -> list[int]:
    """The ``per_rater`` units with the fewest raters so far (``assigned[u]``), ties at random."""
    order = list(range(len(assigned)))
    rng.shuffle(order)
    order.sort(key=lambda u: assigned[u])  # stable: the shuffle breaks ties
    return order[:per_rater]


def task_list(units: Sequence[int], *, pairs: bool, repeats: int, rng: random.Random) -> list[Task]:
    """The rater's tasks: ``units`` in random order with random sides, plus ``repeats`` attention checks."""
    order = list(units)
    rng.shuffle(order)
    tasks: list[tuple[int, bool, int | None]] = [(unit, pairs and rng.random() < 0.5, None) for unit in order]
    # an original at o can have its repeat at o + gap or later only if o + gap <= len(order) (the list's end)
    room = max(0, len(order) - _MIN_REPEAT_GAP + 1)
    if pairs and repeats > 0 and room > 0:
        originals = sorted(rng.sample(range(room), min(repeats, room)))
        for original in reversed(originals):  # insert from the back so earlier positions stay valid
            unit, swapped, _ = tasks[original]
            place = rng.randint(original + _MIN_REPEAT_GAP, len(tasks))
            tasks.insert(place, (unit, not swapped, original))
            # a later insertion (an earlier original's repeat, at a place past that original) moves this
            # original and its repeat together, or only the repeat: the gap never shrinks
    # positions: originals are referenced by the unit's first occurrence
    first_seen: dict[int, int] = {}
    out = []
    for position, (unit, swapped, repeat) in enumerate(tasks):
        if repeat is None:
            first_seen.setdefault(unit, position)
            out.append(Task(position, unit, swapped))
        else:
            out.append(Task(position, unit, swapped, repeat_of=first_seen.get(unit)))
    return out
