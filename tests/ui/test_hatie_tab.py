"""The app's HATIE tab through its API (``python app.py`` on 127.0.0.1, tiny random models)."""

from __future__ import annotations

import pytest
from gradio_client import Client

from augclip_demo.attributes import Attributes
from augclip_demo.bpm.models import get_bpm_models
from augclip_demo.hatie import HatieModels
from augclip_demo.hatie.networks import HatieFeatures
from augclip_demo.pipeline import Evaluator
from tests.support import TINY
from tests.ui.test_app import EDITS, FLOWER, SRC_ATTRS, TGT_ATTRS, evaluate_args

pytestmark = pytest.mark.slow


def test_hatie_tab_shows_the_criteria_of_each_edit(app_server, tiny_encoder):
    own = Client(app_server["url"], verbose=False)
    own.predict(*evaluate_args(edits=EDITS[:2]), api_name="/evaluate")
    info, plots, shares, components, masks = own.predict("make the flower pink", "auto (from the instruction)", TINY,
                                                         api_name="/hatie")
    assert "attribute" in info and len(plots) == 2 and len(shares) == 2
    rows = components["data"]
    headers = components["headers"]
    col = {name: headers.index(name) for name in ("edit", "criterion", "component", "value", "weight in criterion",
                                                  "share")}
    got = {(r[col["edit"]], r[col["criterion"]]): r[col["value"]]
           for r in rows if r[col["component"]] == "(criterion, in the total)"}
    # every criterion's measures: share = value x weight in the criterion / their sum (shown in %)
    by_criterion: dict = {}
    for r in rows:
        if r[col["component"]] != "(criterion, in the total)" and r[col["share"]]:
            by_criterion.setdefault((r[col["edit"]], r[col["criterion"]]), []).append(r)
    assert by_criterion
    for parts in by_criterion.values():
        products = [float(r[col["value"]]) * float(r[col["weight in criterion"]]) for r in parts]
        for r, product in zip(parts, products):
            assert float(r[col["share"]].rstrip("%")) == pytest.approx(100 * product / sum(products), abs=0.1)

    direct = Evaluator(TINY, device="cpu", encoder=tiny_encoder)
    settings = direct.settings.replace(gdino_model="random:tiny", sam_model="random:tiny",
                                       hatie_dino="random:tiny-v2", hatie_lpips="random:alex", hatie_clip="random:tiny")
    bpm = get_bpm_models(settings, encoder=direct.encoder)
    models = HatieModels(bpm.detector, bpm.segmenter, bpm.encoder, HatieFeatures(settings))
    report = direct.evaluate(FLOWER / "source.png", EDITS[:2], "a pink dahlia flower", "an orange dahlia flower",
                             Attributes(SRC_ATTRS, TGT_ATTRS))
    direct.add_hatie(report, "make the flower pink", models=models)
    labels = report.edit_names()  # the tab names edits as the score table does: "E1 well_edited"
    assert [p["caption"] for p in plots] == [name.label for name in labels]
    for edit, result, name in zip(report.edits, report.arrays.hatie, labels):
        for score in result.scores.criteria.values():
            assert got[(name.label, score.label)] == pytest.approx(score.value, abs=1e-4)
        assert edit.unavailable["hatie_iq"].startswith("needs a set")

    with pytest.raises(Exception, match="edit type"):
        own.predict("", "auto (from the instruction)", TINY, api_name="/hatie")
    with pytest.raises(Exception, match="press Evaluate first"):
        Client(app_server["url"], verbose=False).predict("make the flower pink", "attribute", TINY, api_name="/hatie")
