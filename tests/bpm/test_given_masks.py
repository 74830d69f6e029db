"""BPM with given masks instead of a detector and a segmenter (``BPMOptions(regions="masks")``).

The regions must be the given masks pixel for pixel, their boxes the masks' bounding boxes, S_preserve the RMSE
outside their union (computed here with numpy from the images and the masks), and no region model may be touched:
the detector and the segmenter passed in are sentinels that fail the test on any use.
"""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from augclip_demo.bpm import BPMOptions, ObjectMasks, ParsedInstruction, bpm_score, bpm_score_many
from augclip_demo.bpm.localize import GIVEN_EDIT_MASK, GIVEN_MASK, named_mask
from augclip_demo.bpm.models import BPMModels
from augclip_demo.errors import InputError

H, W = 48, 64


class _Untouchable:
    """A region model that fails the test when BPM uses it in any way (loading included)."""

    untrained = True

    def __getattr__(self, name):
        raise AssertionError(f"a region model was used ({name}) although the regions were given")


def _image(background, squares):
    """An RGB array: a flat background and flat squares ((x0, y0, side, colour))."""
    array = np.empty((H, W, 3), dtype=np.uint8)
    array[:] = background
    for x0, y0, side, colour in squares:
        array[y0:y0 + side, x0:x0 + side] = colour
    return array


def _square_mask(x0, y0, side):
    mask = np.zeros((H, W), dtype=bool)
    mask[y0:y0 + side, x0:x0 + side] = True
    return mask


def _bounding_box(mask):
    rows, cols = np.nonzero(mask)
    return [cols.min(), rows.min(), cols.max() + 1, rows.max() + 1]


def _preserve(source, edit, keep):
    """1 - RMSE over the ``keep`` pixels, pixels in [0, 1]: S_preserve written out independently."""
    diff = (source.astype(np.float64) - edit.astype(np.float64)) / 255.0
    return 1.0 - float(np.sqrt((diff[keep] ** 2).mean()))


SOURCE = _image((40, 120, 40), [(4, 4, 12, (200, 0, 0)), (40, 20, 10, (0, 0, 200))])
# the ball recoloured, plus a stray change of the background in the corner (so S_preserve is below 1)
RECOLOURED = _image((40, 120, 40), [(4, 4, 12, (0, 0, 230)), (40, 20, 10, (0, 0, 200))])
RECOLOURED[40:, 50:] = (250, 250, 250)
MOVED = _image((40, 120, 40), [(30, 4, 12, (200, 0, 0)), (40, 20, 10, (0, 0, 200))])


@pytest.fixture()
def given_models(tiny_encoder):
    return BPMModels(_Untouchable(), _Untouchable(), tiny_encoder)


def test_the_regions_are_the_given_masks_and_no_region_model_is_used(given_models):
    ball_src, ball_edit, box = _square_mask(4, 4, 12), _square_mask(4, 4, 12), _square_mask(40, 20, 10)
    masks = ObjectMasks({"ball": ball_src, "box": box}, [{"ball": ball_edit, "box": box}])
    result = bpm_score(SOURCE, RECOLOURED, "make the ball blue", models=given_models,
                       options=BPMOptions(regions="masks"), object_masks=masks)
    assert (result.parsed.o1, result.parsed.o2) == ("ball", "blue ball")  # o2 finds "ball" by its last word
    assert np.array_equal(result.origin.mask, ball_src) and np.array_equal(result.edit.mask, ball_edit)
    assert result.origin.box.tolist() == _bounding_box(ball_src) and result.edit.box.tolist() == _bounding_box(ball_edit)
    assert result.origin.provenance == result.edit.provenance == GIVEN_MASK
    assert np.array_equal(result.preserved_mask, ~(ball_src | ball_edit))
    assert result.s_preserve == pytest.approx(_preserve(SOURCE, RECOLOURED, ~ball_src), abs=1e-9)
    assert result.s_preserve < 1.0  # the stray corner counts
    assert (result.s_size, result.s_position) == (1, 1)  # same area, same place
    details = result.to_dict()
    assert details["region_source"] == "given masks" and details["regions"]["edit"]["provenance"] == GIVEN_MASK
    assert details["models"]["regions"] == "given masks" and "detector" not in details["models"]
    assert details["timings"]["detect"] == details["timings"]["segment"] == 0.0


def test_the_region_rules_run_on_given_masks_as_on_detected_ones(given_models):
    """A move to the right: the anchor is the source's mask, the edit box the moved one (f_position's own rule)."""
    src_ball, moved_ball = _square_mask(4, 4, 12), _square_mask(30, 4, 12)
    right, left = bpm_score_many(
        SOURCE, [MOVED, MOVED], parsed=None, instruction="move the ball to the right", models=given_models,
        options=BPMOptions(regions="masks"),
        object_masks=ObjectMasks({"ball": src_ball}, [{"ball": moved_ball}, {"ball": src_ball}]))
    assert right.parsed.position_state == "right"
    assert right.s_position == 1 and right.position.values["dx"] == pytest.approx(26.0)
    assert left.s_position == 0  # the second edit's given mask says the ball stayed: IoU 1, no move
    assert right.s_preserve == pytest.approx(_preserve(SOURCE, MOVED, ~(src_ball | moved_ball)), abs=1e-9)


def test_one_edit_mask_is_the_origin_and_the_edit_region(given_models):
    """PIE-Bench / MagicBrush: one region per item, used for both."""
    region = _square_mask(2, 2, 16)
    result = bpm_score(SOURCE, RECOLOURED, "make the ball blue", models=given_models,
                       options=BPMOptions(regions="masks"), edit_mask=region)
    assert np.array_equal(result.origin.mask, region) and np.array_equal(result.edit.mask, region)
    assert result.origin.provenance == result.edit.provenance == GIVEN_EDIT_MASK
    assert result.s_preserve == pytest.approx(_preserve(SOURCE, RECOLOURED, ~region), abs=1e-9)
    assert result.size.values["ratio"] == 1.0 and result.position.values["iou"] == 1.0


def test_an_object_without_a_mask_in_an_edit_is_not_there(given_models):
    """Given masks of an edit name the objects in it: o2 missing there is not found (the fallbacks of localize
    apply and the region rules score 0), not replaced by the edit mask."""
    ball = _square_mask(4, 4, 12)
    result = bpm_score(SOURCE, RECOLOURED, "replace the ball with a star", models=given_models,
                       options=BPMOptions(regions="masks"), edit_mask=_square_mask(0, 0, 20),
                       object_masks=ObjectMasks({"ball": ball}, [{"ball": ball}]))
    assert result.found["o2"] is False and result.edit.provenance == "the origin region (o2 not found)"
    assert np.array_equal(result.edit.mask, ball) and result.s_region == 0


def test_named_mask_matches_the_name_then_the_last_word():
    masks = {"Red Ball": np.ones((2, 2), bool), "box": np.zeros((2, 2), bool)}
    assert named_mask("red  ball", masks)[0] == "Red Ball"
    assert named_mask("small box", masks)[0] == "box"
    assert named_mask("star", masks) is None and named_mask(None, masks) is None


def test_mistakes_with_given_masks_are_clear_errors(given_models):
    with pytest.raises(InputError, match="regions must be one of detected, masks"):
        BPMOptions(regions="boxes")
    with pytest.raises(InputError, match="no mask was given"):
        bpm_score(SOURCE, RECOLOURED, "make the ball blue", models=given_models, options=BPMOptions(regions="masks"))
    with pytest.raises(InputError, match="regions are set to 'detected'"):
        bpm_score(SOURCE, RECOLOURED, "make the ball blue", models=given_models, edit_mask=_square_mask(0, 0, 4))
    with pytest.raises(InputError, match=r"has shape \(4, 4\), expected the source image's \(48, 64\)"):
        bpm_score(SOURCE, RECOLOURED, "make the ball blue", models=given_models, options=BPMOptions(regions="masks"),
                  object_masks=ObjectMasks({"ball": np.ones((4, 4), bool)}))
    with pytest.raises(InputError, match="given for 2 edits, but there are 1"):
        bpm_score(SOURCE, RECOLOURED, "make the ball blue", models=given_models, options=BPMOptions(regions="masks"),
                  object_masks=ObjectMasks({}, [{}, {}]))


@pytest.mark.slow  # evaluate() fits AugCLIP too: about 5 s on 2 shared cores
def test_evaluate_with_masks_builds_no_region_model(monkeypatch, tmp_path):
    """The one-call API: ``bpm_regions="masks"`` never asks for the detector or the segmenter."""
    import augclip_demo.bpm.models as bpm_models
    from augclip_demo import Attributes, evaluate

    def refuse(*args, **kwargs):
        raise AssertionError("the region models were built")

    monkeypatch.setattr(bpm_models, "region_models", refuse)
    Image.fromarray(_square_mask(4, 4, 12).astype(np.uint8) * 255).save(tmp_path / "ball.png")
    report = evaluate(SOURCE, [RECOLOURED], "a blue ball", attributes=Attributes(["a red ball"], ["a blue ball"]),
                      instruction="make the ball blue", clip_model="random:tiny", device="cpu", bpm_regions="masks",
                      object_masks={"source": {"ball": tmp_path / "ball.png"}, "edits": [{"ball": tmp_path / "ball.png"}]})
    edit = report.edits[0]
    assert edit.bpm["region_source"] == "given masks"
    assert edit.bpm["s_preserve"] == pytest.approx(_preserve(SOURCE, RECOLOURED, ~_square_mask(4, 4, 12)), abs=1e-9)
    assert any("given masks" in note for note in report.notes)


def test_a_parse_without_objects_in_the_masks_falls_back_to_the_whole_image(given_models):
    """Nothing named is given: both regions are the whole image (localize's documented fallback)."""
    result = bpm_score(SOURCE, RECOLOURED, parsed=ParsedInstruction.from_fields("cat", "dog"), models=given_models,
                       options=BPMOptions(regions="masks"), object_masks=ObjectMasks({"ball": _square_mask(4, 4, 12)},
                                                                                     [{"ball": _square_mask(4, 4, 12)}]))
    assert result.origin.provenance == "whole image (nothing found)" and result.s_region == 0
    assert result.s_preserve == pytest.approx(_preserve(SOURCE, RECOLOURED, np.ones((H, W), bool)), abs=1e-9)
