"""Rating studies in the app: the operator's Study tab and the Explore tab's "Make a study from this slice",
put together here: the components from :mod:`.study_layout`, the handlers from :mod:`.study_handlers`.

The rater page is served by plain routes (:mod:`.study_routes`, the page itself in :mod:`.study_page`).
The operator's tab works only when ``AUGCLIP_STUDY_OPERATOR_TOKEN`` is set and the token is typed in
(:mod:`.study_operator`); without it, studies are created, closed and exported from the CLI
(``python -m augclip_demo study``). Exports are written into the session's work folder
(:class:`~augclip_demo.ui.storage.WorkFolders`: the disk cap and the sweeps cover them).
"""

from __future__ import annotations

from typing import Any

import gradio as gr

from ..config import Settings
from ..explore.shelf import Shelf
from . import study_handlers as on
from .binding import bind
from .storage import WorkFolders
from .study_layout import SliceStudyForm, StudyTab, lay_out_slice_study_form, lay_out_study_tab
from .study_operator import OPERATOR, Operator


def build_study_tab(settings: Settings, *, folders: WorkFolders | None = None,
                    operator: Operator = OPERATOR) -> StudyTab:
    """The Study tab's contents, wired (call inside ``gr.Tab``); exports go into ``folders`` (the app's work
    folders)."""
    tab = lay_out_study_tab()
    _wire_study_tab(on.StudyContext(settings=settings, folders=folders or WorkFolders(), operator=operator), tab)
    return tab


def _wire_study_tab(ctx: on.StudyContext, tab: StudyTab) -> None:
    """Every event of the Study tab (none in the API: the operator's actions are the page's alone)."""
    show = bind(on.show_agreement, ctx)
    tab.refresh.click(show, [tab.token, tab.name, tab.results], tab.out, api_visibility="private")
    tab.live.change(on.follow_answers, tab.live, tab.timer, api_visibility="private")
    tab.timer.tick(show, [tab.token, tab.name, tab.results], tab.out, api_visibility="private")
    tab.add.click(bind(on.add_raters, ctx), [tab.token, tab.name, tab.count], tab.out, api_visibility="private")
    tab.close.click(bind(on.close_study, ctx), [tab.token, tab.name], tab.out, api_visibility="private")
    tab.export.click(bind(on.export_judgments, ctx), [tab.token, tab.name], [tab.files, tab.out],
                     api_visibility="private")


def slice_study_control(settings: Settings, state: gr.State, shelf: Shelf,
                        operator: Operator = OPERATOR) -> SliceStudyForm:
    """The Explore tab's "Make a study from this slice" (call inside the tab), wired: the operator token, a
    name and the design; the study is made over the active slice's edits (``state``: the tab's state, holding
    the open file's key and the active slice; ``shelf``: the tab's :class:`~augclip_demo.explore.shelf.Shelf`)."""
    form = lay_out_slice_study_form()
    _wire_slice_study_form(on.SliceStudyContext(settings=settings, shelf=shelf, operator=operator), form, state)
    return form


def _wire_slice_study_form(ctx: on.SliceStudyContext, form: SliceStudyForm, state: Any) -> None:
    """The form's one event (not in the API either); ``state``: the Explore tab's, read for the open file and
    the active slice."""
    form.make.click(bind(on.make_study_from_slice, ctx), form.inputs(state), form.said, api_visibility="private")
