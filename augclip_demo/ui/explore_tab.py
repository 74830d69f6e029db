"""The Explore tab: a batch results file as a leaderboard, agreement tables, disagreements and an item grid,
all following one active slice; a self-contained HTML report to share.

The queries, statistics and the report are :mod:`augclip_demo.explore` (no Gradio there); this module is the
page. Files come from the operator (:class:`~augclip_demo.explore.shelf.Shelf`: listed by name, never a path
from the client) or from a bounded upload.
"""

from __future__ import annotations

import html
import json
import shutil
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import gradio as gr

from ..config import Settings
from ..errors import InputError
from ..explore import (
    HUMAN,
    ResultsStore,
    Slice,
    agreement,
    disagreements,
    grid_page,
    item_record,
    leaderboard,
    make_slice,
    slice_from_json,
)
from ..explore.agreement_matrix import PAGE_AGREEMENT_ITEMS
from ..explore.items import EvaluateInputs
from ..explore.judgments import StudyJudgments, judgments_from_export
from ..explore.report_html import report_html
from ..explore.shelf import RECORDED, Shelf
from ..explore.store import metric_label
from ..report import UNTRAINED_WARNING
from .guard import scrub_paths_in, user_facing
from .storage import WorkFolders
from .study_tab import slice_study_control
from .views import empty_table

CATEGORY_CONTROLS = (("datasets", "dataset", "Dataset"), ("models", "model", "Editing model"),
                     ("roles", "role", "Role"), ("edit_types", "edit_type", "Edit type"), ("runs", "run", "Run"))
NO_RANGE = "(none)"
MAX_SAVED_SLICES = 50  # per session (the page's state lives on the server)
DISAGREEMENT_SORT = "disagreement"  # the grid in the Disagreements tab's order (its judges, strongest first)


def explore_help(settings: Settings) -> str:
    return f"""
**Explore a batch run.** Open a results file (JSONL, Parquet) written by `augclip-demo batch` or the Batch tab:
the leaderboard ranks the editing models under every metric beside the humans, the agreement tables compare the
metrics with each other and with the human judgments (the same functions as `augclip-demo protocol`), the
disagreements list the items where two judges pick different winners, and the items grid pages through the edits.
Every view follows the **slice** (filters, then Apply; Save keeps it by name). Uploads are at most
{settings.upload_max_zip_mb} MB; the server's own files are the ones its operator listed (`AUGCLIP_EXPLORE_FILES`).
From a shell: `augclip-demo explore RESULTS.jsonl --manifest MANIFEST.jsonl`.
"""


class StudyReader:
    """The operator's study database (``AUGCLIP_STUDY_DB``) as a source of human judgments for Explore, read
    through the study package's own functions (its list of studies, its export), one label per study question."""

    def __init__(self, db: Path):
        self.db = db

    def _offered(self) -> dict[str, tuple[str, str]]:
        from ..study.store import list_studies

        if not Path(self.db).is_file():
            return {}
        return {f"study {study.name} ({question})": (study.name, question) for study in list_studies(self.db)
                for question in study.questions}

    def choices(self) -> list[str]:
        return list(self._offered())

    def read(self, label: str) -> StudyJudgments:
        from ..study.exchange import export_lines
        from ..study.store import load_study

        offered = self._offered()
        if label not in offered:
            raise InputError("choose one of the listed sources of human judgments")
        name, question = offered[label]
        data = load_study(self.db, name)
        return judgments_from_export(export_lines(data, question), data.study.kind, label)


def _frame(headers: list[str], rows: list[list[Any]], empty: str) -> Any:
    return {"headers": headers, "data": rows} if rows else empty_table(empty)


def _fresh_state() -> dict[str, Any]:
    return {"key": None, "slices": {}, "active": Slice().to_json(), "page_items": [], "found": []}


def _state(state: dict[str, Any] | None) -> dict[str, Any]:
    """The session's state, changed in place: the slow steps (agreement) run beside quicker ones (an item
    opened meanwhile), so a handler must never hand back an older copy that would undo another's change."""
    return _fresh_state() if state is None else state


def _reset(state: dict[str, Any] | None) -> dict[str, Any]:
    """A new file: the same state object, emptied."""
    if state is None:
        return _fresh_state()
    state.clear()
    state.update(_fresh_state())
    return state


def _active(state: dict[str, Any]) -> Slice:
    return slice_from_json(state.get("active") or Slice().to_json())


def open_summary(store: ResultsStore) -> str:
    """What was opened, for people: runs, their differences, unreadable lines, the untrained label."""
    lines = []
    if store.untrained:
        lines.append(f'<div class="aug-untrained">{html.escape(UNTRAINED_WARNING)}</div>\n')
    names = html.escape(", ".join(f.results.name for f in store.files))
    lines.append(f"**{store.n_records} records, {store.n_edits} edits** from {names}; metrics: "
                 + html.escape(", ".join(metric_label(k) for k in store.metrics)) + ".")
    lines.extend(f"- {html.escape(run.label())}" for run in store.runs)
    differences = store.run_differences()
    if differences:
        lines.append("\n**These runs used different settings; their numbers are kept apart** (leaderboard rows per "
                     "run; agreement and disagreements need one run in the slice): "
                     + html.escape("; ".join(differences)))
    for opened in store.files:
        if opened.unreadable_lines:
            lines.append(f"\nnote: {opened.unreadable_lines} line(s) of {html.escape(opened.results.name)} could not "
                         "be read (a torn last line of an interrupted run, or damage) and are left out.")
        if opened.manifest is None:
            lines.append(f"\nnote: no manifest given for {html.escape(opened.results.name)}: no thumbnails, no edit "
                         "types.")
    return "\n".join(lines)


def build_explore_tab(settings: Settings, *, folders: WorkFolders | None = None,
                      shelf: Shelf | None = None) -> EvaluateHandoff:
    """Lay out the tab and wire it; call inside ``gr.Blocks`` / ``gr.Tabs``. The returned handoff connects the
    Inspect view's button to the Evaluate tab (:meth:`EvaluateHandoff.wire`)."""
    if shelf is None:
        shelf = Shelf(settings.explore_files, judgments=StudyReader(settings.study_db_path))
        shelf.warm()  # the first listed file, opened while the server starts
    with gr.Tab("Explore", id="explore"):
        gr.Markdown(explore_help(settings))
        ui = _layout(shelf)
        _wire(ui, settings, shelf, folders)
        slice_study_control(settings, ui["state"], shelf)  # ui/study_tab.py: operator only
    return EvaluateHandoff(ui["to_evaluate"], ui["state"], shelf, folders)


def _layout(shelf: Shelf) -> dict[str, Any]:
    ui: dict[str, Any] = {"state": gr.State(_fresh_state())}
    with gr.Row(equal_height=False):
        ui["file"] = gr.Dropdown(shelf.labels, value=shelf.labels[0] if shelf.labels else None,
                                 label="Results named by the operator", elem_id="aug-explore-file")
        ui["upload"] = gr.File(label="or upload a results file (.jsonl / .parquet)", file_types=[".jsonl", ".parquet"],
                               height=110, elem_id="aug-explore-upload")
        ui["open"] = gr.Button("Open", variant="primary", elem_id="aug-explore-open")
        ui["judgments"] = gr.Dropdown(shelf.judgment_choices(), value=RECORDED, label="Human judgments from",
                                      info="the file's own, or a study's (Study tab) by item id",
                                      elem_id="aug-explore-judgments")
    ui["info"] = gr.Markdown(elem_id="aug-explore-info")
    with gr.Accordion("Slice: filters that every view follows", open=True):
        with gr.Row():
            for key, _, label in CATEGORY_CONTROLS:
                ui[key] = gr.Dropdown([], multiselect=True, label=label, elem_id=f"aug-explore-{key}")
        with gr.Row():
            ui["range_metric"] = gr.Dropdown([NO_RANGE], value=NO_RANGE, label="Metric range",
                                             elem_id="aug-explore-range-metric")
            ui["low"] = gr.Number(label="min", elem_id="aug-explore-low")
            ui["high"] = gr.Number(label="max", elem_id="aug-explore-high")
            ui["name"] = gr.Textbox(label="Slice name", value="all", elem_id="aug-explore-name")
        with gr.Row():
            ui["apply"] = gr.Button("Apply", variant="primary", elem_id="aug-explore-apply")
            ui["save"] = gr.Button("Save slice", elem_id="aug-explore-save")
            ui["saved"] = gr.Dropdown([], label="Saved slices (pick to apply)", elem_id="aug-explore-saved")
            ui["compare"] = gr.Dropdown([], label="Compare with (side by side)", elem_id="aug-explore-compare")
        ui["slice_info"] = gr.Markdown(elem_id="aug-explore-slice-info")
    with gr.Tabs() as ui["tabs"]:
        with gr.Tab("Leaderboard", id="explore-leaderboard"):
            with gr.Row(equal_height=False):
                ui["board"] = gr.Dataframe(empty_table("Open a results file."), label="Active slice: mean [95% "
                                           "interval] (#rank) per metric", wrap=True,
                                           interactive=False, elem_id="aug-explore-board")
                ui["board2"] = gr.Dataframe(empty_table("Pick a saved slice to compare."), label="Compared slice",
                                            wrap=True, interactive=False, visible=False, elem_id="aug-explore-board2")
            ui["board_notes"] = gr.Markdown()
        with gr.Tab("Agreement", id="explore-agreement"):
            with gr.Row(equal_height=False):
                with gr.Column():
                    ui["matrix"] = gr.Dataframe(empty_table("Open a results file."), label="Metric-metric Spearman rho "
                                                "(click a cell: the items where the two pick different winners)",
                                                interactive=False, elem_id="aug-explore-matrix")
                    ui["human"] = gr.Dataframe(empty_table("No human judgments yet."), label="Agreement with the "
                                               "human judgments (95% bootstrap intervals; click a row: items where the "
                                               "metric's winner is not the humans')", wrap=True, interactive=False,
                                               elem_id="aug-explore-human")
                    ui["agree_notes"] = gr.Markdown()
                with gr.Column(visible=False) as ui["agree2_column"]:
                    ui["matrix2"] = gr.Dataframe(empty_table("Pick a saved slice to compare."), label="Compared slice: "
                                                 "metric-metric Spearman rho", interactive=False,
                                                 elem_id="aug-explore-matrix2")
                    ui["human2"] = gr.Dataframe(empty_table("Pick a saved slice to compare."), label="Compared slice: "
                                                "agreement with the human judgments", wrap=True, interactive=False,
                                                elem_id="aug-explore-human2")
                    ui["agree2_notes"] = gr.Markdown()
        with gr.Tab("Disagreements", id="explore-disagreements"):
            with gr.Row():
                ui["judge_a"] = gr.Dropdown([], label="Judge A", elem_id="aug-explore-judge-a")
                ui["judge_b"] = gr.Dropdown([], label="Judge B", elem_id="aug-explore-judge-b")
            ui["found"] = gr.Dataframe(empty_table("Choose two judges."), label="Items where A and B pick different "
                                       "winners, strongest first (click a row to inspect)", interactive=False,
                                       elem_id="aug-explore-found")
        with gr.Tab("Items", id="explore-items"):
            with gr.Row():
                ui["sort"] = gr.Dropdown(["id"], value="id", label="Sort by", elem_id="aug-explore-sort")
                ui["descending"] = gr.Checkbox(False, label="Descending", elem_id="aug-explore-descending")
                ui["page"] = gr.Number(1, label="Page", precision=0, minimum=1, elem_id="aug-explore-page")
            with gr.Row(equal_height=False):
                with gr.Column():
                    ui["grid"] = gr.Gallery(label="Edits (click one to inspect)", columns=4, height=360,
                                            allow_preview=False, elem_id="aug-explore-grid")
                    ui["rows"] = gr.Dataframe(empty_table("Open a results file."), interactive=False,
                                              elem_id="aug-explore-rows")
                with gr.Column(visible=False) as ui["grid2_column"]:
                    ui["grid2"] = gr.Gallery(label="Compared slice (click one to inspect)", columns=4, height=360,
                                             allow_preview=False, elem_id="aug-explore-grid2")
                    ui["rows2"] = gr.Dataframe(empty_table("Pick a saved slice to compare."), interactive=False,
                                               elem_id="aug-explore-rows2")
        with gr.Tab("Inspect", id="explore-inspect") as ui["inspect_tab"]:
            ui["item_info"] = gr.Markdown("Click an edit in Items or a row in Disagreements.",
                                          elem_id="aug-explore-item-info")
            ui["item_images"] = gr.Gallery(label="Source and edits", columns=4, height=260, allow_preview=True,
                                           elem_id="aug-explore-item-images")
            ui["item_scores"] = gr.Dataframe(empty_table("No item yet."), label="Scores as the run recorded them "
                                             "(exact)", interactive=False, elem_id="aug-explore-item-scores")
            ui["to_evaluate"] = gr.Button("Explain in the Evaluate tab (relevancy maps, BPM, comparison grid: "
                                          "computed anew with the run's model and AugCLIP options)",
                                          elem_id="aug-explore-to-evaluate")
            ui["item_json"] = gr.JSON(label="Record", elem_id="aug-explore-item-json")
        with gr.Tab("Share", id="explore-share"):
            ui["report_btn"] = gr.Button("Make the HTML report of the active slice", elem_id="aug-explore-report-btn")
            ui["report"] = gr.File(label="Report (one self-contained HTML file)", interactive=False,
                                   elem_id="aug-explore-report")
    return ui


# ---------------------------------------------------------------------------------------------- views
def board_frame(store: ResultsStore, active: Slice) -> tuple[Any, str]:
    board = leaderboard(store, active)
    headers, rows = board.table()
    return _frame(headers, rows, "No scored edits in this slice."), "\n".join(f"note: {n}" for n in board.notes)


def agreement_frames(store: ResultsStore, active: Slice) -> tuple[Any, Any, str]:
    try:
        agreed = agreement(store, active, max_items=PAGE_AGREEMENT_ITEMS)
    except InputError as exc:  # several runs in the slice (said, not pooled), or a slice over the page's bound
        message = str(exc)
        return empty_table(message), empty_table(message), ""
    human_headers, human_rows = agreed.human_table()
    has_human = any(cell != "n/a" for row in human_rows for cell in row[1:])
    notes = [f"{agreed.n_items} items; intervals from {agreed.n_boot} bootstrap resamples (seed 0).", *agreed.notes]
    return (_frame(*agreed.matrix(), "No metric values in this slice."),
            _frame(human_headers, human_rows if has_human else [], "No human judgments in this slice."),
            "\n\n".join(notes))


def found_frame(store: ResultsStore, active: Slice, a: str | None, b: str | None) -> tuple[Any, list[int]]:
    if not a or not b or a == b:
        return empty_table("Choose two different judges."), []
    try:
        found = disagreements(store, active, a, b)
    except InputError as exc:
        return empty_table(str(exc)), []
    rows = [[d.id, d.dataset, d.winner_a, d.winner_b, round(d.strength, 3)] for d in found]
    label = {HUMAN: "humans"}
    headers = ["id", "dataset", f"{label.get(a, metric_label(a))} picks", f"{label.get(b, metric_label(b))} picks",
               "strength (SD)"]
    return _frame(headers, rows, "No disagreements in this slice."), [d.item for d in found]


def grid_views(store: ResultsStore, active: Slice, sort: str, descending: bool, page: Any,
               ranking: list[int] | None = None) -> tuple[Any, Any, list, str]:
    from ..explore.items import image_path, thumbnail

    number = int(page or 1) - 1
    by_strength = sort == DISAGREEMENT_SORT
    grid = grid_page(store, active, sort="id" if by_strength else sort or "id", descending=bool(descending),
                     page=number, ranking=(ranking or []) if by_strength else None)
    shown = sort if sort in store.metrics else (store.metrics[0] if store.metrics else None)
    pictures, rows = [], []
    for row in grid.rows:
        value = row.values.get(shown) if shown else None
        caption = f"{row.id} · {row.model}" + (f" · {metric_label(shown)} {value:.4f}" if value is not None else "")
        picture = thumbnail(image_path(store, row.file_no, row.path))
        if picture is not None:
            pictures.append((picture, caption))
        rows.append([row.id, row.dataset, row.model + (" [untrained]" if row.untrained else ""), row.role,
                     *("" if row.values[k] is None else round(row.values[k], 4) for k in store.metrics)])
    headers = ["id", "dataset", "model", "role", *(metric_label(k) for k in store.metrics)]
    caption = f"page {grid.page + 1} of {grid.pages} ({grid.total} edits in the slice)"
    return pictures, _frame(headers, rows, "No edits in this slice."), [r.item for r in grid.rows], caption


def inspect_views(store: ResultsStore, item: int) -> tuple[str, list, Any, dict[str, Any]]:
    from ..explore.items import thumbnail

    view = item_record(store, item)
    record = view.record
    pictures = []
    for label, relative in [("source", record.get("source"))] + [
            (f"[{e.get('index')}] {e.get('name', '')} ({e.get('role', '')})", e.get("path"))
            for e in record.get("edits") or []]:
        picture = thumbnail(view.image(relative), 320)
        if picture is not None:
            pictures.append((picture, label))
    headers, rows = view.score_rows(store.metrics)
    human = record.get("human")
    text = (f"### {html.escape(str(record.get('id')))} ({html.escape(str(record.get('dataset')))})\n"
            f"target: {html.escape(str(record.get('target_text') or ''))}  \n"
            f"human judgment: {html.escape(json.dumps(human))}  \n{html.escape(view.run_label)}")
    if not pictures:
        text += "\n\nNo images: open the results with their manifest (`--manifest`) to see them."
    # The record as stored, numbers exact; its texts (error messages, absolute image paths) lose server folders.
    return text, pictures, _frame(headers, rows, "This item has no edits."), scrub_paths_in(record)


# ---------------------------------------------------------------------------------------------- wiring
def _slice_from_controls(name: str, values: list[Any], range_metric: str | None, low: Any, high: Any) -> Slice:
    fields = dict(zip((key for key, _, _ in CATEGORY_CONTROLS), values))
    ranges = {range_metric: [low, high]} if range_metric and range_metric != NO_RANGE else {}
    return make_slice(name, ranges=ranges, **fields)


def _controls_of(active: Slice) -> list[Any]:
    (metric, (low, high)) = next(iter(active.ranges.items()), (NO_RANGE, (None, None)))
    return [gr.update(value=list(getattr(active, key))) for key, _, _ in CATEGORY_CONTROLS[:4]] + [
        gr.update(value=[str(r) for r in active.runs]), metric, low, high, active.name]


def _discard_upload(path: Path) -> None:
    """Delete an uploaded results file once it has been read, if it is in Gradio's upload folder (never a path
    outside it)."""
    from gradio.utils import get_upload_folder

    try:
        if path.resolve().is_relative_to(Path(get_upload_folder()).resolve()):
            path.unlink(missing_ok=True)
    except OSError:  # already swept, or a name the system refuses: nothing left to free
        pass


def _slice_handlers(settings: Settings, shelf: Shelf) -> SimpleNamespace:
    """Opening a file and making, saving, picking slices (what the slice controls do)."""

    @user_facing
    def open_results_file(label, upload, current):
        if upload and (current or {}).get("uploaded") == str(upload) and shelf.has_upload(current["key"]):
            key = current["key"]  # Open again on the same upload: its store is still open (the file is gone)
        elif upload:
            try:
                key = "upload:" + shelf.add_upload(Path(upload), settings.upload_max_zip_mb)
            finally:  # read into the store's memory, or refused: the copy on disk would only take room under the cap
                _discard_upload(Path(upload))
        elif label:
            key = "named:" + str(label)
        else:
            raise InputError("choose a listed results file or upload one")
        store = shelf.store(key, (current or {}).get("judgments"))  # a file that cannot be opened leaves the page as it was
        judgments = (current or {}).get("judgments")  # the session's choice stays with the next file
        current = _reset(current)
        current["key"], current["judgments"] = key, judgments
        current["uploaded"] = str(upload) if upload else None
        judges = [(metric_label(k), k) for k in store.metrics] + [("humans", HUMAN)]
        sorts = ([(metric_label(k), k) for k in store.metrics] + [(k, k) for k in ("id", "model", "dataset", "role")]
                 + [("disagreement of judges A and B (strongest first)", DISAGREEMENT_SORT)])
        updates = [gr.update(choices=store.values(column), value=[]) for _, column, _ in CATEGORY_CONTROLS]
        return [current, open_summary(store), *updates,
                gr.update(choices=[NO_RANGE, *store.metrics], value=NO_RANGE), None, None, "all",
                gr.update(choices=[], value=None), gr.update(choices=[], value=None),
                gr.update(choices=sorts, value=store.metrics[0] if store.metrics else "id"),
                gr.update(choices=judges, value=store.metrics[0] if store.metrics else None),
                gr.update(choices=judges, value=store.metrics[1] if len(store.metrics) > 1 else HUMAN)]

    @user_facing
    def apply(current, *values):
        current = _state(current)
        *categories, metric, low, high, name = values
        active = _slice_from_controls(name, categories, metric, low, high)
        shelf.store(current["key"], current.get("judgments")).query("SELECT 1")  # an open file is needed
        current["active"] = active.to_json()
        return current

    @user_facing
    def save(current, *values):
        current = apply(current, *values)
        active = _active(current)
        if active.name not in current["slices"] and len(current["slices"]) >= MAX_SAVED_SLICES:
            raise InputError(f"at most {MAX_SAVED_SLICES} saved slices: save under an existing name to replace one")
        current["slices"] = {**current["slices"], active.name: active.to_json()}
        names = list(current["slices"])
        return current, gr.update(choices=names, value=active.name), gr.update(choices=names)

    @user_facing
    def pick_judgments(current, label):
        """Another source of human judgments for this session (a study's made again: its newest judgments)."""
        current = _state(current)
        if label not in shelf.judgment_choices():
            raise InputError("choose one of the listed sources of human judgments")
        current["judgments"] = label
        store = shelf.store(current["key"], label, fresh=True)
        if label == RECORDED:
            return current
        judged = store.query(f"SELECT count(DISTINCT item) FROM {store.table} WHERE human_preferred IS NOT NULL OR "
                             "has_scores")[0][0]
        gr.Info(f"{label}: human judgments for {judged} item(s) of this file")
        return current

    @user_facing
    def pick_saved(current, name):
        current = _state(current)
        if name not in current["slices"]:
            raise InputError("pick one of the saved slices")
        current["active"] = current["slices"][name]
        return [current, *_controls_of(_active(current))]

    return SimpleNamespace(open=open_results_file, apply=apply, save=save, pick_saved=pick_saved,
                           pick_judgments=pick_judgments)


def _compared(current: dict[str, Any]) -> Slice | None:
    """The slice chosen in "Compare with", if it is still saved."""
    name = current.get("compare")
    return slice_from_json(current["slices"][name]) if name in current["slices"] else None


def _report_page(store: ResultsStore, active: Slice, a: str | None, b: str | None) -> str:
    """The shareable HTML report of ``active``: its leaderboard, agreement (within the page's bound) and the
    disagreements of metrics ``a`` and ``b``."""
    try:
        agreed = agreement(store, active, max_items=PAGE_AGREEMENT_ITEMS)
    except InputError as exc:
        agreed, reason = None, str(exc)
    else:
        reason = ""
    try:
        found = disagreements(store, active, a, b) if a and b and a != b else []
    except InputError:  # several runs in the slice: the report says so in the agreement section
        found = []
    return report_html(store, active, leaderboard(store, active), agreed, found, a or "", b or "", left_out=reason)


def _view_handlers(shelf: Shelf, folders: WorkFolders | None) -> SimpleNamespace:
    """The views of the active slice, the clicks that open an item, the report."""

    def grids(current: dict[str, Any], store: ResultsStore, sort: str, descending: bool, page: Any) -> list[Any]:
        """The active slice's page and, beside it, the compared slice's (same sort and page; the disagreement
        order is the active slice's judges, so the compared slice is shown by id then)."""
        pictures, rows, current["page_items"], caption = grid_views(store, _active(current), sort, descending, page,
                                                                    current.get("found"))
        other = _compared(current)
        if other is None:
            current["page_items2"] = []
            return [caption, pictures, rows, gr.update(visible=False), gr.skip(), gr.skip()]
        pictures2, rows2, current["page_items2"], caption2 = grid_views(
            store, other, "id" if sort == DISAGREEMENT_SORT else sort, descending, page)
        return [caption, pictures, rows, gr.update(visible=True), gr.update(value=pictures2, label=f"{other.name}: "
                f"{caption2}"), rows2]

    @user_facing
    def views(current, compare, sort, descending, page):
        """The quick views of the active slice and the compared one: leaderboards and the grids (SQL only)."""
        current = _state(current)
        current["compare"] = compare if compare in current["slices"] else None
        store, active = shelf.store(current["key"], current.get("judgments")), _active(current)
        board, board_notes = board_frame(store, active)
        other = _compared(current)
        board2 = (gr.update(value=board_frame(store, other)[0], visible=True, label=f"Compared slice: {other.name}")
                  if other is not None else gr.update(visible=False))
        caption, *grid_updates = grids(current, store, sort, descending, page)
        return (current, f"**Slice** {html.escape(active.describe())} · {caption}", board, board2, board_notes,
                *grid_updates, gr.update(visible=other is not None))

    @user_facing
    def details(current, a, b, sort, descending, page):
        """Then the disagreements and the agreement tables of both slices (they walk the slices' items), and the
        grid again when it is sorted by disagreement."""
        current = _state(current)
        store, active = shelf.store(current["key"], current.get("judgments")), _active(current)
        found, current["found"] = found_frame(store, active, a, b)
        pictures, rows = gr.skip(), gr.skip()
        if sort == DISAGREEMENT_SORT:
            pictures, rows, current["page_items"], _ = grid_views(store, active, sort, descending, page,
                                                                  current["found"])
        other = _compared(current)
        second = agreement_frames(store, other) if other is not None else (gr.skip(),) * 3
        return (current, found, *agreement_frames(store, active), *second, pictures, rows)

    @user_facing
    def regrid(current, sort, descending, page):
        current = _state(current)
        _, *grid_updates = grids(current, shelf.store(current["key"], current.get("judgments")), sort, descending, page)
        return current, *grid_updates

    @user_facing
    def refound(current, a, b):
        current = _state(current)
        found, current["found"] = found_frame(shelf.store(current["key"], current.get("judgments")), _active(current), a, b)
        return current, found

    def inspect_from(kind: str):
        @user_facing
        def inspect(current, evt: gr.SelectData):
            current = _state(current)
            index = evt.index[0] if isinstance(evt.index, (list, tuple)) else evt.index
            items = current.get(kind) or []
            if not isinstance(index, int) or not 0 <= index < len(items):
                raise InputError("that row is no longer shown: refresh the view")
            current["inspected"] = items[index]
            return (current, *inspect_views(shelf.store(current["key"], current.get("judgments")), items[index]),
                    gr.Tabs(selected="explore-inspect"))
        return inspect

    @user_facing
    def cell_items(current, evt: gr.SelectData):
        """A click in an agreement table: the disagreements behind that cell, in the Disagreements tab."""
        current = _state(current)
        store = shelf.store(current["key"], current.get("judgments"))
        row, column = evt.index if isinstance(evt.index, (list, tuple)) else (evt.index, 0)
        if not 0 <= row < len(store.metrics):
            raise InputError("click a cell of a metric's row")
        a = store.metrics[row]
        b = store.metrics[column - 1] if evt.target is not None and getattr(evt.target, "elem_id", "") == \
            "aug-explore-matrix" and 1 <= column <= len(store.metrics) else HUMAN
        found, current["found"] = found_frame(store, _active(current), a, b)
        return current, a, b, found, gr.Tabs(selected="explore-disagreements")

    @user_facing
    def make_report(current, a, b, request: gr.Request):
        current = _state(current)
        active = _active(current)
        page = _report_page(shelf.store(current["key"], current.get("judgments")), active, a, b)
        folder = (folders or WorkFolders()).new(getattr(request, "session_hash", None))
        safe = "".join(c if c.isalnum() or c in "-_" else "-" for c in active.name)[:40] or "slice"
        path = folder / f"explore-{safe}.html"
        path.write_text(page, encoding="utf-8")
        return str(path)

    return SimpleNamespace(views=views, details=details, regrid=regrid, refound=refound, inspect_from=inspect_from,
                           cell_items=cell_items, make_report=make_report)


def _wire(ui: dict[str, Any], settings: Settings, shelf: Shelf, folders: WorkFolders | None) -> None:
    state = ui["state"]
    category = [ui[key] for key, _, _ in CATEGORY_CONTROLS]
    slice_controls = [*category, ui["range_metric"], ui["low"], ui["high"], ui["name"]]

    h = SimpleNamespace(**vars(_slice_handlers(settings, shelf)), **vars(_view_handlers(shelf, folders)))
    grid_inputs = [ui["sort"], ui["descending"], ui["page"]]
    grid_outputs = [ui["grid"], ui["rows"], ui["grid2_column"], ui["grid2"], ui["rows2"]]
    view_outputs = [state, ui["slice_info"], ui["board"], ui["board2"], ui["board_notes"], *grid_outputs,
                    ui["agree2_column"]]
    view_inputs = [state, ui["compare"], *grid_inputs]
    detail_outputs = [state, ui["found"], ui["matrix"], ui["human"], ui["agree_notes"], ui["matrix2"], ui["human2"],
                      ui["agree2_notes"], ui["grid"], ui["rows"]]
    private = {"api_visibility": "private"}  # the page's own events: not an API for other programs

    def then_views(event: Any) -> None:
        event.success(h.views, view_inputs, view_outputs, **private).success(
            h.details, [state, ui["judge_a"], ui["judge_b"], *grid_inputs], detail_outputs, **private)

    then_views(ui["open"].click(h.open, [ui["file"], ui["upload"], state],
                                [state, ui["info"], *slice_controls, ui["saved"], ui["compare"], ui["sort"],
                                 ui["judge_a"], ui["judge_b"]], **private))
    then_views(ui["apply"].click(h.apply, [state, *slice_controls], [state], **private))
    then_views(ui["save"].click(h.save, [state, *slice_controls], [state, ui["saved"], ui["compare"]], **private))
    then_views(ui["saved"].input(h.pick_saved, [state, ui["saved"]], [state, *slice_controls], **private))
    then_views(ui["compare"].input(lambda current: current, [state], [state], **private))
    then_views(ui["judgments"].input(h.pick_judgments, [state, ui["judgments"]], [state], **private))
    for control in grid_inputs:
        control.input(h.regrid, [state, *grid_inputs], [state, *grid_outputs], **private)
    for control in (ui["judge_a"], ui["judge_b"]):
        control.input(h.refound, [state, ui["judge_a"], ui["judge_b"]], [state, ui["found"]], **private).success(
            h.regrid, [state, *grid_inputs], [state, *grid_outputs], **private)
    inspect_outputs = [state, ui["item_info"], ui["item_images"], ui["item_scores"], ui["item_json"], ui["tabs"]]
    for source, kind in ((ui["grid"], "page_items"), (ui["rows"], "page_items"), (ui["grid2"], "page_items2"),
                         (ui["rows2"], "page_items2"), (ui["found"], "found")):
        source.select(h.inspect_from(kind), [state], inspect_outputs, **private)
    for table in (ui["matrix"], ui["human"]):
        table.select(h.cell_items, [state], [state, ui["judge_a"], ui["judge_b"], ui["found"], ui["tabs"]], **private)
    ui["report_btn"].click(h.make_report, [state, ui["judge_a"], ui["judge_b"]], [ui["report"]], **private)


# ---------------------------------------------------------------------------------------------- to Evaluate
class EvaluateHandoff:
    """Open the inspected item in the Evaluate tab with the run's recorded settings: CLIP model, AugCLIP options,
    BPM (on, its parser) and the judge (on), so that Evaluate computes the record's numbers again where the
    server's models are the run's; the run's BPM models and judge model are said beside (explanations are new
    work there: the Explore tab keeps showing the run's own numbers)."""

    #: the Evaluate inputs filled, in this order (a name the app does not pass is left alone)
    FIELDS = ("source", "edits", "target", "source_text", "instruction", "src_box", "tgt_box", "classifier", "C",
              "weighting", "include_images", "clip_model", "bpm_on", "bpm_parser", "judge_on")

    def __init__(self, button: gr.Button, state: gr.State, shelf: Shelf, folders: WorkFolders | None):
        self.button, self.state, self.shelf, self.folders = button, state, shelf, folders

    def values(self, inputs: EvaluateInputs, clip_choices: list[str], parser_choices: list[str] | None = None) \
            -> tuple[dict[str, Any], list[str]]:
        """The Evaluate inputs by :data:`FIELDS` name (``gr.skip()``: kept as the page has it) and the notes that
        say what the page cannot take over."""
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

    def wire(self, outputs: dict[str, Any], clip_choices: list[str], tabs: Any, tab_id: str = "evaluate") -> None:
        """Connect the button to the Evaluate tab's inputs (``outputs`` by :data:`FIELDS` name)."""
        from ..explore.items import evaluate_inputs

        shelf, folders = self.shelf, self.folders
        names = [name for name in self.FIELDS if name in outputs]
        parser_choices = _choices(outputs.get("bpm_parser"))

        @user_facing
        def handoff(current, request: gr.Request):
            current = _state(current)
            if current.get("inspected") is None:
                raise InputError("inspect an item first (click it in Items or Disagreements)")
            inputs = evaluate_inputs(item_record(shelf.store(current["key"], current.get("judgments")), current["inspected"]))
            folder = (folders or WorkFolders()).new(getattr(request, "session_hash", None))
            source = folder / f"source{inputs.source.suffix}"
            shutil.copyfile(inputs.source, source)
            edits = []
            for index, (path, name) in enumerate(zip(inputs.edits, inputs.edit_names)):
                safe = "".join(c if c.isalnum() or c in "-_" else "-" for c in name)[:40] or "edit"
                edits.append(str(folder / f"{index}-{safe}{path.suffix}"))
                shutil.copyfile(path, edits[-1])
            values, notes = self.values(inputs, clip_choices, parser_choices)
            values.update(source=str(source), edits=edits)
            for note in notes:
                gr.Warning(scrub_paths_in(note))
            return [*(values[name] for name in names), gr.Tabs(selected=tab_id)]

        self.button.click(handoff, [self.state], [*(outputs[name] for name in names), tabs],
                          api_visibility="private")


def _choices(component: Any) -> list[str] | None:
    """The values a Radio / Dropdown offers (Gradio keeps (label, value) pairs), None for other components."""
    choices = getattr(component, "choices", None)
    if choices is None:
        return None
    return [choice[1] if isinstance(choice, (list, tuple)) else choice for choice in choices]
