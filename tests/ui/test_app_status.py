"""The app's status panel with the real loaders: missing weights are explained, the app still builds."""

from __future__ import annotations

import pytest

from augclip_demo.config import Settings
from augclip_demo.ui.status import model_status, status_html


def test_missing_weights_panel_says_what_is_missing_and_how_to_provide_it(tmp_path):
    settings = Settings.from_env({}, clip_model="ViT-B-16/openai", device="cpu", cache_dir=tmp_path)
    status = model_status(settings, background=False)
    assert status.state == "error"
    panel = status_html(status)
    assert "could not be loaded" in panel and "ViT-B-16/openai" in panel
    assert "--clip-checkpoint" in panel and "AUGCLIP_CLIP_CHECKPOINT" in panel
    assert "keeps running" in panel


def test_untrained_weights_are_flagged_prominently(tmp_path):
    settings = Settings.from_env({}, clip_model="random:tiny", device="cpu", cache_dir=tmp_path)
    status = model_status(settings, background=False)
    assert status.state == "ready" and status.untrained
    panel = status_html(status)
    assert "aug-untrained" in panel and "SCORES ARE NOT MEANINGFUL" in panel
    assert "cpu" in panel


def test_the_app_builds_when_weights_are_missing(tmp_path):
    from augclip_demo.ui import build_app

    settings = Settings.from_env({}, clip_model="ViT-B-32/openai", device="cpu", cache_dir=tmp_path)
    demo = build_app(settings)
    assert demo.title == "AugCLIP Studio"
    names = {dep.get("api_name") for dep in demo.config["dependencies"]}
    assert {"evaluate", "rescore", "explain", "bpm", "extract_attributes"} <= names


def test_the_status_area_lists_every_missing_model_at_once(tmp_path):
    """CLIP, BPM's and HATIE's models all missing: one panel, one short line per feature with the one command
    that provides it (the table in inference.needs, as doctor and download read it)."""
    from augclip_demo.ui.status import check_region_models

    settings = Settings.from_env({}, clip_model="ViT-B-16/openai", device="cpu", cache_dir=tmp_path)
    region = check_region_models(settings, background=False)
    assert region.state == "done" and len(region.missing) == 2
    panel = status_html(model_status(settings, background=False), region)
    items = [part.split("</li>")[0] for part in panel.split("<li>")[1:]]
    assert len(items) == 3, panel
    assert items[0].startswith("CLIP ViT-B-16/openai: ") and "augclip-demo download --clip ViT-B-16/openai" in items[0]
    assert items[1].startswith("BPM needs CLIP ViT-B-16/openai, GroundingDINO IDEA-Research/grounding-dino-tiny, "
                               "SAM vit_b") and "<code>augclip-demo download --bpm</code>" in items[1]
    assert items[2].startswith("HATIE needs") and "DINO facebook/dinov2-base, LPIPS alex" in items[2]
    assert "CLIP ViT-B-32/openai" in items[2]  # HATIE's own CLIP, whatever the run's
    assert "<code>augclip-demo download --hatie</code>" in items[2]
    assert all(len(item) < 400 for item in items)
    assert "Try the demo" in panel
    # the full message stays available, folded, and names no server folder
    assert "<details>" in panel and str(tmp_path) not in panel


def test_a_working_clip_model_with_missing_bpm_models_says_only_that(tmp_path):
    from augclip_demo.ui.status import check_region_models

    settings = Settings.from_env({}, clip_model="random:tiny", device="cpu", cache_dir=tmp_path)
    panel = status_html(model_status(settings, background=False), check_region_models(settings, background=False))
    assert "aug-error" not in panel and "The scores work; these need models first" in panel
    assert panel.count("<li>") == 2
    ready = Settings.from_env({}, clip_model="random:tiny", gdino_model="random:tiny", sam_model="random:tiny",
                              hatie_clip="random:tiny", hatie_dino="random:tiny-v2", hatie_lpips="random:alex", device="cpu", cache_dir=tmp_path)
    assert "need models first" not in status_html(model_status(ready, background=False),
                                                  check_region_models(ready, background=False))


def test_the_untrained_demo_switches_every_model_to_a_random_one(tmp_path):
    from augclip_demo.inference.needs import FEATURES, models_needed
    from augclip_demo.ui.first_contact import cannot_run, demo_settings, readiness

    settings = Settings.from_env({}, clip_model="ViT-B-16/openai", device="cpu", cache_dir=tmp_path)
    assert demo_settings(settings) == settings  # a trained model: left alone
    for preset in ("standard", "fast"):
        demo = demo_settings(settings.replace(clip_model="random:tiny", bpm_preset=preset))
        for feature in FEATURES:
            assert all(need.spec.startswith("random:") for need in models_needed(demo, feature)), (preset, feature)
        readiness(demo, background=False)
        assert all(cannot_run(demo, feature) is None for feature in FEATURES)


@pytest.mark.slow  # waits on the UMAP compile thread
def test_the_umap_compile_waits_for_the_clip_load_and_for_first_results(monkeypatch):
    """The start-up compile takes a core: it starts only after the CLIP load, once no request has computed for
    a moment (a page's stages are requests one after another)."""
    import threading

    import augclip_demo.explain as explain
    from augclip_demo.ui import status as status_module

    started = threading.Event()
    ours: list[threading.Thread] = []

    def compile_umap() -> None:  # records when this test's warm-up would compile (not another test's thread)
        if threading.current_thread() in ours:
            started.set()

    monkeypatch.setattr(explain, "warm_up_umap", compile_umap)
    monkeypatch.setattr(status_module, "_QUIET_S", 60.0)
    loading = status_module.ModelStatus(spec="random:tiny")
    with status_module.first_result_work():
        ours.append(threading.Thread(target=status_module._warm_up_umap, args=(loading,), daemon=True))
        ours[0].start()
        assert not started.wait(0.6)  # the model is still loading
        loading.state = "ready"
        assert not started.wait(0.6)  # a request is computing its first result
    assert not started.wait(0.6)  # none is, but one ended less than _QUIET_S ago
    monkeypatch.setattr(status_module, "_QUIET_S", 0.0)
    ours[0].join(timeout=10)
    assert started.is_set() and not ours[0].is_alive()
    assert status_module._IN_FLIGHT[0] == 0


def test_the_modules_imported_beside_the_clip_load_exist():
    """The start-up imports swallow failures (they only save time), so a misspelt name would never show."""
    import importlib.util

    from augclip_demo.ui import status as status_module

    for name in status_module._FIRST_RESULT_MODULES:
        assert importlib.util.find_spec(name) is not None, name


def _bpm_checkbox(demo) -> dict:
    return next(c for c in demo.config["components"] if c.get("props", {}).get("elem_id") == "aug-bpm-on")["props"]


@pytest.mark.slow
def test_bpm_is_on_by_default_on_cpu_with_the_fast_preset(tmp_path, monkeypatch):
    from augclip_demo.ui import build_app
    from augclip_demo.ui.app import app_settings

    monkeypatch.delenv("AUGCLIP_BPM_PRESET", raising=False)
    settings = Settings.from_env({}, clip_model="random:tiny", device="cpu", cache_dir=tmp_path)
    assert settings.bpm_preset == "standard"  # the library and the CLI keep the paper's models
    assert app_settings(settings, cuda=False).bpm_preset == "fast"
    assert app_settings(settings, cuda=True).bpm_preset == "standard"
    box = _bpm_checkbox(build_app(settings))
    assert box["value"] is True and "fast preset" in box["label"]

    monkeypatch.setenv("AUGCLIP_BPM_PRESET", "standard")  # an operator's choice is kept: off on CPU, as slow
    box = _bpm_checkbox(build_app(Settings.from_env(clip_model="random:tiny", device="cpu", cache_dir=tmp_path)))
    assert box["value"] is False and "slow on CPU" in box["label"]


@pytest.mark.slow  # builds every random feature network
def test_the_demo_measures_every_network_metric_with_random_networks(tmp_path):
    """The Evaluate tab's optional network metrics load nothing downloaded in the demo (no weights needed)."""
    import numpy as np
    from PIL import Image

    from augclip_demo.pipeline import FEATURE_METRICS, feature_inputs
    from augclip_demo.ui.first_contact import DEMO_CLIP, demo_networks, demo_settings

    trained = Settings.from_env({}, clip_model="ViT-B-16/openai", device="cpu", cache_dir=tmp_path)
    assert demo_networks(demo_settings(trained)) is None  # a trained model: the benchmarks' own networks
    demo = demo_settings(trained.replace(clip_model=DEMO_CLIP))
    networks = demo_networks(demo)
    assert networks is not None
    rng = np.random.default_rng(0)
    source, edit, truth = (Image.fromarray(rng.integers(0, 256, (64, 64, 3), dtype=np.uint8)) for _ in range(3))
    mask = np.zeros((64, 64), dtype=bool)
    mask[16:48, 16:48] = True
    fields, notes = feature_inputs(source, [edit], truth, mask, set(FEATURE_METRICS), networks, demo,
                                   target_text="a red square")
    assert {"dino_edit_embeddings", "structure_keys_edits", "unedited_measures", "pie_clip_edit_embeddings",
            "pie_clip_masked_edit_embeddings"} <= set(fields), sorted(fields)
    # DINO (for GT and for structure) and LPIPS say they are untrained; PIE-Bench's CLIP is the demo's own toy
    # CLIP (the report's caveat names it)
    assert len(notes) == 3 and all("untrained" in note for note in notes), notes
    assert networks.pie_clip == DEMO_CLIP


@pytest.mark.parametrize("allowed", [(), ("shapes:tiny", "ViT-B-32/openai"), ("random:tiny", "ViT-B-32/openai")])
def test_messages_name_the_untrained_demo_only_where_the_server_offers_it(tmp_path, allowed):
    """Without an allow-list (or with one naming shapes:tiny) the page shows the demo button and every message
    names it; with an allow-list that leaves shapes:tiny out there is no button, and no message names one."""
    from augclip_demo.ui.app import offered_models
    from augclip_demo.ui.first_contact import DEMO_CLIP, cannot_run, demo_offered, readiness, scores_message
    from augclip_demo.ui.status import check_region_models

    settings = Settings.from_env({}, clip_model="ViT-B-16/openai", device="cpu", cache_dir=tmp_path,
                                 allowed_models=allowed)
    offered = DEMO_CLIP in offered_models(settings)  # what decides the page's button
    assert demo_offered(settings) is offered and offered is (not allowed or DEMO_CLIP in allowed)
    status = model_status(settings, background=False)
    region = check_region_models(settings, background=False)
    readiness(settings, background=False)
    messages = {"status": status_html(status, region), "scores": scores_message(settings, status),
                "bpm": cannot_run(settings, "bpm"), "hatie": cannot_run(settings, "hatie")}
    from augclip_demo.ui.status import ModelStatus

    working = ModelStatus(spec="ViT-B-16/openai", state="ready", device="cpu")  # CLIP works, BPM / HATIE lack models
    messages["status, scores working"] = status_html(working, region)
    for where, text in messages.items():
        assert text and "download" in text, where  # each still gives its fix
        assert ("the demo button" in text.lower() or "try the demo" in text.lower()) is offered, (where, text)


def test_the_batch_tab_says_what_its_run_lacks_and_runs_the_demo_with_random_models(tmp_path):
    """The note beside Run batch reads the same table as the Evaluate tab's notes (the batch's CLIP model, and
    BPM's / HATIE's models when one of their metrics is chosen); the untrained demo's batch uses the same
    random models as the Evaluate tab."""
    from augclip_demo.inference.needs import FEATURES, models_needed
    from augclip_demo.ui.common import page_settings
    from augclip_demo.ui.first_contact import batch_note, cannot_run, demo_settings, readiness, scores_message

    settings = Settings.from_env({}, clip_model="ViT-B-16/openai", device="cpu", cache_dir=tmp_path)
    choices = ["ViT-B-16/openai", "random:tiny"]
    trained = page_settings(settings, choices, "ViT-B-16/openai")
    assert trained == settings
    readiness(trained, background=False)
    status = model_status(trained, background=False)
    note = batch_note(trained, ["augclip", "clip_i"], lambda s: status)
    assert note.count("aug-needs") == 1 and "augclip-demo download --clip ViT-B-16/openai" in note
    assert "No weights for the CLIP model ViT-B-16/openai here: a batch cannot run" in note
    assert scores_message(trained, status).split("`")[1] in note  # the command the Evaluate tab's note names
    with_bpm = batch_note(trained, ["augclip", "bpm", "hatie_of"], lambda s: status)
    assert with_bpm.count("aug-needs") == 3, with_bpm
    for feature in ("bpm", "hatie"):
        assert cannot_run(trained, feature).split("`")[1] in with_bpm  # the same command as the page's notes
    demo = page_settings(settings, choices, "random:tiny")
    assert demo == demo_settings(settings.replace(clip_model="random:tiny"))  # the Evaluate tab's demo settings
    assert all(need.spec.startswith("random:") for feature in FEATURES for need in models_needed(demo, feature))
    readiness(demo, background=False)
    assert batch_note(demo, ["augclip", "bpm", "hatie"], lambda s: model_status(s, background=False)) == ""


def test_the_batch_tab_has_its_note_beside_run(tmp_path):
    from augclip_demo.ui import build_app

    demo = build_app(Settings.from_env({}, clip_model="ViT-B-32/openai", device="cpu", cache_dir=tmp_path))
    ids = [block.elem_id for block in demo.blocks.values() if getattr(block, "elem_id", None)]
    assert ids.index("aug-batch-needs") == ids.index("aug-batch-example") + 1  # right after the Run row
    loads = [dep for dep in demo.config["dependencies"]
             if any(target[1] == "load" for target in dep["targets"])
             and any(demo.blocks[out].elem_id == "aug-batch-needs" for out in dep["outputs"])]
    assert loads, "the note is drawn when the page loads"
