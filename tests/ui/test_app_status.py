"""The app's status panel with the real loaders: missing weights are explained, the app still builds."""

from __future__ import annotations

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
