"""Each Evaluate-tab handler called as the page's events call it: the real app's context (built by build_app
with the tiny random CLIP), the shipped flower example, and what the page would show checked against an
independent computation (the Evaluator itself, the files on disk)."""

from __future__ import annotations

import dataclasses
import inspect
import json
import time
import zipfile
from pathlib import Path

import gradio as gr
import pytest
from PIL import Image

from augclip_demo.attributes import Attributes
from augclip_demo.config import Settings
from augclip_demo.pipeline import AugCLIPOptions, Evaluator
from augclip_demo.report import UNTRAINED_WARNING, edit_tag
from augclip_demo.ui import build_app
from augclip_demo.ui.binding import bind
from augclip_demo.ui.evaluate import handlers as on
from augclip_demo.ui.evaluate import session as logic
from augclip_demo.ui.evaluate import views
from augclip_demo.ui.examples import load_examples
from augclip_demo.ui.shown import superseded
from augclip_demo.ui.status import check_region_models, model_status, status_html
from tests.support import EXAMPLES, TINY

FLOWER = EXAMPLES / "flower-pink"
EDITS = [str(FLOWER / name) for name in ("well_edited.png", "excessively_preserved.png", "excessively_modified.png")]
SRC_ATTRS = ["dahlia is orange", "round flower head", "dark green background"]
TGT_ATTRS = ["dahlia is pink", "pink petals"]
NO_WEIGHTS = "ViT-B-16/openai"  # offered by the page, never downloaded in the tests (HF_HUB_OFFLINE)


@pytest.fixture(scope="module")
def ctx() -> on.EvaluateContext:
    """The context the page's events are bound to."""
    return build_app(Settings.from_env(clip_model=TINY, device="cpu")).evaluate_context


@pytest.fixture(scope="module")
def direct(tiny_encoder) -> Evaluator:
    return Evaluator(TINY, device="cpu", encoder=tiny_encoder)


def evaluate(ctx, state=None, *, edits=EDITS, src=SRC_ATTRS, tgt=TGT_ATTRS, archive=False, clip=TINY,
             progress=None) -> dict:
    """The page's Evaluate (``archive``: the /evaluate endpoint) on the flower example (``progress``: its
    progress callback, else Gradio's)."""
    extra = {} if progress is None else {"progress": progress}
    return on.evaluate(ctx, str(FLOWER / "source.png"), edits, "a pink dahlia flower", "an orange dahlia flower",
                       "make the flower pink", "manual", "\n".join(src), "\n".join(tgt), "svm", 1.0, True, True, clip,
                       state=state, archive=archive, **extra)


def evaluated(ctx, edits=EDITS) -> logic.Session:
    return evaluate(ctx, edits=edits)[ctx.tab.session_state]


def explained(ctx, edits=EDITS) -> tuple[logic.Session, str]:
    """A session after the explanation stage, and the edit it shows."""
    out = on.explain(ctx, True, evaluated(ctx, edits))
    return out[ctx.tab.session_state], out[ctx.tab.edit_pick].value


def is_png(path) -> bool:
    return path is not None and Path(path).is_file() and Image.open(path).format == "PNG"


def test_bind_hands_gradio_the_remaining_parameters_and_their_special_hints(ctx):
    bound = bind(on.save_attributes, ctx)
    assert list(inspect.signature(bound).parameters) == ["src_box_value", "tgt_box_value", "state", "request"]
    assert gr.utils.get_type_hints(bound)["request"] is gr.Request  # how Gradio finds the request parameter
    page = bind(on.evaluate, ctx, archive=False)
    parameters = inspect.signature(page).parameters
    assert "ctx" not in parameters and parameters["archive"].default is False
    assert isinstance(parameters["progress"].default, gr.Progress)


@pytest.mark.slow
def test_evaluate_shows_the_evaluators_scores_and_clears_earlier_figures(ctx, direct):
    tab = ctx.tab
    out = evaluate(ctx)
    expected = direct.evaluate(FLOWER / "source.png", EDITS, "a pink dahlia flower", "an orange dahlia flower",
                               Attributes(SRC_ATTRS, TGT_ATTRS))
    frame = out[tab.table].data
    for edit, (_, row) in zip(expected.edits, frame.iterrows()):
        assert row["AugCLIP"] == pytest.approx(edit.metrics["augclip"], abs=1e-5)
        assert row["CLIP-I"] == pytest.approx(edit.metrics["clip_i"], abs=1e-5)
    assert f"AugCLIP prefers edit E{expected.best('augclip') + 1}" in out[tab.verdict]
    assert out[tab.src_box].splitlines() == SRC_ATTRS and out[tab.tgt_box].splitlines() == TGT_ATTRS
    assert sorted(Path(f).name for f in out[tab.downloads]) == ["report.csv", "report.json"]  # the zip comes last
    assert out[tab.report_json]["model"]["spec"] == TINY
    state = out[tab.session_state]
    assert state.report is not None and state.halted is None and Path(state.output_dir).is_dir()
    assert all(out[c] is None for c in (tab.exact_plot, tab.umap_plot, *tab.figure_outputs, tab.bpm_gallery))
    assert out[tab.edit_pick].visible is False and len(out[tab.edit_pick].choices) == 3
    assert "aug-untrained" in out[tab.status_box]  # the page's status area, refreshed

    api = evaluate(ctx, edits=EDITS[:1], archive=True)
    assert "<" not in api[tab.verdict] and "**" not in api[tab.verdict]  # plain text for API clients
    assert sorted(Path(f).name for f in api[tab.downloads]) == ["figures.zip", "report.csv", "report.json"]
    assert tab.status_box not in api


@pytest.mark.slow
def test_evaluate_without_the_clip_weights_halts_quietly_beside_the_status(ctx):
    tab = ctx.tab
    assert model_status(ctx.settings_for(NO_WEIGHTS), background=False).state == "error"
    out = evaluate(ctx, clip=NO_WEIGHTS)
    assert all(out[c] == gr.skip() for c in tab.score_outputs if c is not tab.session_state)
    assert NO_WEIGHTS in out[tab.status_box] and "aug-error" in out[tab.status_box]
    state = out[tab.session_state]
    assert state.halted == NO_WEIGHTS and state.report is None
    # the later stages then leave the page as it is
    assert all(v == gr.skip() for v in on.explain(ctx, True, state).values())
    assert on.complete_downloads(ctx, state) == gr.skip()
    shown = evaluated(ctx, EDITS[:1])  # a halt after a result: that result's stages still running give way
    evaluate(ctx, shown, clip=NO_WEIGHTS)
    assert superseded(shown) and on.explain(ctx, True, shown) == gr.skip()
    with pytest.raises(gr.Error, match="not offered by this server"):  # a model the page does not offer
        evaluate(ctx, clip="local-dir:/etc")


@pytest.mark.slow
def test_rescore_refits_from_the_session_embeddings(ctx, direct):
    tab = ctx.tab
    state = evaluated(ctx)
    out = on.rescore(ctx, "\n".join(SRC_ATTRS[:2]), "\n".join(TGT_ATTRS), "logistic", 0.5, False, True, TINY, state)
    base = direct.evaluate(FLOWER / "source.png", EDITS, "a pink dahlia flower", "an orange dahlia flower",
                           Attributes(SRC_ATTRS, TGT_ATTRS))
    expected = direct.rescore(base, AugCLIPOptions("logistic", 0.5, False, True), Attributes(SRC_ATTRS[:2], TGT_ATTRS))
    for edit, (_, row) in zip(expected.edits, out[tab.table].data.iterrows()):
        assert row["AugCLIP"] == pytest.approx(edit.metrics["augclip"], abs=1e-5)
    assert out[tab.report_json]["options"]["classifier"] == "logistic"
    assert tab.exact_plot not in out  # a re-score keeps the figures until the explanations are redrawn
    with pytest.raises(gr.Error, match="press Evaluate first"):
        on.rescore(ctx, "a", "b", "svm", 1.0, True, True, TINY, None)
    with pytest.raises(gr.Error, match="C \\(svm / logistic\\) is empty"):
        on.rescore(ctx, "a", "b", "svm", None, True, True, TINY, state)


@pytest.mark.slow
def test_rescore_if_evaluated_does_nothing_before_an_evaluation(ctx):
    tab = ctx.tab
    nothing = on.rescore_if_evaluated(ctx, "a", "b", "lda", 1.0, True, True, TINY, logic.Session())
    assert set(nothing) == set(tab.score_outputs) and all(v == gr.skip() for v in nothing.values())
    state = evaluated(ctx, EDITS[:2])
    out = on.rescore_if_evaluated(ctx, "\n".join(SRC_ATTRS), "\n".join(TGT_ATTRS), "lda", 1.0, True, True, TINY, state)
    assert out[tab.report_json]["options"]["classifier"] == "lda"
    assert out[tab.session_state].report is not state.report  # a new result


@pytest.mark.slow
def test_explain_shows_the_preferred_edit_with_its_augclip_map_first(ctx):
    tab = ctx.tab
    state = evaluated(ctx)
    off = on.explain(ctx, False, state)
    assert set(off) == set(tab.explain_outputs) and all(v == gr.skip() for v in off.values())
    out = on.explain(ctx, True, state)
    state = out[tab.session_state]
    best = logic.selected_edit(state.report)
    pick = out[tab.edit_pick]
    assert pick.visible and pick.value == views.edit_choices(state.report)[best]
    assert is_png(out[tab.augclip_map]) and f"{edit_tag(best)}_relevancy_augclip" in Path(out[tab.augclip_map]).name
    # the charts come from the next stages: nothing of an earlier result meanwhile
    assert all(out[c] is None for c in tab.ranking_outputs)
    assert json.loads(out[tab.exact_plot].plot)["data"]  # the interactive exact view of the shown edit
    assert state.explained is not None


@pytest.mark.slow
def test_show_other_maps_draws_the_shown_edits_clip_t_and_clip_dir_maps(ctx):
    tab = ctx.tab
    state, pick = explained(ctx)
    out = on.show_other_maps(ctx, state, pick)
    index = views.picked_index(pick)
    assert set(out) == set(tab.relevancy_outputs)
    for component, key in zip(tab.relevancy_outputs, views.RELEVANCY_FIGURES):
        assert is_png(out[component]) and Path(out[component]).name.startswith(f"{edit_tag(index)}_{key}")
    state.shown = (index + 1) % 3  # the user picked another edit meanwhile: its own handler draws it
    assert all(v == gr.skip() for v in on.show_other_maps(ctx, state, pick).values())


@pytest.mark.slow
def test_explain_rest_adds_the_umap_view_of_every_edit(ctx):
    tab = ctx.tab
    state, _ = explained(ctx)
    out = on.explain_rest(ctx, state)
    spec = json.loads(out[tab.umap_plot].plot)
    names = [trace["name"] for trace in spec["data"]]
    assert sum(name.startswith(("E1 ", "E2 ", "E3 ")) for name in names) == 3
    assert on.explain_rest(ctx, logic.Session()) == on.unchanged(tab.rest_outputs)


@pytest.mark.slow
def test_show_rankings_draws_the_shown_edits_charts(ctx):
    tab = ctx.tab
    state, pick = explained(ctx)
    out = on.show_rankings(ctx, state, pick)
    assert set(out) == set(tab.ranking_outputs)
    index = views.picked_index(pick)
    for component, key in zip(tab.ranking_outputs, views.RANKING_FIGURES):
        assert is_png(out[component]) and Path(out[component]).name.startswith(f"{edit_tag(index)}_{key}")


@pytest.mark.slow
def test_pick_edit_shows_every_figure_of_the_picked_edit(ctx):
    tab = ctx.tab
    state, pick = explained(ctx)
    other = next(c for c in views.edit_choices(state.report) if c != pick)
    out = on.pick_edit(ctx, state, other)
    index = views.picked_index(other)
    assert state.shown == index  # later stages leave the page on this edit
    for component, key in zip(tab.figure_outputs, views.PER_EDIT_FIGURES):
        assert is_png(out[component]) and Path(out[component]).name.startswith(f"{edit_tag(index)}_{key}")
    assert out[tab.exact_plot] is not None


@pytest.mark.slow
def test_the_stages_of_an_older_result_leave_the_page_to_the_newer_one(ctx):
    """Evaluate pressed again while the first result's stages still run: those stages change nothing on the
    page (the newer result's explanation removed their figures), the newer result's stages run as usual, and a
    re-score that fails leaves the result on the page as it was."""
    tab = ctx.tab
    first, pick = explained(ctx)
    second = evaluate(ctx, first, edits=EDITS[:2])[tab.session_state]
    assert second.newest is first.newest and second.result > first.result
    newer = on.explain(ctx, True, second)
    assert not Path(first.figures_dir).exists()
    # BPM read the state before the explanation replaced it: it adds to the report both share, and does not
    # put the state it read back (the page would lose the explanation)
    bpm = on.bpm_stage(ctx, True, "make the flower pink", "rules", TINY, second)
    assert tab.session_state not in bpm and newer[tab.session_state].report.arrays.bpm
    assert on.show_other_maps(ctx, first, pick) == gr.skip()
    assert on.show_rankings(ctx, first, pick) == gr.skip()
    assert on.pick_edit(ctx, first, pick) == gr.skip()
    for stage in (on.explain_rest, on.complete_downloads, on.reset_comparison, on.refresh_comparison):
        assert stage(ctx, first) == gr.skip(), stage.__name__
    assert on.bpm_stage(ctx, True, "make the flower pink", "rules", TINY, first) == gr.skip()
    assert on.judge_stage(ctx, True, "make the flower pink", TINY, first) == gr.skip()
    state, shown = newer[tab.session_state], newer[tab.edit_pick].value
    with pytest.raises(gr.Error, match="C \\(svm / logistic\\) is empty"):
        on.rescore(ctx, "\n".join(SRC_ATTRS), "\n".join(TGT_ATTRS), "svm", None, True, True, TINY, state)
    out = on.show_other_maps(ctx, state, shown)
    assert set(out) == set(tab.relevancy_outputs) and all(is_png(path) for path in out.values())


@pytest.mark.slow
def test_of_two_evaluations_the_one_that_ends_last_is_shown(ctx):
    """Two Evaluates of one page, the first still computing when the second ends: the first's scores come
    last and stay, and the second's stages leave them alone."""
    tab = ctx.tab
    state = evaluated(ctx, EDITS[:1])
    later = []

    def progress(fraction, desc=""):  # the first evaluation's progress: the second runs to its end meanwhile
        if not later:
            later.append(evaluate(ctx, state, edits=EDITS[:2])[tab.session_state])

    first = evaluate(ctx, state, progress=progress)[tab.session_state]
    assert len(first.report.edits) == 3 and first.result > later[0].result
    assert superseded(later[0]) and not superseded(first)
    assert on.explain(ctx, True, later[0]) == gr.skip()
    assert on.explain(ctx, True, first)[tab.session_state].explained is not None


@pytest.mark.slow
def test_a_stage_overtaken_while_it_runs_leaves_the_page_alone_and_so_does_its_failure(ctx):
    """A newer result shown while a stage of the older one runs: the stage's updates are dropped, and so is a
    failure of it (the newer explanation removes the older figures' folder); on the result the page shows, the
    same failure is the user's to read."""
    removed = FileNotFoundError("the figures' folder was removed")

    def newer_result_meanwhile(state, then_fail=False):
        def progress(fraction, desc=""):
            if not superseded(state):
                evaluate(ctx, state, edits=EDITS[:2])
            if then_fail:
                raise removed
        return progress

    state = evaluated(ctx, EDITS[:1])
    assert on.explain(ctx, True, state, progress=newer_result_meanwhile(state)) == gr.skip()
    state = evaluated(ctx, EDITS[:1])
    assert on.explain(ctx, True, state, progress=newer_result_meanwhile(state, then_fail=True)) == gr.skip()

    def fail(fraction, desc=""):
        raise removed

    with pytest.raises(gr.Error, match="Something went wrong"):
        on.explain(ctx, True, evaluated(ctx, EDITS[:1]), progress=fail)


def test_parse_instruction_fills_the_bpm_fields(ctx):
    tab = ctx.tab
    out = on.parse_instruction(ctx, "could you make the flower pink and a bit bigger?", "rules", TINY)
    assert [out[c] for c in tab.parse_fields] == ["flower", "pink flower", "larger", "unchanged", ""]
    assert "confidence high" in out[tab.bpm_parse_info]
    refused = on.parse_instruction(ctx, "make it more cinematic", "rules", TINY)
    assert refused[tab.bpm_o1] == "" and refused[tab.bpm_parse_info].startswith("**No parse.**")


@pytest.mark.slow
def test_bpm_stage_scores_every_edit_or_waits_for_the_user(ctx):
    tab = ctx.tab
    state = evaluated(ctx, EDITS[:2])
    assert all(v == gr.skip() for v in on.bpm_stage(ctx, False, "make the flower pink", "rules", TINY, state).values())
    waiting = on.bpm_stage(ctx, True, "give the photo a vintage look", "rules", TINY, state)
    assert "BPM waits for you" in waiting[tab.bpm_info] and waiting[tab.bpm_gallery] is None
    out = on.bpm_stage(ctx, True, "make the flower pink", "rules", TINY, state)
    assert (out[tab.bpm_o1], out[tab.bpm_o2]) == ("flower", "pink flower")
    assert len(out[tab.bpm_gallery]) == 2 * 3  # source, edit and preserved region per edit
    assert tab.session_state not in out  # BPM adds to the report the page's state holds: the state stays as it is
    report = state.report
    expected = Evaluator(settings=ctx.settings_for(TINY)).add_bpm(evaluated(ctx, EDITS[:2]).report,
                                                                  "make the flower pink")
    for edit, (_, row) in zip(expected.edits, out[tab.table].data.iterrows()):
        assert row["BPM"] == pytest.approx(edit.metrics["bpm"], abs=1e-4)
    assert [e.metrics["bpm"] for e in report.edits] == pytest.approx([e.metrics["bpm"] for e in expected.edits],
                                                                     abs=1e-4)
    # the headline is about the edit the page shows (AugCLIP's pick) and says which; another pick follows
    labels = [name.label for name in report.edit_names()]
    best = report.best("augclip") or 0
    def headline(info: str) -> str:
        return info.split("<b>", 1)[1].split("</b>", 1)[0]

    shown = headline(out[tab.bpm_info])
    assert shown.startswith(f"{labels[best]}: ") and f"BPM {expected.edits[best].metrics['bpm']:.4f} (" in shown
    other = 1 - best
    shown = headline(on.show_bpm_pick(ctx, state, views.edit_choices(report)[other]))
    assert shown.startswith(f"{labels[other]}: ") and f"BPM {expected.edits[other].metrics['bpm']:.4f} (" in shown
    # the page's components table: every column at least as wide as its header's longest word
    frame = out[tab.bpm_table]
    widths = [int(w.removesuffix("px")) for w in frame.column_widths]
    words = [max(len(word) for word in str(column).split()) for column in frame.value["headers"]]
    assert len(widths) == len(words) and all(w >= 8 * n for w, n in zip(widths, words)), (widths, words)


@pytest.mark.slow
def test_bpm_on_fields_runs_on_the_fields_as_the_user_left_them(ctx):
    tab = ctx.tab
    with pytest.raises(gr.Error, match="press Evaluate first"):
        on.bpm_on_fields(ctx, "", "rules", TINY, "flower", "", "unchanged", "unchanged", "", None, plain=False)
    state = evaluated(ctx, EDITS[:1])
    with pytest.raises(gr.Error, match="Fill o1"):
        on.bpm_on_fields(ctx, "", "rules", TINY, "None", " ", "unchanged", "unchanged", "", state, plain=False)
    out = on.bpm_on_fields(ctx, "make the flower pink", "rules", TINY, "flower", "pink dahlia", "unchanged",
                           "unchanged", "", state, plain=True)
    parse = out[tab.report_json]["edits"][0]["bpm"]["parse"]
    assert (parse["o1"], parse["o2"], parse["confidence"]) == ("flower", "pink dahlia", "given")
    assert "<" not in out[tab.verdict]  # plain: the /bpm_fields endpoint


@pytest.mark.slow
def test_judge_stage_adds_the_judges_columns_when_switched_on(ctx):
    from tests.support.chat_server import ChatServer
    from tests.support.judge_chat import judge_answer

    tab = ctx.tab
    state = evaluated(ctx, EDITS[:2])
    off = on.judge_stage(ctx, False, "make the flower pink", TINY, state)
    assert off[tab.judge_info] == "" and off[tab.table] == gr.skip()
    with ChatServer(judge_answer) as server:
        judged_ctx = dataclasses.replace(ctx, offer=dataclasses.replace(ctx.offer, judge_ready=True), settings=ctx.settings.replace(
            judge_base_url=server.url, judge_model="ui-judge", judge_samples=2))
        out = on.judge_stage(judged_ctx, True, "make the flower pink", TINY, state)
        assert server.requests
    frame = out[tab.table].data
    assert list(frame["Judge SC"]) == [6.5, 6.5]
    assert "judge ui-judge" in out[tab.judge_info]


@pytest.mark.slow
def test_complete_downloads_writes_figures_zip_with_every_edits_figures(ctx):
    state, _ = explained(ctx, EDITS[:2])
    on.explain_rest(ctx, state)  # the chain's stage before it (the UMAP view, added to the state in place)
    files = on.complete_downloads(ctx, state)
    archive = next(f for f in files if f.endswith("figures.zip"))
    with zipfile.ZipFile(archive) as bundle:
        names = bundle.namelist()
    pngs = [name for name in names if name.startswith("figures/") and name.endswith(".png")]
    assert len(pngs) == 2 + 2 * 6  # two hyperplane views, six figures per edit
    assert {"report.json", "report.csv", "attributes.json"} <= set(names)
    assert on.complete_downloads(ctx, logic.Session()) == gr.skip()


@pytest.mark.slow
def test_show_comparison_builds_the_grid_of_the_current_results(ctx):
    fragment, button = on.show_comparison(ctx, logic.Session())
    assert fragment == views.COMPARISON_HELP and button.visible is False
    state = evaluated(ctx, EDITS[:2])
    fragment, button = on.show_comparison(ctx, state)
    assert state.comparison_of is state.report
    assert all(label in fragment for label in views.edit_choices(state.report))
    assert button.visible and button.value["orig_name"] == "comparison.html"
    assert Path(button.value["path"]).read_text(encoding="utf-8").count("<html") == 1  # the stand-alone file
    # /comparison: the same page as plain values (the file's path, which a client downloads)
    assert on.comparison_answer(ctx, logic.Session()) == (views.COMPARISON_HELP, None)
    answered, path = on.comparison_answer(ctx, state)
    assert answered == fragment and Path(path).name == "comparison.html"
    assert Path(path).read_text(encoding="utf-8") == Path(button.value["path"]).read_text(encoding="utf-8")


@pytest.mark.slow
def test_reset_comparison_clears_a_grid_of_earlier_results_only(ctx):
    state = evaluated(ctx, EDITS[:1])
    fragment, button = on.reset_comparison(ctx, state)
    assert fragment == views.COMPARISON_HELP and button.visible is False
    on.show_comparison(ctx, state)  # opened for these very results: kept
    assert on.reset_comparison(ctx, state) == (gr.skip(), gr.skip())


@pytest.mark.slow
def test_refresh_comparison_rebuilds_only_a_grid_the_user_opened(ctx):
    state = evaluated(ctx, EDITS[:1])
    assert on.refresh_comparison(ctx, state) == (gr.skip(), gr.skip())
    on.show_comparison(ctx, state)
    fragment, button = on.refresh_comparison(ctx, state)
    assert views.edit_choices(state.report)[0] in fragment and button.visible is True


@pytest.mark.slow
def test_extract_attributes_fills_the_boxes_and_remembers_the_inputs(ctx):
    source, target = str(FLOWER / "source.png"), "a pink dahlia flower"
    src_box, tgt_box, note, state = on.extract_attributes(ctx, source, target, "", "clip-vocab", TINY, None)
    assert src_box.strip() and tgt_box.strip()
    assert state.extracted.source == src_box.splitlines() and state.extracted.target == tgt_box.splitlines()
    assert state.extracted.provenance.provider == "clip-vocab" and state.attributes_key is not None
    # random weights chose them: the answer says so (the boxes hold attributes only)
    assert state.extracted.provenance.extra["untrained"] is True
    assert note.startswith(UNTRAINED_WARNING.upper()) and TINY in note and "clip-vocab" in note
    assert "untrained" not in (src_box + tgt_box).lower()
    with pytest.raises(gr.Error, match="Upload a source image first"):
        on.extract_attributes(ctx, None, target, "", "clip-vocab", TINY, None)
    # the page's state, when there is one, gains the lists in place and is not put back: a stage that ran
    # meanwhile may have replaced it (the explanation's)
    page_state = evaluated(ctx, EDITS[:1])
    *_, put_back = on.extract_attributes(ctx, source, target, "", "clip-vocab", TINY, page_state)
    assert put_back == gr.skip() and page_state.extracted.source == src_box.splitlines()


def test_save_attributes_writes_the_boxes_into_the_sessions_folder(ctx):
    request = gr.Request(session_hash="handler-test-save")
    path = Path(on.save_attributes(ctx, "\n".join(SRC_ATTRS) + "\n\n", " " + "\n".join(TGT_ATTRS), None, request))
    saved = json.loads(path.read_text(encoding="utf-8"))
    assert saved["source_attributes"] == SRC_ATTRS and saved["target_attributes"] == TGT_ATTRS  # blank lines dropped
    assert path.name == "attributes.json" and path.parent.name.startswith("augclip-app-")
    with pytest.raises(gr.Error, match="nothing to save"):
        on.save_attributes(ctx, " ", "", None, request)
    on.end_session(ctx, request)


def test_load_attributes_reads_a_saved_file_into_the_boxes(ctx, tmp_path):
    path = Attributes(SRC_ATTRS, TGT_ATTRS).save(tmp_path / "attributes.json")
    assert on.load_attributes(ctx, str(path)) == ("\n".join(SRC_ATTRS), "\n".join(TGT_ATTRS))
    (tmp_path / "broken.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(gr.Error):
        on.load_attributes(ctx, str(tmp_path / "broken.json"))


def test_show_edits_captions_the_uploads_in_scoring_order(ctx):
    items = on.show_edits(ctx, EDITS[:2])
    assert [path for path, _ in items] == EDITS[:2]
    assert [caption.replace("\u200b", "") for _, caption in items] == ["E1 well_edited", "E2 excessively_preserved"]
    assert on.show_edits(ctx, None) == []


def test_describe_provider_says_why_a_provider_is_or_is_not_available(ctx):
    note = on.describe_provider(ctx, "manual")
    assert note.startswith("<small>") and "typed by you" in note
    assert "&quot;source_attributes&quot;" in note  # the reason's JSON example, escaped
    assert on.describe_provider(ctx, "no-such-provider") == ""


def test_pick_demo_model_picks_the_toy_clip_the_page_offers(ctx):
    assert on.pick_demo_model(ctx) == "shapes:tiny" and "shapes:tiny" in ctx.clip_choices


def test_load_first_example_fills_the_inputs_with_the_demo_world_example(ctx):
    row = on.load_first_example(ctx)
    first = next(e for e in load_examples() if e.id == "world-move")
    assert len(first.edits) == 5 and "the star is on the left" in first.source_attributes
    assert row[0] == first.source and row[1] == first.edits and row[2] == first.target_text
    assert row[5] == "manual" and row[6].splitlines() == first.source_attributes
    assert all(Path(path).is_file() for path in [row[0], *row[1]])


def test_refresh_status_follows_the_picked_model(ctx):
    settings = ctx.settings_for(TINY)
    html, timer = on.refresh_status(ctx, TINY)  # the first call may find the model loading: the timer then runs
    assert "random:tiny" in html
    deadline = time.monotonic() + 300
    while (model_status(settings).state == "loading" or check_region_models(settings).state == "checking") \
            and time.monotonic() < deadline:
        time.sleep(0.2)
    html, timer = on.refresh_status(ctx, TINY)
    assert html == status_html(model_status(settings), check_region_models(settings))
    assert "aug-untrained" in html and timer.active is False  # loaded: the timer stops
    fallback, _ = on.refresh_status(ctx, "local-dir:/etc")  # not offered: the status the page started with
    assert fallback == status_html(ctx.startup_status, ctx.startup_region)


def test_end_session_removes_the_sessions_folder(ctx):
    request = gr.Request(session_hash="handler-test-end")
    state = on.own_folder(ctx, None, request)
    folder = Path(state.output_dir)
    assert folder.is_dir()
    on.end_session(ctx, request)
    assert not folder.exists()
