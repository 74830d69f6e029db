"""Rating studies in the app: :func:`wire` connects the operator's Study tab (:mod:`.layout`) to its handlers
(:mod:`.handlers`), and :func:`wire_slice_form` the Explore tab's "Make a study from this slice".

The rater page is served by plain routes (:mod:`.routes`, the page itself in :mod:`.page`). The operator's tab
works only when ``AUGCLIP_STUDY_OPERATOR_TOKEN`` is set and the token is typed in (:mod:`.operator`); without
it, studies are created, closed and exported from the CLI (``python -m augclip_demo study``). Exports are
written into the session's work folder (:class:`~augclip_demo.ui.storage.WorkFolders`: the disk cap and the
sweeps cover them).
"""

from __future__ import annotations

from ..binding import bind
from . import handlers as on


def wire(ctx: on.StudyContext) -> None:
    """Every event of the Study tab (none in the API: the operator's actions are the page's alone)."""
    tab = ctx.tab
    show, report = bind(on.show_agreement, ctx), [tab.token, tab.name, tab.results]
    # the button, a results file once its upload ends (a click during the upload reads no file), and the
    # 30-second refresh while it is on
    for trigger in (tab.refresh.click, tab.results.upload, tab.timer.tick):
        trigger(show, report, tab.out, api_visibility="private")
    tab.live.change(on.follow_answers, tab.live, tab.timer, api_visibility="private")
    tab.add.click(bind(on.add_raters, ctx), [tab.token, tab.name, tab.count], tab.out, api_visibility="private")
    tab.close.click(bind(on.close_study, ctx), [tab.token, tab.name], tab.out, api_visibility="private")
    tab.export.click(bind(on.export_judgments, ctx), [tab.token, tab.name], [tab.files, tab.out],
                     api_visibility="private")
    # the token typed (Enter, or leaving the box): the server's studies listed for the pick
    listing = bind(on.list_studies, ctx)
    for typed in (tab.token.submit, tab.token.blur):
        typed(listing, [tab.token, tab.name], [tab.name, tab.out], api_visibility="private")


def wire_slice_form(ctx: on.SliceStudyContext) -> None:
    """The form's one event (not in the API either): the study is made over the Explore tab's active slice."""
    form = ctx.tab
    form.make.click(bind(on.make_study_from_slice, ctx), form.make_inputs, form.said, api_visibility="private")
