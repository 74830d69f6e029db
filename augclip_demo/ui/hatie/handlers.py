"""What the HATIE tab's button does: :func:`show_hatie`, a top-level function of a :class:`HatieContext`
and the values of its event's inputs, returning the updates (a dict keyed by the tab's components).
:func:`.wiring.wire` binds the context (:func:`..binding.bind`) and connects the event; the
scoring itself is :meth:`augclip_demo.pipeline.Evaluator.add_hatie` on the session's report.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import gradio as gr
import pandas as pd

from ...config import Settings
from ...errors import InputError
from ...hatie.criteria import HatieOptions
from .. import first_contact
from ..guard import scrub_paths, user_facing
from ..shown import superseded
from .layout import AUTO, HELP, HatieTab

Updates = dict[Any, Any]


@dataclass
class HatieContext:
    """What the HATIE handler needs besides its inputs: the settings of a request's CLIP model (the page's
    :func:`..common.page_settings`) and the tab's components (the keys of the updates)."""

    settings_for: Callable[[str | None], Settings]
    tab: HatieTab


def run_hatie(settings: Settings, session: Any, instruction: str, edit_type: str | None) -> list[Any]:
    """HATIE for the session's report (the page's Evaluate result); returns the per-edit results."""
    from ...pipeline import Evaluator

    if session is None or session.report is None:
        raise InputError("Nothing to score yet: press Evaluate first.")
    if session.clip_model != settings.clip_model:
        raise InputError("The CLIP model changed since the last evaluation: press Evaluate to encode with it.")
    if why := first_contact.cannot_run(settings, "hatie"):
        raise InputError(why)
    given = None if not edit_type or edit_type == AUTO else edit_type
    if not (instruction or "").strip() and given is None:
        raise InputError("HATIE needs the editing instruction (under the target text) or an edit type chosen here.")
    report = Evaluator(settings=settings).add_hatie(session.report, (instruction or "").strip() or None,
                                                    edit_type=given, options=HatieOptions())
    return list(report.arrays.hatie)


@user_facing
def show_hatie(ctx: HatieContext, instruction_value, edit_type, clip, state, progress=gr.Progress()) -> Updates:
    """Run HATIE (and the ``/hatie`` endpoint): every edit's criteria as bars and shares, their components as a
    table, the masks they used, and the edit type each was scored as."""
    from ...explain.hatie_panel import component_rows, figure_image, hatie_figure, mask_views, share_figure

    progress(0.05, desc="HATIE: detecting, segmenting, measuring")
    results = run_hatie(ctx.settings_for(clip), state, instruction_value, edit_type)
    if superseded(state):  # an Evaluate or re-score ended while HATIE ran: these criteria are not of the shown edits
        raise InputError("The page shows a newer result than HATIE scored (Evaluate ended while it ran): press Run "
                         "HATIE again to score it.")
    # The E-number and short name, as the score table, gallery and maps name the edit.
    # By position: two uploads may share a file name (one result per edit, in the report's order).
    label = {id(r): name.label for r, name in zip(results, state.report.edit_names())}
    figures = [(figure_image(hatie_figure(r, label[id(r)])), label[id(r)]) for r in results]
    parts = [(figure_image(share_figure(r, label[id(r)])), label[id(r)]) for r in results if r.scores is not None]
    rows = [{"edit": label[id(r)], **row} for r in results for row in component_rows(r)]
    views = [view for r in results for view in mask_views(r, label[id(r)])]
    kinds = "; ".join(f"{label[id(r)]}: {r.edit_type.edit_type or 'none'} ({r.edit_type.reason})" for r in results)
    notes = sorted({n for r in results for n in r.notes})
    text = HELP + f"\n\n**Edit type**: {html.escape(scrub_paths(kinds))}"
    if notes:
        text += "\n\n" + "\n".join(f"- {html.escape(scrub_paths(n))}" for n in notes)
    tab = ctx.tab
    return {tab.info: text, tab.plots: figures, tab.shares: parts or None, tab.components: _rounded(pd.DataFrame(rows)),
            tab.masks: views or None}


def _rounded(frame: pd.DataFrame) -> pd.DataFrame:
    """Values and weights to 4 decimals, shares as percentages (what a reader compares)."""
    out = frame.copy()
    for column in ("value", "weight", "weight in criterion"):
        if column in out:
            out[column] = out[column].map(lambda v: None if v is None or pd.isna(v) else round(float(v), 4))
    if "share" in out:
        out["share"] = out["share"].map(lambda v: "" if v is None or pd.isna(v) else f"{100 * float(v):.1f}%")
    return out
