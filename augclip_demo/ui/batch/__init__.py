"""The Batch tab: a manifest and a zip of its images in; per-edit scores, the protocol table and downloads out.
:func:`build` lays it out (:mod:`.layout`), :func:`wire` connects its events (:mod:`.wiring`) to the handlers of
:mod:`.handlers`."""

from .handlers import BatchContext, ExploreHandoff, explore_handoff, follow_demo
from .layout import BatchTab, build
from .wiring import wire

__all__ = ["BatchContext", "BatchTab", "ExploreHandoff", "build", "explore_handoff", "follow_demo", "wire"]
