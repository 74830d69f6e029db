"""The HATIE tab's handler called as the page's button calls it: the real app's context (built by build_app with
the tiny random CLIP and random GroundingDINO, SAM, DINOv2 and LPIPS, as the app tests' server runs), a session
that the Evaluate handler scored, and the tab's values checked against HATIE run on the Evaluator directly."""

from __future__ import annotations

import gradio as gr
import pytest

from augclip_demo.attributes import Attributes
from augclip_demo.config import Settings
from augclip_demo.pipeline import Evaluator
from augclip_demo.ui import build_app
from augclip_demo.ui.hatie import handlers as on
from augclip_demo.ui.hatie.layout import AUTO, HELP
from tests.support import TINY
from tests.ui.test_evaluate_handlers import EDITS, FLOWER, SRC_ATTRS, TGT_ATTRS, evaluated

pytestmark = pytest.mark.slow

INSTRUCTION = "make the flower pink"
RANDOM_MODELS = dict(gdino_model="random:tiny", sam_model="random:tiny", hatie_dino="random:tiny-v2",
                     hatie_lpips="random:alex", hatie_clip=TINY)
CRITERION_ROW = "(criterion, in the total)"


@pytest.fixture(scope="module")
def app() -> gr.Blocks:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("AUGCLIP_BPM_PRESET", "standard")  # GroundingDINO + SAM (random here), as on the test server
        return build_app(Settings.from_env(clip_model=TINY, device="cpu", **RANDOM_MODELS))


@pytest.fixture(scope="module")
def ctx(app) -> on.HatieContext:
    """The context the HATIE button is bound to."""
    return app.hatie_context


@pytest.fixture(scope="module")
def direct(tiny_encoder) -> Evaluator:
    return Evaluator(TINY, device="cpu", encoder=tiny_encoder, settings=Settings.from_env(**RANDOM_MODELS))


def direct_hatie(direct: Evaluator, instruction: str | None, edit_type: str | None = None) -> list:
    report = direct.evaluate(FLOWER / "source.png", EDITS[:2], "a pink dahlia flower", "an orange dahlia flower",
                             Attributes(SRC_ATTRS, TGT_ATTRS))
    direct.add_hatie(report, instruction, edit_type=edit_type)
    return list(zip(report.edit_names(), report.arrays.hatie))


def criteria_shown(out: dict, ctx) -> dict:
    """(edit label, criterion label) -> the criterion's value, as the components table shows it."""
    rows = out[ctx.tab.components].to_dict("records")
    return {(row["edit"], row["criterion"]): row["value"] for row in rows if row["component"] == CRITERION_ROW}


def test_show_hatie_shows_the_evaluators_criteria_for_every_edit(app, ctx, direct):
    tab = ctx.tab
    state = evaluated(app.evaluate_context, EDITS[:2])
    out = on.show_hatie(ctx, INSTRUCTION, AUTO, TINY, state)
    assert set(out) == set(tab.run_outputs)
    assert len(state.report.arrays.hatie) == 2  # HATIE's values kept in the report the page's state holds
    expected = direct_hatie(direct, INSTRUCTION)
    labels = [name.label for name, _ in expected]
    # One bar chart and one share chart per scored edit, captioned as the score table names the edit.
    assert [caption for _, caption in out[tab.plots]] == labels
    assert [caption for _, caption in out[tab.shares]] == [name.label for name, r in expected if r.scores]
    assert all(image.size[0] > 100 for image, _ in out[tab.plots])
    shown = criteria_shown(out, ctx)
    assert shown
    for name, result in expected:
        assert result.scores is not None
        for score in result.scores.criteria.values():
            assert shown[(name.label, score.label)] == pytest.approx(score.value, abs=1e-4)
        assert f"{name.label}: {result.edit_type.edit_type}" in out[tab.info]
    assert out[tab.info].startswith(HELP) and "**Edit type**" in out[tab.info]
    # Each criterion's components: share = value x weight in the criterion / their sum, shown in %.
    parts: dict = {}
    for row in out[tab.components].to_dict("records"):
        if row["component"] != CRITERION_ROW and row["share"]:
            parts.setdefault((row["edit"], row["criterion"]), []).append(row)
    assert parts
    for rows in parts.values():
        products = [row["value"] * row["weight in criterion"] for row in rows]
        for row, product in zip(rows, products):
            assert float(row["share"].rstrip("%")) == pytest.approx(100 * product / sum(products), abs=0.1)
    masks = out[tab.masks] or []
    assert all(caption.startswith(tuple(labels)) for _, caption in masks)


def test_show_hatie_scores_as_the_chosen_edit_type_without_an_instruction(app, ctx, direct):
    tab = ctx.tab
    state = evaluated(app.evaluate_context, EDITS[:2])
    out = on.show_hatie(ctx, "", "style", TINY, state)
    shown = criteria_shown(out, ctx)
    for name, result in direct_hatie(direct, None, "style"):
        assert result.edit_type.edit_type == "style" and result.scores is not None
        assert f"{name.label}: style (chosen by the user)" in out[tab.info]
        for score in result.scores.criteria.values():
            assert shown[(name.label, score.label)] == pytest.approx(score.value, abs=1e-4)
    # An edit type that needs the objects, which only an instruction names: no scores, the reason in the table.
    out = on.show_hatie(ctx, "", "attribute", TINY, state)
    (name, result), _ = direct_hatie(direct, None, "attribute")
    assert result.scores is None and result.reason
    rows = out[tab.components].to_dict("records")
    assert [row["note"] for row in rows if row["edit"] == name.label] == [result.reason]
    assert out[tab.shares] is None and len(out[tab.plots]) == 2  # no shares to draw; the bars say "not scored"


def test_show_hatie_says_what_is_missing(app, ctx):
    with pytest.raises(gr.Error, match="press Evaluate first"):
        on.show_hatie(ctx, INSTRUCTION, AUTO, TINY, None)
    state = evaluated(app.evaluate_context, EDITS[:1])
    with pytest.raises(gr.Error, match="needs the editing instruction .* or an edit type"):
        on.show_hatie(ctx, "  ", AUTO, TINY, state)
    other = next(spec for spec in ctx.tab.clip_model.choices if spec[1] != TINY)[1]
    with pytest.raises(gr.Error, match="The CLIP model changed since the last evaluation"):
        on.show_hatie(ctx, INSTRUCTION, AUTO, other, state)
    assert state.report.arrays.hatie is None or not state.report.arrays.hatie  # nothing was scored


def test_hatie_for_a_result_the_page_no_longer_shows_says_so_and_shows_nothing(app, ctx, monkeypatch):
    """An Evaluate that ends while HATIE runs puts a newer result on the page: criteria of the older edits,
    captioned E1, E2 as the newer ones are, would read as theirs."""
    from augclip_demo.ui.evaluate.session import Session
    from augclip_demo.ui.shown import put_on_page

    state = evaluated(app.evaluate_context, EDITS[:1])
    score = on.run_hatie

    def evaluate_ends_meanwhile(*args, **kwargs):
        results = score(*args, **kwargs)
        put_on_page(Session(**state.__dict__))  # the newer result, a copy of the page's state as Evaluate makes
        return results

    monkeypatch.setattr(on, "run_hatie", evaluate_ends_meanwhile)
    with pytest.raises(gr.Error, match="The page shows a newer result than HATIE scored .* press Run HATIE again"):
        on.show_hatie(ctx, INSTRUCTION, AUTO, TINY, state)
