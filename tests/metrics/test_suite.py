"""The metric table: every row against the public metric functions, needs, errors, adding a row."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from augclip_demo.errors import InputError
from augclip_demo.metrics import suite
from augclip_demo.metrics.augclip import augclip_score
from augclip_demo.metrics.clip_metrics import (
    AUGMENTED_VARIANTS,
    augmented_clip_dir,
    augmented_variant_name,
    clip_dir,
    clip_i,
    clip_score,
    clip_t,
)
from augclip_demo.metrics.pixel import l2_distance
from augclip_demo.metrics.reference import l1_to_ground_truth, l2_to_ground_truth, structure_distance
from augclip_demo.metrics.suite import (
    METRICS,
    NEEDS,
    Metric,
    MetricInputs,
    MetricUnavailable,
    metric_keys,
    needs_of,
    parse_metric_keys,
    score_item,
)
from augclip_demo.metrics.vectors import unit_rows


def raw_case(seed: int = 3, d: int = 24):
    """Embeddings of arbitrary lengths (as a user might pass them) and two small images."""
    rng = np.random.default_rng(seed)
    base, direction = rng.normal(size=d), rng.normal(size=d)
    return {
        "source": 2.5 * (base + rng.normal(scale=0.3, size=d)),
        "edits": np.stack([0.7 * (base + k * direction + rng.normal(scale=0.3, size=d)) for k in (0.5, 1.0)]),
        "target_text": 4.0 * (base + direction),
        "source_text": 0.3 * base,
        "source_attrs": base + rng.normal(scale=0.6, size=(4, d)),
        "target_attrs": base + 1.5 * direction + rng.normal(scale=0.6, size=(3, d)),
        "source_image": Image.fromarray(rng.integers(0, 255, (12, 10, 3), dtype=np.uint8)),
        "edit_images": [Image.fromarray(rng.integers(0, 255, (9, 14, 3), dtype=np.uint8)) for _ in range(2)],
        "ground_truth_image": Image.fromarray(rng.integers(0, 255, (11, 13, 3), dtype=np.uint8)),
        "ground_truth": 1.3 * (base + 0.8 * direction),
        "caption": 2.0 * (base + direction + rng.normal(scale=0.2, size=d)),
        "dino_edits": rng.normal(size=(2, 6)),
        "dino_truth": rng.normal(size=6),
        "keys_source": rng.normal(size=(5, 4)),
        "keys_edits": [rng.normal(size=(5, 4)) for _ in range(2)],
        "pie_edits": rng.normal(size=(2, 7)),
        "pie_masked": rng.normal(size=(2, 7)),
        "pie_text": rng.normal(size=7),
        "unedited": [{"psnr_unedited": 20.0 + k, "mse_unedited": 0.01 * k, "ssim_unedited": 0.5 + 0.1 * k,
                      "lpips_unedited": 0.2 * k} for k in (1, 2)],
    }


def inputs_of(case, source_text=True, options=None) -> MetricInputs:
    """The one normalisation (unit_rows), as the Evaluator and the batch runner do it."""
    d = case["source"].shape[0]
    return MetricInputs(
        source_embedding=unit_rows(case["source"][None], "source")[0],
        edit_embeddings=unit_rows(case["edits"], "edits", d),
        target_text_embedding=unit_rows(case["target_text"][None], "target", d)[0],
        source_text_embedding=unit_rows(case["source_text"][None], "source text", d)[0] if source_text else None,
        source_attr_embeddings=unit_rows(case["source_attrs"], "D_S", d),
        target_attr_embeddings=unit_rows(case["target_attrs"], "D_T", d),
        source_image=case["source_image"],
        edit_images=case["edit_images"],
        augclip_options=options,
        ground_truth_image=case["ground_truth_image"],
        ground_truth_embedding=unit_rows(case["ground_truth"][None], "GT", d)[0],
        output_caption_embedding=unit_rows(case["caption"][None], "caption", d)[0],
        dino_edit_embeddings=unit_rows(case["dino_edits"], "DINO"),
        dino_ground_truth_embedding=unit_rows(case["dino_truth"][None], "DINO GT")[0],
        structure_keys_source=case["keys_source"],
        structure_keys_edits=case["keys_edits"],
        mask=np.zeros((12, 10), bool),
        unedited_measures=case["unedited"],
        pie_clip_edit_embeddings=unit_rows(case["pie_edits"], "PIE CLIP"),
        pie_clip_masked_edit_embeddings=unit_rows(case["pie_masked"], "PIE CLIP masked"),
        pie_clip_target_embedding=unit_rows(case["pie_text"][None], "PIE CLIP text")[0],
    )


def test_every_computable_row_equals_its_public_function_on_raw_inputs():
    case = raw_case()
    options = {"weighting": False, "include_images": True, "classifier": "logistic", "C": 2.0}
    scores = score_item(inputs_of(case, options=options), metric_keys(computable=True), strict=True)
    s, tt, ts, S, T = (case[k] for k in ("source", "target_text", "source_text", "source_attrs", "target_attrs"))
    for i, e in enumerate(case["edits"]):
        want = {
            "augclip": augclip_score(s, e, S, T, **options).score,
            "clip_dir": clip_dir(s, e, ts, tt),
            "clip_i": clip_i(s, e),
            "clip_t": clip_t(e, tt),
            "l2": l2_distance(case["source_image"], case["edit_images"][i]),
            "l1_gt": l1_to_ground_truth(case["edit_images"][i], case["ground_truth_image"]),
            "l2_gt": l2_to_ground_truth(case["edit_images"][i], case["ground_truth_image"]),
            "clip_i_gt": clip_i(case["ground_truth"], e),
            "clip_t_caption": clip_t(e, case["caption"]),
            "dino_gt": clip_i(case["dino_truth"], case["dino_edits"][i]),
            "structure_distance": structure_distance(case["keys_source"], case["keys_edits"][i]),
            "clip_score_whole": clip_score(case["pie_edits"][i], case["pie_text"]),
            "clip_score_edited": clip_score(case["pie_masked"][i], case["pie_text"]),
            **case["unedited"][i],
        }
        for replace, weighted in AUGMENTED_VARIANTS:
            want[augmented_variant_name(replace, weighted)] = augmented_clip_dir(
                s, e, S, T, replace, weighted, src_text=ts, tgt_text=tt)
        assert list(scores.values[i]) == metric_keys(computable=True)  # table order
        for key, value in want.items():
            assert scores.values[i][key] == pytest.approx(value, abs=1e-12), key
        assert scores.details[i]["augclip"].classifier == "logistic"
        assert scores.unavailable[i] == {}


def test_augclip_defaults_come_from_augclip_score():
    case = raw_case(5)
    scores = score_item(inputs_of(case), ["augclip"], strict=True)
    want = augclip_score(case["source"], case["edits"][1], case["source_attrs"], case["target_attrs"])
    assert scores.values[1]["augclip"] == pytest.approx(want.score, abs=1e-12)


def test_a_missing_need_gives_its_reason_without_calling_the_metric():
    scores = score_item(inputs_of(raw_case(), source_text=False), metric_keys(computable=True), strict=True)
    for row, reasons in zip(scores.values, scores.unavailable):
        for key in ("clip_dir", "clip_dir_aug_tgt", "clip_dir_aug_tgt_weighted"):
            assert row[key] is None and reasons[key] == suite.NO_SOURCE_TEXT
        assert row["clip_dir_aug_both"] is not None and row["clip_t"] is not None
    # an item with embeddings only: the pixel metric says why it is missing
    embeddings_only = MetricInputs(**{**inputs_of(raw_case()).__dict__, "source_image": None, "edit_images": None})
    scores = score_item(embeddings_only, ["l2", "clip_i"])
    assert scores.values[0]["l2"] is None and scores.unavailable[0]["l2"] == NEEDS["pixels"].missing
    assert scores.values[0]["clip_i"] is not None


def test_strict_raises_metric_errors_lenient_records_them():
    case = raw_case()
    same = {**case, "target_attrs": case["source_attrs"].copy(), "edits": np.stack([case["source"]] * 2)}
    inputs = inputs_of(same, options={"weighting": True, "include_images": False, "classifier": "svm", "C": 1.0})
    with pytest.raises(ValueError, match="indistinguishable"):
        score_item(inputs, ["augclip"], strict=True)
    scores = score_item(inputs, ["augclip", "clip_i"])
    assert scores.values[0]["augclip"] is None and "indistinguishable" in scores.unavailable[0]["augclip"]
    assert scores.values[0]["clip_i"] == pytest.approx(1.0)


def test_adding_a_metric_is_one_row(monkeypatch):
    def centre_brightness_gain(inputs: MetricInputs, i: int) -> float:
        if i == 1:
            raise MetricUnavailable("edit 2 is too small")
        src = np.asarray(inputs.source_image.convert("L"), float).mean()
        return float("nan") if i == 2 else np.asarray(inputs.edit_images[i].convert("L"), float).mean() - src

    row = Metric("brightness", "Brightness", True, "mean luminance gain", frozenset({"pixels"}), "pixels",
                 centre_brightness_gain)
    monkeypatch.setitem(METRICS, row.key, row)
    case = raw_case()
    case["edit_images"] = [*case["edit_images"], case["edit_images"][0]]
    inputs = MetricInputs(source_image=case["source_image"], edit_images=case["edit_images"])
    assert "brightness" in metric_keys(basis="pixels") and "brightness" in parse_metric_keys("all")
    assert needs_of(["brightness", "clip_t"]) == {"pixels", "image_embeddings", "target_text_embedding"}
    scores = score_item(inputs, parse_metric_keys("brightness"))
    want = np.asarray(case["edit_images"][0].convert("L"), float).mean() - np.asarray(
        case["source_image"].convert("L"), float).mean()
    assert scores.values[0]["brightness"] == pytest.approx(want)
    assert scores.unavailable[1]["brightness"] == "edit 2 is too small"
    assert scores.values[2]["brightness"] is None and scores.unavailable[2]["brightness"] == suite.UNDEFINED


def test_rows_are_checked_and_bpm_is_a_supplied_row():
    bpm = METRICS["bpm"]
    assert (bpm.basis, bpm.computable, bpm.higher_is_better, bpm.label) == ("regions", False, True, "BPM")
    assert METRICS["l2"].higher_is_better is False
    assert "bpm" not in metric_keys(computable=True)
    assert metric_keys(computable=True, primary=True) == ["augclip", "clip_dir", "clip_i", "clip_t", "l2"]
    with pytest.raises(ValueError, match="unknown need"):
        Metric("x", "X", True, "", frozenset({"telepathy"}), "embeddings", lambda inputs, i: 0.0)
    with pytest.raises(ValueError, match="needs a compute function"):
        Metric("x", "X", True, "", frozenset(), "pixels")
    with pytest.raises(ValueError, match="supplied by its stage"):
        Metric("x", "X", True, "", frozenset(), "regions", lambda inputs, i: 0.0)
    with pytest.raises(ValueError, match="supplied by the regions stage"):
        score_item(MetricInputs(), ["bpm"])


def test_parse_metric_keys():
    assert parse_metric_keys(None) == ["augclip", "clip_dir", "clip_i", "clip_t", "l2"]
    assert parse_metric_keys("l2, augclip,l2") == ["l2", "augclip"]
    assert parse_metric_keys(["clip_i", "clip_t,l2"]) == ["clip_i", "clip_t", "l2"]
    with pytest.raises(InputError, match="unknown metric"):
        parse_metric_keys("augclip,nope")
    with pytest.raises(InputError, match="regions stage"):
        parse_metric_keys("bpm")
    # a caller that runs the regions stage (batch runs) may choose it; "all" stays the computable metrics
    assert parse_metric_keys("clip_i,bpm", supplied_bases=("regions",)) == ["clip_i", "bpm"]
    assert parse_metric_keys("all,bpm", supplied_bases=("regions",)) == metric_keys(computable=True) + ["bpm"]
    assert "bpm" not in parse_metric_keys("all", supplied_bases=("regions",))
    with pytest.raises(InputError, match="no metric given"):
        parse_metric_keys(" , ")
