"""The GroundingDINO and SAM wrappers through the real library classes with tiny random weights.

The GroundingDINO folder is written here (WordPiece vocabulary, config, weights, processor files)
and loaded through ``from_pretrained`` like a downloaded checkpoint; the SAM state dict is saved
to a file and loaded like the official checkpoint.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from augclip_demo.errors import ConfigError, InputError, WeightsUnavailableError
from augclip_demo.inference import segmenter as segmenter_module
from augclip_demo.inference.grounding import (
    GroundingDetector,
    _phrase_token_spans,
    get_detector,
    save_random_grounding,
)
from augclip_demo.inference.hub_folder import RANDOM_MARKER
from augclip_demo.inference.segmenter import SamSegmenter, get_segmenter
from tests.support import draw_scene

# Loading transformers' GroundingDINO code and building the tiny models takes several seconds.
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def gdino_folder(tmp_path_factory):
    return save_random_grounding(tmp_path_factory.mktemp("gdino-tiny"), "tiny")


@pytest.fixture(scope="module")
def detector(gdino_folder):
    return GroundingDetector(gdino_folder, device="cpu").load()


@pytest.fixture(scope="module")
def sam_checkpoint(tmp_path_factory):
    path = tmp_path_factory.mktemp("sam") / "sam_tiny.pth"
    torch.save(SamSegmenter("random:tiny", device="cpu").load()._model.state_dict(), path)
    return path


@pytest.fixture(scope="module")
def segmenter(sam_checkpoint):
    return SamSegmenter("tiny", checkpoint=sam_checkpoint, device="cpu").load()


SCENE = draw_scene((120, 90), shapes=[("ellipse", (20, 20, 60, 60), "red"), ("rectangle", (70, 40, 110, 80), "green")])
OTHER = draw_scene((120, 90), "lightblue", [("rectangle", (30, 10, 90, 50), "blue")])


def test_the_saved_folder_is_a_normal_checkpoint_with_bert_special_ids(gdino_folder, detector):
    for name in ("config.json", "model.safetensors", "vocab.txt", "tokenizer_config.json", RANDOM_MARKER):
        assert (gdino_folder / name).is_file(), name
    tokenizer = detector._processor.tokenizer
    ids = tokenizer("red cup. table.")["input_ids"]
    assert ids[0] == 101 and ids[-1] == 102 and ids.count(1012) == 2  # [CLS], [SEP], "." where GroundingDINO expects them
    assert tokenizer.unk_token_id not in ids
    assert detector.untrained and "untrained" in detector.label


def test_detect_returns_one_box_per_phrase_in_image_pixels(detector):
    (scene, other) = detector.detect([SCENE, OTHER], [["red cup", "green box"], ["blue box"]], box_threshold=0.5)
    assert [d.phrase for d in scene] == ["red cup", "green box"] and other[0].phrase == "blue box"
    for detection in scene + other:
        assert detection.found == (detection.score > 0.5)
        if detection.found:
            x0, y0, x1, y1 = detection.box
            assert 0 <= x0 <= x1 <= 120 and 0 <= y0 <= y1 <= 90
        else:
            assert detection.box is None


def test_box_threshold_decides_found(detector):
    # each phrase alone (the other phrases of a text would change the fused image features)
    phrases = ["red cup", "green box", "wooden table", "sky", "person", "bird"]
    singles = detector.detect([SCENE] * len(phrases), [[p] for p in phrases], box_threshold=0.01)
    lowest = min((group[0] for group in singles), key=lambda d: d.score)
    assert 0.01 < lowest.score < 1.0
    (at,) = detector.detect([SCENE], [[lowest.phrase]], box_threshold=lowest.score)[0]
    assert not at.found and at.box is None and at.score == pytest.approx(lowest.score)  # found needs score > threshold
    (below,) = detector.detect([SCENE], [[lowest.phrase]], box_threshold=lowest.score * 0.999)[0]
    assert below.found and below.box is not None
    with pytest.raises(InputError, match="box_threshold must be between 0 and 1"):
        detector.detect([SCENE], [["cup"]], box_threshold=1.0)


def test_batched_detection_equals_one_image_at_a_time(detector):
    batched = detector.detect([SCENE, OTHER, SCENE], [["red cup", "table"], ["blue box"], []])
    single = [detector.detect([SCENE], [["red cup", "table"]])[0], detector.detect([OTHER], [["blue box"]])[0]]
    assert batched[2] == []
    for got, expected in zip(batched[0] + batched[1], single[0] + single[1]):
        assert got.score == pytest.approx(expected.score, abs=1e-5)
        if got.found:
            np.testing.assert_allclose(got.box, expected.box, atol=1e-3)


def test_phrase_token_spans():
    #       [CLS] red  cup  .    table .    [SEP] [PAD]
    ids = [101, 2417, 2452, 1012, 2795, 1012, 102, 0]
    mask = [True] * 7 + [False]
    assert _phrase_token_spans(ids, mask, 1012, {0, 101, 102}, 2) == [[1, 2], [4]]


def test_detection_phrase_errors(detector):
    with pytest.raises(InputError, match="phrase '...' is empty"):
        detector.detect([SCENE], [["..."]])
    with pytest.raises(InputError, match="2 images but 1 phrase lists"):
        detector.detect([SCENE, OTHER], [["cup"]])


def test_missing_grounding_weights_fail_fast_with_a_clear_message(tmp_path):
    detector = GroundingDetector("IDEA-Research/grounding-dino-tiny", device="cpu", cache_dir=tmp_path)
    with pytest.raises(WeightsUnavailableError) as info:
        detector.load()
    text = str(info.value)
    assert "GroundingDINO IDEA-Research/grounding-dino-tiny" in text
    assert "https://huggingface.co/IDEA-Research/grounding-dino-tiny" in text and str(tmp_path) in text
    assert "--gdino-model PATH" in text and "AUGCLIP_GDINO_MODEL" in text
    empty = tmp_path / "not-a-model"
    empty.mkdir()
    with pytest.raises(WeightsUnavailableError, match="no config.json there"):
        GroundingDetector(empty, device="cpu").load()
    with pytest.raises(ConfigError, match="random specs"):
        GroundingDetector("random:huge")


def test_shared_detector_and_segmenter_are_loaded_once(gdino_folder):
    from augclip_demo.config import Settings

    settings = Settings.from_env(gdino_model=str(gdino_folder), sam_model="random:tiny", device="cpu")
    assert get_detector(settings) is get_detector(settings)
    assert get_segmenter(settings) is get_segmenter(settings)


# ---------------------------------------------------------------------- SAM
def test_sam_masks_equal_sam_predictor(segmenter):
    from segment_anything import SamPredictor

    boxes = [[np.array([20.0, 20, 60, 60]), np.array([70.0, 40, 110, 80])], [np.array([30.0, 10, 90, 50])]]
    small = draw_scene((64, 48), shapes=[("ellipse", (5, 5, 40, 40), "red")])
    masks = segmenter.segment([SCENE, small], [boxes[0], [np.array([5.0, 5, 40, 40])]])
    assert [m.shape for m in masks[0]] == [(90, 120), (90, 120)] and masks[1][0].shape == (48, 64)
    predictor = SamPredictor(segmenter._model)
    for image, group, got in ((SCENE, boxes[0], masks[0]), (small, [np.array([5.0, 5, 40, 40])], masks[1])):
        predictor.set_image(np.asarray(image))
        for box, mask in zip(group, got):
            expected, _, _ = predictor.predict(box=box, multimask_output=False)
            np.testing.assert_array_equal(mask, expected[0])
    assert segmenter.segment([SCENE], [[]]) == [[]]


def test_sam_checkpoint_file_loads_the_same_weights(segmenter):
    random_model = SamSegmenter("random:tiny", device="cpu")
    box = [[np.array([20.0, 20, 60, 60])]]
    np.testing.assert_array_equal(random_model.segment([SCENE], box)[0][0], segmenter.segment([SCENE], box)[0][0])
    assert segmenter.untrained and "untrained" in segmenter.label


def test_missing_or_bad_sam_checkpoints(tmp_path, monkeypatch):
    with pytest.raises(WeightsUnavailableError) as info:
        SamSegmenter("vit_b", checkpoint=tmp_path / "missing.pth", device="cpu").load()
    assert "missing.pth" in str(info.value) and "--sam-checkpoint" in str(info.value)
    garbage = tmp_path / "garbage.pth"
    garbage.write_bytes(b"not a checkpoint")
    with pytest.raises(WeightsUnavailableError, match="official SAM checkpoint for vit_b"):
        SamSegmenter("vit_b", checkpoint=garbage, device="cpu").load()
    # No network: an unresolvable host (RFC 2606 .invalid) stands for the official download server.
    monkeypatch.setitem(segmenter_module.SAM_CHECKPOINT_URLS, "vit_b", "https://weights.invalid/sam_vit_b_01ec64.pth")
    with pytest.raises(WeightsUnavailableError) as info:
        SamSegmenter("vit_b", device="cpu", cache_dir=tmp_path).load()
    text = str(info.value)
    assert "SAM vit_b" in text and "weights.invalid" in text and str(tmp_path / "sam") in text
    assert "AUGCLIP_SAM_CHECKPOINT" in text


@pytest.mark.parametrize("spec, checkpoint, message", [
    ("vit_q", None, "unknown SAM model"),
    ("random:vit_b", "/some/file.pth", "drop one of the two"),
    ("tiny", None, "test architecture"),
])
def test_sam_spec_errors(spec, checkpoint, message):
    with pytest.raises(ConfigError, match=message):
        SamSegmenter(spec, checkpoint=checkpoint, device="cpu")
