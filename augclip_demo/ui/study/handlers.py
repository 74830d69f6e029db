"""What the Study tab's events (and the Explore tab's "Make a study from this slice") do: one top-level
function per handler.

Each handler takes its context first (:class:`StudyContext`, :class:`SliceStudyContext`), then the values of
its event's input components, and returns what the page shows: Markdown for the report area, and the export's
files. Every action first checks the operator token (:mod:`.operator`); a refusal or a store error is
shown as its message, with server folders cut. :mod:`.wiring` binds the context and connects the events.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gradio as gr

from ...config import Settings
from ...errors import AugclipError
from ...explore import slice_from_json
from ...explore.shelf import Shelf
from ...study import store
from ...study.agreement import study_agreement
from ...study.exchange import export_csv, export_lines
from ...study.report import format_report, report_tables
from ...study.slices import create_study_from_slice
from ..guard import scrub_paths
from ..storage import WorkFolders
from .layout import SliceStudyForm, StudyTab
from .operator import Operator

EXPORTED = "Exported: the judgments (CSV) and the manifest lines (paths relative to the study's manifest folder)."


@dataclass
class StudyContext:
    """What the Study tab's handlers need besides their inputs."""

    settings: Settings  # the study database: settings.study_db_path
    folders: WorkFolders  # exports go into the session's work folder (the disk cap and the sweeps cover them)
    operator: Operator
    tab: StudyTab | None = None  # the tab's components (None where a handler runs without the page)


@dataclass
class SliceStudyContext:
    """What "Make a study from this slice" needs besides its inputs: the open results come from ``shelf``."""

    settings: Settings
    shelf: Shelf
    operator: Operator
    tab: SliceStudyForm | None = None  # the form's components (None where a handler runs without the page)


# ---------------------------------------------------------------------------------------------- rendering
def _cell(text: str) -> str:
    """``text`` safe in a Markdown table cell: no column break, no HTML tag."""
    return str(text).replace("|", "\\|").replace("<", "&lt;")


def _tables_markdown(tables: list[tuple[str, list[str], list[list[str]]]]) -> str:
    """(title, headers, rows) tables as Markdown, one after the other."""
    blocks = []
    for title, headers, rows in tables:
        lines = [f"**{_cell(title)}**", "", "| " + " | ".join(_cell(h) for h in headers) + " |",
                 "|" + "---|" * len(headers)]
        lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def _message(exc: AugclipError) -> str:
    """An error as the tab shows it: its text, with every server folder cut (paths in a manifest's message)."""
    return scrub_paths(str(exc))


def _picked(study: Any) -> str:
    """The study picked in the tab (the list's value, or a name typed there), checked: a name, not empty."""
    if not isinstance(study, str) or not study.strip():
        raise store.StudyError("Pick a study first (type the operator token to list the server's studies).")
    return study.strip()


# ---------------------------------------------------------------------------------------------- the work
def _operator_status(settings: Settings, name: str, results: str | None) -> str:
    """The tab's report (Markdown): progress, rater agreement and, with a results file, the metrics'."""
    data = store.load_study(settings.study_db_path, _picked(name))
    report = study_agreement(data, [results] if results else [])
    head = _cell(format_report(report).split("\n\n")[0]).replace("\n", "\n\n")
    notes = "".join(f"\n- {_cell(note)}" for note in report.notes)
    return f"{head}\n\n{_tables_markdown(report_tables(report))}" + (f"\n\n**Notes**{notes}" if notes else "")


def _operator_add_raters(settings: Settings, name: str, count: float | None, base_url: str) -> str:
    """Add ``count`` raters to the study; their links (shown once) as a Markdown list."""
    raters = store.add_raters(settings.study_db_path, _picked(name), count=int(count or 0))
    lines = ["Each link is shown once; send each rater their own.", ""]
    lines += [f"- {r.label}: `{base_url}study/rate#t={r.token}`" for r in raters]
    return "\n".join(lines)


def _operator_export(settings: Settings, name: str, folder: Path) -> list[str]:
    """The judgments as CSV and as manifest lines, written into ``folder`` (a session's work folder)."""
    data = store.load_study(settings.study_db_path, _picked(name))
    csv_path = folder / f"{data.study.name}-judgments.csv"
    csv_path.write_text(export_csv(data), encoding="utf-8")
    manifest = folder / f"{data.study.name}-overall.jsonl"
    manifest.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in export_lines(data)),
                        encoding="utf-8")
    return [str(csv_path), str(manifest)]


# ---------------------------------------------------------------------------------------------- Study tab
def show_agreement(ctx: StudyContext, token_value: str, study: str, results_file: str | None,
                   request: gr.Request) -> str:
    """Show agreement (and each 30 s while followed): the study's report, or why not."""
    try:
        ctx.operator.check(token_value, request)
        return _operator_status(ctx.settings, study, results_file)
    except AugclipError as exc:
        return _message(exc)


def list_studies(ctx: StudyContext, token_value: str, study: Any, request: gr.Request) -> tuple[Any, str]:
    """The typed token, checked: the server's studies in the Study list (the picked one kept while it is
    there, else the newest), and what the list holds; or why not (the list left as it is)."""
    try:
        ctx.operator.check(token_value, request)
        names = [s.name for s in store.list_studies(ctx.settings.study_db_path)]
    except AugclipError as exc:
        return gr.update(), _message(exc)
    if not names:
        return gr.Dropdown(choices=[], value=None), ("No studies on this server yet: create one with "
                                                     "`python -m augclip_demo study create` or from an Explore slice.")
    said = f"{len(names)} stud{'y' if len(names) == 1 else 'ies'} on this server: {', '.join(map(_cell, names))}."
    if study in names:  # the value left out: a listing that arrives late does not undo a pick made meanwhile
        return gr.Dropdown(choices=names), said
    return gr.Dropdown(choices=names, value=names[-1]), said


def follow_answers(on: bool | None) -> gr.Timer:
    """The "Refresh every 30 s" box turns the report's timer on or off."""
    return gr.Timer(active=bool(on))


def add_raters(ctx: StudyContext, token_value: str, study: str, n: float | None, request: gr.Request) -> str:
    """Add raters: their links, on this server's address."""
    base = str(getattr(request, "request", request).base_url) if request is not None else "/"
    try:
        ctx.operator.check(token_value, request)
        return _operator_add_raters(ctx.settings, study, n, base)
    except AugclipError as exc:
        return _message(exc)


def close_study(ctx: StudyContext, token_value: str, study: str, request: gr.Request) -> str:
    """Close the study: raters' pages then say so, and no answer is taken."""
    try:
        ctx.operator.check(token_value, request)
        closed = store.close_study(ctx.settings.study_db_path, _picked(study))
    except AugclipError as exc:
        return _message(exc)
    return f"Study {closed.name} is closed (since {closed.closed_at}); raters' pages now say so."


def export_judgments(ctx: StudyContext, token_value: str, study: str,
                     request: gr.Request) -> tuple[list[str], str]:
    """Export: the files (CSV and manifest lines, in the session's work folder) and what they are."""
    try:
        ctx.operator.check(token_value, request)
        ctx.folders.check_room("The export")
        folder = ctx.folders.new(getattr(request, "session_hash", None))
        paths = _operator_export(ctx.settings, study, folder)
    except AugclipError as exc:
        return [], _message(exc)
    return paths, EXPORTED


# ---------------------------------------------------------------------------------------------- from Explore
def make_study_from_slice(ctx: SliceStudyContext, token_value: str, study: str, kind_value: str,
                          asked: list[str] | None, n_unit: float | None, n_rater: float | None,
                          n_repeats: float | None, current: dict[str, Any] | None, request: gr.Request) -> str:
    """A study over the active slice's edits (``current``: the Explore tab's state, holding the open file's
    key and the active slice); says what was made and how many raters it needs."""
    try:
        ctx.operator.check(token_value, request)
        if not current or not current.get("key"):
            raise store.StudyError("open a results file first (with its manifest: a study shows its pictures)")
        active = slice_from_json(current.get("active") or "{}")
        created, selection = create_study_from_slice(
            ctx.settings.study_db_path, study, ctx.shelf.store(current["key"]), active, kind=kind_value,
            questions=list(asked or ["overall"]), per_unit=int(n_unit or 3),
            per_rater=int(n_rater) if n_rater else None,
            repeats=int(2 if n_repeats is None else n_repeats))
        data = store.load_study(ctx.settings.study_db_path, created.name)
    except AugclipError as exc:
        return _message(exc)
    needed = -(-len(data.units) * created.per_unit // created.per_rater)
    return (f"Study **{_cell(created.name)}**: {len(data.units)} units ({created.kind}) from "
            f"{_cell(selection.description)} ({selection.n_edits} edits of {len(selection.only)} items); "
            f"{created.per_rater} per rater, so {needed} raters give each unit {created.per_unit} judgments. "
            "Add raters in the Study tab.")
