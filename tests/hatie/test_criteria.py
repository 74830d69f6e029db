"""HATIE's per-edit math against hand computations on constructed masks and images."""

from __future__ import annotations

import math

import numpy as np
import pytest

from augclip_demo.hatie import criteria as H
from augclip_demo.hatie import images as HI


def _square(shape: tuple[int, int], top: int, left: int, side: int) -> np.ndarray:
    mask = np.zeros(shape, dtype=bool)
    mask[top:top + side, left:left + side] = True
    return mask


# ---------------------------------------------------------------------------------------------- geometry
def test_known_shift_at_the_published_scale() -> None:
    shape = (512, 512)
    before = _square(shape, 100, 100, 40)  # area 1600
    after = _square(shape, 130, 140, 30)  # area 900, centre moved from (119.5, 119.5) to (144.5, 154.5)
    shift_px = math.hypot(144.5 - 119.5, 154.5 - 119.5)
    scale = math.sqrt(2) / math.sqrt(0.003)  # the published code's largest shift, about 25.8
    score, shift = H.position_consistency(before, after)
    # the code divides by the area of the mask it is given first: the edit's (900 px)
    assert shift == pytest.approx(shift_px / 30.0)
    assert score == pytest.approx((scale - shift_px / 30.0) / scale)
    assert H.largest_shift(shape) == pytest.approx(25.81988897)
    # the paper's reading: the source's area, diagonal / sqrt(0.005 x image) = 20 for a square image
    paper, paper_shift = H.position_consistency(before, after, "paper")
    assert paper_shift == pytest.approx(shift_px / 40.0) and paper == pytest.approx(1 - shift_px / 40.0 / 20.0)


def test_a_shift_past_the_published_scale_is_not_clamped() -> None:
    shape = (512, 512)
    before, after = _square(shape, 0, 0, 4), _square(shape, 500, 500, 4)  # 500 * sqrt(2) px over a 4 px side
    shift = 500 * math.sqrt(2) / 4
    scale = math.sqrt(2) / math.sqrt(0.003)
    score, _ = H.position_consistency(before, after)
    assert score == pytest.approx((scale - shift) / scale) and score < 0
    assert H.position_consistency(before, after, "paper")[0] == 0.0


def test_unmoved_object_keeps_full_position_score() -> None:
    mask = _square((64, 64), 10, 10, 12)
    assert H.position_consistency(mask, mask) == (1.0, 0.0)


def test_growth_beyond_the_dataset_filter() -> None:
    image_area = 512 * 512
    # 40 px to 60 px: ratio 1.5; the code's largest ratio is 1 / 0.003 whatever the image
    score, ratio = H.size_consistency(1600, 3600, image_area)
    assert ratio == pytest.approx(1.5) and score == pytest.approx(1 - 0.5 / (1 / 0.003 - 1))
    # a growth far past anything the paper's limit allows (sqrt(HW / A) = 12.8 here) still scores above 0
    huge, huge_ratio = H.size_consistency(1600, 1600 * 20 ** 2, image_area)
    assert huge_ratio == pytest.approx(20.0) and huge == pytest.approx(1 - 19 / (1 / 0.003 - 1))
    assert H.size_consistency(1600, 1600 * 20 ** 2, image_area, "paper")[0] == 0.0
    assert H.size_consistency(1600, 3600, image_area, "paper")[0] == pytest.approx(1 - 0.5 / (12.8 - 1))
    # shrinking to half the side: the ratio itself
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


@pytest.mark.parametrize("x", [0.0, 0.2, 0.5, 0.539, 0.54, 0.57, 0.6, 0.63, 0.659, 0.66, 0.8, 1.0])
def test_squash_at_several_points(x: float) -> None:
    # the notes' definition: 0.05 x below 0.54, 0.983 + 0.05 (x - 0.66) above 0.66, and between them a cubic
    # flat at both ends (derivative proportional to (x - 0.54)(x - 0.66)) from 0.027 to 0.983
    if x < 0.54:
        expected, tol = 0.05 * x, 1e-12
    elif x >= 0.66:
        expected, tol = 0.983 + 0.05 * (x - 0.66), 1e-12
    else:
        t = (x - 0.54) / 0.12
        expected, tol = 0.027 + (0.983 - 0.027) * (3 * t * t - 2 * t ** 3), 1e-3  # the published rounding
    assert H.squash(x) == pytest.approx(expected, abs=tol)


def test_squash_is_continuous_and_rising() -> None:
    xs = np.linspace(0.0, 1.0, 2001)
    ys = np.array([H.squash(x) for x in xs])
    assert np.all(np.diff(ys) > -1e-9)
    assert abs(H.squash(0.54 - 1e-9) - H.squash(0.54)) < 1e-3 and abs(H.squash(0.66 - 1e-9) - H.squash(0.66)) < 1e-3


def test_normalisations() -> None:
    assert H.cosine_to_unit(1.0) == 1.0 and H.cosine_to_unit(-1.0) == 0.0 and H.cosine_to_unit(0.2) == 0.6
    assert H.lpips_to_similarity(0.25) == 0.75 and H.lpips_to_similarity(1.3) == pytest.approx(-0.3)
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
    ways = {"edges": H.Similarities(0.5, 0.6, 0.7, 0.8), "degradation": H.Similarities(0.9, 0.4, 1.0, 0.3),
            "downscaled": H.Similarities(0.2, 0.1, 0.8, 0.6)}
    # [measure][way] with an outer weight per measure (notes, "Weights")
    table = {"clip": ((0.48, 0.12, 0.40), 0.01), "lpips": ((0.01, 0.02, 0.97), 0.49),
             "dino": ((0.49, 0.01, 0.50), 0.01), "l2": ((0.03, 0.96, 0.01), 0.49)}
    expected = sum(outer * inner[i] * getattr(ways[way], m) for m, (inner, outer) in table.items()
                   for i, way in enumerate(("edges", "degradation", "downscaled")))
    got = H.background_consistency("style", ways, H.HatieOptions())
    assert got.value == pytest.approx(expected)
    # each measure-way component carries its effective weight; the products sum to the criterion
    assert sum(c.value * c.effective for c in got.components if c.effective) == pytest.approx(expected)


def test_degradation_score_takes_the_first_passing_step() -> None:
    assert H.degradation_score([0.95, 0.2]) == 1.0
    assert H.degradation_score([0.5, 0.89, 0.9, 0.91, 0.2]) == pytest.approx(0.7)  # first > 0.9 at k = 3
    assert H.degradation_score([0.1] * 9) == 0.0
    assert H.degradation_sizes() == [512, 256, 128, 64, 32, 16, 8, 4, 2]
    assert H.downscaled_size(512, 512) == (25, 25) and H.downscaled_size(40, 90) == (4, 4)


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
    assert squashed.value == pytest.approx(0.505, abs=1e-3)  # the middle of 0.027 .. 0.983
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
    scale = math.sqrt(2) / math.sqrt(0.003)
    assert replace.value == pytest.approx((scale - 50 / 40) / scale)
    comps = {name: H.Similarities(0.5, 0.5, 0.5, 0.5) for name in H.WAYS}
    attr = H.object_consistency("attribute", source_mask=before, edit_mask=after,
                                appearance_by_comparison=comps, options=H.HatieOptions())
    assert attr.value == pytest.approx(0.70 * 0.5 + 0.23 + 0.07)
    parts = {c.name: c for c in attr.components}
    # CLIP on the degradation way: 0.70 (appearance) x 0.84 (CLIP) x 0.57 (degradation)
    assert parts["appearance.clip.degradation"].effective == pytest.approx(0.70 * 0.84 * 0.57)
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


# ---------------------------------------------------------------------------------------------- totals by type
def test_per_type_error_and_total_error_as_published() -> None:
    w = H.PER_TYPE_WEIGHTS["code"]
    se = {"object_fidelity": 0.02, "background_consistency": 0.01}
    assert H.per_type_error(se, w) == pytest.approx(math.sqrt((0.02 * 0.4) ** 2 + (0.01 * 0.3) ** 2) / 0.7)
    full = {"object_fidelity": 0.02, "background_fidelity": 0.03, "object_consistency": 0.04,
            "background_consistency": 0.01}
    pub = H.PUBLISHED_TOTAL
    squares = sum((full[k] * pub[k] * 0.8) ** 2 for k in full)
    assert H.total_error(full, pub, 0.05) == pytest.approx(math.sqrt(squares + 0.05 * 0.2))


def test_fid_of_small_sets_equals_the_matrix_square_root_form() -> None:
    from scipy import linalg

    rng = np.random.default_rng(2)
    a, b = rng.normal(size=(6, 40)), rng.normal(size=(5, 40)) + 0.3
    s1, s2 = np.cov(a, rowvar=False), np.cov(b, rowvar=False)
    diff = a.mean(0) - b.mean(0)
    expected = diff @ diff + np.trace(s1) + np.trace(s2) - 2 * np.trace(np.real(linalg.sqrtm(s1 @ s2)))
    assert H.fid_from_features(a, b) == pytest.approx(expected, rel=1e-6)


def test_every_hatie_row_of_the_metric_table_names_one_criterion() -> None:
    """The metric table (metrics, the bottom layer) holds HATIE's rows; which criterion each key is lives here."""
    from augclip_demo.metrics.suite import HATIE_ROWS, METRICS

    assert set(H.HATIE_KEYS) == {row.key for row in HATIE_ROWS} == {key for key in METRICS if key.startswith("hatie")}
    assert sorted(H.HATIE_KEYS.values()) == sorted(["total", *H.CRITERIA, "image_quality"])
    assert set(H.CRITERION_LABELS) == set(H.CRITERIA) | {"image_quality"}


def test_row_cosines_match_scipy_and_give_exactly_one_for_equal_rows():
    from scipy.spatial.distance import cosine as cosine_distance

    from augclip_demo.hatie.networks import row_cosines

    rng = np.random.default_rng(11)
    a, b = rng.normal(size=(50, 768)), rng.normal(size=(50, 768))
    expected = [1.0 - cosine_distance(x, y) for x, y in zip(a, b, strict=True)]
    assert np.allclose(row_cosines(a, b), expected, rtol=0, atol=1e-12)
    # an image compared with itself, as HATIE's measures meet it: two equal rows of one batch, in other slices
    pairs = np.repeat(a.astype(np.float32), 2, axis=0)
    assert row_cosines(pairs[0::2], pairs[1::2]).tolist() == [1.0] * 50
    assert row_cosines(a[:2], np.zeros((2, 768))).tolist() == [0.0, 0.0]
