"""Reference-based and preservation metrics against independent computations (constructed images,
numpy re-derivations of the benchmark scripts' definitions)."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image
from scipy.spatial.distance import cdist

from augclip_demo.metrics.reference import l1_to_ground_truth, l2_to_ground_truth, structure_distance
from augclip_demo.metrics.suite import METRICS, MetricInputs, score_item


def _flat(value: int, size: tuple[int, int] = (20, 16)) -> Image.Image:
    return Image.new("RGB", size, (value, value, value))


def test_l1_and_l2_to_the_ground_truth_on_flat_images():
    truth, edit = _flat(128), _flat(138)
    assert l1_to_ground_truth(edit, truth) == pytest.approx(10 / 255, abs=1e-12)
    assert l2_to_ground_truth(edit, truth) == pytest.approx((10 / 255) ** 2, abs=1e-12)  # MagicBrush's L2 is an MSE
    # the edit is resized to the ground truth's size first (a flat image stays flat)
    assert l1_to_ground_truth(_flat(138, (40, 32)), truth) == pytest.approx(10 / 255, abs=1e-12)


def test_l1_on_a_half_changed_image():
    truth = np.zeros((10, 10, 3), np.uint8)
    edit = truth.copy()
    edit[:, :5] = 51  # 0.2 on half of the pixels
    assert l1_to_ground_truth(Image.fromarray(edit), Image.fromarray(truth)) == pytest.approx(0.1, abs=1e-12)
    assert l2_to_ground_truth(Image.fromarray(edit), Image.fromarray(truth)) == pytest.approx(0.02, abs=1e-12)


def test_structure_distance_equals_a_scipy_rederivation():
    rng = np.random.default_rng(3)
    a, b = rng.normal(size=(9, 6)), rng.normal(size=(9, 6))
    sim_a, sim_b = 1 - cdist(a, a, "cosine"), 1 - cdist(b, b, "cosine")
    assert structure_distance(a, b) == pytest.approx(float(((sim_a - sim_b) ** 2).mean()), abs=1e-12)
    assert structure_distance(a, a * 3.0) == pytest.approx(0.0, abs=1e-12)  # scale-free (cosine)
    with pytest.raises(ValueError, match="token grid"):
        structure_distance(a, b[:5])


def _inputs(**kwargs) -> MetricInputs:
    base = dict(source_embedding=np.array([1.0, 0, 0]), edit_embeddings=np.array([[0.6, 0.8, 0]]),
                source_image=_flat(100), edit_images=[_flat(110)])
    return MetricInputs(**{**base, **kwargs})


def test_suite_rows_read_their_inputs_and_name_what_is_missing():
    keys = ["l1_gt", "clip_i_gt", "clip_t_caption", "dino_gt", "structure_distance", "psnr_unedited",
            "lpips_unedited"]
    scores = score_item(_inputs(), keys)
    assert all(scores.values[0][k] is None for k in keys)
    assert scores.unavailable[0]["l1_gt"] == "no ground-truth image given"
    assert scores.unavailable[0]["clip_t_caption"] == "no output caption given"
    assert "dino_gt" in scores.unavailable[0]["dino_gt"]
    assert "structure_distance" in scores.unavailable[0]["structure_distance"]
    assert scores.unavailable[0]["psnr_unedited"].startswith("no edit mask given")
    full = _inputs(ground_truth_image=_flat(120), ground_truth_embedding=np.array([0.0, 1.0, 0.0]),
                   output_caption_embedding=np.array([0.0, 0.0, 1.0]),
                   dino_edit_embeddings=np.array([[1.0, 0.0]]), dino_ground_truth_embedding=np.array([0.6, 0.8]),
                   mask=np.ones((16, 20), bool),
                   unedited_measures=[{"psnr_unedited": 30.0, "mse_unedited": 1e-3, "ssim_unedited": 0.9,
                                       "lpips_unedited": None}])
    values = score_item(full, keys)
    assert values.values[0]["l1_gt"] == pytest.approx(10 / 255)
    assert values.values[0]["clip_i_gt"] == pytest.approx(0.8)
    assert values.values[0]["clip_t_caption"] == pytest.approx(0.0, abs=1e-12)
    assert values.values[0]["dino_gt"] == pytest.approx(0.6)
    assert values.values[0]["psnr_unedited"] == 30.0
    assert values.values[0]["lpips_unedited"] is None and "lpips_unedited" in values.unavailable[0]["lpips_unedited"]
    assert not METRICS["l1_gt"].higher_is_better and METRICS["dino_gt"].higher_is_better
