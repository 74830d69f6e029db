"""BPM's region rules and semantic measures on constructed boxes, masks, pixels and embeddings with known answers (no models)."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest
from PIL import Image

from augclip_demo.bpm import ParsedInstruction, RegionThresholds
from augclip_demo.bpm.components import (
    as_box,
    box_gap,
    box_iou,
    combine,
    crop_box,
    f_position,
    f_size,
    normalize_modify,
    preserved_region,
    s_modify,
    s_preserve,
)
from augclip_demo.bpm.localize import Region, detected_region, localize
from augclip_demo.errors import InputError

TH = RegionThresholds()


def box(x0, y0, x1, y1):
    return np.array([x0, y0, x1, y1], dtype=float)


# ---------------------------------------------------------------------- boxes
def test_box_geometry():
    a, b = box(0, 0, 10, 10), box(5, 0, 15, 10)
    assert box_iou(a, b) == pytest.approx(50 / 150)
    assert box_iou(a, a) == 1.0 and box_iou(a, box(20, 20, 30, 30)) == 0.0
    assert box_gap(a, box(13, 14, 20, 20)) == pytest.approx(5.0)  # 3 across, 4 down
    assert box_gap(a, b) == 0.0
    with pytest.raises(InputError, match="x0 <= x1"):
        as_box([10, 0, 0, 10])
    with pytest.raises(InputError, match="NaN"):
        as_box([0, 0, float("nan"), 1])
    with pytest.raises(InputError, match="4 numbers"):
        as_box([0, 0, 1])


def test_crop_box_clamps_and_keeps_at_least_one_pixel():
    image = Image.new("RGB", (20, 10))
    assert crop_box(image, box(2.2, 1.5, 7.1, 6)).size == (6, 5)  # floor / ceil
    assert crop_box(image, box(-5, -5, 50, 50)).size == (20, 10)
    assert crop_box(image, box(19.5, 9.5, 19.5, 9.5)).size == (1, 1)


# ---------------------------------------------------------------------- f_size
@pytest.mark.parametrize("state, area_edit, expected", [
    ("larger", 130, 1), ("larger", 119, 0), ("larger", 120, 1),  # ratio >= 1.2
    ("smaller", 80, 1), ("smaller", 84, 0), ("smaller", 130, 0),  # ratio <= 1/1.2
    ("unchanged", 100, 1), ("unchanged", 76, 1), ("unchanged", 74, 0), ("unchanged", 133, 1), ("unchanged", 140, 0),
])
def test_f_size_for_every_state(state, area_edit, expected):
    judgement = f_size(100, area_edit, state, TH)
    assert judgement.score == expected
    assert judgement.values["ratio"] == pytest.approx(area_edit / 100)


def test_f_size_corner_cases():
    assert f_size(0, 0, "larger", TH, is_add=True).score == 1  # App. A.4 (1): add -> full score
    assert "App. A.4" in f_size(0, 0, "larger", TH, is_add=True).reason
    assert f_size(100, 200, "larger", TH, edit_found=False).score == 0
    assert f_size(100, 200, "larger", TH, origin_found=False).score == 0
    assert "M_origin is empty" in f_size(0, 200, "larger", TH).reason
    strict = RegionThresholds(size_change_ratio=2.0)
    assert f_size(100, 150, "larger", strict).score == 0 and f_size(100, 200, "larger", strict).score == 1


# ---------------------------------------------------------------------- f_position
ANCHOR = box(40, 40, 60, 60)  # centre (50, 50)


@pytest.mark.parametrize("state, edit, expected, failed", [
    ("left", box(10, 40, 30, 60), 1, None),
    ("right", box(70, 40, 90, 60), 1, None),
    ("up", box(40, 10, 60, 30), 1, None),  # image y grows downwards
    ("down", box(40, 70, 60, 90), 1, None),
    ("left", box(70, 40, 90, 60), 0, "position"),  # moved the wrong way
    ("up", box(40, 70, 60, 90), 0, "position"),
    ("left", box(20, 5, 40, 25), 0, "direction"),  # 20 px left but 35 px up: mostly the wrong axis
    ("right", box(45, 40, 65, 60), 0, "saliency"),  # 5 px: IoU 0.6 >= 0.5, not a salient move
    ("down", box(40, 45, 60, 65), 0, "saliency"),
])
def test_f_position_directions(state, edit, expected, failed):
    judgement = f_position(ANCHOR, edit, state, TH)
    assert judgement.score == expected
    if failed:
        assert failed in judgement.reason


@pytest.mark.parametrize("edit, expected", [
    (box(40, 40, 60, 60), 1), (box(42, 41, 62, 61), 1),  # IoU 0.77
    (box(50, 40, 70, 60), 0),  # IoU 1/3
    (box(100, 100, 120, 120), 0),
])
def test_f_position_unchanged_is_an_iou_check(edit, expected):
    assert f_position(ANCHOR, edit, "unchanged", TH).score == expected


@pytest.mark.parametrize("edit, expected", [
    (box(45, 45, 55, 55), 1), (box(38, 45, 48, 55), 1),  # 80 % inside: >= 0.8
    (box(35, 45, 45, 55), 0),  # half outside
    (box(0, 0, 10, 10), 0),
])
def test_f_position_inside(edit, expected):
    assert f_position(ANCHOR, edit, "inside", TH).score == expected


@pytest.mark.parametrize("edit, expected", [
    (box(65, 40, 85, 60), 1),  # gap 5 px <= 0.5 x diagonal 28.3 px
    (box(60, 40, 80, 60), 1),  # touching
    (box(100, 40, 120, 60), 0),  # gap 40 px: too far
    (box(42, 42, 62, 62), 0),  # on top of it (IoU 0.67): not "near", the same place
])
def test_f_position_near(edit, expected):
    assert f_position(ANCHOR, edit, "near", TH).score == expected


def test_f_position_corner_cases():
    assert f_position(None, None, "left", TH, is_remove=True).score == 1  # App. A.4 (2)
    assert f_position(ANCHOR, box(10, 40, 30, 60), "left", TH, anchor_found=False).score == 0
    assert f_position(ANCHOR, None, "left", TH, edit_found=False).score == 0
    assert f_position(ANCHOR, box(10, 40, 30, 60), "left", RegionThresholds(move_iou_max=0.0)).score == 0
    with pytest.raises(InputError, match="unknown position state"):
        f_position(ANCHOR, ANCHOR, "behind", TH)


def test_thresholds_are_validated():
    with pytest.raises(InputError, match="size_change_ratio must be a ratio >= 1"):
        RegionThresholds(size_change_ratio=0.5)
    with pytest.raises(InputError, match="move_iou_max must be between 0 and 1"):
        RegionThresholds(move_iou_max=1.5)
    with pytest.raises(InputError, match="near_max_gap must be a non-negative number"):
        RegionThresholds(near_max_gap=-1)


# ---------------------------------------------------------------------- S_preserve
def _pair(inside: bool, outside: bool) -> tuple[Image.Image, Image.Image, np.ndarray]:
    source = np.full((40, 60, 3), 100, dtype=np.uint8)
    edited = source.copy()
    mask = np.zeros((40, 60), dtype=bool)
    mask[10:30, 20:40] = True
    if inside:
        edited[mask] = 255
    if outside:
        edited[~mask] = 151  # 51 levels = 0.2 of the range
    return Image.fromarray(source), Image.fromarray(edited), mask


def test_s_preserve_ignores_changes_inside_the_mask():
    source, edited, mask = _pair(inside=True, outside=False)
    keep = preserved_region(mask, None, (40, 60))
    result = s_preserve(source, edited, keep)
    assert result.score == 1.0 and result.rmse == 0.0 and not result.empty
    assert result.fraction == pytest.approx(1 - 400 / 2400)


def test_s_preserve_sees_changes_outside_the_mask():
    source, edited, mask = _pair(inside=False, outside=True)
    result = s_preserve(source, edited, preserved_region(mask, None, (40, 60)))
    assert result.rmse == pytest.approx(0.2) and result.score == pytest.approx(0.8)
    both = s_preserve(*_pair(inside=True, outside=True)[:2], preserved_region(mask, None, (40, 60)))
    assert both.score == pytest.approx(0.8)  # the change inside still does not count


def test_s_preserve_excludes_the_union_of_both_masks():
    source, edited, mask = _pair(inside=True, outside=False)
    other = np.zeros_like(mask)
    other[0:5, 0:5] = True
    arr = np.asarray(edited).copy()
    arr[other] = 0
    keep = preserved_region(mask, other, (40, 60))
    assert s_preserve(source, Image.fromarray(arr), keep).score == 1.0
    assert s_preserve(source, Image.fromarray(arr), preserved_region(mask, None, (40, 60))).score < 1.0


def test_s_preserve_with_a_mask_covering_the_whole_image_is_defined():
    source, edited, _ = _pair(inside=True, outside=True)
    whole = np.ones((40, 60), dtype=bool)
    result = s_preserve(source, edited, preserved_region(whole, None, (40, 60)))
    assert result.empty and result.score == 1.0 and result.rmse is None and result.fraction == 0.0
    assert "nothing to preserve" in result.reason


def test_preserved_region_checks_mask_shapes():
    with pytest.raises(InputError, match="M_edit has shape"):
        preserved_region(None, np.zeros((5, 5), dtype=bool), (40, 60))


# ---------------------------------------------------------------------- S_modify and the sum
def test_s_modify_is_the_cosine_of_the_two_directions():
    e = np.eye(4)
    # image direction e1 - e0, text direction e1 - e0: perfectly aligned
    assert s_modify(e[0], e[1], e[0], e[1]) == pytest.approx(1.0)
    assert s_modify(e[1], e[0], e[0], e[1]) == pytest.approx(-1.0)
    assert s_modify(e[0], e[2], e[0], e[1]) == pytest.approx(0.5)  # (e2-e0).(e1-e0) / 2
    assert s_modify(e[0], e[0], e[0], e[1]) == 0.0  # identical crops: no direction
    assert s_modify(e[0], e[1], e[2], e[2]) == 0.0  # o1 == o2 (a pure move or resize)
    assert normalize_modify(-1) == 0.0 and normalize_modify(1) == 1.0
    with pytest.raises(InputError, match="one dimension"):
        s_modify(np.ones(3), np.ones(4), np.ones(4), np.ones(4))


def test_combine_follows_alg_1():
    c = combine(0.2, 0.9, 1, 0, alpha=0.7)
    assert c.s_modify_norm == pytest.approx(0.6) and c.s_semantic == pytest.approx(1.5)
    assert c.s_region == 1 and c.bpm == pytest.approx(0.7 * 1.5 + 0.3 * 1)
    assert c.overall_raw == pytest.approx(0.2 + 0.9 + 1)  # the paper's Fig. 4 "overall"
    assert combine(0.2, 0.9, 1, 1, alpha=1.0).bpm == pytest.approx(1.5)
    with pytest.raises(InputError, match="alpha"):
        combine(0, 0, 0, 0, alpha=1.5)


# ---------------------------------------------------------------------- localisation rules
def _det(b, score=0.9):
    return SimpleNamespace(box=b, score=score, found=b is not None)


def _mask(b, shape=(100, 100)):
    m = np.zeros(shape, dtype=bool)
    m[int(b[1]):int(b[3]), int(b[0]):int(b[2])] = True
    return m


SIZE = (100, 100)


def test_add_takes_the_origin_region_from_the_edit():
    parsed = ParsedInstruction(None, "hat", reference="dog", position_state="up")
    edit = detected_region("hat", _det(box(10, 10, 30, 30)), _mask(box(10, 10, 30, 30)))
    ref = detected_region("dog", _det(box(10, 40, 40, 90)), None)
    place = localize(parsed, detected_region(None, None, None), edit, ref, SIZE)
    np.testing.assert_array_equal(place.origin.box, edit.box)
    assert place.origin.area == edit.area and place.anchor is ref and place.anchor_found
    assert f_position(place.anchor.box, place.edit.box, "up", TH).score == 1


def test_add_with_a_direction_and_no_reference_is_anchored_on_the_image_frame():
    parsed = ParsedInstruction(None, "tree", position_state="left")
    edit = detected_region("tree", _det(box(5, 30, 25, 70)), _mask(box(5, 30, 25, 70)))
    place = localize(parsed, detected_region(None, None, None), edit, None, SIZE)
    np.testing.assert_array_equal(place.anchor.box, box(0, 0, 100, 100))
    assert f_position(place.anchor.box, place.edit.box, "left", TH).score == 1


def test_remove_takes_the_edit_region_from_the_origin():
    parsed = ParsedInstruction("bike", None)
    origin = detected_region("bike", _det(box(20, 20, 60, 60)), _mask(box(20, 20, 60, 60)))
    place = localize(parsed, origin, detected_region(None, None, None), None, SIZE)
    np.testing.assert_array_equal(place.edit.box, origin.box)
    assert place.edit_found and f_size(place.origin.area, place.edit.area, "unchanged", TH).score == 1


def test_missing_o2_copies_the_origin_region_but_the_region_rules_score_zero():
    parsed = ParsedInstruction("cup", "red cup")
    origin = detected_region("cup", _det(box(20, 20, 60, 60)), _mask(box(20, 20, 60, 60)))
    edit = detected_region("red cup", SimpleNamespace(box=None, score=0.1, found=False), None)
    place = localize(parsed, origin, edit, None, SIZE)
    np.testing.assert_array_equal(place.edit.box, origin.box)
    assert not place.edit_found and "not found" in place.notes[0]
    assert f_size(place.origin.area, place.edit.area, "unchanged", TH, edit_found=place.edit_found).score == 0
    assert f_position(place.anchor.box, place.edit.box, "unchanged", TH, edit_found=place.edit_found).score == 0


def test_missing_o1_copies_the_edit_region():
    parsed = ParsedInstruction("cup", "red cup")
    edit = detected_region("red cup", _det(box(20, 20, 60, 60)), _mask(box(20, 20, 60, 60)))
    place = localize(parsed, detected_region("cup", None, None), edit, None, SIZE)
    np.testing.assert_array_equal(place.origin.box, edit.box)
    assert not place.origin_found and place.edit_found


def test_nothing_found_compares_whole_images():
    parsed = ParsedInstruction("cup", "red cup")
    place = localize(parsed, detected_region("cup", None, None), detected_region("red cup", None, None), None, SIZE)
    np.testing.assert_array_equal(place.origin.box, box(0, 0, 100, 100))
    assert place.origin.area == 0 and place.edit.area == 0
    assert preserved_region(place.origin.mask, place.edit.mask, (100, 100)).all()
    assert "no object was found" in place.notes[0]


def test_missing_reference_scores_position_zero():
    parsed = ParsedInstruction("cup", "cup", position_state="left", reference="plate")
    origin = detected_region("cup", _det(box(50, 40, 70, 60)), _mask(box(50, 40, 70, 60)))
    edit = detected_region("cup", _det(box(10, 40, 30, 60)), _mask(box(10, 40, 30, 60)))
    place = localize(parsed, origin, edit, detected_region("plate", None, None), SIZE)
    assert not place.anchor_found
    assert f_position(place.anchor.box, place.edit.box, "left", TH, anchor_found=place.anchor_found).score == 0


def test_region_serialization():
    region = Region("cup", box(1, 2, 3, 4), np.ones((3, 3), dtype=bool), 0.5, True, "detected")
    data = region.to_dict()
    assert data["mask_area"] == 9 and data["box"] == [1.0, 2.0, 3.0, 4.0] and math.isclose(data["box_area"], 4.0)


# ---------------------------------------------------------------------- crops and S_modify normalisation
def test_a_long_box_keeps_both_ends_through_clips_centre_crop(tiny_encoder):
    """Marker pixels at both ends of a wide crop survive the encoder's real preprocessing only when padded."""
    from augclip_demo.bpm.components import PAD_COLOR, pad_to_square

    wide = Image.new("RGB", (240, 40), "white")
    wide.paste((255, 0, 0), (0, 0, 12, 40))  # red left end
    wide.paste((0, 0, 255), (228, 0, 240, 40))  # blue right end

    def ends_seen(image: Image.Image) -> tuple[bool, bool]:
        pixels = tiny_encoder.preprocess(image)  # resize shortest side + centre crop + normalise
        std = np.array([0.26862954, 0.26130258, 0.27577711])[:, None, None]
        mean = np.array([0.48145466, 0.4578275, 0.40821073])[:, None, None]
        rgb = pixels.numpy() * std + mean
        red = (rgb[0] > 0.8) & (rgb[1] < 0.3) & (rgb[2] < 0.3)
        blue = (rgb[2] > 0.8) & (rgb[0] < 0.3) & (rgb[1] < 0.3)
        return bool(red.any()), bool(blue.any())

    assert ends_seen(wide) == (False, False)  # the centre crop cut both ends off
    square = pad_to_square(wide)
    assert square.size == (240, 240)
    assert ends_seen(square) == (True, True)
    # The crop itself is unchanged, centred, and the rest is the padding colour.
    np.testing.assert_array_equal(np.asarray(square)[100:140], np.asarray(wide))
    assert square.getpixel((120, 10)) == PAD_COLOR and square.getpixel((120, 230)) == PAD_COLOR
    assert pad_to_square(square) is square


def test_dataset_min_max_follows_the_paper_and_is_labelled():
    from augclip_demo.bpm.components import dataset_min_max, rescore_over_dataset

    values = [-0.2, 0.1, 0.4, 0.0]
    np.testing.assert_allclose(dataset_min_max(values), [0.0, 0.5, 1.0, 2 / 6], atol=1e-15)
    np.testing.assert_array_equal(dataset_min_max([0.3, 0.3]), [0.5, 0.5])
    with pytest.raises(InputError, match="NaN"):
        dataset_min_max([0.1, float("nan")])
    with pytest.raises(InputError, match="at least one"):
        dataset_min_max([])
    pair = [combine(v, 0.8, 1, 0, alpha=0.7) for v in values]
    assert all(c.s_modify_normalization == "pair" for c in pair)
    assert pair[1].s_modify_norm == pytest.approx((0.1 + 1) / 2)
    whole = rescore_over_dataset(pair)
    assert [c.s_modify_normalization for c in whole] == ["dataset"] * 4
    # BPM = 0.7 (Norm(S_mod) + S_pres) + 0.3 S_region, written out for the second item: Norm = 0.5
    assert whole[1].bpm == pytest.approx(0.7 * (0.5 + 0.8) + 0.3 * 1)
    assert whole[1].s_modify == 0.1 and whole[1].overall_raw == pair[1].overall_raw
