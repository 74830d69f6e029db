"""HATIE's per-edit math against hand computations on constructed masks and images."""

from __future__ import annotations

import math

import numpy as np
import pytest

from augclip_demo.metrics import hatie as H
from augclip_demo.metrics import hatie_images as HI


def _square(shape: tuple[int, int], top: int, left: int, side: int) -> np.ndarray:
    mask = np.zeros(shape, dtype=bool)
    mask[top:top + side, left:left + side] = True
    return mask


# ---------------------------------------------------------------------------------------------- geometry
def test_known_shift_gives_position_consistency_by_hand() -> None:
    shape = (512, 512)
    before = _square(shape, 100, 100, 40)  # area 1600, side 40
    after = _square(shape, 130, 140, 40)  # moved 30 down, 40 right: 50 px
    score, shift = H.position_consistency(before, after)
    assert shift == pytest.approx(50 / 40)
    # largest shift for a square image: diagonal / sqrt(0.005 * area) = sqrt(2) / sqrt(0.005) = 20
    assert H.largest_shift(shape) == pytest.approx(20.0)
    assert score == pytest.approx(1 - (50 / 40) / 20)


def test_unmoved_object_keeps_full_position_score() -> None:
    mask = _square((64, 64), 10, 10, 12)
    assert H.position_consistency(mask, mask) == (1.0, 0.0)


def test_known_size_ratio() -> None:
    image_area = 512 * 512
    small, big = _square((512, 512), 10, 10, 20), _square((512, 512), 10, 10, 40)
    assert H.size_ratio(H.mask_area(small), H.mask_area(big)) == pytest.approx(2.0)
    # consistency: ratio 2 against a largest ratio sqrt(512^2 / 400) = 25.6
    score, ratio = H.size_consistency(400, 1600, image_area)
    assert ratio == pytest.approx(2.0)
    assert score == pytest.approx(1 - (2 - 1) / (25.6 - 1))
    # shrinking to half the side: score = the ratio itself
    assert H.size_consistency(1600, 400, image_area)[0] == pytest.approx(0.5)


@pytest.mark.parametrize(("before", "after", "direction", "expected"), [
    (400, 1600, "larger", 1.0),  # ratio 2 > 1.6
    (400, 400 * 1.3 ** 2, "larger", 0.3 / 0.6),  # ratio 1.3, halfway-ish
    (1600, 400, "larger", 0.0),  # wrong way
    (1600, 400, "smaller", 1.0),  # ratio 0.5 < 0.6
    (1600, 1600 * 0.8 ** 2, "smaller", 0.2 / 0.4),
    (400, 1600, "smaller", 0.0),
])
def test_size_fidelity_thresholds(before: float, after: float, direction: str, expected: float) -> None:
    assert H.size_fidelity(before, after, direction)[0] == pytest.approx(expected)


def test_squash_is_zero_below_one_above_and_smooth_between() -> None:
    assert H.squash(0.2) == 0.0 and H.squash(0.54) == 0.0
    assert H.squash(0.66) == 1.0 and H.squash(0.9) == 1.0
    assert H.squash(0.60) == pytest.approx(0.5)
    t = (0.57 - 0.54) / 0.12
    assert H.squash(0.57) == pytest.approx(3 * t * t - 2 * t ** 3)


def test_normalisations() -> None:
    assert H.cosine_to_unit(1.0) == 1.0 and H.cosine_to_unit(-1.0) == 0.0 and H.cosine_to_unit(0.2) == 0.6
    assert H.lpips_to_similarity(0.25) == 0.75 and H.lpips_to_similarity(1.3) == 0.0
    a = np.zeros((4, 4, 3))
    b = np.full((4, 4, 3), 0.5)
    assert H.l2_similarity(a, b) == pytest.approx(1 - 0.25)


def test_image_quality_and_fid() -> None:
    assert H.image_quality(0.0) == 1.0
    assert H.image_quality(25.0) == pytest.approx(1 - math.tanh(1.0))
    rng = np.random.default_rng(0)
    a = rng.normal(size=(400, 3))
    b = a + np.array([3.0, 0.0, 4.0])  # same covariance, means 5 apart
    assert H.fid_from_features(a, b) == pytest.approx(25.0, rel=1e-6)
    # 1-D Gaussians: (m1-m2)^2 + s1^2 + s2^2 - 2 s1 s2
    assert H.frechet_distance(np.array([1.0]), np.array([[4.0]]), np.array([0.0]), np.array([[1.0]])) == \
        pytest.approx(1 + 4 + 1 - 2 * 2)
    with pytest.raises(ValueError, match="two images"):
        H.fid_from_features(a[:1], b)


# ---------------------------------------------------------------------------------------------- criteria
def test_untouched_background_scores_one() -> None:
    rng = np.random.default_rng(1)
    image = rng.random((64, 64, 3))
    mask = _square((64, 64), 20, 20, 10)
    kept_a, kept_b = HI.mask_out(image, mask), HI.mask_out(image, mask)
    l2 = H.l2_similarity(kept_a, kept_b)
    assert l2 == 1.0
    score = H.background_consistency("replace", {"plain": H.Similarities(1.0, 1.0, 1.0, l2)}, H.HatieOptions())
    assert score.value == 1.0


def test_background_consistency_weights_and_power() -> None:
    s = H.Similarities(clip=0.9, lpips=0.8, dino=0.7, l2=0.95)
    base = 0.22 * 0.9 + 0.17 * 0.8 + 0.25 * 0.7 + 0.36 * 0.95
    got = H.background_consistency("add", {"plain": s}, H.HatieOptions())
    assert got.value == pytest.approx(base ** 6)
    paper = H.background_consistency("add", {"plain": s}, H.HatieOptions(bc_clip=False))
    assert paper.value == pytest.approx(((0.17 * 0.8 + 0.25 * 0.7 + 0.36 * 0.95) / 0.78) ** 6)


def test_style_background_consistency_by_hand() -> None:
    comps = {"plain": H.Similarities(None, 0.5, 0.6, 0.7), "edges": H.Similarities(None, 0.2, 0.3, 0.9),
             "gray": H.Similarities(None, 0.4, 0.4, 0.4), "small": H.Similarities(None, 0.1, 0.8, 0.3)}
    inner = {"plain": 0.48 * 0.5 + 0.12 * 0.6 + 0.40 * 0.7, "edges": 0.01 * 0.2 + 0.02 * 0.3 + 0.97 * 0.9,
             "gray": 0.4, "small": 0.03 * 0.1 + 0.96 * 0.8 + 0.01 * 0.3}
    expected = 0.01 * inner["plain"] + 0.49 * inner["edges"] + 0.01 * inner["gray"] + 0.49 * inner["small"]
    assert H.background_consistency("style", comps, H.HatieOptions()).value == pytest.approx(expected)


def test_object_fidelity_rules() -> None:
    on = H.HatieOptions(vqa=True)
    off = H.HatieOptions()
    ev = H.ObjectEvidence(found=True, confidence=0.8, clip=0.6, vqa=0.9)
    assert H.object_fidelity("replace", on, target=ev).value == pytest.approx(0.01 * 0.6 + 0.92 * 0.8 + 0.07 * 0.9)
    assert H.object_fidelity("replace", off, target=ev).value == pytest.approx((0.01 * 0.6 + 0.92 * 0.8) / 0.93)
    assert H.object_fidelity("remove", on, target=ev).value == pytest.approx(1 - (0.006 + 0.736 + 0.063))
    assert H.object_fidelity("remove", on, target=H.ObjectEvidence(found=False)).value == 1.0
    assert H.object_fidelity("attribute", on, target=ev).value == pytest.approx(0.36 * 0.6 + 0.57 * 0.8 + 0.07 * 0.9)
    presence = 0.01 * 0.6 + 0.92 * 0.8 + 0.07 * 0.9
    add = H.object_fidelity("add", on, target=ev, relation_clip=0.7, relation_vqa=0.5)
    assert add.value == pytest.approx(0.03 * presence + 0.71 * 0.7 + 0.26 * 0.5)
    assert H.object_fidelity("add", on, target=H.ObjectEvidence(found=False)).value == 0.0
    resize = H.object_fidelity("resize", on, source_area=400, edit_area=1600, direction="larger")
    assert resize.value == 1.0


def test_background_fidelity_squashed_or_not() -> None:
    raw = H.background_fidelity("background", 0.6, None, H.HatieOptions(bf_squash=False))
    assert raw.value == pytest.approx(0.6)
    squashed = H.background_fidelity("background", 0.6, 0.6, H.HatieOptions(vqa=True))
    assert squashed.value == pytest.approx(0.5)
    style = H.background_fidelity("style", 0.62, 0.5, H.HatieOptions(vqa=True, bf_squash=False))
    assert style.value == pytest.approx(0.58 * 0.62 + 0.42 * 0.5)


def test_object_consistency_resize_and_attribute() -> None:
    shape = (512, 512)
    before, after = _square(shape, 100, 100, 40), _square(shape, 100, 100, 40)
    s = H.Similarities(0.9, 0.8, 0.7, 0.6)
    look = 0.23 * 0.9 + 0.01 * 0.8 + 0.11 * 0.7 + 0.65 * 0.6
    got = H.object_consistency("resize", source_mask=before, edit_mask=after,
                               appearance_by_comparison={"plain": s}, options=H.HatieOptions())
    assert got.value == pytest.approx(0.9 * look + 0.1 * 1.0)
    replace = H.object_consistency("replace", source_mask=before, edit_mask=_square(shape, 130, 140, 40),
                                   appearance_by_comparison=None, options=H.HatieOptions())
    assert replace.value == pytest.approx(1 - (50 / 40) / 20)
    comps = {name: H.Similarities(None, 0.5, 0.5, 0.5) for name in H.COMPARISONS}
    attr = H.object_consistency("attribute", source_mask=before, edit_mask=after,
                                appearance_by_comparison=comps, options=H.HatieOptions())
    assert attr.value == pytest.approx(0.70 * 0.5 + 0.23 + 0.07)
    missing = H.object_consistency("attribute", source_mask=before, edit_mask=None,
                                   appearance_by_comparison=comps, options=H.HatieOptions())
    assert missing.value == 0.0


def test_totals() -> None:
    w = H.total_weights("published")
    crit = {"object_fidelity": 0.5, "background_consistency": 0.9}
    assert H.edit_total(crit, w) == pytest.approx((0.2 * 0.5 + 0.3 * 0.9) / 0.5)
    means = {"object_fidelity": 0.5, "background_fidelity": 0.6, "object_consistency": 0.8,
             "background_consistency": 0.9}
    inner = 0.2 * 0.5 + 0.4 * 0.6 + 0.1 * 0.8 + 0.3 * 0.9
    assert H.set_total(means, w, 0.7) == pytest.approx(0.8 * inner + 0.2 * 0.7)
    swapped = H.total_weights("per-type-code")
    assert swapped["object_fidelity"] == 0.4 and swapped["background_fidelity"] == 0.2
    with pytest.raises(ValueError, match="unknown HATIE weight set"):
        H.total_weights("nope")


# ---------------------------------------------------------------------------------------------- images
def test_square_box_and_crop() -> None:
    mask = np.zeros((50, 80), dtype=bool)
    mask[10:20, 30:60] = True  # 10 x 30 box
    box = HI.square_box(mask)
    assert box[2] - box[0] == box[3] - box[1] == 30
    assert box[0] <= 10 and box[2] >= 20
    image = np.ones((50, 80, 3))
    crop = HI.square_crop(image, (-5, -5, 10, 10))
    assert crop.shape == (15, 15, 3) and crop[:5].sum() == 0 and crop[5:, 5:].min() == 1


def test_edge_map_finds_the_border_of_a_square_only() -> None:
    image = np.zeros((64, 64, 3))
    image[20:44, 20:44] = 1.0
    edges = HI.edge_map(image)[..., 0]
    assert edges[32, 32] == 0 and edges[5, 5] == 0
    ys, xs = np.nonzero(edges)
    assert ys.size > 0
    # every edge pixel lies within two pixels of the square's border
    dist = np.minimum.reduce([np.abs(ys - 19.5), np.abs(ys - 43.5), np.abs(xs - 19.5), np.abs(xs - 43.5)])
    assert dist.max() <= 2.0


def test_degraded_versions() -> None:
    image = np.zeros((16, 16, 3))
    image[:8, :8] = [1.0, 0.0, 0.0]
    gray = HI.grayscale(image)
    assert gray[0, 0, 0] == pytest.approx(0.299) and gray[0, 0, 1] == pytest.approx(0.299)
    small = HI.downscaled(image, factor=8)
    assert small.shape == image.shape
    assert small[0, 0, 0] == pytest.approx(1.0, abs=1 / 255) and small[15, 15, 0] == 0
