"""The Evaluate tab: one source, its edits and the target text in; scores, explanations, BPM, the judge and a
comparison out. :func:`build` lays it out (:mod:`.layout`), :func:`wire` connects its events (:mod:`.wiring`)
to the handlers of :mod:`.handlers`; the work without the page is :mod:`.session`, the rendering :mod:`.views`."""

from .handlers import EvaluateContext
from .layout import EvaluateOffer, EvaluateTab, build, evaluate_offer
from .wiring import chain_later_stages, wire

__all__ = ["EvaluateContext", "EvaluateOffer", "EvaluateTab", "build", "chain_later_stages", "evaluate_offer", "wire"]
