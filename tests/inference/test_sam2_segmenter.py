"""The fast BPM preset's SAM 2 segmenter, loaded from the local hub in the published layout."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from augclip_demo.config import Settings
from augclip_demo.errors import ConfigError
from augclip_demo.inference.sam2_segmenter import Sam2Segmenter
from tests.support import draw_scene, published
from tests.support.hub_fixtures import set_offline


@pytest.fixture(scope="module")
def sam2_folder(hub, tmp_path_factory):
    folder = published.write_sam2(tmp_path_factory.mktemp("published-sam2"))
    hub.add_folder(published.SAM2_REPO, folder)
    return folder


@pytest.mark.slow
def test_sam2_from_the_hub_holds_the_published_tensors_and_decodes_boxes_from_one_embedding(
        sam2_folder, online, monkeypatch):
    from safetensors.torch import load_file

    segmenter = Sam2Segmenter(published.SAM2_REPO, device="cpu", cache_dir=online)
    assert not segmenter.untrained and "random" not in segmenter.label
    segmenter.load()
    published_state = load_file(str(sam2_folder / "model.safetensors"))
    state = segmenter._model.state_dict()
    for name, tensor in published_state.items():
        assert torch.equal(state[name], tensor), name
    calls = []
    segmenter._model.vision_encoder.register_forward_hook(lambda module, args, out: calls.append(1))
    image = draw_scene(shapes=[("ellipse", (20, 20, 70, 70), "red"), ("rectangle", (60, 10, 90, 40), "blue")])
    width, height = image.size
    boxes = [[np.array([20.0, 20.0, 70.0, 70.0]), np.array([60.0, 10.0, 90.0, 40.0]), np.array([0, 0, width, height])],
             []]
    masks = segmenter.segment([image, image], boxes)
    assert len(masks[0]) == 3 and masks[1] == []
    assert all(m.shape == (height, width) and m.dtype == bool for m in masks[0])
    assert len(calls) == 1  # one image-encoder pass for the three boxes; none for the image without boxes
    set_offline(monkeypatch)  # a second load comes from the cache, without the network
    again = Sam2Segmenter(published.SAM2_REPO, device="cpu", cache_dir=online).load()
    assert torch.equal(again._model.state_dict()[next(iter(published_state))], next(iter(published_state.values())))


@pytest.mark.slow
def test_the_fast_preset_picks_sam2_and_a_smaller_detector_input(tmp_path):
    from augclip_demo.bpm import bpm_score_many
    from augclip_demo.bpm.models import FAST_DETECTOR_SIZE, get_bpm_models
    from augclip_demo.inference import ClipEncoder
    from tests.support import TINY

    settings = Settings.from_env(cache_dir=tmp_path, bpm_preset="fast", gdino_model="random:tiny",
                                 fast_sam_model="random:test", device="cpu")
    models = get_bpm_models(settings, encoder=ClipEncoder(TINY, device="cpu", cache_dir=tmp_path))
    assert isinstance(models.segmenter, Sam2Segmenter) and models.preset == "fast"
    assert models.detector.input_size == FAST_DETECTOR_SIZE and models.untrained
    source = draw_scene(shapes=[("ellipse", (20, 20, 70, 70), "red")])
    edit = draw_scene(shapes=[("ellipse", (20, 20, 70, 70), "blue")])
    [result] = bpm_score_many(source, [edit], "make the ball blue", models=models)
    assert np.isfinite(result.bpm) and result.to_dict()["models"]["preset"] == "fast"
    standard = get_bpm_models(settings.replace(bpm_preset="standard", sam_model="random:tiny"))
    assert not isinstance(standard.segmenter, Sam2Segmenter) and standard.detector.input_size is None


def test_an_unknown_preset_or_random_spec_is_refused():
    with pytest.raises(ConfigError, match="AUGCLIP_BPM_PRESET"):
        Settings.from_env(bpm_preset="turbo")
    with pytest.raises(ConfigError, match="random specs"):
        Sam2Segmenter("random:huge")
