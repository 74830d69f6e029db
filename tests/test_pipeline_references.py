"""Reference-based and preservation metrics through the Evaluator: ground truth, output caption, edit mask and the
feature networks (random here, so their results are labelled untrained)."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from augclip_demo.errors import InputError
from augclip_demo.inference.dino import DinoFeatures
from augclip_demo.metrics.reference import l1_to_ground_truth, structure_distance
from augclip_demo.pipeline import Attributes, Evaluator, FeatureNetworks, load_edit_mask
from tests.support import TINY

ATTRS = Attributes(source=["a red ball"], target=["green grass"])
RANDOM_NETWORKS = FeatureNetworks(dino="random:tiny", structure="random:tiny", lpips="random:squeeze")


@pytest.fixture(scope="module")
def evaluator(tiny_encoder):
    return Evaluator(TINY, device="cpu", encoder=tiny_encoder, networks=RANDOM_NETWORKS)


@pytest.mark.slow
def test_ground_truth_and_caption_metrics_match_direct_computation(evaluator, scene_files, tiny_encoder):
    report = evaluator.evaluate(scene_files["source"], [scene_files["faithful"], scene_files["replaced"]],
                                "a red ball on grass", attributes=ATTRS, ground_truth=scene_files["preserved"],
                                output_caption="a red ball lying on green grass", feature_metrics=["dino_gt"])
    truth = Image.open(scene_files["preserved"]).convert("RGB")
    gt_row = tiny_encoder.encode_images([truth])[0]
    caption_row = tiny_encoder.encode_texts(["a red ball lying on green grass"])[0]
    dino = DinoFeatures("random:tiny", device="cpu")
    for edit, path in zip(report.edits, [scene_files["faithful"], scene_files["replaced"]]):
        image = Image.open(path).convert("RGB")
        row = tiny_encoder.encode_images([image])[0]
        cos = lambda a, b: float(a @ b / np.linalg.norm(a) / np.linalg.norm(b))  # noqa: E731
        assert edit.metrics["l1_gt"] == pytest.approx(l1_to_ground_truth(image, truth), abs=1e-12)
        assert edit.metrics["clip_i_gt"] == pytest.approx(cos(row, gt_row), abs=1e-6)
        assert edit.metrics["clip_t_caption"] == pytest.approx(cos(row, caption_row), abs=1e-6)
        vectors = dino.embed([image, truth])
        assert edit.metrics["dino_gt"] == pytest.approx(cos(vectors[0], vectors[1]), abs=1e-6)
        assert edit.metrics["psnr_unedited"] is None and edit.unavailable["psnr_unedited"].startswith("no edit mask given")
    assert any("DINO (GT)" in note and "untrained" in note.lower() for note in report.notes)


def test_without_references_the_new_metrics_say_what_is_missing(evaluator, scene_files):
    report = evaluator.evaluate(scene_files["source"], scene_files["faithful"], "a red ball on grass", attributes=ATTRS)
    edit = report.edits[0]
    assert edit.metrics["augclip"] is not None  # the usual metrics are untouched
    assert edit.unavailable["l1_gt"] == "no ground-truth image given"
    assert edit.unavailable["clip_t_caption"] == "no output caption given"
    assert "structure_distance" in edit.unavailable["structure_distance"]


@pytest.mark.slow  # torchmetrics and LPIPS
def test_mask_and_structure_metrics(evaluator, scene_files, tmp_path):
    source = Image.open(scene_files["source"]).convert("RGB")
    mask = np.zeros((source.height, source.width), bool)
    mask[: source.height // 2] = True
    mask_path = tmp_path / "mask.png"
    Image.fromarray(mask.astype(np.uint8) * 255).save(mask_path)
    report = evaluator.evaluate(source, [scene_files["faithful"], scene_files["preserved"]], "grass",
                                attributes=ATTRS, edit_mask=mask_path,
                                feature_metrics=["structure_distance", "lpips_unedited"])
    faithful, preserved = report.edits
    for edit in report.edits:
        assert edit.metrics["psnr_unedited"] > 0 and 0 <= edit.metrics["mse_unedited"] < 1
        assert edit.metrics["lpips_unedited"] is not None and edit.metrics["structure_distance"] >= 0
    assert preserved.metrics["mse_unedited"] < faithful.metrics["mse_unedited"]  # +2 levels vs a new lawn
    keys = DinoFeatures("random:tiny", device="cpu").keys([source, Image.open(scene_files["faithful"])])
    assert faithful.metrics["structure_distance"] == pytest.approx(structure_distance(keys[0], keys[1]), abs=1e-9)
    assert sum("untrained" in note.lower() for note in report.notes) >= 2


def test_edit_masks_are_checked_and_resized():
    with pytest.raises(InputError, match="empty"):
        load_edit_mask(np.zeros((4, 4), bool), (4, 4))
    small = np.zeros((2, 2), np.uint8)
    small[0, 0] = 255
    mask = load_edit_mask(small, (4, 4))
    assert mask.shape == (4, 4) and mask[:2, :2].all() and mask.sum() == 4
