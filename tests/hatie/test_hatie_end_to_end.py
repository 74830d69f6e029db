"""HATIE end to end with the tiny random region models: every edit type runs, the measures it reports
match independent recomputations from the masks it reports."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from augclip_demo.hatie import HatieModels, HatieOptions, hatie_score_many
from augclip_demo.hatie import images as HI
from augclip_demo.inference.grounding import GroundingDetector, save_random_grounding
from augclip_demo.inference.segmenter import SamSegmenter
from tests.support import draw_scene

pytestmark = pytest.mark.slow

SOURCE = draw_scene((120, 90), shapes=[("ellipse", (20, 20, 60, 60), "red"), ("rectangle", (70, 40, 110, 80), "green")])
RECOLORED = draw_scene((120, 90), shapes=[("ellipse", (20, 20, 60, 60), "blue"), ("rectangle", (70, 40, 110, 80), "green")])


@pytest.fixture(scope="module")
def models(tmp_path_factory, tiny_encoder):
    folder = save_random_grounding(tmp_path_factory.mktemp("gdino"), "tiny")
    sam_path = tmp_path_factory.mktemp("sam") / "sam_tiny.pth"
    torch.save(SamSegmenter("random:tiny", device="cpu").load()._model.state_dict(), sam_path)
    return HatieModels(GroundingDetector(folder, device="cpu"), SamSegmenter("tiny", checkpoint=sam_path, device="cpu"),
                       tiny_encoder).load()


@pytest.mark.parametrize(("instruction", "edit_type"), [
    ("make the ball blue", "attribute"),
    ("add a hat on the box", "add"),
    ("remove the ball", "remove"),
    ("replace the ball with an apple", "replace"),
    ("make the ball bigger", "resize"),
    ("change the background to a beach", "background"),
    ("turn the picture into a watercolor painting", "style"),
])
def test_every_edit_type_scores_its_criteria(models, instruction, edit_type):
    results = hatie_score_many(SOURCE, [RECOLORED, SOURCE], instruction, models, box_threshold=0.01)
    from augclip_demo.hatie.criteria import TYPE_CRITERIA

    for result in results:
        assert result.edit_type.edit_type == edit_type
        assert result.untrained
        assert result.scores is not None
        assert set(result.scores.criteria) <= set(TYPE_CRITERIA[edit_type])
        for score in result.scores.criteria.values():
            assert score.value is None or 0.0 <= score.value <= 1.0
        json.dumps(result.to_dict(), allow_nan=False)
        assert any("no feature networks" in note for note in result.notes)


def test_background_consistency_l2_matches_masks(models):
    result = hatie_score_many(SOURCE, [RECOLORED], "make the ball blue", models, box_threshold=0.01)[0]
    bc = result.scores.criteria["background_consistency"]
    l2 = next(c.value for c in bc.components if c.name == "l2")
    hidden = result.masks.get("background: masked out")
    src, edit = HI.as_array(SOURCE), HI.as_array(RECOLORED)
    if hidden is not None:
        src, edit = src.copy(), edit.copy()
        src[hidden] = 0
        edit[hidden] = 0
    assert l2 == pytest.approx(1.0 - float(np.mean((src - edit) ** 2)), abs=1e-12)


def test_unchanged_edit_has_perfect_pixel_consistency(models):
    result = hatie_score_many(SOURCE, [SOURCE], "turn the picture into a watercolor painting", models)[0]
    bc = result.scores.criteria["background_consistency"]
    assert all(c.value == 1.0 for c in bc.components if c.name.endswith(".l2"))


def test_given_type_and_not_a_hatie_type(models):
    moved = hatie_score_many(SOURCE, [RECOLORED], "move the ball to the left", models)[0]
    assert moved.scores is None and "not a HATIE edit type" in moved.reason
    given = hatie_score_many(SOURCE, [RECOLORED], "make the ball blue", models, edit_type="Object Replacement")[0]
    assert given.edit_type.edit_type == "replace" and given.edit_type.confidence == "given"


def test_vqa_needs_a_client(models):
    from augclip_demo.errors import InputError

    with pytest.raises(InputError, match="VQA"):
        hatie_score_many(SOURCE, [RECOLORED], "make the ball blue", models, options=HatieOptions(vqa=True))


def test_vqa_on_through_a_real_server(models, monkeypatch):
    from augclip_demo.hatie.vqa import VqaScorer
    from augclip_demo.llm.client import OpenAICompatibleClient
    from tests.support.chat_server import ChatServer

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with ChatServer(responder=lambda request: "yes") as server:
        client = OpenAICompatibleClient(base_url=server.url, model="vision-test", timeout=5, max_retries=0)
        with_vqa = HatieModels(models.detector, models.segmenter, models.encoder, vqa=VqaScorer(client))
        result = hatie_score_many(SOURCE, [RECOLORED], "turn the picture into a watercolor painting", with_vqa,
                                  options=HatieOptions(vqa=True))[0]
    bf = result.scores.criteria["background_fidelity"]
    vqa = next(c for c in bf.components if c.name == "vqa_background")
    assert vqa.value == 1.0 and vqa.weight == pytest.approx(0.42)
    assert any("watercolor painting" in text for r in server.requests for text in r.texts())


@pytest.fixture(scope="module")
def features():
    from augclip_demo.hatie.networks import HatieFeatures

    return HatieFeatures(dino="random:tiny-v2", lpips="random:alex", fid="random:inception-v3-compat",
                         clip="random:tiny").load()


def test_feature_networks_give_perfect_similarities_for_an_untouched_edit(models, features):
    with_features = HatieModels(models.detector, models.segmenter, models.encoder, features)
    result = hatie_score_many(SOURCE, [SOURCE], "make the ball blue", with_features, box_threshold=0.01)[0]
    assert result.untrained and not any("no feature networks" in n for n in result.notes)
    bc = result.scores.criteria["background_consistency"]
    parts = {c.name: c.value for c in bc.components}
    assert parts["lpips"] == pytest.approx(1.0, abs=1e-6) and parts["dino"] == pytest.approx(1.0, abs=1e-9)
    assert parts["clip"] == pytest.approx(1.0, abs=1e-6) and parts["l2"] == 1.0
    assert bc.value == pytest.approx(1.0, abs=1e-5)
    changed = hatie_score_many(SOURCE, [RECOLORED], "make the ball blue", with_features, box_threshold=0.01)[0]
    lp = next(c.value for c in changed.scores.criteria["background_consistency"].components if c.name == "lpips")
    assert 0.0 <= lp <= 1.0


def test_hatie_clip_is_decided_in_one_place_and_loads_only_when_used(models, tmp_path):
    """--hatie-clip-from is HatieOptions.clip alone (the CLI builds the same networks either way), and HATIE's own
    CLIP is built and loaded by its first use: never when the run's CLIP measures."""
    import argparse

    from augclip_demo.cli.hatie import add_hatie_args, features_from_args, hatie_from_args
    from augclip_demo.config import Settings

    settings = Settings.from_env({}, device="cpu", cache_dir=tmp_path, hatie_clip="random:tiny",
                                 hatie_dino="random:tiny-v2", hatie_lpips="random:alex")
    parser = argparse.ArgumentParser()
    add_hatie_args(parser)
    args = parser.parse_args(["--hatie-clip-from", "run"])
    options = hatie_from_args(args, settings, want=False)["hatie"]
    features = features_from_args(args, settings)
    assert options.clip == "run" and features.clip_spec == "random:tiny"
    with_features = HatieModels(models.detector, models.segmenter, models.encoder, features).load()
    assert features._clip is None  # load() loads DINOv2 and LPIPS only
    assert with_features.clip_for(options) == (models.encoder, None)
    run = hatie_score_many(SOURCE, [RECOLORED], "make the ball blue", with_features, options=options,
                           box_threshold=0.01)[0]
    assert run.scores is not None and features._clip is None
    own = hatie_score_many(SOURCE, [RECOLORED], "make the ball blue", with_features,
                           options=options.with_(clip="hatie"), box_threshold=0.01)[0]
    assert own.scores is not None and features.clip_network.is_loaded
    assert with_features.clip_for(options.with_(clip="hatie")) == (features.clip_network, None)
