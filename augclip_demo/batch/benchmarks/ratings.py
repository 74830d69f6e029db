"""ImagenHub's human ratings (``eval/human_ratings/<task>/<task>_rater<k>.tsv``) -> per-edit human scores.

Each rater's file is a TSV: a ``uid`` column (the output's file name, ``sample_<img_id>_<turn_index>.jpg``)
and one column per model, each cell ``[SC, PQ]``: semantic consistency and perceptual quality, each 0,
0.5 or 1 (ImagenHub's rating guide). ImagenHub's overall score is their geometric mean ``sqrt(SC * PQ)``
(its AnalyzeHumanEval notebook); an edit's human score here is the mean over the raters who rated it of
the chosen part (``overall``, ``sc`` or ``pq``). Every part stays in ``meta.ratings``.
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from ...choices import RATING_PARTS
from ...errors import InputError

_VALUES = (0.0, 0.5, 1.0)


@dataclass(frozen=True)
class Rated:
    """One edit's ratings: (SC, PQ) per rater who rated it, and the score the manifest takes."""

    pairs: tuple[tuple[float, float], ...]
    score: float

    def to_dict(self) -> dict[str, object]:
        return {"sc": [sc for sc, _ in self.pairs], "pq": [pq for _, pq in self.pairs],
                "overall": [math.sqrt(sc * pq) for sc, pq in self.pairs], "raters": len(self.pairs)}


@dataclass
class Ratings:
    """Every rater's (SC, PQ) per (output stem, model)."""

    part: str
    files: list[str] = field(default_factory=list)
    cells: dict[tuple[str, str], list[tuple[float, float]]] = field(default_factory=dict)

    def lookup(self, stem: str, model: str) -> Rated | None:
        pairs = self.cells.get((stem, model))
        if not pairs:
            return None
        values = [_part(sc, pq, self.part) for sc, pq in pairs]
        return Rated(tuple(pairs), sum(values) / len(values))

    def rows(self) -> Iterator[str]:
        yield from dict.fromkeys(stem for stem, _ in self.cells)

    def describe(self) -> str:
        models = sorted({model for _, model in self.cells})
        return (f"{len(self.files)} rater file(s), {len(set(self.rows()))} rated outputs of {len(models)} model(s) "
                f"({', '.join(models)}); each edit's human score is the raters' mean {self.part} "
                + ("(sqrt(SC x PQ), ImagenHub's overall)" if self.part == "overall" else ""))


def _part(sc: float, pq: float, part: str) -> float:
    return math.sqrt(sc * pq) if part == "overall" else sc if part == "sc" else pq


def _cell(text: str, where: str) -> tuple[float, float]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        value = None
    if (not isinstance(value, list) or len(value) != 2
            or any(isinstance(v, bool) or not isinstance(v, (int, float)) or float(v) not in _VALUES for v in value)):
        raise InputError(f"{where}: {text!r} is not an ImagenHub rating [SC, PQ] with values 0, 0.5 or 1")
    return float(value[0]), float(value[1])


def read_ratings(paths: Sequence[str | Path], part: str = "overall") -> Ratings:
    """Every rater file's cells; a file or cell that is not ImagenHub's layout is an error naming it."""
    if part not in RATING_PARTS:
        raise InputError(f"unknown rating {part!r}; choose one of {', '.join(RATING_PARTS)}")
    ratings = Ratings(part)
    for entry in paths:
        path = Path(entry).expanduser()
        if not path.is_file():
            raise InputError(f"ratings file {path}: not found")
        with open(path, encoding="utf-8", newline="") as handle:
            rows = list(csv.reader(handle, delimiter="\t"))
        if not rows or len(rows[0]) < 2 or rows[0][0].strip().lower() != "uid":
            raise InputError(f"ratings file {path}: the first line must be 'uid' then one column per model "
                             "(ImagenHub's rater TSV)")
        models = [name.strip() for name in rows[0][1:]]
        for number, row in enumerate(rows[1:], start=2):
            if not row or not row[0].strip():
                continue
            if len(row) != len(models) + 1:
                raise InputError(f"ratings file {path} line {number}: {len(row)} cells, the header has "
                                 f"{len(models) + 1}")
            stem = PurePosixPath(row[0].strip()).stem
            for model, text in zip(models, row[1:]):
                pair = _cell(text.strip(), f"ratings file {path} line {number} ({model})")
                ratings.cells.setdefault((stem, model), []).append(pair)
        ratings.files.append(str(path))
    return ratings
