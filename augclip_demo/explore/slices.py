"""Slices: a named filter over the opened results that every Explore view follows.

A slice keeps the edits whose item fields (dataset, edit type, run) and edit fields (editing model,
role) are among the chosen values (nothing chosen: any) and whose metric values lie in the chosen
ranges (an edit without a value for a ranged metric is left out). Failed items are never in a slice:
they have no values. Views that reason per item (agreement, disagreements) see an item as the edits
of it that are in the slice, so a slice of two models compares those two models on the same items.

Every view reads a slice's human judgments the same way, through :func:`slice_edits`: an item's 2AFC
choice counts only when the chosen edit is in the slice (``slice_preferred``); a choice of an edit outside
it is no choice, so that item gives none of its edits a 2AFC value (neither a win nor a loss) in the
leaderboard, the agreement tables or the disagreements. Per-edit scores are the edit's own and stay.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import InputError
from .store import ResultsStore, metric_column

#: the most characters of a slice name, values per field and ranges a slice may hold (a web client sends them)
MAX_NAME = 80
_MAX_VALUES = 200


@dataclass(frozen=True)
class Slice:
    name: str = "all"
    datasets: tuple[str, ...] = ()
    models: tuple[str, ...] = ()
    roles: tuple[str, ...] = ()
    edit_types: tuple[str, ...] = ()
    runs: tuple[int, ...] = ()
    ranges: Mapping[str, tuple[float | None, float | None]] = field(default_factory=dict)

    def where(self, store: ResultsStore) -> tuple[str, list[Any]]:
        """The SQL condition (with its parameters) selecting this slice's edits of ``store``."""
        parts, params = ["status = 'ok'"], []
        for column, values in (("dataset", self.datasets), ("model", self.models), ("role", self.roles),
                               ("edit_type", self.edit_types), ("run", self.runs)):
            if values:
                parts.append(f"{column} IN ({', '.join('?' for _ in values)})")
                params.extend(values)
        for key, (low, high) in self.ranges.items():
            if key not in store.metrics:
                raise InputError(f"slice {self.name!r}: no metric {key!r} in these results; present: "
                                 f"{', '.join(store.metrics)}")
            column = metric_column(key)
            parts.append(f"{column} IS NOT NULL")
            if low is not None:
                parts.append(f"{column} >= ?")
                params.append(float(low))
            if high is not None:
                parts.append(f"{column} <= ?")
                params.append(float(high))
        return " AND ".join(parts), params

    def describe(self) -> str:
        """The slice in words (for captions and the report)."""
        parts = []
        for label, values in (("dataset", self.datasets), ("model", self.models), ("role", self.roles),
                              ("edit type", self.edit_types), ("run", self.runs)):
            if values:
                parts.append(f"{label} in {', '.join(str(v) for v in values)}")
        for key, (low, high) in self.ranges.items():
            parts.append(f"{'' if low is None else f'{low:g} <= '}{key}{'' if high is None else f' <= {high:g}'}")
        return f"{self.name}: " + ("; ".join(parts) if parts else "every scored edit")

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "datasets": list(self.datasets), "models": list(self.models),
                "roles": list(self.roles), "edit_types": list(self.edit_types), "runs": list(self.runs),
                "ranges": {key: list(bounds) for key, bounds in self.ranges.items()}}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False)


def slice_edits(store: ResultsStore, active: Slice) -> tuple[str, list[Any]]:
    """The slice's edits as a table expression for ``FROM`` (with its parameters): every column of the store's
    table plus ``slice_preferred``, the item's chosen edit when that edit is in the slice, else NULL (see the
    module doc: the one reading of the human choice every view uses)."""
    where, params = active.where(store)
    chosen_inside = "bool_or(edit = human_preferred) OVER (PARTITION BY item)"
    return (f"(SELECT *, CASE WHEN {chosen_inside} THEN human_preferred END AS slice_preferred "
            f"FROM {store.table} WHERE {where})", params)


def _texts(values: Any, what: str) -> tuple[str, ...]:
    if values is None:
        return ()
    if isinstance(values, str) or not isinstance(values, Sequence):
        raise InputError(f"slice {what}: expected a list of values")
    if len(values) > _MAX_VALUES:
        raise InputError(f"slice {what}: at most {_MAX_VALUES} values")
    return tuple(str(v)[:MAX_NAME * 4] for v in values)


def _bound(value: Any, what: str) -> float | None:
    if value is None or value == "":
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise InputError(f"slice range {what}: {value!r} is not a number") from None
    if not math.isfinite(number):
        raise InputError(f"slice range {what}: must be a finite number")
    return number


def make_slice(name: str = "all", *, datasets: Any = None, models: Any = None, roles: Any = None,
               edit_types: Any = None, runs: Any = None,
               ranges: Mapping[str, Sequence[Any]] | None = None) -> Slice:
    """A checked slice from loosely typed values (form fields, a saved JSON): bounded, finite, named."""
    name = (name or "").strip() or "unnamed"
    if len(name) > MAX_NAME:
        raise InputError(f"a slice name has at most {MAX_NAME} characters")
    checked: dict[str, tuple[float | None, float | None]] = {}
    for key, bounds in (ranges or {}).items():
        if len(bounds) != 2:
            raise InputError(f"slice range {key}: give [low, high] (either may be empty)")
        low, high = _bound(bounds[0], f"{key} low"), _bound(bounds[1], f"{key} high")
        if low is not None and high is not None and low > high:
            raise InputError(f"slice range {key}: low {low:g} is above high {high:g}")
        if low is not None or high is not None:
            checked[str(key)] = (low, high)
    if len(checked) > _MAX_VALUES:
        raise InputError(f"a slice has at most {_MAX_VALUES} ranges")
    try:
        run_numbers = tuple(int(v) for v in _texts(runs, "runs"))
    except ValueError:
        raise InputError("slice runs: give run numbers") from None
    return Slice(name=name, datasets=_texts(datasets, "datasets"), models=_texts(models, "models"),
                 roles=_texts(roles, "roles"), edit_types=_texts(edit_types, "edit types"), runs=run_numbers,
                 ranges=checked)


def slice_from_json(text: str) -> Slice:
    """A slice saved with :meth:`Slice.to_json`."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"saved slice: not valid JSON ({exc.msg})") from None
    if not isinstance(data, dict):
        raise InputError("saved slice: expected a JSON object")
    return make_slice(str(data.get("name", "")), datasets=data.get("datasets"), models=data.get("models"),
                      roles=data.get("roles"), edit_types=data.get("edit_types"), runs=data.get("runs"),
                      ranges=data.get("ranges") or {})
