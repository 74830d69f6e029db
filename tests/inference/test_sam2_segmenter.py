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
def test_the_fast_preset_picks_owlvit_and_sam2_at_512_px(tmp_path):
    from augclip_demo.bpm import bpm_score_many
    from augclip_demo.bpm.models import get_bpm_models
    from augclip_demo.inference import ClipEncoder
    from augclip_demo.inference.owl_detector import OwlDetector
    from tests.support import TINY

    settings = Settings.from_env(cache_dir=tmp_path, bpm_preset="fast", gdino_model="random:tiny",
                                 fast_sam_model="random:test", fast_detector_model="random:test", device="cpu")
    models = get_bpm_models(settings, encoder=ClipEncoder(TINY, device="cpu", cache_dir=tmp_path))
    assert isinstance(models.segmenter, Sam2Segmenter) and models.preset == "fast"
    assert isinstance(models.detector, OwlDetector) and models.segmenter.input_size == 512 and models.untrained
    source = draw_scene(shapes=[("ellipse", (20, 20, 70, 70), "red")])
    edit = draw_scene(shapes=[("ellipse", (20, 20, 70, 70), "blue")])
    [result] = bpm_score_many(source, [edit], "make the ball blue", models=models)
    assert np.isfinite(result.bpm) and result.to_dict()["models"]["preset"] == "fast"
    # OWL-ViT reads its own threshold field (its scores are not on GroundingDINO's scale)
    from augclip_demo.bpm import BPMOptions

    assert BPMOptions().threshold_for(models.detector) == 0.1
    assert {key[2] for key in models.detector._detections._data} == {0.1}  # the thresholds bpm_score passed
    standard = get_bpm_models(settings.replace(bpm_preset="standard", sam_model="random:tiny"))
    assert not isinstance(standard.segmenter, Sam2Segmenter) and standard.detector.input_size is None


def test_an_unknown_preset_or_random_spec_is_refused():
    with pytest.raises(ConfigError, match="AUGCLIP_BPM_PRESET"):
        Settings.from_env(bpm_preset="turbo")
    with pytest.raises(ConfigError, match="random specs"):
        Sam2Segmenter("random:huge")


@pytest.mark.slow
def test_sam2_at_half_its_input_keeps_the_published_tensors_and_puts_boxes_where_they_are(sam2_folder, tmp_path):
    """The published folder (a 256 px config) run at 128 px: every published tensor loads unchanged (no
    weight depends on the input size), the image encoder's feature maps and the prompt encoder's grid
    follow the smaller input, and a box reaches the prompt encoder at the same place relative to the
    image as at the full size (x / width, y / height) on a non-square image."""
    from safetensors.torch import load_file

    full = Sam2Segmenter(str(sam2_folder), device="cpu", cache_dir=tmp_path).load()
    half = Sam2Segmenter(str(sam2_folder), device="cpu", cache_dir=tmp_path, input_size=128).load()
    published_state = load_file(str(sam2_folder / "model.safetensors"))
    state = half._model.state_dict()
    for name, tensor in published_state.items():
        assert torch.equal(state[name], tensor), name
    image = draw_scene(size=(150, 100), shapes=[("ellipse", (30, 20, 90, 70), "red")])
    box = np.array([30.0, 20.0, 90.0, 70.0])
    shapes = []
    half._model.vision_encoder.register_forward_hook(
        lambda m, a, out: shapes.append([tuple(f.shape[-2:]) for f in out.fpn_hidden_states]))
    [[mask]] = half.segment([image], [[box]])
    assert mask.shape == (100, 150) and mask.dtype == bool
    assert shapes[0][:3] == [(32, 32), (16, 16), (8, 8)]  # strides 4, 8, 16 of 128 px
    assert half._model.prompt_encoder.image_embedding_size == (8, 8)
    relative = box / np.array([150, 100, 150, 100])
    for segmenter in (full, half):
        embeddings, sizes = segmenter.image_embeddings(segmenter_input(image))
        boxes = segmenter._processor(input_boxes=[[box.tolist()]], original_sizes=sizes,
                                     return_tensors="pt")["input_boxes"]
        side = segmenter._model.prompt_encoder.input_image_size
        np.testing.assert_allclose(boxes[0, 0].numpy() / side, relative, atol=1e-6)
    assert full._model.prompt_encoder.input_image_size == 256 and half._model.prompt_encoder.input_image_size == 128


def segmenter_input(image):
    from augclip_demo.io import open_image

    return open_image(image)


@pytest.mark.slow
def test_the_image_embedding_is_computed_once_per_image_content(tmp_path):
    segmenter = Sam2Segmenter("random:test", device="cpu", cache_dir=tmp_path, input_size=128).load()
    calls = []
    segmenter._model.vision_encoder.register_forward_hook(lambda m, a, out: calls.append(1))
    image = draw_scene(shapes=[("ellipse", (20, 20, 70, 70), "red")])
    same_pixels = draw_scene(shapes=[("ellipse", (20, 20, 70, 70), "red")])  # another object, the same content
    first = segmenter.segment([image], [[np.array([20.0, 20.0, 70.0, 70.0])]])
    again = segmenter.segment([same_pixels], [[np.array([20.0, 20.0, 70.0, 70.0]), np.array([0.0, 0.0, 50.0, 50.0])]])
    assert len(calls) == 1
    assert np.array_equal(first[0][0], again[0][0])
    segmenter.segment([draw_scene(shapes=[("rectangle", (5, 5, 30, 30), "blue")])], [[np.array([5.0, 5, 30, 30])]])
    assert len(calls) == 2


def test_a_sam2_input_size_must_be_a_multiple_of_64():
    with pytest.raises(ConfigError, match="multiple of 64"):
        Sam2Segmenter("random:test", input_size=100)


def test_a_grounding_dino_name_as_the_fast_detector_runs_grounding_dino_at_512_px(tmp_path):
    from augclip_demo.bpm.models import FAST_DETECTOR_SIZE, preset_weights, region_models
    from augclip_demo.inference.grounding import GroundingDetector

    settings = Settings.from_env(cache_dir=tmp_path, bpm_preset="fast", fast_detector_model="random:tiny",
                                 fast_sam_model="random:test", device="cpu")
    detector, segmenter = region_models(settings)
    assert isinstance(detector, GroundingDetector) and detector.input_size == FAST_DETECTOR_SIZE
    assert detector.spec == "random:tiny" and segmenter.input_size == 512
    assert preset_weights(settings) == [("gdino", "random:tiny"), ("sam2", "random:test")]
    assert preset_weights(settings.replace(fast_detector_model="google/owlvit-base-patch32"))[0][0] == "owlvit"
