"""The fast BPM preset's OWL-ViT detector, loaded from the local hub in the published layout."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from augclip_demo.config import Settings
from augclip_demo.errors import ConfigError, WeightsUnavailableError
from augclip_demo.inference.owl_detector import OwlDetector
from tests.support import draw_scene, published
from tests.support.hub_fixtures import set_offline


@pytest.fixture(scope="module")
def owl_folder(hub, tmp_path_factory):
    folder = published.write_owlvit(tmp_path_factory.mktemp("published-owlvit"))
    hub.add_folder(published.OWL_REPO, folder)
    return folder


@pytest.mark.slow
def test_owlvit_from_the_hub_holds_the_published_tensors_and_detects_all_phrases_in_one_pass(
        owl_folder, online, monkeypatch):
    from safetensors.torch import load_file

    detector = OwlDetector(published.OWL_REPO, device="cpu", cache_dir=online)
    assert not detector.untrained and "random" not in detector.label
    detector.load()
    published_state = load_file(str(owl_folder / "model.safetensors"))
    state = detector._model.state_dict()
    for name, tensor in published_state.items():
        assert torch.equal(state[name], tensor), name
    image_passes, text_rows = [], []
    detector._model.owlvit.vision_model.register_forward_hook(lambda m, a, out: image_passes.append(1))
    detector._model.owlvit.text_model.register_forward_hook(
        lambda m, a, kw, out: text_rows.append(int(out[0].shape[0])), with_kwargs=True)
    image = draw_scene(shapes=[("ellipse", (20, 20, 70, 70), "red")])
    other = draw_scene(shapes=[("rectangle", (10, 10, 40, 40), "blue")])
    result = detector.detect([image, other, image], [["red ball", "table", "blue cup"], [], ["red ball", "table",
                                                                                            "blue cup"]],
                             box_threshold=0.5)
    assert [len(r) for r in result] == [3, 0, 3]
    # one image pass with all three phrases as one text batch; the repeat of the same image comes from the cache
    assert image_passes == [1] and text_rows == [3]
    assert [d.phrase for d in result[0]] == ["red ball", "table", "blue cup"]
    for first, again in zip(result[0], result[2]):
        assert first.score == again.score and first.found == again.found
    set_offline(monkeypatch)  # a second load comes from the cache, without the network
    again = OwlDetector(published.OWL_REPO, device="cpu", cache_dir=online).load()
    name, tensor = next(iter(published_state.items()))
    assert torch.equal(again._model.state_dict()[name], tensor)


@pytest.mark.slow
def test_boxes_and_scores_match_transformers_own_post_processing_on_a_wide_image(owl_folder, tmp_path):
    """The pixel box and score of each phrase, against OwlViTProcessor.post_process_grounded_object_detection
    (transformers' reference code for the same outputs), on a 120 x 80 image: the x and y scales differ."""
    detector = OwlDetector(str(owl_folder), device="cpu", cache_dir=tmp_path).load()
    image = draw_scene(size=(120, 80), shapes=[("ellipse", (20, 10, 70, 60), "red")])
    phrases = ["red ball", "green tree"]
    [detections] = detector.detect([image], [phrases], box_threshold=0.01)
    processor, model = detector._processor, detector._model
    inputs = processor(text=[phrases], images=image, return_tensors="pt", padding="max_length", max_length=16)
    with torch.inference_mode():
        outputs = model(**inputs)
    # threshold 0 keeps every patch, in order: transformers' pixel box of each patch on this image
    [reference] = processor.post_process_grounded_object_detection(outputs, threshold=0.0,
                                                                  target_sizes=torch.tensor([[80, 120]]))
    logits = outputs.logits[0].double().numpy()
    assert reference["boxes"].shape[0] == logits.shape[0]
    for q, detection in enumerate(detections):
        probs = 1.0 / (1.0 + np.exp(-logits[:, q]))
        best = int(probs.argmax())
        expected = reference["boxes"][best].double().numpy().clip(0, [120, 80, 120, 80])
        assert detection.score == pytest.approx(probs[best], abs=1e-6)
        assert detection.found == (probs[best] > 0.01)
        np.testing.assert_allclose(detection.box, expected, atol=1e-3)


def test_missing_weights_name_the_model_and_the_download_command(online):
    detector = OwlDetector("test-org/no-such-owlvit", device="cpu", cache_dir=online)
    detector.preflight()  # no request: the network is reachable, so a download may still work
    with pytest.raises(WeightsUnavailableError) as info:
        detector.load()
    text = str(info.value)
    assert "OWL-ViT test-org/no-such-owlvit" in text and "does not exist" in text
    assert "augclip-demo download --bpm-fast" in text and "AUGCLIP_FAST_DETECTOR_MODEL" in text


def test_a_local_folder_without_weights_is_refused_with_the_fix(tmp_path):
    (tmp_path / "config.json").write_text("{}", encoding="utf-8")
    with pytest.raises(WeightsUnavailableError, match="no model.safetensors or pytorch_model.bin"):
        OwlDetector(str(tmp_path), device="cpu", cache_dir=tmp_path).load()


def test_random_specs_are_labelled_untrained_and_unknown_ones_refused(tmp_path):
    detector = OwlDetector("random:test", device="cpu", cache_dir=tmp_path)
    assert detector.untrained and "untrained" in detector.label
    assert Settings.from_env(fast_detector_model="random:test").fast_detector_model == "random:test"
    with pytest.raises(ConfigError, match="random specs"):
        OwlDetector("random:huge")
