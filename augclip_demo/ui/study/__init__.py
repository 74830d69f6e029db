"""Rating studies in the app: the operator's Study tab, the Explore tab's "Make a study from this slice" form
and the rater page's routes. :func:`build` lays the tab out (:mod:`.layout`), :func:`wire` connects its events
(:mod:`.wiring`) to the handlers of :mod:`.handlers`; :func:`study_routes` serves the rater page."""

from .handlers import SliceStudyContext, StudyContext
from .layout import SliceStudyForm, StudyTab, build, build_slice_form
from .operator import OPERATOR, operator_off
from .routes import study_routes
from .wiring import wire, wire_slice_form

__all__ = ["OPERATOR", "SliceStudyContext", "SliceStudyForm", "StudyContext", "StudyTab", "build",
           "build_slice_form", "operator_off", "study_routes", "wire", "wire_slice_form"]
