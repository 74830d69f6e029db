"""Accuracy of a parser on a labelled set of instructions (JSON lines), per category.

Each line: ``{"id", "category", "instruction", "o1", "o2", "size_state", "position_state",
"reference"}`` for an instruction that must be parsed, or ``{"id", "category", "instruction",
"refuse": true}`` for one that must be refused. Three scores per category:

* **objects + size**: o1, o2 and the size state all equal the label (phrases compared after
  :func:`~.parsed.clean_phrase`);
* **position**: the position state and its reference equal the label;
* **refused**: for refusal lines, the parser raised :class:`InstructionParseError`.

A parse the parser refuses counts as wrong on both scores; a refusal it parses counts as wrong.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InstructionParseError
from .parsed import ParsedInstruction, clean_phrase


def load_labelled(path: str | Path) -> list[dict[str, Any]]:
    rows = []
    for number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), start=1):
        if line.strip():
            row = json.loads(line)
            if not isinstance(row, dict) or "instruction" not in row or "category" not in row:
                raise ValueError(f"{path}:{number}: each line needs 'instruction' and 'category'")
            rows.append(row)
    return rows


@dataclass
class CategoryScore:
    total: int = 0
    objects_size: int = 0
    position: int = 0
    refusals: int = 0
    refused: int = 0

    def add(self, other: CategoryScore) -> None:
        for name in ("total", "objects_size", "position", "refusals", "refused"):
            setattr(self, name, getattr(self, name) + getattr(other, name))


@dataclass
class Evaluation:
    """Per-category counts and the lines that were wrong (for reading, not for tuning)."""

    categories: dict[str, CategoryScore] = field(default_factory=dict)
    mistakes: list[str] = field(default_factory=list)

    @property
    def overall(self) -> CategoryScore:
        total = CategoryScore()
        for score in self.categories.values():
            total.add(score)
        return total

    def rates(self) -> dict[str, float]:
        o = self.overall
        parsed = o.total - o.refusals
        return {"objects_size": o.objects_size / parsed if parsed else 1.0,
                "position": o.position / parsed if parsed else 1.0,
                "refused": o.refused / o.refusals if o.refusals else 1.0}

    def table(self) -> str:
        """A Markdown table: one row per category, then all."""
        lines = ["| category | n | objects + size | position | refused |", "| --- | --- | --- | --- | --- |"]

        def row(name: str, s: CategoryScore) -> str:
            parsed = s.total - s.refusals
            def pct(a, b):
                return (f"{a}/{b} ({100 * a / b:.0f} %)" if b else "-")
            return (f"| {name} | {s.total} | {pct(s.objects_size, parsed)} | {pct(s.position, parsed)} | "
                    f"{pct(s.refused, s.refusals)} |")

        lines += [row(name, score) for name, score in sorted(self.categories.items())]
        lines.append(row("**all**", self.overall))
        return "\n".join(lines)


def _same(a: str | None, b: str | None) -> bool:
    return clean_phrase(a) == clean_phrase(b)


def evaluate(rows: Iterable[dict[str, Any]], parse: Callable[[str], ParsedInstruction]) -> Evaluation:
    result = Evaluation()
    for row in rows:
        score = result.categories.setdefault(row["category"], CategoryScore())
        score.total += 1
        try:
            parsed = parse(row["instruction"])
        except InstructionParseError as exc:
            parsed = None
            reason = str(exc)
        if row.get("refuse"):
            score.refusals += 1
            if parsed is None:
                score.refused += 1
            else:
                result.mistakes.append(f"{row['instruction']!r}: should be refused, parsed as {parsed.describe()}")
            continue
        if parsed is None:
            result.mistakes.append(f"{row['instruction']!r}: refused ({reason[:120]})")
            continue
        objects_ok = (_same(parsed.o1, row.get("o1")) and _same(parsed.o2, row.get("o2"))
                      and parsed.size_state == row.get("size_state", "unchanged"))
        position_ok = (parsed.position_state == row.get("position_state", "unchanged")
                       and _same(parsed.reference, row.get("reference")))
        score.objects_size += objects_ok
        score.position += position_ok
        if not (objects_ok and position_ok):
            expected = ParsedInstruction(o1=row.get("o1"), o2=row.get("o2"), size_state=row.get("size_state"),
                                         position_state=row.get("position_state"), reference=row.get("reference"))
            result.mistakes.append(f"{row['instruction']!r}: got {parsed.describe()}; expected {expected.describe()}")
    return result
