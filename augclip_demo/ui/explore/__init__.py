"""The Explore tab: a batch results file as leaderboards, agreement tables, disagreements and an item grid,
following one slice. :func:`build` lays it out (:mod:`.layout`), :func:`wire` connects its events
(:mod:`.wiring`) to the handlers of :mod:`.handlers`; :func:`wire_to_evaluate` hands an inspected item to the
Evaluate tab."""

from .handlers import EVALUATE_FIELDS, ExploreContext, operator_shelf
from .layout import ExploreTab, build
from .wiring import wire, wire_from_batch, wire_to_evaluate

__all__ = ["EVALUATE_FIELDS", "ExploreContext", "ExploreTab", "build", "operator_shelf", "wire", "wire_from_batch",
           "wire_to_evaluate"]
