"""People's verdicts in published human-vote sets -> the manifest's ``human`` field.

A verdict over an item's candidates becomes ``human.scores`` (one per candidate: its share of the verdict's
credit) and, when one candidate won outright, ``human.preferred``; the published label stays in
``meta.vote`` and its kind in ``meta.vote_kind``. Nothing is dropped: a tie and a "both bad" vote are
items like any other (method-notes.md, "Human-vote sets"):

* a win: the winner 1, the other 0, ``preferred`` = the winner;
* a tie (GenAI-Bench's ``tievote``, EditReward-Bench's ``A=B`` / ``A=B=Good``): 0.5 each, no ``preferred``;
* both bad (``bothbad_vote``, ``A=B=Bad``): 0 each, no ``preferred``;
* a ranking of more than two candidates (``C>A=B>D``): tier t of T tiers scores ``1 - t / (T - 1)``,
  so every pair of the group keeps its order and its ties; ``preferred`` when one candidate heads it.

Equal scores mark a human tie of either kind, which is how ``protocol`` (pair alignment) and ``agreement``
read them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from ...errors import InputError

#: GenAI-Bench's four vote labels (its inference.py) and what each means here.
_ARENA_VOTES: dict[str, str] = {"leftvote": "left", "rightvote": "right", "tievote": "tie", "bothbad_vote": "both_bad"}


@dataclass(frozen=True)
class Verdict:
    """One item's human judgment: scores per candidate, the outright winner (or None), and the vote's kind."""

    scores: tuple[float, ...]
    preferred: int | None
    kind: str  # win | tie | both_bad | ranking

    def human(self) -> dict[str, object]:
        data: dict[str, object] = {"scores": list(self.scores)}
        if self.preferred is not None:
            data["preferred"] = self.preferred
        return data


def arena_verdict(label: str) -> Verdict:
    """GenAI-Bench's ``vote_type`` over (left, right)."""
    kind = _ARENA_VOTES.get(label.strip())
    if kind is None:
        raise InputError(f"vote {label!r} is not one of GenAI-Bench's labels ({', '.join(_ARENA_VOTES)})")
    if kind == "left":
        return Verdict((1.0, 0.0), 0, "win")
    if kind == "right":
        return Verdict((0.0, 1.0), 1, "win")
    return Verdict((0.5, 0.5) if kind == "tie" else (0.0, 0.0), None, kind)


_TIER_SPLIT = re.compile(r"\s*>\s*")


def _tiers(text: str) -> tuple[list[list[str]], str | None]:
    """``C>A=B>D`` -> [[C], [A, B], [D]]; a trailing ``=Good`` / ``=Bad`` of an all-tie is returned apart."""
    text = text.strip().upper().replace(" ", "")
    quality = None
    for suffix in ("=GOOD", "=BAD"):
        if text.endswith(suffix):
            text, quality = text[: -len(suffix)], suffix[1:].lower()
    if "<" in text:
        if ">" in text:
            raise InputError(f"ranking {text!r} mixes '<' and '>'")
        text = ">".join(reversed(text.split("<")))
    tiers = [part.split("=") for part in _TIER_SPLIT.split(text)]
    letters = [letter for tier in tiers for letter in tier]
    if not letters or any(not re.fullmatch(r"[A-Z]", letter) for letter in letters) or len(set(letters)) != len(letters):
        raise InputError(f"ranking {text!r} is not an ordering of candidate letters (A>B, A=B, C>A>B, ...)")
    if quality is not None and len(tiers) != 1:
        raise InputError(f"ranking {text!r}: '=Good' / '=Bad' closes a tie of every candidate only")
    return tiers, quality


def ranking_verdict(text: str, letters: Sequence[str]) -> Verdict:
    """EditReward-Bench's ``ranking`` over candidates named ``letters`` (in the row's candidate order).

    The ranking may name more candidates than the row holds (a group's ranking on one of its pairs): the
    row's candidates keep their relative order. Every candidate of the row must be ranked."""
    tiers, quality = _tiers(text)
    tier_of = {letter: t for t, tier in enumerate(tiers) for letter in tier}
    missing = [letter for letter in letters if letter not in tier_of]
    if missing:
        raise InputError(f"ranking {text!r} does not rank candidate {missing[0]}")
    ranks = [tier_of[letter] for letter in letters]
    distinct = sorted(set(ranks))
    if len(distinct) == 1:  # every candidate of the row tied
        bad = quality == "bad"
        return Verdict(tuple(0.0 if bad else 0.5 for _ in letters), None, "both_bad" if bad else "tie")
    position = {rank: i for i, rank in enumerate(distinct)}
    last = len(distinct) - 1
    scores = tuple(1.0 - position[rank] / last for rank in ranks)
    top = [i for i, rank in enumerate(ranks) if rank == distinct[0]]
    preferred = top[0] if len(top) == 1 else None
    return Verdict(scores, preferred, "win" if len(letters) == 2 else "ranking")


def comparison_letters(value: str | None, count: int) -> list[str]:
    """The candidates' letters: ``AvsC`` names the row's two; else A, B, C ... in column order."""
    if value is None or not str(value).strip():
        return [chr(ord("A") + i) for i in range(count)]
    match = re.fullmatch(r"\s*([A-Za-z])\s*vs\s*([A-Za-z])\s*", str(value))
    if match is None:
        raise InputError(f"comparison {value!r} is not of the form AvsB")
    if count != 2:
        raise InputError(f"comparison {value!r} names two candidates, the row has {count}")
    return [match.group(1).upper(), match.group(2).upper()]
