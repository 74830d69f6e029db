"""A run of the Batch tab opened in the Explore tab in one click: the handlers called as the page's events call
them (one app built with the tiny random CLIP), the images found through the run's manifest, and the inspected
item handed on to the Evaluate tab; what the page shows checked against the uploaded files themselves."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import gradio as gr
import pytest

from augclip_demo.config import Settings
from augclip_demo.explore import item_record
from augclip_demo.explore.items import evaluate_inputs
from augclip_demo.ui import build_app
from augclip_demo.ui.batch import handlers as batch_on
from augclip_demo.ui.explore import handlers as explore_on
from tests.support import EXAMPLES, TINY
from tests.ui.test_app_batch import example_manifest, example_zip
from tests.ui.test_batch_handlers import own_folders


@pytest.fixture(scope="module")
def app():
    return build_app(Settings.from_env(clip_model=TINY, device="cpu"))


@pytest.fixture()
def contexts(app, tmp_path):
    return (dataclasses.replace(app.batch_context, runs={}, folders=own_folders(tmp_path)),
            app.explore_context)


def test_open_in_explore_refuses_before_a_run_with_what_to_do(contexts):
    batch, _ = contexts
    with pytest.raises(gr.Error, match="run a batch first"):
        batch_on.explore_handoff(batch)
    with pytest.raises(gr.Error, match="run a batch first"):
        explore_on.open_batch_run(contexts[1], None, None)


@pytest.mark.slow
def test_a_finished_run_opens_in_explore_with_its_images_and_goes_on_to_evaluate(contexts, tmp_path):
    batch, explore = contexts
    manifest, images = example_manifest(tmp_path), example_zip(tmp_path, wrap="upload")
    batch_on.score_upload(batch, str(manifest), str(images), ["clip_i", "l2"], "manual", TINY, False)
    handoff = batch_on.explore_handoff(batch)
    assert batch_on.explore_handoff(batch) == handoff  # unpacked once per run
    assert handoff.manifest.read_bytes() == manifest.read_bytes() and handoff.name == manifest.name
    out = explore_on.open_batch_run(explore, handoff, None)
    tab = explore.tab
    assert len(out) == len(tab.open_outputs) + 1 and out[-1].selected == "explore"
    state, summary = out[0], out[1]
    assert "2 records, 8 edits" in summary and "no manifest given" not in summary
    store = explore.store(state)
    records = [json.loads(line) for line in manifest.read_text().splitlines()]
    for number, record in enumerate(records):
        item = store.query("SELECT rowid FROM records WHERE id = ?", [record["id"]])[0][0]
        inputs = evaluate_inputs(item_record(store, item))  # "Explain in the Evaluate tab" reads these
        assert inputs.source.read_bytes() == (EXAMPLES / record["source"]).read_bytes()
        assert [p.read_bytes() for p in inputs.edits] == [(EXAMPLES / e["path"]).read_bytes() for e in record["edits"]]
        text, pictures, _, _ = explore_on.inspect_views(store, item)  # Inspect shows the source and every edit
        assert len(pictures) == 1 + len(record["edits"]) and "No images" not in text
        if number == 0:
            state["inspected"] = item
    names = list(explore_on.EVALUATE_FIELDS)
    values = explore_on.handoff(explore, state, None, names=names, clip_choices=batch.clip_choices,
                                parser_choices=None, tab_id="evaluate")
    fields = dict(zip(names, values))
    assert Path(fields["source"]).read_bytes() == (EXAMPLES / records[0]["source"]).read_bytes()
    assert fields["target"] == records[0]["target_text"] and fields["clip_model"] == TINY
    assert values[-1].selected == "evaluate"


def test_the_page_wires_open_in_explore_through_a_server_side_state(app):
    """Batch's button fills a gr.State (the run's server paths never reach the client), then Explore opens it and
    the page switches to the Explore tab."""
    deps = app.config["dependencies"]
    button = app.batch_context.tab.explore_btn._id
    first = next(d for d in deps if d["targets"] == [(button, "click")])
    assert first["inputs"] == [] and len(first["outputs"]) == 1
    state = first["outputs"][0]
    assert next(b for b in app.blocks.values() if b._id == state).__class__ is gr.State
    opening = next(d for d in deps if d["trigger_after"] == first["id"])
    assert opening["trigger_only_on_success"] and opening["inputs"][0] == state
    assert app.explore_context.tab.state._id in opening["outputs"]
