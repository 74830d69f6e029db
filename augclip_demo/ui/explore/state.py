"""The Explore tab's session state (a dict in a ``gr.State``) and the slice controls' values.

The state holds: ``key`` (the open file, as :meth:`~augclip_demo.explore.shelf.Shelf.store` takes it),
``judgments`` (the chosen source of human judgments), ``uploaded`` (the upload the key came from), ``slices``
(saved slices by name, as JSON), ``active`` (the active slice, as JSON), ``compare`` (the compared slice's name),
``page_items`` / ``page_items2`` (the items of the grids' rows), ``found`` / ``found2`` (the disagreements'
items) and ``inspected`` (the item shown in Inspect).
"""

from __future__ import annotations

from typing import Any

import gradio as gr

from ...explore import Slice, make_slice, slice_from_json

#: the slice's category filters: (ExploreTab field, Slice / store column, label)
CATEGORY_CONTROLS = (("datasets", "dataset", "Dataset"), ("models", "model", "Editing model"),
                     ("roles", "role", "Role"), ("edit_types", "edit_type", "Edit type"), ("runs", "run", "Run"))
NO_RANGE = "(none)"
MAX_SAVED_SLICES = 50  # per session (the page's state lives on the server)


def fresh_state() -> dict[str, Any]:
    return {"key": None, "slices": {}, "active": Slice().to_json(), "page_items": [], "found": []}


def session_state(state: dict[str, Any] | None) -> dict[str, Any]:
    """The session's state, changed in place: the slow steps (agreement) run beside quicker ones (an item
    opened meanwhile), so a handler must never hand back an older copy that would undo another's change."""
    return fresh_state() if state is None else state


def reset_state(state: dict[str, Any] | None) -> dict[str, Any]:
    """A new file: the same state object, emptied."""
    if state is None:
        return fresh_state()
    state.clear()
    state.update(fresh_state())
    return state


def active_slice(state: dict[str, Any]) -> Slice:
    return slice_from_json(state.get("active") or Slice().to_json())


def compared_slice(state: dict[str, Any]) -> Slice | None:
    """The slice chosen in "Compare with", if it is still saved."""
    name = state.get("compare")
    return slice_from_json(state["slices"][name]) if name in state["slices"] else None


def slice_from_controls(name: str, values: list[Any], range_metric: str | None, low: Any, high: Any) -> Slice:
    """The slice the controls describe (``values``: the category controls' in :data:`CATEGORY_CONTROLS` order)."""
    fields = dict(zip((key for key, _, _ in CATEGORY_CONTROLS), values))
    ranges = {range_metric: [low, high]} if range_metric and range_metric != NO_RANGE else {}
    return make_slice(name, ranges=ranges, **fields)


def controls_of(active: Slice) -> list[Any]:
    """The slice controls' values for ``active`` (the inverse of :func:`slice_from_controls`)."""
    (metric, (low, high)) = next(iter(active.ranges.items()), (NO_RANGE, (None, None)))
    return [gr.update(value=list(getattr(active, key))) for key, _, _ in CATEGORY_CONTROLS[:4]] + [
        gr.update(value=[str(r) for r in active.runs]), metric, low, high, active.name]
