"""The HATIE tab, among the Evaluate tab's results: HATIE's criteria for every edit of the session's report.
:func:`build` lays it out (:mod:`.layout`; the Evaluate layout calls it), :func:`wire` connects its button
(:mod:`.wiring`) to the handler of :mod:`.handlers`."""

from .handlers import HatieContext
from .layout import HatieTab, build
from .wiring import wire

__all__ = ["HatieContext", "HatieTab", "build", "wire"]
