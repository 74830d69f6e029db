"""HATIE's measures as its published code computes them, checked against computations written here from
hatie-notes.md's definitions (torch's own interpolation, the transformers model called directly, FID by
hand), on constructed images, with untrained networks: what must hold whatever the weights."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from PIL import Image

from augclip_demo.hatie import HatieModels, hatie_score_many
from augclip_demo.hatie import images as HI
from augclip_demo.hatie.hatie_score import HatieQuery
from augclip_demo.hatie.networks import HatieFeatures
from augclip_demo.inference.grounding import Detection

pytestmark = pytest.mark.slow

SIDE = 512


def _scene(colour: tuple[int, int, int], box=(150, 180, 330, 300)) -> Image.Image:
    """A coloured rectangle (x0, y0, x1, y1) on white, 512 x 512."""
    pixels = np.full((SIDE, SIDE, 3), 255, dtype=np.uint8)
    x0, y0, x1, y1 = box
    pixels[y0:y1, x0:x1] = colour
    return Image.fromarray(pixels)


class NonWhiteDetector:
    """A constructed detector: the box of the image's non-white pixels, for every phrase (a stand-in for the
    segmentation of the edit, which these tests do not judge)."""

    untrained = False

    def load(self):
        return self

    def info(self):
        return {"model": "non-white pixels"}

    def detect(self, images, phrases, box_threshold=0.1):
        out = []
        for image, group in zip(images, phrases):
            a = np.asarray(image.convert("RGB") if hasattr(image, "convert") else image.image.convert("RGB"))
            ys, xs = np.nonzero((a < 250).any(axis=2))
            box = np.array([xs.min(), ys.min(), xs.max() + 1, ys.max() + 1], dtype=float)
            out.append([Detection(p, box, 0.9, True, box_threshold) for p in group])
        return out


class BoxSegmenter:
    """The mask of each box (the constructed objects are rectangles)."""

    untrained = False

    def load(self):
        return self

    def info(self):
        return {"model": "boxes"}

    def segment(self, images, boxes):
        out = []
        for image, group in zip(images, boxes):
            w, h = image.size
            masks = []
            for x0, y0, x1, y1 in group:
                m = np.zeros((h, w), dtype=bool)
                m[int(y0):int(y1), int(x0):int(x1)] = True
                masks.append(m)
            out.append(masks)
        return out


@pytest.fixture(scope="module")
def features():
    return HatieFeatures(dino="random:tiny-v2", lpips="random:alex", fid="random:inception-v3-compat",
                         clip="random:tiny").load()


@pytest.fixture(scope="module")
def models(features, tiny_encoder):
    return HatieModels(NonWhiteDetector(), BoxSegmenter(), tiny_encoder, features).load()


def test_red_to_blue_recolour_keeps_attribute_object_consistency_at_exactly_one(models):
    # pure red and pure blue have the same channel-mean grey (85) and, on white, the same Canny edges
    red, blue = _scene((255, 0, 0)), _scene((0, 0, 255))
    assert np.asarray(red).mean(axis=2).tolist() == np.asarray(blue).mean(axis=2).tolist()
    mask = np.zeros((SIDE, SIDE), dtype=bool)
    mask[180:300, 150:330] = True
    query = HatieQuery(target="box", after="blue", source_masks={"box": mask})
    result = hatie_score_many(red, [blue], "make the box blue", models, edit_type="attribute", query=query)[0]
    oc = result.scores.criteria["object_consistency"]
    assert oc.value == 1.0
    parts = {c.name: c.value for c in oc.components}
    assert {parts[f"appearance.{m}.{w}"] for m in ("clip", "lpips", "dino", "l2")
            for w in ("edges", "degradation", "downscaled")} == {1.0}
    assert result.untrained  # the networks are random: the result says so


def test_red_to_blue_recolour_keeps_style_background_consistency_at_exactly_one(models):
    red, blue = _scene((255, 0, 0)), _scene((0, 0, 255))
    result = hatie_score_many(red, [blue], "turn it into a painting", models, edit_type="style")[0]
    assert result.scores.criteria["background_consistency"].value == 1.0
    # a change of grey levels is not kept at 1 (the check can fail)
    grey = _scene((40, 40, 40))
    other = hatie_score_many(red, [grey], "turn it into a painting", models, edit_type="style")[0]
    bc = other.scores.criteria["background_consistency"]
    l2 = {c.name: c.value for c in bc.components}
    assert bc.value != 1.0 and l2["l2.downscaled"] < 1.0 and l2["l2.edges"] == 1.0


def test_lpips_compares_64_pixel_bilinear_resizes(features):
    rng = np.random.default_rng(3)
    a, b = rng.random((200, 200, 3)), rng.random((200, 200, 3))

    def small(x):  # the notes: 64 x 64 bilinear resizes (PyTorch's interpolate, as the published code)
        t = torch.from_numpy(x.transpose(2, 0, 1)).double()[None]
        return F.interpolate(t, size=(64, 64), mode="bilinear", align_corners=False)[0].numpy().transpose(1, 2, 0)

    expected = features.lpips_network.distance([small(a)], [small(b)])[0]
    assert features.lpips([a], [b])[0] == pytest.approx(expected, abs=1e-6)
    full = features.lpips_network.distance([a], [b])[0]
    assert abs(full - expected) > 1e-6  # the size matters, so the test can tell


def test_bilinear_resize_is_pytorchs_interpolate():
    rng = np.random.default_rng(4)
    for shape, size in (((37, 53, 3), (64, 64)), ((512, 512, 3), (25, 25)), ((9, 9, 3), (2, 2))):
        x = rng.random(shape)
        t = torch.from_numpy(x.transpose(2, 0, 1))[None]
        expected = F.interpolate(t, size=size, mode="bilinear", align_corners=False)[0].numpy().transpose(1, 2, 0)
        assert np.allclose(HI.bilinear_resize(x, size), expected, atol=1e-12)


def test_dinov2_averages_every_token_of_a_direct_224_resize(features):
    from torchvision.transforms import functional as tvf

    rng = np.random.default_rng(5)
    image = rng.random((300, 180, 3))
    tensor = torch.from_numpy(image.transpose(2, 0, 1).astype(np.float32))
    tensor = tvf.resize(tensor, [224, 224], interpolation=tvf.InterpolationMode.BILINEAR, antialias=True)
    tensor = tvf.normalize(tensor, [0.485, 0.456, 0.406], [0.229, 0.224, 0.225])
    with torch.inference_mode():
        hidden = features.dino_network._model(pixel_values=tensor[None]).last_hidden_state
    expected = hidden.mean(dim=1)[0].double().numpy()  # class token and patch tokens alike
    got = features.dino([image])[0]
    assert np.allclose(got, expected, atol=1e-5)
    patches_only = hidden[:, 1:].mean(dim=1)[0].double().numpy()
    assert not np.allclose(got, patches_only, atol=1e-5)


def test_fid_counts_a_shared_source_once(tmp_path: Path):
    from augclip_demo.batch.manifest import load_manifest
    from augclip_demo.batch.results import iter_results
    from augclip_demo.hatie import criteria as H
    from augclip_demo.hatie.tables import hatie_edits, model_fids

    colours = {"a": (200, 30, 30), "b": (30, 200, 30)}
    for name, colour in colours.items():
        _scene(colour).resize((32, 32)).save(tmp_path / f"{name}.png")
    edits = {f"q{i}": (src, (20 * i, 60, 200 - 10 * i)) for i, src in enumerate("aaab")}
    lines, results = [], []
    for qid, (src, colour) in edits.items():
        _scene(colour).resize((32, 32)).save(tmp_path / f"{qid}.png")
        lines.append({"id": qid, "source": f"{src}.png", "target_text": "x", "instruction": "make it red",
                      "edits": [{"path": f"{qid}.png", "name": "model"}]})
        results.append({"id": qid, "status": "ok", "source": f"{src}.png",
                        "edits": [{"name": "model", "path": f"{qid}.png",
                                   "hatie": {"edit_type": {"edit_type": "attribute"},
                                             "criteria": {"object_fidelity": {"value": 0.5}}}}]})
    (tmp_path / "manifest.jsonl").write_text("\n".join(json.dumps(x) for x in lines))
    (tmp_path / "results.jsonl").write_text("\n".join(json.dumps(x) for x in results))

    class MeanColour:  # a constructed one-number feature: each image's mean green level
        def fid_features(self, images):
            return np.array([[np.asarray(i.convert("RGB"), np.float64)[..., 1].mean() / 255] for i in images])

    results_path = tmp_path / "results.jsonl"
    got = model_fids(hatie_edits(iter_results(results_path), results_path), load_manifest(tmp_path / "manifest.jsonl"),
                     MeanColour())["model"]
    feats = MeanColour()
    src = feats.fid_features([Image.open(tmp_path / f"{n}.png") for n in "ab"])  # a and b once each
    out = feats.fid_features([Image.open(tmp_path / f"{q}.png") for q in edits])
    # one dimension: (m1 - m2)^2 + v1 + v2 - 2 sqrt(v1 v2), with unbiased variances
    m1, m2, v1, v2 = src.mean(), out.mean(), src.var(ddof=1), out.var(ddof=1)
    expected = float((m1 - m2) ** 2 + v1 + v2 - 2 * math.sqrt(v1 * v2))
    assert got[0] == pytest.approx(expected, rel=1e-6, abs=1e-9)
    assert got[1] == pytest.approx(1 - math.tanh(expected / 25))
    repeated = feats.fid_features([Image.open(tmp_path / f"{n}.png") for n in "aaab"])
    assert not np.isclose(H.fid_from_features(repeated, out), got[0])  # counting a once matters here
