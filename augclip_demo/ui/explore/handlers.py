"""What the Explore tab's events do: one top-level function per handler.

Each handler takes the tab's :class:`ExploreContext` first, then the values of its event's input components
(the session's state first: :mod:`.state`), and returns its outputs in the order
:mod:`.wiring` wires them (the lists are :class:`~.layout.ExploreTab`'s properties).
:func:`..binding.bind` gives an event the handler with its context.

Opening a file (:func:`open_results_file`) or changing the slice (:func:`apply`, :func:`save`,
:func:`pick_saved`, :func:`compare_picked`, :func:`pick_judgments`) is followed by the quick views
(:func:`views`: leaderboards, grids) and then the slow ones (:func:`details`: disagreements, agreement).
"""

from __future__ import annotations

import html
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gradio as gr

from ...config import Settings
from ...errors import InputError
from ...explore import HUMAN, ResultsStore, item_record
from ...explore.items import EvaluateInputs, evaluate_inputs
from ...explore.shelf import RECORDED, Shelf
from ...explore.store import metric_label
from ..guard import scrub_paths_in, user_facing
from ..stoppable import run_stoppable
from ..storage import WorkFolders, upload_zip_limits
from .judgments import StudyReader
from .layout import ExploreTab
from .state import (
    CATEGORY_CONTROLS,
    MAX_SAVED_SLICES,
    NO_RANGE,
    active_slice,
    compared_slice,
    controls_of,
    reset_state,
    session_state,
    slice_from_controls,
)
from .views import (
    DISAGREEMENT_SORT,
    agreement_frames,
    board_frame,
    found_frame,
    grid_views,
    human_set_views,
    inspect_views,
    open_summary,
    report_page,
)


@dataclass
class ExploreContext:
    """What every Explore handler needs besides its inputs: the settings (the upload bound), the shelf of
    results files and the session folders (the report, the files handed to Evaluate)."""

    settings: Settings
    shelf: Shelf
    folders: WorkFolders
    tab: ExploreTab | None = None  # the tab's components (None where a handler runs without the page)

    def store(self, state: dict[str, Any]) -> ResultsStore:
        """The session's open file with its chosen human judgments."""
        return self.shelf.store(state["key"], state.get("judgments"))


def operator_shelf(settings: Settings) -> Shelf:
    """The operator's results files (``AUGCLIP_EXPLORE_FILES``) with the studies' judgments, the first one opened
    at once (while the server starts)."""
    shelf = Shelf(settings.explore_files, judgments=StudyReader(settings.study_db_path))
    shelf.warm()
    return shelf


def _discard_upload(path: Path) -> None:
    """Delete an uploaded results file once it has been read, if it is in Gradio's upload folder (never a path
    outside it)."""
    from gradio.utils import get_upload_folder

    try:
        if path.resolve().is_relative_to(Path(get_upload_folder()).resolve()):
            path.unlink(missing_ok=True)
    except OSError:  # already swept, or a name the system refuses: nothing left to free
        pass


# ---------------------------------------------------------------------------------------------- the file
@user_facing
def open_results_file(ctx: ExploreContext, label, upload, current, request: gr.Request = None):
    """Open a listed file (``label``) or an upload (a results file, or a zip of one with its manifest and images);
    the slice controls start anew from the file's values."""
    shelf = ctx.shelf
    if upload and (current or {}).get("uploaded") == str(upload) and shelf.has_upload(current["key"]):
        key = current["key"]  # Open again on the same upload: its store is still open (the file is gone)
    elif upload and Path(upload).suffix.lower() == ".zip":
        try:
            key = "upload:" + _open_zip(ctx, Path(upload), getattr(request, "session_hash", None))
        finally:
            _discard_upload(Path(upload))
    elif upload:
        try:
            key = "upload:" + shelf.add_upload(Path(upload), ctx.settings.upload_max_zip_mb)
        finally:  # read into the store's memory, or refused: the copy on disk would only take room under the cap
            _discard_upload(Path(upload))
    elif label:
        key = "named:" + str(label)
    else:
        raise InputError("choose a listed results file or upload one")
    return _opened(ctx, current, key, str(upload) if upload else None)


def _open_zip(ctx: ExploreContext, upload: Path, session: str | None) -> str:
    """An uploaded zip of results with their manifest and images: extracted into a session folder under the upload
    bounds (size, entries, expanded size, the disk cap; no ``..``, absolute paths or links), then opened with the
    manifest beside its images; returns the store's token."""
    from ...batch.ziputil import safe_extract
    from ...explore.bundle import find_bundle

    if not upload.is_file():
        raise InputError("the uploaded zip is no longer on the server (its space for uploads may be full): upload "
                         "it again later")
    limits = upload_zip_limits(ctx.settings, ctx.folders, "The upload")
    folder = ctx.folders.new(session) / "explore-upload"
    safe_extract(upload, folder, limits)
    bundle = find_bundle(folder)
    return ctx.shelf.add_session_files(bundle.results, bundle.manifest)


@user_facing
def open_batch_run(ctx: ExploreContext, handoff, current, *, tab_id: str = "explore"):
    """A run of the Batch tab (its results, and its manifest beside its images: a
    :class:`..batch.handlers.ExploreHandoff`, kept on the server) opened here, and this tab shown."""
    if handoff is None:
        raise InputError("run a batch first: its results then open here")
    key = "upload:" + ctx.shelf.add_session_files(Path(handoff.results), Path(handoff.manifest))
    return [*_opened(ctx, current, key, None), gr.Tabs(selected=tab_id)]


def _opened(ctx: ExploreContext, current, key: str, uploaded: str | None) -> list[Any]:
    """The open outputs for the store of ``key``: the state, the summary, the slice controls anew."""
    shelf = ctx.shelf
    store = shelf.store(key, (current or {}).get("judgments"))  # a file that cannot be opened leaves the page as it was
    judgments = (current or {}).get("judgments")  # the session's choice stays with the next file
    current = reset_state(current)
    current["key"], current["judgments"] = key, judgments
    current["uploaded"] = uploaded
    rankings = [(metric_label(k), k) for k in store.metrics] + [("humans", HUMAN)]
    sorts = ([(metric_label(k), k) for k in store.metrics] + [(k, k) for k in ("id", "model", "dataset", "role")]
             + [("disagreement of A and B (strongest first)", DISAGREEMENT_SORT)])
    updates = [gr.update(choices=store.values(column), value=[]) for _, column, _ in CATEGORY_CONTROLS]
    return [current, open_summary(store), *updates,
            gr.update(choices=[NO_RANGE, *store.metrics], value=NO_RANGE), None, None, "all",
            gr.update(choices=[], value=None), gr.update(choices=[], value=None),
            gr.update(choices=sorts, value=store.metrics[0] if store.metrics else "id"),
            gr.update(choices=rankings, value=store.metrics[0] if store.metrics else None),
            gr.update(choices=rankings, value=store.metrics[1] if len(store.metrics) > 1 else HUMAN)]


@user_facing
def pick_judgments(ctx: ExploreContext, current, label):
    """Another source of human judgments for this session (a study's made again: its newest judgments)."""
    current = session_state(current)
    if not current.get("key"):  # no file yet: a listed choice is kept for the next one
        if label not in ctx.shelf.judgment_choices():
            raise InputError("choose one of the listed sources of human judgments")
        current["judgments"] = label
        raise InputError("open a results file first")
    store = ctx.shelf.store(current["key"], label, fresh=True)  # read anew (a source not listed is refused)
    current["judgments"] = label
    if label == RECORDED:
        return current
    judged = store.query(f"SELECT count(DISTINCT item) FROM {store.table} WHERE human_preferred IS NOT NULL OR "
                         "has_scores")[0][0]
    gr.Info(f"{label}: human judgments for {judged} item(s) of this file")
    return current


# ---------------------------------------------------------------------------------------------- the slice
def _apply_slice(ctx: ExploreContext, current: dict[str, Any] | None, values: tuple[Any, ...]) -> dict[str, Any]:
    current = session_state(current)
    *categories, metric, low, high, name = values
    active = slice_from_controls(name, categories, metric, low, high)
    ctx.store(current).query("SELECT 1")  # an open file is needed
    current["active"] = active.to_json()
    return current


@user_facing
def apply(ctx: ExploreContext, current, *values):
    """The slice the controls describe becomes the active one (``values``: the slice controls')."""
    return _apply_slice(ctx, current, values)


@user_facing
def save(ctx: ExploreContext, current, *values):
    """Apply, and keep the slice by its name (offered in Saved slices and Compare with)."""
    current = _apply_slice(ctx, current, values)
    active = active_slice(current)
    if active.name not in current["slices"] and len(current["slices"]) >= MAX_SAVED_SLICES:
        raise InputError(f"at most {MAX_SAVED_SLICES} saved slices: save under an existing name to replace one")
    current["slices"] = {**current["slices"], active.name: active.to_json()}
    names = list(current["slices"])
    return current, gr.update(choices=names, value=active.name), gr.update(choices=names)


@user_facing
def pick_saved(ctx: ExploreContext, current, name):
    """A saved slice becomes the active one; the controls show it."""
    current = session_state(current)
    if name not in current["slices"]:
        raise InputError("pick one of the saved slices")
    current["active"] = current["slices"][name]
    return [current, *controls_of(active_slice(current))]


def compare_picked(ctx: ExploreContext, current):
    """Another slice in "Compare with": nothing to do but start the views, which read the choice."""
    return current


# ---------------------------------------------------------------------------------------------- the views
def _grid_updates(current: dict[str, Any], store: ResultsStore, sort: str, descending: bool, page: Any) -> list[Any]:
    """The active slice's page and, beside it, the compared slice's (same sort and page; the disagreement
    order is the active slice's A and B, so the compared slice is shown by id then): the caption, then the
    values of ExploreTab.grid_outputs."""
    pictures, rows, current["page_items"], caption = grid_views(store, active_slice(current), sort, descending, page,
                                                                current.get("found"))
    other = compared_slice(current)
    if other is None:
        current["page_items2"] = []
        return [caption, pictures, rows, gr.update(visible=False), gr.skip(), gr.skip()]
    pictures2, rows2, current["page_items2"], caption2 = grid_views(
        store, other, "id" if sort == DISAGREEMENT_SORT else sort, descending, page)
    return [caption, pictures, rows, gr.update(visible=True), gr.update(value=pictures2, label=f"{other.name}: "
            f"{caption2}"), rows2]


async def stoppable_views(ctx: ExploreContext, current, compare, sort, descending, page):
    """:func:`views` as the page calls it: in a worker thread that stops when the client cancels the event
    (:func:`.stoppable.run_stoppable`)."""
    return await run_stoppable(views, ctx, current, compare, sort, descending, page)


@user_facing
def views(ctx: ExploreContext, current, compare, sort, descending, page):
    """The quick views of the active slice and the compared one: leaderboards and the grids (SQL only)."""
    current = session_state(current)
    current["compare"] = compare if compare in current["slices"] else None
    store, active = ctx.store(current), active_slice(current)
    board, board_notes = board_frame(store, active)
    other = compared_slice(current)
    board2 = (gr.update(value=board_frame(store, other)[0], visible=True, label=f"Compared slice: {other.name}")
              if other is not None else gr.update(visible=False))
    caption, *grids = _grid_updates(current, store, sort, descending, page)
    beside = gr.update(visible=other is not None)  # the compared slice's agreement and disagreements
    return (current, f"**Slice** {html.escape(active.describe())} · {caption}", board, board2, board_notes,
            *grids, beside, beside)


@user_facing
def details(ctx: ExploreContext, current, a, b, sort, descending, page):
    """Then the disagreements and the agreement tables of both slices (they walk the slices' items), and the
    grid again when it is sorted by disagreement."""
    current = session_state(current)
    store, active = ctx.store(current), active_slice(current)
    found, found2 = _found_frames(current, store, a, b)
    pictures, rows = gr.skip(), gr.skip()
    if sort == DISAGREEMENT_SORT:
        pictures, rows, current["page_items"], _ = grid_views(store, active, sort, descending, page,
                                                              current["found"])
    other = compared_slice(current)
    second = agreement_frames(store, other) if other is not None else (gr.skip(),) * 3
    sets2 = human_set_views(store, other)[:2] if other is not None else (gr.skip(),) * 2
    return (current, found, *agreement_frames(store, active), *second, pictures, rows, found2,
            *human_set_views(store, active), *sets2)


def _found_frames(current: dict[str, Any], store: ResultsStore, a: str | None, b: str | None) -> tuple[Any, Any]:
    """The disagreements of ``a`` and ``b`` in the active slice and, beside them, in the compared one (none:
    left as shown, hidden); their items go to the state for the clicks."""
    found, current["found"] = found_frame(store, active_slice(current), a, b)
    other = compared_slice(current)
    if other is None:
        current["found2"] = []
        return found, gr.skip()
    found2, current["found2"] = found_frame(store, other, a, b)
    return found, gr.update(value=found2, label=f"Compared slice: {other.name}: items where A and B pick different "
                            "winners (click a row to inspect)")


@user_facing
def regrid(ctx: ExploreContext, current, sort, descending, page):
    """The grids again (another sort or page)."""
    current = session_state(current)
    _, *grids = _grid_updates(current, ctx.store(current), sort, descending, page)
    return current, *grids


@user_facing
def refound(ctx: ExploreContext, current, a, b):
    """The disagreements of both slices again (another A or B)."""
    current = session_state(current)
    return current, *_found_frames(current, ctx.store(current), a, b)


# ---------------------------------------------------------------------------------------------- an item
@user_facing
def inspect(ctx: ExploreContext, current, evt: gr.SelectData, *, kind: str):
    """A click on a row or picture listed in the state's ``kind`` (``page_items``, ``page_items2``, ``found``,
    ``found2``): that item in the Inspect tab."""
    current = session_state(current)
    index = evt.index[0] if isinstance(evt.index, (list, tuple)) else evt.index
    items = current.get(kind) or []
    if not isinstance(index, int) or not 0 <= index < len(items):
        raise InputError("that row is no longer shown: refresh the view")
    current["inspected"] = items[index]
    return (current, *inspect_views(ctx.store(current), items[index]), gr.Tabs(selected="explore-inspect"))


@user_facing
def cell_items(ctx: ExploreContext, current, evt: gr.SelectData):
    """A click in an agreement table: the disagreements behind that cell, in the Disagreements tab."""
    current = session_state(current)
    store = ctx.store(current)
    row, column = evt.index if isinstance(evt.index, (list, tuple)) else (evt.index, 0)
    if not 0 <= row < len(store.metrics):
        raise InputError("click a cell of a metric's row")
    a = store.metrics[row]
    b = store.metrics[column - 1] if evt.target is not None and getattr(evt.target, "elem_id", "") ==\
        "aug-explore-matrix" and 1 <= column <= len(store.metrics) else HUMAN
    return current, a, b, *_found_frames(current, store, a, b), gr.Tabs(selected="explore-disagreements")


# ---------------------------------------------------------------------------------------------- out of the tab
@user_facing
def make_report(ctx: ExploreContext, current, a, b, request: gr.Request):
    """The HTML report of the active slice and the compared one (when "Compare with" names one), as a file in
    the session's folder."""
    current = session_state(current)
    active = active_slice(current)
    page = report_page(ctx.store(current), active, compared_slice(current), a, b)
    folder = ctx.folders.new(getattr(request, "session_hash", None))
    safe = "".join(c if c.isalnum() or c in "-_" else "-" for c in active.name)[:40] or "slice"
    path = folder / f"explore-{safe}.html"
    path.write_text(page, encoding="utf-8")
    return str(path)


#: the Evaluate inputs an inspected item fills, in this order (:func:`.wiring.wire_to_evaluate`)
EVALUATE_FIELDS = ("source", "edits", "target", "source_text", "instruction", "src_box", "tgt_box", "classifier", "C",
                   "weighting", "include_images", "clip_model", "bpm_on", "bpm_parser", "judge_on")


def evaluate_values(inputs: EvaluateInputs, clip_choices: list[str], parser_choices: list[str] | None = None)\
        -> tuple[dict[str, Any], list[str]]:
    """The Evaluate inputs for a record's ``inputs``, by :data:`EVALUATE_FIELDS` name
    (``gr.skip()``: kept as the page has it), and the notes that say what the page cannot take over."""
    notes = []
    model = inputs.model if inputs.model in clip_choices else gr.skip()
    if inputs.model not in clip_choices:
        notes.append(f"the run's CLIP model {inputs.model} is not offered here: the page's model is kept")
    parser = inputs.bpm_parser
    if parser is not None and parser_choices is not None and parser not in parser_choices:
        notes.append(f"the run's BPM parser {parser!r} is not offered here: the page's parser is kept")
        parser = None
    options = inputs.options
    if inputs.bpm is not None or inputs.judge is not None:
        notes.append(f"the run used {inputs.settings_note()}; Evaluate uses the server's models, so its BPM and "
                     "judge values equal the record's where those are the same")
    values = {"target": inputs.target_text, "source_text": inputs.source_text, "instruction": inputs.instruction,
              "src_box": "\n".join(inputs.source_attributes), "tgt_box": "\n".join(inputs.target_attributes),
              "classifier": options.get("classifier", gr.skip()), "C": options.get("C", gr.skip()),
              "weighting": options.get("weighting", gr.skip()),
              "include_images": options.get("include_images", gr.skip()), "clip_model": model,
              "bpm_on": inputs.bpm is not None, "bpm_parser": parser if parser is not None else gr.skip(),
              "judge_on": inputs.judge is not None}
    return values, notes


@user_facing
def handoff(ctx: ExploreContext, current, request: gr.Request, *, names: list[str], clip_choices: list[str],
            parser_choices: list[str] | None, tab_id: str):
    """The inspected item into the Evaluate tab: its images copied to a session folder, the run's settings in
    the inputs ``names`` (what the page cannot take over is said), then that tab shown."""
    current = session_state(current)
    if current.get("inspected") is None:
        raise InputError("inspect an item first (click it in Items or Disagreements)")
    inputs = evaluate_inputs(item_record(ctx.store(current), current["inspected"]))
    folder = ctx.folders.new(getattr(request, "session_hash", None))
    source = folder / f"source{inputs.source.suffix}"
    shutil.copyfile(inputs.source, source)
    edits = []
    for index, (path, name) in enumerate(zip(inputs.edits, inputs.edit_names)):
        safe = "".join(c if c.isalnum() or c in "-_" else "-" for c in name)[:40] or "edit"
        edits.append(str(folder / f"{index}-{safe}{path.suffix}"))
        shutil.copyfile(path, edits[-1])
    values, notes = evaluate_values(inputs, clip_choices, parser_choices)
    values.update(source=str(source), edits=edits)
    for note in notes:
        gr.Warning(scrub_paths_in(note))
    return [*(values[name] for name in names), gr.Tabs(selected=tab_id)]
