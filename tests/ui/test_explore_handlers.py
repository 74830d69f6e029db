"""Each Explore-tab handler called as the page's events call it: a real shelf over the constructed run (results,
manifest and pictures on disk, DuckDB behind), the tab's real components for the output counts and the click
targets, and what the page would show checked against an independent computation from the records."""

from __future__ import annotations

import html
import inspect as signature_of
import json
import re
import statistics
from pathlib import Path

import gradio as gr
import numpy as np
import pytest
from scipy import stats

from augclip_demo.cli import main
from augclip_demo.config import Settings
from augclip_demo.explore import HUMAN, item_record, make_slice
from augclip_demo.explore.items import PAGE_SIZE
from augclip_demo.explore.shelf import RECORDED, Shelf
from augclip_demo.explore.store import metric_label
from augclip_demo.ui.binding import bind
from augclip_demo.ui.explore import handlers as on
from augclip_demo.ui.explore.layout import ExploreTab, build, explore_help
from augclip_demo.ui.explore.state import MAX_SAVED_SLICES, active_slice, fresh_state
from augclip_demo.ui.explore.views import CHOOSE_RANKINGS, DISAGREEMENT_SORT, human_set_views
from augclip_demo.ui.storage import WorkFolders
from tests.explore.constructed import RUN, constructed_records, write_jsonl, write_manifest_with_images
from tests.explore.test_human_sets import assert_same

LABEL = "results.jsonl"
EVERY_FIELD = list(on.EVALUATE_FIELDS)
A_HIGH = [["toy"], ["A"], [], [], [], "augclip", 1.0, None, "A high"]  # the slice controls' values
TOY = [["toy"], [], [], [], [], "(none)", None, None, "toy"]
EVERYTHING = [[], [], [], [], [], "(none)", None, None, "all"]


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("explore-handlers")
    records = constructed_records()
    manifest = write_manifest_with_images(records, folder / "bench")
    work = folder / "work"
    work.mkdir()
    return {"results": write_jsonl(records, folder / "runs" / LABEL), "manifest": manifest, "work": work}


@pytest.fixture(scope="module")
def ctx(run) -> on.ExploreContext:
    shelf = Shelf([f"{run['results']}={run['manifest']}"])
    return on.ExploreContext(settings=Settings(), shelf=shelf, folders=WorkFolders(run["work"]))


@pytest.fixture(scope="module")
def tab(ctx) -> ExploreTab:
    """The tab's components (for the number of outputs each event has, and the tables a click names)."""
    with gr.Blocks(), gr.Tabs():
        return build(ctx.settings, ctx.shelf)


def ok_records(dataset: str | None = None) -> list[dict]:
    return [r for r in constructed_records() if r["status"] == "ok" and dataset in (None, r["dataset"])]


def opened(ctx) -> dict:
    """A session's state with the listed file open."""
    return on.open_results_file(ctx, LABEL, None, None)[0]


def applied(ctx, values) -> dict:
    return on.apply(ctx, opened(ctx), *values)


def metric_disagreements(records: list[dict]) -> set[str]:
    """The items whose AugCLIP winner (highest) is not their L2 winner (lowest), from the definitions."""
    return {r["id"] for r in records
            if int(np.argmax([e["metrics"]["augclip"] for e in r["edits"]]))
            != int(np.argmin([e["metrics"]["l2"] for e in r["edits"]]))}


def column(table: dict, header: str) -> list:
    at = table["headers"].index(header)
    return [row[at] for row in table["data"]]


def test_bind_lets_gradio_find_the_click_and_the_request(ctx):
    inspect_found = bind(on.inspect, ctx, kind="found")
    assert list(signature_of.signature(inspect_found).parameters) == ["current", "evt", "kind"]
    assert gr.utils.get_type_hints(inspect_found)["evt"] is gr.SelectData
    assert gr.utils.get_type_hints(bind(on.make_report, ctx))["request"] is gr.Request
    assert gr.utils.get_type_hints(bind(on.cell_items, ctx))["evt"] is gr.SelectData


def test_open_results_file_fills_the_slice_controls_from_the_file(ctx, tab):
    out = on.open_results_file(ctx, LABEL, None, None)
    assert len(out) == len(tab.open_outputs)
    state, summary = out[0], out[1]
    assert state["key"] == f"named:{LABEL}" and state["slices"] == {} and state["judgments"] is None
    records = constructed_records()
    assert f"**{len(records)} records, {sum(len(r['edits']) for r in records)} edits** from {LABEL}" in summary
    datasets, models = out[2], out[3]
    assert datasets["choices"] == sorted({r["dataset"] for r in records})
    assert set(models["choices"]) == {e["name"] for r in records for e in r["edits"]}
    assert out[7]["choices"] == ["(none)", "augclip", "l2"]
    sort, ranking_a, ranking_b = out[-3:]
    assert DISAGREEMENT_SORT in [value for _, value in sort["choices"]] and sort["value"] == "augclip"
    assert (ranking_a["value"], ranking_b["value"]) == ("augclip", "l2")
    assert ("humans", HUMAN) in ranking_a["choices"]
    with pytest.raises(gr.Error, match="choose a listed results file or upload one"):
        on.open_results_file(ctx, None, None, state)
    with pytest.raises(gr.Error, match="choose one of the listed results files"):
        on.open_results_file(ctx, "../secret.jsonl", None, state)
    assert state["key"] == f"named:{LABEL}"  # a file that cannot be opened leaves the page as it was


def test_apply_makes_the_controls_slice_the_active_one(ctx, tab):
    state = on.apply(ctx, opened(ctx), *A_HIGH)
    assert active_slice(state) == make_slice("A high", datasets=["toy"], models=["A"], ranges={"augclip": [1.0, None]})
    with pytest.raises(gr.Error, match="open a results file first"):
        on.apply(ctx, None, *A_HIGH)
    with pytest.raises(gr.Error, match="low 2 is above high 1"):
        on.apply(ctx, state, *A_HIGH[:6], 2, 1, "wrong")
    assert active_slice(state).name == "A high"


def test_save_keeps_slices_by_name_within_the_bound(ctx, tab):
    state, saved, compare = on.save(ctx, opened(ctx), *A_HIGH)
    assert list(state["slices"]) == ["A high"] and saved["value"] == "A high"
    state, saved, compare = on.save(ctx, state, *TOY)
    assert saved["choices"] == ["A high", "toy"] == compare["choices"]
    state["slices"].update({f"s{i}": state["slices"]["toy"] for i in range(MAX_SAVED_SLICES - 2)})
    with pytest.raises(gr.Error, match=f"at most {MAX_SAVED_SLICES} saved slices"):
        on.save(ctx, state, *TOY[:-1], "one more")
    assert len(on.save(ctx, state, *TOY)[0]["slices"]) == MAX_SAVED_SLICES  # an existing name is replaced


def test_pick_saved_makes_a_saved_slice_active_and_shows_it_in_the_controls(ctx, tab):
    state = on.save(ctx, opened(ctx), *A_HIGH)[0]
    state = on.apply(ctx, state, *TOY)
    out = on.pick_saved(ctx, state, "A high")
    assert len(out) == 1 + len(tab.slice_controls)
    assert active_slice(out[0]).name == "A high"
    assert [out[1]["value"], out[2]["value"], *out[6:]] == [["toy"], ["A"], "augclip", 1.0, None, "A high"]
    with pytest.raises(gr.Error, match="pick one of the saved slices"):
        on.pick_saved(ctx, state, "never saved")


def test_compare_picked_passes_the_same_state_to_the_views_that_read_the_choice(ctx, tab):
    state = on.save(ctx, opened(ctx), *TOY)[0]
    assert on.compare_picked(ctx, state) is state  # in place: a slower handler's changes are never undone
    out = on.views(ctx, state, "toy", "id", False, 1)
    assert state["compare"] == "toy" and out[3]["visible"] is True and out[3]["label"] == "Compared slice: toy"


def test_views_show_the_leaderboard_and_the_page_of_both_slices(ctx, tab):
    state = on.apply(ctx, on.save(ctx, opened(ctx), *TOY)[0], *EVERYTHING)
    out = on.views(ctx, state, "toy", "augclip", True, 1)
    assert len(out) == len(tab.view_outputs)
    board = out[2]
    for model, cell in zip(column(board, "model"), column(board, metric_label("augclip"))):
        if model.startswith("Kendall"):
            continue
        mean = statistics.fmean(e["metrics"]["augclip"] for r in ok_records() for e in r["edits"]
                                if e["name"] == model.removesuffix(" [untrained]"))
        assert cell.startswith(f"{mean:.4f} [")
    values = sorted((e["metrics"]["augclip"] for r in ok_records() for e in r["edits"]), reverse=True)
    rows = out[6]
    assert column(rows, metric_label("augclip")) == [round(v, 4) for v in values[:PAGE_SIZE]]
    assert len(state["page_items"]) == PAGE_SIZE and len(out[5]) == PAGE_SIZE  # every edit has its picture
    assert f"({len(values)} edits in the slice)" in out[1]
    # the compared slice (toy) beside it, same sort and page
    toy = sorted((e["metrics"]["augclip"] for r in ok_records("toy") for e in r["edits"]), reverse=True)
    assert out[7]["visible"] is True and out[8]["label"].startswith(f"toy: page 1 of 2 ({len(toy)} edits")
    assert column(out[9], metric_label("augclip")) == [round(v, 4) for v in toy[:PAGE_SIZE]]
    assert out[10]["visible"] is True
    alone = on.views(ctx, state, None, "augclip", True, 1)
    assert alone[3]["visible"] is False and alone[7]["visible"] is False and state["page_items2"] == []


def test_details_list_the_disagreements_and_the_agreement_of_the_slice(ctx, tab):
    state = on.save(ctx, applied(ctx, TOY), *TOY)[0]
    state["compare"] = "toy"
    out = on.details(ctx, state, "augclip", "l2", "id", False, 1)
    assert len(out) == len(tab.detail_outputs)
    found = out[1]
    expected = metric_disagreements(ok_records("toy"))
    assert set(column(found, "id")) == expected and {"toy-0", "toy-1"} <= expected
    strengths = column(found, "strength (SD)")
    assert strengths == sorted(strengths, reverse=True)
    assert [item_record(ctx.store(state), i).record["id"] for i in state["found"]] == column(found, "id")
    edits = [e for r in ok_records("toy") for e in r["edits"]]
    rho = stats.spearmanr([e["metrics"]["augclip"] for e in edits], [-e["metrics"]["l2"] for e in edits]).statistic
    matrix = out[2]
    assert float(column(matrix, metric_label("l2"))[0]) == pytest.approx(rho, abs=5e-4)
    assert out[5] == matrix  # the compared slice is the same slice here: the same table beside it
    assert out[8] == gr.skip() and out[9] == gr.skip()  # the grid stays unless sorted by disagreement
    per_set = human_set_views(ctx.store(state), active_slice(state))  # the `agreement` command's table, per set
    assert tuple(out[11:14]) == per_set and per_set[2]["sets"]["toy"]["n_items"] == 12
    assert tuple(out[14:16]) == per_set[:2]  # beside it, the compared slice's (the same slice here)
    ranked = on.details(ctx, state, "augclip", "l2", DISAGREEMENT_SORT, False, 1)
    assert column(ranked[9], "id") == [i for i in column(found, "id") for _ in range(3)]


def test_the_pages_per_set_table_and_exact_figures_are_the_agreement_commands(ctx, run, capsys):
    """What the Agreement tab shows per human set (the table, and its exact figures) is `augclip-demo agreement
    --json`'s for the same file: the page's settings are the command's defaults."""
    assert main(["agreement", str(run["results"]), "--json"]) == 0
    theirs = json.loads(capsys.readouterr().out)
    state = applied(ctx, EVERYTHING)
    shown, notes, exact = human_set_views(ctx.store(state), active_slice(state))
    assert_same({k: v for k, v in exact.items() if k != "results"}, {k: v for k, v in theirs.items() if k != "results"})
    assert exact["results"] == [LABEL]  # the file's name, never its folder
    labels = {metric_label(key): key for key in theirs["metrics"]}
    figures = {"pairwise acc. (ties out)": "pairwise", "s2AFC": "s2afc", "Spearman rho": "spearman"}
    assert {row[0] for row in shown["data"]} == {"toy", "all sets"}  # trip has no human judgments: said in notes
    for row in shown["data"]:
        for header, name in figures.items():
            figure = theirs["sets"][row[0]]["metrics"][labels[row[1]]][name]
            cell = row[shown["headers"].index(header)]
            assert cell.startswith(f"{figure['value']:.3f} [{figure['ci_low']:.2f}, {figure['ci_high']:.2f}]"), cell
    assert "trip: 4 items" in notes and "no human judgments in this set" in notes and "Best two by" in notes


def test_the_compared_slices_disagreements_are_shown_beside_and_open_on_a_click(ctx, tab):
    state = on.apply(ctx, on.save(ctx, opened(ctx), *TOY)[0], *A_HIGH)
    views = on.views(ctx, state, "toy", "id", False, 1)
    assert views[-1]["visible"] is True  # the compared slice's disagreements beside the active one's
    out = on.details(ctx, state, "augclip", "l2", "id", False, 1)
    expected = metric_disagreements(ok_records("toy"))
    assert out[1].iloc[0, 0] == "No disagreements in this slice."  # A's edits only: one edit per item
    assert set(column(out[10]["value"], "id")) == expected and out[10]["label"].startswith("Compared slice: toy")
    assert [item_record(ctx.store(state), i).record["id"] for i in state["found2"]] == column(out[10]["value"], "id")
    clicked = on.inspect(ctx, state, gr.SelectData(tab.found2, {"index": [1, 0], "value": ""}), kind="found2")
    assert clicked[4]["id"] == column(out[10]["value"], "id")[1]
    humans = on.refound(ctx, state, "augclip", HUMAN)[2]["value"]
    assert set(column(humans, "id")) == {r["id"] for r in ok_records("toy") if int(np.argmax(
        [e["metrics"]["augclip"] for e in r["edits"]])) != r["human"]["preferred"]}
    cell = on.cell_items(ctx, state, gr.SelectData(tab.matrix, {"index": [1, 1], "value": "0.5"}))
    assert cell[1:3] == ("l2", "augclip") and set(column(cell[4]["value"], "id")) == expected
    alone = on.views(ctx, state, None, "id", False, 1)
    assert alone[-1]["visible"] is False and on.refound(ctx, state, "augclip", "l2")[2] == gr.skip()


def test_regrid_pages_through_the_slice(ctx, tab):
    state = opened(ctx)
    out = on.regrid(ctx, state, "l2", False, 2)
    assert len(out) == 1 + len(tab.grid_outputs)
    values = sorted(e["metrics"]["l2"] for r in ok_records() for e in r["edits"])
    assert column(out[2], metric_label("l2")) == [round(v, 4) for v in values[PAGE_SIZE:2 * PAGE_SIZE]]
    assert len(state["page_items"]) == len(values[PAGE_SIZE:2 * PAGE_SIZE])


def test_refound_lists_the_disagreements_of_another_pair(ctx, tab):
    state = applied(ctx, TOY)
    out = on.refound(ctx, state, "augclip", HUMAN)
    assert len(out) == 3 and out[2] == gr.skip()  # no compared slice: its table stays hidden
    humans = {r["id"] for r in ok_records("toy")
              if int(np.argmax([e["metrics"]["augclip"] for e in r["edits"]])) != r["human"]["preferred"]}
    assert set(column(out[1], "id")) == humans and "toy-2" in humans
    assert column(out[1], "humans picks")[0].endswith("]")
    same = on.refound(ctx, state, "l2", "l2")
    assert state["found"] == [] and same[1].iloc[0, 0] == CHOOSE_RANKINGS


def test_inspect_shows_the_clicked_item_with_its_pictures_and_exact_record(ctx, tab):
    state = opened(ctx)
    on.views(ctx, state, None, "id", False, 1)
    out = on.inspect(ctx, state, gr.SelectData(None, {"index": [4, 0], "value": ""}), kind="page_items")
    assert len(out) == len(tab.inspect_outputs)
    item = state["page_items"][4]
    record = item_record(ctx.store(state), item).record
    assert state["inspected"] == item and out[4]["id"] == record["id"]
    original = next(r for r in constructed_records() if r["id"] == record["id"])
    assert f"### {original['id']} ({original['dataset']})" in out[1]
    assert len(out[2]) == 1 + len(original["edits"])  # the source and every edit, from the manifest's pictures
    assert out[4]["edits"][0]["metrics"] == original["edits"][0]["metrics"]  # exact, as recorded
    assert out[5].selected == "explore-inspect"
    with pytest.raises(gr.Error, match="no longer shown"):
        on.inspect(ctx, state, gr.SelectData(None, {"index": 0, "value": ""}), kind="found")


def test_a_click_in_an_agreement_table_lists_that_cells_disagreements(ctx, tab):
    state = applied(ctx, TOY)
    out = on.cell_items(ctx, state, gr.SelectData(tab.matrix, {"index": [0, 2], "value": "0.5"}))
    assert len(out) == len(tab.cell_outputs)
    assert out[1:3] == ("augclip", "l2") and set(column(out[3], "id")) == metric_disagreements(ok_records("toy"))
    assert out[4] == gr.skip() and out[5].selected == "explore-disagreements"
    human = on.cell_items(ctx, state, gr.SelectData(tab.human, {"index": [0, 3], "value": "0.5"}))
    assert human[1:3] == ("augclip", HUMAN)
    with pytest.raises(gr.Error, match="click a cell of a metric's row"):
        on.cell_items(ctx, state, gr.SelectData(tab.matrix, {"index": [5, 1], "value": ""}))


def test_make_report_writes_the_active_slices_page(ctx, tab, run):
    state = applied(ctx, [["toy"], [], [], [], [], "(none)", None, None, "toy / report"])
    path = Path(on.make_report(ctx, state, "augclip", "l2", None))
    assert path.name == "explore-toy---report.html" and run["work"] in path.parents
    page = path.read_text(encoding="utf-8")
    assert "<h1>Results: toy / report</h1>" in page
    shown = human_set_views(ctx.store(state), active_slice(state))[0]  # the per-set table, as the page shows it
    assert "per set (as <code>augclip-demo agreement</code>)" in page and all(
        f"<td>{html.escape(cell)}</td>" in page for row in shown["data"] for cell in row)
    assert f"Top disagreements: AugCLIP vs L2 ({len(metric_disagreements(ok_records('toy')))} found)" in page
    assert page.count("<figure>") == 3 * len(metric_disagreements(ok_records("toy")))  # source and the two winners


def test_the_report_has_the_compared_slice_after_the_active_one(ctx, tab):
    state = on.apply(ctx, on.save(ctx, opened(ctx), *TOY)[0], *A_HIGH)
    alone = Path(on.make_report(ctx, state, "augclip", "l2", None)).read_text(encoding="utf-8")
    assert "Compared slice" not in alone and alone.count("<h2>Leaderboard</h2>") == 1
    on.views(ctx, state, "toy", "id", False, 1)  # "Compare with" names the saved toy slice
    page = Path(on.make_report(ctx, state, "augclip", "l2", None)).read_text(encoding="utf-8")
    active, compared = page.split("<hr><h2>Compared slice: toy</h2>")
    assert "<hr><h2>Active slice: A high</h2>" in active and page.count("<h2>Leaderboard</h2>") == 2
    # the active slice holds model A's edits only: one edit per item, so no disagreements; the toy slice has all
    assert "Top disagreements: AugCLIP vs L2 (0 found)" in active and "<td>B [untrained]</td>" not in active
    expected = metric_disagreements(ok_records("toy"))
    assert f"Top disagreements: AugCLIP vs L2 ({len(expected)} found)" in compared
    assert all(f"<h3>{item} (toy)" in compared for item in expected)
    assert "<td>B [untrained]</td>" in compared and "<td>C [untrained]</td>" in compared


def test_handoff_gives_evaluate_the_items_images_and_the_runs_settings(ctx, tab, run):
    state = opened(ctx)
    options = dict(names=EVERY_FIELD, clip_choices=[RUN["model"]], parser_choices=None, tab_id="evaluate")
    with pytest.raises(gr.Error, match="inspect an item first"):
        on.handoff(ctx, state, None, **options)
    on.views(ctx, state, None, "id", False, 1)
    on.inspect(ctx, state, gr.SelectData(None, {"index": 0, "value": ""}), kind="page_items")
    out = on.handoff(ctx, state, None, **options)
    assert len(out) == len(EVERY_FIELD) + 1 and out[-1].selected == "evaluate"
    values = dict(zip(EVERY_FIELD, out))
    record = item_record(ctx.store(state), state["inspected"]).record
    bench = run["manifest"].parent
    assert Path(values["source"]).read_bytes() == (bench / record["source"]).read_bytes()
    assert [Path(p).read_bytes() for p in values["edits"]] == [(bench / e["path"]).read_bytes()
                                                                 for e in record["edits"]]
    assert run["work"] in Path(values["source"]).parents
    assert (values["target"], values["clip_model"], values["C"]) == (record["target_text"], RUN["model"],
                                                                     RUN["options"]["C"])
    assert values["src_box"].splitlines() == record["attributes"]["source_attributes"]


def test_pick_judgments_takes_only_a_listed_source(ctx, tab):
    state = opened(ctx)
    assert on.pick_judgments(ctx, state, RECORDED) is state and state["judgments"] == RECORDED
    with pytest.raises(gr.Error, match="choose one of the listed sources"):
        on.pick_judgments(ctx, state, "study secret (overall)")
    assert state["judgments"] == RECORDED
    before_a_file = fresh_state()
    with pytest.raises(gr.Error, match="open a results file first"):
        on.pick_judgments(ctx, before_a_file, RECORDED)
    assert before_a_file["judgments"] == RECORDED  # kept for the file opened next


def texts(value) -> list[str]:
    """Every string in a (nested) value."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [text for item in value.values() for text in texts(item)]
    if isinstance(value, (list, tuple)):
        return [text for item in value for text in texts(item)]
    if hasattr(value, "to_dict"):  # a table (pandas)
        return texts(value.to_dict("split"))
    return []


def test_the_tab_names_metrics_and_human_raters_never_judges(ctx, tab):
    """A "judge" is the MLLM judge in this project: the Explore tab's A and B are metrics or the humans."""
    shown = [explore_help(ctx.settings)]
    form = tab.study_form  # the Study room's form at the tab's foot: its components are on the tab too
    for component in [value for value in vars(tab).values() if value is not form] + list(vars(form).values()):
        config = component.get_config()
        shown += texts({key: config.get(key) for key in ("label", "info", "value", "choices")})
    state = opened(ctx)
    shown += texts(on.open_results_file(ctx, LABEL, None, None)[1:])  # the choices and the sort's options
    shown += texts(on.refound(ctx, state, "l2", "l2")[1])  # what the table says before A and B are two
    assert len(shown) > 40 and shown.count(CHOOSE_RANKINGS) == 2
    assert not [text for text in shown if re.search(r"\bjudges?\b", text, re.IGNORECASE)]
