"""Evaluator end to end with the tiny model: report contents, consistency, round trips, re-scoring."""

from __future__ import annotations

import csv
import io
import json

import pytest

from augclip_demo.attributes import ManualProvider
from augclip_demo.errors import ImageLoadError, InputError
from augclip_demo.metrics.augclip import augclip_score
from augclip_demo.metrics.clip_metrics import clip_dir, clip_i, clip_t
from augclip_demo.pipeline import Attributes, AugCLIPOptions, Evaluator, Report
from tests.support import TINY

ATTRS = Attributes(
    source=["a red ball", "a white background", "a round shape"],
    target=["green grass", "a red ball on grass", "a lawn under the ball"],
)


@pytest.fixture(scope="module")
def evaluator(tiny_encoder):
    return Evaluator(TINY, device="cpu", encoder=tiny_encoder)


def test_report_matches_direct_metric_computation(evaluator, scene_files, tiny_encoder):
    edits = [scene_files["faithful"], scene_files["preserved"], scene_files["replaced"]]
    report = evaluator.evaluate(scene_files["source"], edits, "a red ball on green grass", "a red ball", ATTRS)
    assert [e.name for e in report.edits] == ["faithful.png", "preserved.png", "replaced.png"]
    assert report.untrained and report.model["spec"] == TINY
    src = tiny_encoder.encode_image(scene_files["source"])
    t_trg, t_src = tiny_encoder.encode_texts(["a red ball on green grass", "a red ball"])
    s_attr = tiny_encoder.encode_texts(ATTRS.source)
    t_attr = tiny_encoder.encode_texts(ATTRS.target)
    for result, path in zip(report.edits, edits):
        e = tiny_encoder.encode_image(path)
        assert result.metrics["augclip"] == pytest.approx(augclip_score(src, e, s_attr, t_attr).score, abs=1e-6)
        assert result.metrics["clip_dir"] == pytest.approx(clip_dir(src, e, t_src, t_trg), abs=1e-6)
        assert result.metrics["clip_i"] == pytest.approx(clip_i(src, e), abs=1e-6)
        assert result.metrics["clip_t"] == pytest.approx(clip_t(e, t_trg), abs=1e-6)
        assert 0.0 <= result.metrics["l2"] <= 1.0
        assert {"clip_dir_aug_src", "clip_dir_aug_tgt_weighted", "clip_dir_aug_both"} <= set(result.metrics)
        assert len(result.source_changes) == 3 and len(result.target_changes) == 3
        deltas = [abs(c.delta) for c in result.source_changes]
        assert deltas == sorted(deltas, reverse=True)
        assert len(result.augclip.alpha) == len(result.augclip.fit_samples) == 8
    # The barely changed copy is closest in pixels.
    assert report.best("l2") == 1
    assert set(report.timings) >= {"image_encoding", "text_encoding", "metrics", "total"}


def test_clip_dir_unavailable_without_source_text(evaluator, scene_files):
    report = evaluator.evaluate(scene_files["source"], scene_files["faithful"], "a red ball on grass", None, ATTRS)
    (edit,) = report.edits
    assert edit.metrics["clip_dir"] is None and "no source text" in edit.unavailable["clip_dir"]
    assert edit.metrics["clip_dir_aug_tgt"] is None
    assert edit.metrics["clip_dir_aug_src"] is not None and edit.metrics["clip_dir_aug_both"] is not None
    assert "CLIPdir" not in report.verdict()


def test_attribute_texts_are_encoded_once_per_call(scene_files):
    from augclip_demo.inference import ClipEncoder

    encoder = ClipEncoder(TINY, device="cpu")
    evaluator = Evaluator(encoder=encoder)
    edits = [scene_files["faithful"], scene_files["preserved"], scene_files["replaced"], scene_files["faithful"]]
    evaluator.evaluate(scene_files["source"], edits, "target", "source", ATTRS)
    texts = encoder.text_cache.stats()
    assert texts["size"] == 2 + 6 and texts["misses"] == 8
    assert encoder.image_cache.stats()["size"] == 4  # the repeated edit is encoded once


def test_json_round_trip_and_csv(evaluator, scene_files):
    report = evaluator.evaluate(scene_files["source"], [scene_files["faithful"], scene_files["replaced"]],
                                "a red ball on green grass", "a red ball", ATTRS)
    text = report.to_json()
    data = json.loads(text)
    assert data["untrained"] is True and "not meaningful" in data["warning"]
    again = Report.from_json(text)
    assert again.to_dict() == report.to_dict()
    assert again.edits[0].augclip.c == report.edits[0].augclip.c
    rows = list(csv.DictReader(io.StringIO(report.to_csv())))
    assert len(rows) == 2 and float(rows[1]["augclip"]) == pytest.approx(report.edits[1].metrics["augclip"])
    assert rows[0]["untrained"] == "True"


def test_rescore_reuses_embeddings(evaluator, scene_files, tiny_encoder):
    report = evaluator.evaluate(scene_files["source"], [scene_files["faithful"], scene_files["replaced"]],
                                "a red ball on green grass", "a red ball", ATTRS)
    image_misses = tiny_encoder.image_cache.stats()["misses"]
    fits = [r.score for r in report.arrays.augclip]
    other = evaluator.rescore(report, AugCLIPOptions(classifier="logistic", include_images=False))
    assert tiny_encoder.image_cache.stats()["misses"] == image_misses
    assert other.options["classifier"] == "logistic"
    for a, b in zip(report.edits, other.edits):
        assert a.metrics["clip_i"] == b.metrics["clip_i"] and a.metrics["l2"] == b.metrics["l2"]
    # The original report keeps its own fits (its explanations must still match its scores).
    assert [r.score for r in report.arrays.augclip] == fits == [e.metrics["augclip"] for e in report.edits]
    assert [r.score for r in other.arrays.augclip] == [e.metrics["augclip"] for e in other.edits]
    assert [e.metrics["augclip"] for e in other.edits] != [e.metrics["augclip"] for e in report.edits]
    fewer = evaluator.rescore(report, attributes=Attributes(["a red ball"], ["green grass"]))
    assert fewer.attributes.source == ["a red ball"] and len(fewer.edits[0].source_changes) == 1


def test_provider_instance_and_single_image_inputs(evaluator, scene_files):
    from PIL import Image

    provider = ManualProvider(source=["a red ball"], target=["a red ball on grass"])
    report = evaluator.evaluate(Image.open(scene_files["source"]), Image.open(scene_files["faithful"]),
                                "a red ball on grass", attributes=provider)
    assert report.edits[0].name == "edit 1" and report.source_name == "source"
    assert report.attributes.provenance.provider == "manual"


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        ({"target_text": "  "}, InputError, "target text is empty"),
        ({"edited": []}, InputError, "no edited image"),
        ({"attributes": Attributes([], ["x"])}, InputError, "no source attributes"),
        ({"attributes": Attributes(["x"], [])}, InputError, "no target attributes"),
        ({"attributes": "manual"}, InputError, "needs the attribute lists"),
        ({"attributes": "no-such-provider"}, InputError, "unknown attribute provider"),
        ({"options": None, "edited": [b"not an image"]}, ImageLoadError, "edit 1: not a recognised image"),
    ],
)
def test_bad_inputs_raise_clear_errors(evaluator, scene_files, kwargs, error, message):
    args = {"source": scene_files["source"], "edited": [scene_files["faithful"]], "target_text": "grass",
            "attributes": ATTRS, **kwargs}
    with pytest.raises(error, match=message):
        evaluator.evaluate(**args)


def test_options_are_validated():
    with pytest.raises(InputError, match="classifier"):
        AugCLIPOptions(classifier="knn")
    with pytest.raises(InputError, match="C must be"):
        AugCLIPOptions(C=-1)


def test_attributes_json_format(tmp_path):
    path = ATTRS.save(tmp_path / "a.json")
    data = json.loads(path.read_text())
    assert data["source_attributes"] == ATTRS.source and data["target_attributes"] == ATTRS.target
    assert Attributes.load(path).source == ATTRS.source
    (tmp_path / "bad.json").write_text('{"source_attributes": "a dog"}')
    with pytest.raises(InputError, match="missing key"):
        Attributes.load(tmp_path / "bad.json")
    (tmp_path / "bad2.json").write_text("{not json")
    with pytest.raises(InputError, match="not valid JSON"):
        Attributes.load(tmp_path / "bad2.json")
    assert Attributes(["  a   dog ", "", " "], ["x"]).source == ["a dog"]
