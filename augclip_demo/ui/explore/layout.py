"""The Explore tab's components: :func:`build` lays them out and returns them as an :class:`ExploreTab`; what
they do is in :mod:`.handlers`, and :mod:`.wiring` connects the two."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gradio as gr

from ...config import Settings
from ...explore.shelf import RECORDED, Shelf
from ..common import empty_table
from ..study.layout import SliceStudyForm
from ..study.layout import build_slice_form as build_study_form
from .state import CATEGORY_CONTROLS, NO_RANGE, fresh_state
from .views import CHOOSE_RANKINGS


def explore_help(settings: Settings) -> str:
    return f"""
**Explore a batch run.** Open a results file (JSONL, Parquet) written by `augclip-demo batch` or the Batch tab:
the leaderboard ranks the editing models under every metric beside the humans, the agreement tables compare the
metrics with each other and with the human judgments (the same functions as `augclip-demo protocol`, and per
human set those of `augclip-demo agreement`), the
disagreements list the items where two metrics, or a metric and the human raters, pick different winners, and the
items grid pages through the edits.
Every view follows the **slice** (filters, then Apply; Save keeps it by name). Upload a results file, or a
**zip** of it with its manifest and the images (the manifest's paths relative to its folder): then the items show
their thumbnails and *Explain in the Evaluate tab* works. A zip may be at most {settings.upload_max_zip_mb} MB,
hold at most {settings.upload_max_files} entries and expand to at most {settings.upload_max_unzipped_mb} MB;
`..`, absolute paths and links are refused. A run of the Batch tab opens here with its button *Open these results
in the Explore tab*. The server's own files are the ones its operator listed (`AUGCLIP_EXPLORE_FILES`).
From a shell: `augclip-demo explore RESULTS.jsonl --manifest MANIFEST.jsonl`.
"""


@dataclass
class ExploreTab:
    """The tab's components, by what they show or do (``*2``: the compared slice's, beside the active one's)."""

    state: gr.State  # the session's Explore state (state.py)
    # the file and the source of human judgments
    file: gr.Dropdown
    upload: gr.File
    open: gr.Button
    judgments: gr.Dropdown
    info: gr.Markdown
    # the slice
    datasets: gr.Dropdown
    models: gr.Dropdown
    roles: gr.Dropdown
    edit_types: gr.Dropdown
    runs: gr.Dropdown
    range_metric: gr.Dropdown
    low: gr.Number
    high: gr.Number
    name: gr.Textbox
    apply: gr.Button
    save: gr.Button
    saved: gr.Dropdown
    compare: gr.Dropdown
    slice_info: gr.Markdown
    tabs: gr.Tabs
    # leaderboard
    board: gr.Dataframe
    board2: gr.Dataframe
    board_notes: gr.Markdown
    # agreement
    matrix: gr.Dataframe
    human: gr.Dataframe
    agree_notes: gr.Markdown
    agree2_column: gr.Column
    matrix2: gr.Dataframe
    human2: gr.Dataframe
    agree2_notes: gr.Markdown
    # agreement with the human votes, per set (augclip-demo agreement's table)
    sets: gr.Dataframe
    sets_notes: gr.Markdown
    sets_json: gr.JSON
    sets2: gr.Dataframe
    sets2_notes: gr.Markdown
    # disagreements
    ranking_a: gr.Dropdown  # a metric or the humans
    ranking_b: gr.Dropdown
    found: gr.Dataframe
    found2_column: gr.Column
    found2: gr.Dataframe
    # items
    sort: gr.Dropdown
    descending: gr.Checkbox
    page: gr.Number
    grid: gr.Gallery
    rows: gr.Dataframe
    grid2_column: gr.Column
    grid2: gr.Gallery
    rows2: gr.Dataframe
    # inspect
    inspect_tab: gr.Tab
    item_info: gr.Markdown
    item_images: gr.Gallery
    item_scores: gr.Dataframe
    to_evaluate: gr.Button
    item_json: gr.JSON
    # share
    report_btn: gr.Button
    report: gr.File
    # the Study room's "Make a study from this slice", at the tab's foot
    study_form: SliceStudyForm

    @property
    def category(self) -> list[Any]:
        return [getattr(self, key) for key, _, _ in CATEGORY_CONTROLS]

    @property
    def slice_controls(self) -> list[Any]:
        """What makes a slice, in the order the slice handlers take (and :func:`.state.controls_of`
        gives) them."""
        return [*self.category, self.range_metric, self.low, self.high, self.name]

    @property
    def open_outputs(self) -> list[Any]:
        return [self.state, self.info, *self.slice_controls, self.saved, self.compare, self.sort, self.ranking_a,
                self.ranking_b]

    @property
    def grid_inputs(self) -> list[Any]:
        return [self.sort, self.descending, self.page]

    @property
    def grid_outputs(self) -> list[Any]:
        return [self.grid, self.rows, self.grid2_column, self.grid2, self.rows2]

    @property
    def view_inputs(self) -> list[Any]:
        return [self.state, self.compare, *self.grid_inputs]

    @property
    def view_outputs(self) -> list[Any]:
        return [self.state, self.slice_info, self.board, self.board2, self.board_notes, *self.grid_outputs,
                self.agree2_column, self.found2_column]

    @property
    def detail_inputs(self) -> list[Any]:
        return [self.state, self.ranking_a, self.ranking_b, *self.grid_inputs]

    @property
    def detail_outputs(self) -> list[Any]:
        return [self.state, self.found, self.matrix, self.human, self.agree_notes, self.matrix2, self.human2,
                self.agree2_notes, self.grid, self.rows, self.found2, self.sets, self.sets_notes, self.sets_json,
                self.sets2, self.sets2_notes]

    @property
    def inspect_outputs(self) -> list[Any]:
        return [self.state, self.item_info, self.item_images, self.item_scores, self.item_json, self.tabs]

    @property
    def cell_outputs(self) -> list[Any]:
        return [self.state, self.ranking_a, self.ranking_b, self.found, self.found2, self.tabs]


def build(settings: Settings, shelf: Shelf) -> ExploreTab:
    """Lay out the Explore tab (call inside the page's ``gr.Tabs``), the files ``shelf`` offers in its list, and
    at its foot the Study room's "Make a study from this slice" form; nothing is wired here."""
    with gr.Tab("Explore", id="explore"):
        gr.Markdown(explore_help(settings))
        ui: dict[str, Any] = {"state": gr.State(fresh_state())}
        ui.update(_file_row(shelf))
        ui["info"] = gr.Markdown(elem_id="aug-explore-info")
        ui.update(_slice_controls())
        with gr.Tabs() as ui["tabs"]:
            ui.update(_leaderboard_tab())
            ui.update(_agreement_tab())
            ui.update(_disagreements_tab())
            ui.update(_items_tab())
            ui.update(_inspect_tab())
            ui.update(_share_tab())
        ui["study_form"] = build_study_form(ui["state"])  # operator only
    return ExploreTab(**ui)


def _file_row(shelf: Shelf) -> dict[str, Any]:
    ui: dict[str, Any] = {}
    with gr.Row(equal_height=False):
        ui["file"] = gr.Dropdown(shelf.labels, value=shelf.labels[0] if shelf.labels else None,
                                 label="Results named by the operator", elem_id="aug-explore-file")
        ui["upload"] = gr.File(label="or upload a results file (.jsonl / .parquet), or a zip of it with its manifest "
                                     "and images", file_types=[".jsonl", ".parquet", ".zip"],
                               height=110, elem_id="aug-explore-upload")
        ui["open"] = gr.Button("Open", variant="primary", elem_id="aug-explore-open")
        ui["judgments"] = gr.Dropdown(shelf.judgment_choices(), value=RECORDED, label="Human judgments from",
                                      info="the file's own, or a study's (Study tab) by item id",
                                      elem_id="aug-explore-judgments")
    return ui


def _slice_controls() -> dict[str, Any]:
    ui: dict[str, Any] = {}
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
    return ui


def _leaderboard_tab() -> dict[str, Any]:
    ui: dict[str, Any] = {}
    with gr.Tab("Leaderboard", id="explore-leaderboard"):
        with gr.Row(equal_height=False):
            ui["board"] = gr.Dataframe(empty_table("Open a results file."), label="Active slice: mean [95% "
                                       "interval] (#rank) per metric", wrap=True,
                                       interactive=False, elem_id="aug-explore-board")
            ui["board2"] = gr.Dataframe(empty_table("Pick a saved slice to compare."), label="Compared slice",
                                        wrap=True, interactive=False, visible=False, elem_id="aug-explore-board2")
        ui["board_notes"] = gr.Markdown()
    return ui


def _agreement_tab() -> dict[str, Any]:
    ui: dict[str, Any] = {}
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
                ui.update(_sets_section(""))
            with gr.Column(visible=False) as ui["agree2_column"]:
                ui["matrix2"] = gr.Dataframe(empty_table("Pick a saved slice to compare."), label="Compared slice: "
                                             "metric-metric Spearman rho", interactive=False,
                                             elem_id="aug-explore-matrix2")
                ui["human2"] = gr.Dataframe(empty_table("Pick a saved slice to compare."), label="Compared slice: "
                                            "agreement with the human judgments", wrap=True, interactive=False,
                                            elem_id="aug-explore-human2")
                ui["agree2_notes"] = gr.Markdown()
                ui.update(_sets_section("2"))
    return ui


def _sets_section(suffix: str) -> dict[str, Any]:
    """The per-set table of ``augclip-demo agreement`` (``suffix`` "2": the compared slice's, without the JSON)."""
    ui: dict[str, Any] = {}
    whose = "Compared slice: " if suffix else ""
    ui[f"sets{suffix}"] = gr.Dataframe(
        empty_table("No human judgments yet."), label=f"{whose}Which metric agrees with the human votes, per set: "
        "the `augclip-demo agreement` table (pairwise accuracy without and with human ties, s2AFC, Spearman / "
        "Kendall for ratings; 95% bootstrap intervals)", wrap=True, interactive=False,
        elem_id=f"aug-explore-sets{suffix}")
    ui[f"sets{suffix}_notes"] = gr.Markdown(elem_id=f"aug-explore-sets{suffix}-notes")
    if not suffix:
        with gr.Accordion("Exact figures (the JSON that augclip-demo agreement --json writes)", open=False):
            ui["sets_json"] = gr.JSON(label="agreement.json", elem_id="aug-explore-sets-json")
    return ui


def _disagreements_tab() -> dict[str, Any]:
    ui: dict[str, Any] = {}
    with gr.Tab("Disagreements", id="explore-disagreements"):
        with gr.Row():
            ui["ranking_a"] = gr.Dropdown([], label="A (a metric or the humans)", elem_id="aug-explore-ranking-a")
            ui["ranking_b"] = gr.Dropdown([], label="B (a metric or the humans)", elem_id="aug-explore-ranking-b")
        with gr.Row(equal_height=False):
            ui["found"] = gr.Dataframe(empty_table(CHOOSE_RANKINGS), label="Items where A and B pick different "
                                       "winners, strongest first (click a row to inspect)", interactive=False,
                                       elem_id="aug-explore-found")
            with gr.Column(visible=False) as ui["found2_column"]:
                ui["found2"] = gr.Dataframe(empty_table("Pick a saved slice to compare."), label="Compared slice: "
                                            "items where A and B pick different winners (click a row to inspect)",
                                            interactive=False, elem_id="aug-explore-found2")
    return ui


def _items_tab() -> dict[str, Any]:
    ui: dict[str, Any] = {}
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
    return ui


def _inspect_tab() -> dict[str, Any]:
    ui: dict[str, Any] = {}
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
    return ui


def _share_tab() -> dict[str, Any]:
    ui: dict[str, Any] = {}
    with gr.Tab("Share", id="explore-share"):
        ui["report_btn"] = gr.Button("Make the HTML report of the active slice (and the compared one)",
                                     elem_id="aug-explore-report-btn")
        ui["report"] = gr.File(label="Report (one self-contained HTML file)", interactive=False,
                               elem_id="aug-explore-report")
    return ui
