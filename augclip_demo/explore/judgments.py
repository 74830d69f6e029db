"""Human judgments from a rating study (:mod:`augclip_demo.study`) in place of the recorded ones.

The study package's own export (:func:`augclip_demo.study.exchange.export_lines`, the lines ``study export``
writes) is what is read, never its tables; the reading is the app's (:class:`augclip_demo.ui.explore.judgments.
StudyReader`: this package sits beside the study package, not above it), the conversion is here. A rating study gives each item's per-edit mean ratings (``scores``); a
2AFC study gives majority verdicts on pairs of an item's edits, and an item's *choice* (``preferred``) is the
edit the raters preferred to every other edit of the item it was paired with, covering all of them (with two
edits, the pair's verdict). An item without such an edit (a cycle, an even split, a pair not yet judged) has
no choice, and is counted in :attr:`StudyJudgments.undecided`.

The judgments are matched to the results by item id and replace the recorded ones on every edit of the
store's view (:meth:`augclip_demo.explore.store.ResultsStore.with_judgments`): an item the study did not
judge has no human value there.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol


@dataclass
class StudyJudgments:
    """One study question's judgments per item id, in the manifest's ``human`` form."""

    label: str  # "study NAME (question)", for people
    kind: str  # "2afc" or "rating"
    human: dict[str, dict[str, Any]] = field(default_factory=dict)  # item id -> {"preferred": i} or {"scores": [...]}
    undecided: int = 0  # 2AFC items with judged pairs but no edit preferred to all the others

    @property
    def key(self) -> str:
        return self.label


def judgments_from_export(lines: Sequence[dict[str, Any]], kind: str, label: str) -> StudyJudgments:
    """The per-item judgments of a study's export lines (``kind`` "2afc" or "rating"; see the module doc)."""
    found = StudyJudgments(label, kind)
    if kind != "2afc":
        found.human = {str(line["id"]): dict(line["human"]) for line in lines if line.get("human")}
        return found
    beaten: dict[str, dict[int, set[int]]] = defaultdict(lambda: defaultdict(set))  # item -> winner -> losers
    paired: dict[str, dict[int, set[int]]] = defaultdict(lambda: defaultdict(set))  # item -> edit -> partners
    for line in lines:
        study = (line.get("meta") or {}).get("study") or {}
        item, (a, b) = str(study["item"]), study["edits"]
        paired[item][a].add(b)
        paired[item][b].add(a)
        verdict = (line.get("human") or {}).get("preferred")
        if verdict in (0, 1):
            winner, loser = (a, b) if verdict == 0 else (b, a)
            beaten[item][winner].add(loser)
    for item, partners in paired.items():
        others = set(partners)
        winners = [edit for edit, losers in beaten[item].items() if losers == others - {edit}]
        if len(winners) == 1:
            found.human[item] = {"preferred": winners[0]}
        else:
            found.undecided += 1
    return found


class JudgmentReader(Protocol):
    """Where a :class:`~augclip_demo.explore.shelf.Shelf` gets other judgments from (the app gives a study
    database's reader)."""

    def choices(self) -> list[str]:
        """Labels of the sources offered (e.g. "study NAME (question)")."""
        ...

    def read(self, label: str) -> StudyJudgments:
        """The judgments of an offered label (anything else: :class:`InputError`)."""
        ...
